#pragma once
// Which layer partition a design point gets on a placement (--search_method: minmax, ga,
// optimal; docs/model.md §4, §6.5) and its estimate with that partition. The model evaluates a
// given partition (model/estimate.hpp); the search chooses it, here.
#include <memory>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/model/memory.hpp"
#include "zerosearch/model/optimal.hpp"
#include "zerosearch/model/partition.hpp"
#include "zerosearch/model/step_model.hpp"

namespace zerosearch {

/// What the searching partitioners (ga, optimal) found for one design point, keyed by
/// everything their choice depends on besides the point (stage GPU types, link times, ring
/// bandwidth, embedding sync): placements that agree on all of these reuse the partition
/// without searching again, and get exactly what a search would give. Also keeps the point's
/// memory table. One per design point; not shared between threads. `optimal`, when given, is
/// the search-wide memo of optimal_partition's results (OptimalMemo, shared between threads),
/// which design points with the same pipeline problem reuse.
class PartitionMemo {
public:
  explicit PartitionMemo(OptimalMemo* optimal = nullptr) noexcept : optimal_(optimal) {}
  [[nodiscard]] OptimalMemo* optimal() const noexcept { return optimal_; }
  struct Entry {
    std::vector<double> key;
    PartitionResult result;
  };
  /// The memory table of `p`, built on first use. `p` must be the same on every call.
  const StageMemoryTable& memory(const EstimateContext& ctx, const DesignPoint& p);
  [[nodiscard]] const PartitionResult* find(const std::vector<double>& key) const noexcept;
  void store(std::vector<double> key, PartitionResult result);

private:
  std::unique_ptr<StageMemoryTable> memory_;
  std::vector<Entry> entries_;
  OptimalMemo* optimal_ = nullptr;
};

/// The partition ctx.partition_method chooses for `p` on a placement whose stages run on the
/// node types `stage_gpu` and whose step-time model is `model` (step_model(ctx, p, ...)), with
/// the stage times the schedule uses. minmax, and every pp == 1 point: minmax_partition. ga:
/// ga_partition seeded with minmax's partition. optimal: optimal_partition, kept only when it
/// fits and is strictly faster than minmax's partition where that fits. `memo`, when given,
/// must belong to this design point (see PartitionMemo); results are the same with or without.
[[nodiscard]] PartitionResult choose_partition(const EstimateContext& ctx, const DesignPoint& p,
                                               const std::vector<int>& stage_gpu,
                                               const StepModel& model,
                                               PartitionMemo* memo = nullptr);

/// Estimates design point `p` from its placement's features with the partition
/// choose_partition gives. `costs` must come from layer_costs(ctx, p); `detail`, when given,
/// receives the per-stage breakdown.
[[nodiscard]] Estimate choose_and_estimate(const EstimateContext& ctx, const DesignPoint& p,
                                           const LayerCosts& costs,
                                           const PlacementFeatures& features,
                                           PartitionMemo* memo = nullptr,
                                           EstimateDetail* detail = nullptr);

/// Estimates design point `p` on `placement` with the partition choose_partition gives; see
/// the overload above.
[[nodiscard]] Estimate choose_and_estimate(const EstimateContext& ctx, const DesignPoint& p,
                                           const LayerCosts& costs, const Placement& placement,
                                           PartitionMemo* memo = nullptr,
                                           EstimateDetail* detail = nullptr);

} // namespace zerosearch
