#pragma once
// --emit, --rank, --timeline and --html (issue 11): checked before the search, written after.
#include <functional>
#include <string>
#include <vector>

#include "options.hpp"
#include "zerosearch/core/hardware.hpp"
#include "zerosearch/io/report.hpp"
#include "zerosearch/model/estimate.hpp"

namespace zerosearch::cli {

/// Throws InputError on an --emit folder that holds other files, or a --timeline or --html file
/// that cannot be written. Writes nothing.
void check_plan_outputs(const Options& o);

/// Writes the plan outputs of a ranked run. `origin` names the run ("search", "--exhaustive").
/// Refusals (a row out of range, an OOM row for --emit, a plan a framework rejects) throw
/// InputError before any of these files is written.
/// `context_of` gives the estimate context of a row's run (a Pareto sweep has one per
/// composition); `shown` are the rows standard output shows (shown_rows): --rank N is the N-th
/// of them, and the HTML report lists them; `pareto_svg`, when not empty, goes into the HTML
/// report.
void write_plan_outputs(const Options& o,
                        const std::function<const EstimateContext&(const RankedRow&)>& context_of,
                        const std::vector<RankedRow>& ranked,
                        const std::vector<RankedRow>& shown, const std::string& origin,
                        const HardwareCatalog& hardware,
                        const std::vector<std::string>& summary,
                        const std::string& pareto_svg = {});

} // namespace zerosearch::cli
