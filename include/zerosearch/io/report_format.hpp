#pragma once
// The ranked rows for people and for scripts: row selection (--feasible, --top), an aligned
// table for the screen and JSON with native types. The CSV itself is in report.hpp.
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/io/report.hpp"

namespace zerosearch {

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
