#pragma once
// Output plumbing of the CLI: atomic file writes and the readable summary.
#include <filesystem>
#include <functional>
#include <ostream>
#include <vector>

#include "zerosearch/plan.hpp"
#include "zerosearch/report.hpp"

namespace zerosearch::cli {

/// Writes through a temporary file in the same folder and renames it over `path` only when
/// `write` completed and the data reached the disk, so a failed run never leaves a
/// half-written file or clobbers an existing one. Creates missing parent folders.
/// Throws InputError naming the path when it cannot be written.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write);

/// The default, short report: what was searched, how many points fit, the best ones.
void print_summary(std::ostream& out, const SearchPlan& plan, const RunResult& run,
                   const std::vector<RankedRow>& ranked, double seconds);

} // namespace zerosearch::cli
