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
  /// Rows best first (rank_results order), at most kHtmlMaxRows of them (the caller caps,
  /// saying so in `rows_note`).
  std::vector<RankedRow> rows;
  /// A line above the table: how many rows there were and which are shown; empty: none.
  std::string rows_note;
  /// Standalone SVG documents (the XML declaration is dropped when inlined); empty: none.
  std::string pareto_svg;
  std::string timeline_svg;
  std::string timeline_caption;
};

/// The most rows a report lists: a page a browser renders at once (about 1 kB a row).
inline constexpr std::size_t kHtmlMaxRows = 1000;

[[nodiscard]] std::string html_report(const HtmlReportInput& in);

} // namespace zerosearch
