#pragma once
// Output plumbing of the CLI: what goes to standard output and to files (--format, --pretty,
// -o, --record, --top, --feasible, -q, --no_clobber), the sidecars and the readable summary.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "options.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/io/report.hpp"
#include "zerosearch/io/output_file.hpp"
#include "zerosearch/io/report_format.hpp"
#include "zerosearch/io/uncertainty.hpp"

#include <nlohmann/json.hpp>

namespace zerosearch::cli {

/// What standard output gets: one of the report formats (io/report_format.hpp, kReportFormats).
using StdoutFormat = ReportFormat;

struct OutputPlan {
  StdoutFormat to_stdout = StdoutFormat::summary;
  /// CSV files to write: --record's and -o FILE's, checked (output_file.hpp).
  std::vector<OutputTarget> csv_files;
  /// --record's file exists and will be replaced: a note says so when it is.
  bool record_replaces = false;
  /// --feasible and --top, applied to every output: --top counts the plans that fit unless
  /// --include_oom.
  RowSelection selection;
  /// --include_oom: the summary's rows without --top are the 10 best, OOM or not.
  bool include_oom = false;
  /// --pretty: the original's report column order in CSV and JSON; --distinct: distinct rows
  /// (csv.distinct) in CSV and JSON.
  CsvOptions csv;
  /// -q: no summary, notes, progress or "wrote" lines; errors and --format output only.
  bool quiet = false;
  /// Written beside every CSV file as NAME.csv.json: what produced it.
  nlohmann::ordered_json provenance;
};

/// check_output (io/output_file.hpp) and --no_clobber: an existing regular file at `path` is an
/// error "FLAG 'PATH' exists and --no_clobber is set" followed by `hint`. Throws InputError.
[[nodiscard]] OutputTarget check_cli_output(const Options& o, const std::filesystem::path& path,
                                            const std::string& flag, bool create_folders = false,
                                            const std::string& hint = {});

/// Checks the output files before any work; `record_file` is --record's path or empty. Throws
/// InputError on two outputs to one place, a file that cannot be written, or an existing file
/// with --no_clobber (the flags' values are checked by validate_options).
[[nodiscard]] OutputPlan make_output_plan(const Options& o,
                                          const std::filesystem::path& record_file);

/// Checks one more output of the run (--plot, ...) like the CSV files, and that it is none of
/// them. Throws InputError.
[[nodiscard]] OutputTarget check_extra_output(const Options& o, const OutputPlan& plan,
                                              const std::filesystem::path& path,
                                              const std::string& flag);

/// The sidecar's content: version, command line, working folder, UTC date and `inputs`.
[[nodiscard]] nlohmann::ordered_json provenance(const Options& o, nlohmann::ordered_json inputs);

/// Prints the summary of a run on `out`.
using SummaryWriter = std::function<void(std::ostream& out)>;

/// Writes every output of `plan`: the CSV files and their sidecars, then standard output.
/// Throws InputError when a file or standard output cannot be written.
void write_outputs(const OutputPlan& plan, const std::vector<RankedRow>& ranked,
                   const std::vector<std::string>& type_names, const SummaryWriter& summary);

/// Writes one extra output (checked by check_extra_output) and says so unless quiet.
void write_extra_output(const OutputPlan& plan, const OutputTarget& target,
                        const std::function<void(std::ostream&)>& write);

/// The native summary examines at most this many OOM rows, fastest first, for settings that
/// make them fit (RowFilter::oom_top).
inline constexpr std::size_t kFitHintRows = 256;

/// The rows the search must keep for the outputs of `plan` (search.hpp): the distinct rows when
/// every output shows distinct rows, --top and --feasible applied while searching when every
/// output can take them, the 10 best that fit when the summary is all. `all_rows`: an output
/// needs every row (--rank, --emit, --timeline, --html).
[[nodiscard]] RowFilter search_filter(const OutputPlan& plan, bool all_rows);

/// The rows standard output shows, in order: the summary's (summary_rows), the table's
/// (distinct rows, --top), or those of the CSV or JSON (of the CSV file with -q). --rank N is
/// the N-th of them: the row shown as `#` N in the summary and the table.
[[nodiscard]] std::vector<RankedRow> shown_rows(const OutputPlan& plan,
                                                const std::vector<RankedRow>& ranked);

/// The rows the summary lists (distinct rows): with --top, the --top best; without, the 10
/// best that fit.
[[nodiscard]] std::vector<RankedRow> summary_rows(const OutputPlan& plan,
                                                  const std::vector<RankedRow>& ranked);

/// One line on what the MFU column means: model FLOPs per step over the cluster's dense peak,
/// and which dtype's peak.
[[nodiscard]] std::string mfu_note(const RunThroughput& t, const std::string& model);

/// One line on --memory_margin: how much each GPU keeps free and how many of the `shown` rows
/// fit only within it.
[[nodiscard]] std::string margin_note(const EstimateContext& ctx, const RunResult& run,
                                      std::size_t in_margin, std::size_t shown);

/// The default, short report: what was searched, how many points fit, the `top` best that fit.
/// `rows` are summary_rows(); the counts are the run's (RunResult::estimates, oom).
/// `gpu_lines` (native runs: gpu_entry_lines; the default --gpu_per_node) follow the
/// estimator line. With `intervals` (profiledb/uncertainty.json) and the catalog, a native best
/// plan also gets its step-time interval (docs/validation.md, "Intervals").
void print_summary(std::ostream& out, const SearchPlan& plan, const RunResult& run,
                   const std::vector<RankedRow>& ranked, const std::vector<RankedRow>& rows,
                   double seconds, const std::vector<std::string>& gpu_lines = {},
                   const UncertaintyTable* intervals = nullptr,
                   const HardwareCatalog* hardware = nullptr);

/// The step-time interval of a native plan: its regime is the cluster's GPU (one type; a mixed
/// cluster has none of its own), the framework of its data-parallel method, its GPU count.
[[nodiscard]] StepInterval plan_interval(const UncertaintyTable& intervals,
                                         const HardwareCatalog& hardware,
                                         const EstimateContext& ctx, DpMethod method);

/// One line for a mixture-of-experts model: no expert parallelism, costed as a dense model of
/// the active experts, every expert's weights on every GPU.
[[nodiscard]] std::string moe_note(const ModelSpec& m);
/// The native estimator's line on an MoE model: its experts and the ep, etp values searched.
[[nodiscard]] std::string moe_native_note(const ModelSpec& m, const SearchPlan& plan,
                                          double imbalance);

/// The native estimator in words: "an analytic model (docs/native.md), calibrated for A10 /
/// not calibrated for H100-SXM (the prior of its GPU class)".
[[nodiscard]] std::string native_estimator_text(const EstimateContext& ctx);

} // namespace zerosearch::cli
