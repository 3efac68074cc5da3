#pragma once
// One self-contained HTML page for a run (no network, no external scripts or fonts): the
// summary, the ranked table (sortable by any column, a feasible-only filter), the Pareto chart
// when there is one, and the best plan's timeline.
#include <string>
#include <vector>

#include "zerosearch/search/ranking.hpp"

namespace zerosearch {

struct HtmlReportInput {
  std::string title;
  /// Summary lines, shown as a list.
  std::vector<std::string> summary;
  /// Rows best first (rank_results order).
  std::vector<RankedRow> rows;
  /// Standalone SVG documents (the XML declaration is dropped when inlined); empty: none.
  std::string pareto_svg;
  std::string timeline_svg;
  std::string timeline_caption;
};

[[nodiscard]] std::string html_report(const HtmlReportInput& in);

} // namespace zerosearch
