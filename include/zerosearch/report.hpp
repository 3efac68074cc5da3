#pragma once
// Ranking and output: the original's CSV, a readable table, JSON.
#include <ostream>
#include <string>
#include <vector>

#include "zerosearch/cluster.hpp"
#include "zerosearch/search.hpp"

namespace zerosearch {

/// The rows of one cluster composition (one run of the search), with what names them.
struct RunResult {
  Cluster cluster;
  std::vector<Placement> placements;
  std::vector<ResultRow> rows;
};

/// A result row with its ranks (SPEC 5).
struct RankedRow {
  const RunResult* run = nullptr;
  const ResultRow* row = nullptr;
  /// 1-based rank by step time, ties share the lowest rank.
  int rank = 0;
  /// The same among non-OOM rows; 0 for OOM rows.
  int real_rank = 0;
  /// On the front of price per step against step time (set by mark_pareto_front).
  bool on_front = false;
};

/// All rows of all runs, sorted by step time (stable: enumeration order breaks ties), with
/// rank and real_rank assigned.
[[nodiscard]] std::vector<RankedRow> rank_results(const std::vector<RunResult>& runs);

/// Python's repr() of a float64: shortest round-trip digits, "0.0" style for integral values.
[[nodiscard]] std::string python_float(double v);
/// "[6, 5, 5]"
[[nodiscard]] std::string python_int_list(const std::vector<int>& v);
/// "['A10', 'A6000']"
[[nodiscard]] std::string python_str_list(const std::vector<std::string>& v);
/// "16-24": partition[0]-1, the middle entries, partition[-1]-1.
[[nodiscard]] std::string exp_partition(const std::vector<int>& partition);

struct CsvOptions {
  /// The original's --pretty column order.
  bool pretty = false;
  /// Adds a last column `pareto` (True/False: the row is on the price/step-time front).
  bool pareto_column = false;
};

/// The CSV header, in the original's column order (or its --pretty order).
[[nodiscard]] std::vector<std::string> csv_columns(const std::vector<std::string>& type_names,
                                                   const CsvOptions& options = {});

/// Writes rows (ranked and sorted) in the original's CSV format, as pandas' to_csv writes it.
/// `type_names` are the node-count column names in command-line order; every run's cluster
/// must list its node types in that order.
void write_csv(std::ostream& out, const std::vector<RankedRow>& rows,
               const std::vector<std::string>& type_names, const CsvOptions& options = {});

/// A CSV field quoted as Python's csv module does with QUOTE_MINIMAL.
[[nodiscard]] std::string csv_field(const std::string& text);

} // namespace zerosearch
