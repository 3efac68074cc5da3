#pragma once
// The ranked rows for people and for scripts: row selection (--feasible, --top), an aligned
// table for the screen and JSON with native types. The CSV itself is in report.hpp.
#include <array>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/core/enum_table.hpp"
#include "zerosearch/io/report.hpp"

namespace zerosearch {

/// What a run writes to standard output: the readable summary, the ranked rows as CSV, JSON or
/// the aligned table (--format, --pretty, -o -), or nothing (-q). The facts of each are one
/// table, kReportFormats; the writers are write_csv (report.hpp), write_json and write_table.
enum class ReportFormat : std::uint8_t { summary, csv, json, table, none };

struct ReportFormatInfo {
  ReportFormat id;
  /// --format's word, or nullptr where --format cannot ask for it.
  const char* name;
  /// One row per placement (the original's CSV), distinct rows only with --distinct.
  bool per_placement;
  /// It shows distinct rows (one per design point, the best placement): the summary, the table.
  bool distinct_rows;
  /// It prints the ranked rows themselves, every row the selection keeps (csv, json, table);
  /// the summary picks its own few (its 10 best that fit) and `none` prints nothing.
  bool lists_rows;
  /// One line for the docs.
  const char* summary;
};

/// The table: one row per format, in the enum's order.
inline constexpr auto kReportFormats = std::to_array<ReportFormatInfo>({
    {ReportFormat::summary, nullptr, false, true, false,
     "the default: the best plans that fit, the search's size and notes"},
    {ReportFormat::csv, "csv", true, false, true,
     "the original's CSV (pandas to_csv), one row per placement"},
    {ReportFormat::json, "json", true, false, true,
     "a JSON array, one object per row, the CSV's keys"},
    {ReportFormat::table, "table", false, true, true,
     "an aligned table of distinct rows, the original's --pretty column order"},
    {ReportFormat::none, nullptr, false, false, false, "nothing but errors (-q)"},
});

static_assert(rows_follow_enum(kReportFormats),
              "kReportFormats rows must follow the ReportFormat enum's order");

[[nodiscard]] constexpr std::span<const ReportFormatInfo> report_formats() noexcept {
  return kReportFormats;
}
[[nodiscard]] constexpr const ReportFormatInfo& info(ReportFormat f) noexcept {
  return kReportFormats[static_cast<std::size_t>(f)];
}
/// --format's words joined with ", " and `last` before the last: "csv, json or table".
[[nodiscard]] std::string report_format_names(const char* last = ", ");
/// --format's word. Throws InputError "unknown --format 'TEXT' (allowed: csv, json, table)".
[[nodiscard]] ReportFormat parse_report_format(const std::string& text);

/// Which ranked rows an output shows.
struct RowSelection {
  /// Leave out rows that do not fit in GPU memory (--feasible).
  bool feasible_only = false;
  /// At most this many rows, best first; 0 means all (--top).
  std::size_t top = 0;
};

/// The rows of `ranked` (sorted by rank_results) that `selection` keeps, in order. Ranks are
/// not recomputed: a row keeps the rank it has among all rows.
[[nodiscard]] std::vector<RankedRow> select_rows(const std::vector<RankedRow>& ranked,
                                                 const RowSelection& selection);

/// Writes `rows` as a JSON array with one object per row. The keys are the CSV's columns, in
/// its order (csv_columns); the values are native: integers, numbers, booleans, an array of
/// node types for "node placement" and of layer counts for "partition". Ends with a newline.
void write_json(std::ostream& out, const std::vector<RankedRow>& rows,
                const std::vector<std::string>& type_names, const CsvOptions& options = {});

/// Writes `rows` as a table with aligned columns in the original's --pretty column order:
/// times in seconds to 4 decimals, memory in GiB to 2, prices in dollars, placements
/// compressed. Numbers are right-aligned, text left-aligned. `distinct`: the distinct layout
/// (CsvOptions::distinct), for rows of distinct_rows.
void write_table(std::ostream& out, const std::vector<RankedRow>& rows,
                 const std::vector<std::string>& type_names, bool distinct = false,
                 bool numbered = false);
/// The same with the given columns (the summary's subset, say). `numbered`: a first column
/// `#`, the row's position in `rows` from 1 (what --rank N names).
void write_table(std::ostream& out, const std::vector<RankedRow>& rows,
                 const std::vector<Column>& layout, bool numbered = false);

} // namespace zerosearch
