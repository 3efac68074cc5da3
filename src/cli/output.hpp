#pragma once
// Output plumbing of the CLI: what goes to standard output and to files (--format, --pretty,
// -o, --record, --top, --feasible, -q), atomic file writes and the readable summary.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "options.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/io/report.hpp"
#include "zerosearch/io/report_format.hpp"

namespace zerosearch::cli {

/// What standard output gets.
enum class StdoutFormat { summary, csv, json, table, none };

struct OutputPlan {
  StdoutFormat to_stdout = StdoutFormat::summary;
  /// CSV files to write: --record's and -o FILE's.
  std::vector<std::filesystem::path> csv_files;
  /// --feasible and --top, applied to every output.
  RowSelection selection;
  /// --pretty: the original's report column order in CSV and JSON.
  CsvOptions csv;
  /// -q: no summary, notes, progress or "wrote" lines; errors and --format output only.
  bool quiet = false;
};

/// Reads and checks the output flags; `record_file` is --record's path or empty. Throws
/// InputError on a bad --format or --top value or on two outputs that both claim stdout.
[[nodiscard]] OutputPlan make_output_plan(const Options& o,
                                          const std::filesystem::path& record_file);

/// Throws InputError naming `path` when it cannot be written: it is a folder, a parent is a
/// file, or the nearest existing folder is not writable. Creates nothing. Called before the
/// search, so that a bad path fails at once rather than after a long search.
void check_writable(const std::filesystem::path& path);

/// Writes through a temporary file in the same folder and renames it over `path` only when
/// `write` completed and the data reached the disk, so a failed run never leaves a
/// half-written file or clobbers an existing one. Creates missing parent folders.
/// Throws InputError naming the path when it cannot be written.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write);

/// Prints the summary of a run on `out`.
using SummaryWriter = std::function<void(std::ostream& out)>;

/// Writes every output of `plan`: the CSV files (each atomically), then standard output.
/// Throws InputError when a file or standard output cannot be written.
void write_outputs(const OutputPlan& plan, const std::vector<RankedRow>& ranked,
                   const std::vector<std::string>& type_names, const SummaryWriter& summary);

/// The default, short report: what was searched, how many points fit, the `top` best that fit.
void print_summary(std::ostream& out, const SearchPlan& plan, const RunResult& run,
                   const std::vector<RankedRow>& ranked, double seconds, std::size_t top = 10);

} // namespace zerosearch::cli
