#pragma once
// The steps of search() (search/search.hpp), each testable alone:
//   1. work_units: which design points are evaluated together;
//   2. estimate_unit: one unit's estimates on every placement, one overload per estimator
//      (model/estimator.hpp), picked once per search;
//   3. run_parallel: the worker pool that takes the units in turn and reports progress;
//   4. RowKeeper: the row policy (RowFilter): every row, distinct rows, or the top / OOM / front
//      rows of each worker, then merged and ranked into the SearchResult.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/model/estimator.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/model/optimal.hpp"
#include "zerosearch/search/search.hpp"

namespace zerosearch::search_steps {

/// One estimate of a design point and the placements that give it: `first` is the first of
/// them, `count` how many.
struct PlacementGroup {
  Estimate estimate;
  int first = 0;
  std::uint32_t count = 0;
  /// Its pipeline was not simulated (UnitEstimates::prune): only `estimate.oom` is exact, and
  /// the row counts in the search's totals without being kept.
  bool pruned = false;
};

/// Step 1. The search's work units, indices into `points`: with an estimator that
/// shares_pipelines, the points it gives the same pipeline on every placement (same_pipeline)
/// when the partition is minmax's, which does not depend on the data-parallel method; each
/// other point alone; the native estimator's split-schedule points (pp > 1) of one
/// configuration (same_configuration) together. Longest first (pp x (micro-batches + pp)), so that no worker is left with
/// a long unit at the end; the split schedules' points (zero_bubble.hpp) after all others, so
/// that the rows kept by then rule out most of their simulations (RowKeeper::prune_limits). Results do not depend on the order in which workers take the units.
[[nodiscard]] std::vector<std::vector<std::size_t>> work_units(
    const EstimateContext& ctx, const std::vector<DesignPoint>& points);

/// What estimate_unit fills, reused from one unit to the next by a worker.
struct UnitEstimates {
  /// Per point of the unit: its groups (the first unit.size() entries are the unit's).
  std::vector<std::vector<PlacementGroup>> groups;
  /// Per placement: its group, the same index in every point of the unit.
  std::vector<std::uint32_t> group_of;
  Placement placement; // scratch
  /// Step times past which the unit's rows cannot be kept (RowKeeper::prune_limits): the
  /// native estimator skips the simulation of such split-schedule plans (NativePruning).
  NativePruning prune;
  /// Scratch of the native estimator: the unit's points and their estimates on one placement.
  std::vector<const DesignPoint*> unit_points;
  std::vector<NativeEstimate> native;
  /// Scratch of the native estimator: a placement's stages, and the distinct ones of the unit
  /// (the first `native_seen_n` entries), their buffers reused from one unit to the next.
  NativePlacement native_where;
  std::vector<NativePlacement> native_seen;
  std::size_t native_seen_n = 0;
  /// Set by the search for a unit of a 1F1B point whose configuration's split schedules run
  /// later: what its estimate on the first placement computed goes there
  /// (native_estimate_keeping). Else null.
  NativeConfigSharePtr* keep_share = nullptr;
  /// Set for a configuration's split-schedule unit whose 1F1B point kept that: its estimates on
  /// the first placement start from it (native_estimates' seed). Else null.
  const NativeConfigShare* seed_share = nullptr;
};

/// Step 2. Estimates every point of `unit` on every placement into `out`: placements that give
/// the same estimate share a group. The original's groups placements of equal features
/// (PlacementFeatures) and computes the layer costs, the partition and the pipeline's stage
/// ends once for the whole unit; `shared_optimal` keeps optimal_partition's results for points
/// that pose the same problem (nullptr unless --search_method optimal).
void estimate_unit(OriginalEstimator, const EstimateContext& ctx,
                   const std::vector<DesignPoint>& points, const std::vector<std::size_t>& unit,
                   const PlacementSet& placements, OptimalMemo* shared_optimal,
                   UnitEstimates& out);
/// The native estimator's: placements whose stages run on the same node types with the same
/// node crossings (NativePlacement) share an estimate; units are single points, or the
/// split-schedule points of one configuration (native_estimates).
void estimate_unit(NativeEstimator, const EstimateContext& ctx,
                   const std::vector<DesignPoint>& points, const std::vector<std::size_t>& unit,
                   const PlacementSet& placements, OptimalMemo* shared_optimal,
                   UnitEstimates& out);

/// Step 3. The worker threads of a search: `threads` workers (the caller's thread alone when
/// 1) take units 0 .. units-1 in turn and call work(unit, worker), which returns the number of
/// rows it estimated. The first exception a worker throws stops the others and is rethrown.
/// `on_progress`, when set, hears the rows done so far out of `total`, never going back.
void run_parallel(std::size_t units, unsigned threads, std::size_t total,
                  const std::function<void(const SearchProgress&)>& on_progress,
                  const std::function<std::size_t(std::size_t unit, unsigned worker)>& work);

/// The worker count of a search of `units` units and `total` rows: `requested` (0: one per
/// hardware thread), at most one per unit, and 1 for searches too small to gain from threads.
[[nodiscard]] unsigned search_threads(unsigned requested, std::size_t units,
                                      std::size_t total) noexcept;

/// Merges groups of different features that still give the same estimate into `distinct`,
/// the first placement standing for all.
void merge_same_estimates(std::vector<PlacementGroup>& groups,
                          std::vector<PlacementGroup>& distinct);

/// Step 4. The row policy of a search (RowFilter): what each point's groups become. `take` may
/// be called from `workers` threads at once, each with its own worker index, for different
/// points; finish() then merges the workers' rows and ranks them.
class RowKeeper {
public:
  RowKeeper(const RowFilter& keep, std::size_t points, std::size_t per_point, unsigned workers);
  RowKeeper(const RowKeeper&) = delete;
  RowKeeper& operator=(const RowKeeper&) = delete;
  ~RowKeeper();

  /// Takes the estimates of point `i` (= p), evaluated by `worker`: its groups and, for each
  /// placement, its group. May reorder `groups`.
  void take(unsigned worker, std::size_t i, const DesignPoint& p,
            std::vector<PlacementGroup>& groups, const std::vector<std::uint32_t>& group_of);

  /// The search's result: every row in enumeration order (or every distinct row, point by
  /// point), or the kept rows of a filtered search in enumeration order with its counts,
  /// left-out times, OOM rows, front and points.
  [[nodiscard]] SearchResult finish();

  /// Step times past which no row that `worker` takes next can be kept, whatever the rest of
  /// the search finds (a fitting row, an OOM row): with RowFilter::top, once the worker holds
  /// `top` rows, its last kept row's step time (and the last of its `oom_top` OOM rows'); no
  /// limit when every row is kept (--exhaustive), or with RowFilter::front or points. A row
  /// strictly past its limit ranks after `top` rows the search keeps, so leaving its estimate
  /// unfinished changes no output; only its OOM flag must be exact (the totals count it).
  [[nodiscard]] NativePruning prune_limits(unsigned worker) const;
  /// Whether prune_limits can ever give a limit (a filtered search that keeps a top that is
  /// neither a front nor every point).
  [[nodiscard]] bool can_prune() const noexcept;

  struct Worker; // one worker's kept rows (search.cpp)

private:
  RowFilter keep_;
  std::size_t per_point_ = 0;
  std::size_t total_ = 0;
  bool keep_all_ = false;
  SearchResult result_;
  std::vector<std::vector<ResultRow>> distinct_rows_;
  std::vector<Worker> workers_;
};

} // namespace zerosearch::search_steps
