#pragma once
// The search: every design point on every placement, estimated in parallel, keeping the rows
// the outputs need (all, or the --top, --feasible or distinct ones) while it runs.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "zerosearch/model/estimate.hpp"

namespace zerosearch {

struct ResultRow {
  DesignPoint point;
  /// Index into the placements the search was given.
  int placement = 0;
  /// Placements this row stands for: 1, or for a distinct row (RowFilter::distinct) the number
  /// of placements of its design point with this very estimate; `placement` is the first.
  /// (In the padding before `estimate`: rows take no more memory.)
  std::uint32_t placements = 1;
  Estimate estimate;
};

/// Estimates are the same to the bit (every figure, the partition, the OOM flag).
[[nodiscard]] bool same_estimate(const Estimate& a, const Estimate& b) noexcept;
/// A hash consistent with same_estimate.
[[nodiscard]] std::size_t estimate_hash(const Estimate& e) noexcept;

/// Which rows the search keeps. The default keeps every row.
struct RowFilter {
  /// One row per design point and distinct estimate, standing for every placement that gives it.
  bool distinct = false;
  /// Leave out rows that do not fit in GPU memory.
  bool feasible_only = false;
  /// Keep the `top` first rows in rank order (step time, then enumeration order); 0: all.
  std::size_t top = 0;
  /// Also the `oom_top` first OOM rows in rank order (distinct rows when `distinct`), in
  /// SearchResult::oom_rows, whatever the fields above keep: the native summary names the
  /// settings that make the fastest OOM plans fit. Ignored when every row is kept.
  std::size_t oom_top = 0;
  /// Also every row that fits and that no other row that fits beats on both step time and price
  /// per step (the front of mark_pareto_front; rows equal on both alike), whatever the fields
  /// above keep: a Pareto sweep's front and its limits need no other row. Ignored when every
  /// row is kept.
  bool front = false;
  /// Also the step time and price of every row that fits (one per distinct row when
  /// `distinct`), in SearchResult::points, whatever the fields above keep: a chart of every
  /// plan without holding the rows.
  bool points = false;
};

/// A row's two figures for a chart, and a key that orders the points of one search as their
/// rows are ordered (enumeration order).
struct RowPoint {
  double step_s = 0.0;
  double price_usd = 0.0;
  std::uint64_t key = 0;
};

/// Step times of rows left out by RowFilter::feasible_only, with how many rows each stands
/// for: they still count in the ranks of the kept rows.
struct LeftOutTime {
  double step_s = 0.0;
  std::uint64_t rows = 0;
};

struct SearchProgress {
  std::size_t done = 0;
  std::size_t total = 0;
};

struct SearchOptions {
  /// Worker threads; 0 means one per hardware thread.
  unsigned threads = 0;
  /// Called from the calling thread every few milliseconds while the search runs (may be empty).
  std::function<void(const SearchProgress&)> on_progress;
  /// The rows to keep. Each worker keeps only its candidates (a bounded heap for `top`), so
  /// memory grows with the rows kept, not with the estimates.
  RowFilter keep;
  /// Skip the pipeline simulation of split-schedule plans (zb-h1, zb-h2, zbv, dualpipe,
  /// dualpipev) whose lower bound already ranks them past the rows kept so far
  /// (RowKeeper::prune_limits): exact, the result is the same as without. Off: every plan
  /// simulated (tests compare the two). Nothing is skipped when every row is kept.
  bool prune = true;
};

struct SearchResult {
  /// The kept rows in enumeration order (point-major, then placement), RowFilter::front's
  /// among them. Ranks (rank_results) are exact for the rows `top` and `feasible_only` keep;
  /// those of a row only `front` keeps count only the kept rows before it.
  std::vector<ResultRow> rows;
  /// Every estimate of the search, kept or not, and how many of them do not fit in memory.
  std::uint64_t estimates = 0;
  std::uint64_t oom = 0;
  /// How many of them were left unfinished by SearchOptions::prune (counted above, never kept).
  std::uint64_t pruned = 0;
  /// OOM rows left out (feasible_only) faster than the slowest kept row, by step time, equal
  /// times merged.
  std::vector<LeftOutTime> left_out;
  /// RowFilter::oom_top's rows, in rank order (empty when every row is kept).
  std::vector<ResultRow> oom_rows;
  /// RowFilter::points': every row that fits, in enumeration order (also when every row is
  /// kept).
  std::vector<RowPoint> points;
};

/// Estimates every point on every placement and keeps the rows of `options.keep`. The result
/// does not depend on the thread count.
[[nodiscard]] SearchResult search(const EstimateContext& ctx, const std::vector<DesignPoint>& points,
                                  const PlacementSet& placements, const SearchOptions& options = {});

/// Every row (options.keep is ignored), in enumeration order.
[[nodiscard]] std::vector<ResultRow> run_search(const EstimateContext& ctx,
                                                const std::vector<DesignPoint>& points,
                                                const PlacementSet& placements,
                                                const SearchOptions& options = {});

} // namespace zerosearch
