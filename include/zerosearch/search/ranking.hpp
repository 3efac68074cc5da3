#pragma once
// Ranking of result rows by step time (docs/model.md §5).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/search/search.hpp"

namespace zerosearch {

/// A native run's step-time interval for one framework family: the ratios measured / predicted
/// that bound the given share of published runs of its regime (io/uncertainty.hpp), and what
/// they rest on. low = high = 0: no interval.
struct StepSpread {
  double low = 0, high = 0;
  /// "80 % of similar published runs", "80 % of published runs on A100-80GB (its regime ...
  /// has 3 runs)", or why there is none.
  std::string basis;
};

/// The rows of one cluster composition (one run of the search), with what names them.
struct RunResult {
  Cluster cluster;
  PlacementSet placements;
  /// The rows the search kept, in enumeration order.
  std::vector<ResultRow> rows;
  /// Rows the search left out (--feasible) that rank before kept rows: they count in ranks.
  std::vector<LeftOutTime> left_out;
  /// The fastest OOM rows, in rank order, when the search kept them apart (RowFilter::oom_top).
  std::vector<ResultRow> oom_rows;
  /// Every estimate of the run, kept or not, and how many of them are OOM (SearchResult's).
  std::uint64_t estimates = 0;
  std::uint64_t oom = 0;
  /// Where the per-layer profiles came from (profile_source_text); a field of JSON rows.
  std::string profile_source;
  /// The model that estimated the rows; native rows carry more columns (columns.hpp).
  Estimator estimator = Estimator::zerosearch;
  /// Native runs: the step-time interval per framework family of a row's data-parallel method
  /// (step_spread_index), set by the CLI from profiledb/uncertainty.json; empty otherwise.
  std::array<StepSpread, 3> step_spread{};
};

/// The index into RunResult::step_spread of a method's framework family (the native model's,
/// docs/native.md section 4): 0 megatron (dp), 1 deepspeed (zero0-3), 2 fsdp.
[[nodiscard]] constexpr std::size_t step_spread_index(DpMethod m) noexcept {
  return m == DpMethod::dp ? 0 : m == DpMethod::fsdp ? 2 : 1;
}

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
  /// Placements the row stands for: the row's own count (ResultRow::placements), or after
  /// distinct_rows the rows it collapsed.
  /// (uint32, in the padding after on_front: ranked rows take no more memory.)
  std::uint32_t placements = 1;
};

/// All rows of all runs, sorted by step time (stable: enumeration order breaks ties), with
/// rank and real_rank assigned. A row standing for several placements counts as that many
/// rows in the ranks of the rows after it, and so do the runs' left-out rows.
[[nodiscard]] std::vector<RankedRow> rank_results(const std::vector<RunResult>& runs);

/// The distinct rows of `ranked`: rows of one run and design point with the same estimate
/// (same_estimate) collapse into the first of them, which stands for the placements of all
/// (RankedRow::placements) and keeps its rank. Order is kept.
[[nodiscard]] std::vector<RankedRow> distinct_rows(const std::vector<RankedRow>& ranked);

} // namespace zerosearch
