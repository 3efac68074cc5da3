#pragma once
// Ranking of result rows by step time (docs/model.md §5).
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/search/search.hpp"

namespace zerosearch {

/// The rows of one cluster composition (one run of the search), with what names them.
struct RunResult {
  Cluster cluster;
  std::vector<Placement> placements;
  std::vector<ResultRow> rows;
  /// Where the per-layer profiles came from (profile_source_text); a field of JSON rows.
  std::string profile_source;
  /// The model that estimated the rows; native rows carry more columns (columns.hpp).
  Estimator estimator = Estimator::zerosearch;
};

/// A result row with its ranks (docs/model.md §5).
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

} // namespace zerosearch
