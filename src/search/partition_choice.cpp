#include "zerosearch/search/partition_choice.hpp"

#include <limits>

#include "zerosearch/model/ga.hpp"
#include "zerosearch/model/optimal.hpp"

namespace zerosearch {

const StageMemoryTable& PartitionMemo::memory(const EstimateContext& ctx, const DesignPoint& p) {
  if (!memory_) {
    memory_ = std::make_unique<StageMemoryTable>(ctx.model, p, ctx.cluster.gpus_per_node,
                                                 ctx.global_batch);
  }
  return *memory_;
}

const PartitionResult* PartitionMemo::find(const std::vector<double>& key) const noexcept {
  for (const Entry& e : entries_) {
    if (e.key == key) {
      return &e.result;
    }
  }
  return nullptr;
}

void PartitionMemo::store(std::vector<double> key, PartitionResult result) {
  entries_.push_back(Entry{std::move(key), std::move(result)});
}

PartitionResult choose_partition(const EstimateContext& ctx, const DesignPoint& p,
                                 const std::vector<int>& stage_gpu, const StepModel& model,
                                 PartitionMemo* memo) {
  if (ctx.partition_method == PartitionMethod::minmax || p.pp == 1) {
    return minmax_partition(model.problem);
  }
  std::vector<double> key;
  if (memo != nullptr) {
    key.assign(stage_gpu.begin(), stage_gpu.end());
    key.insert(key.end(), model.problem.link_s.begin(), model.problem.link_s.end());
    key.push_back(static_cast<double>(model.ring_bits_per_s));
    key.push_back(static_cast<double>(model.embedding_sync_s));
    if (const PartitionResult* known = memo->find(key)) {
      return *known;
    }
  }
  std::unique_ptr<StageMemoryTable> own;
  if (memo == nullptr) {
    own = std::make_unique<StageMemoryTable>(ctx.model, p, ctx.cluster.gpus_per_node,
                                             ctx.global_batch);
  }
  const StageMemoryTable& memory = memo != nullptr ? memo->memory(ctx, p) : *own;
  PartitionResult minmax = minmax_partition(model.problem);
  PartitionResult out;
  if (ctx.partition_method == PartitionMethod::ga) {
    out.partition = ga_partition(model, memory, ga_point_seed(ctx.seed, p), {minmax.partition});
    out.times = stage_times(model.problem, out.partition);
  } else {
    // Only a fitting partition strictly faster than minmax's estimate replaces it, so optimal
    // never reports a slower step time than minmax for a point minmax fits.
    const double to_beat = model.fits(minmax.partition, memory)
                               ? model.step_from_times(minmax.partition[0], minmax.times)
                               : std::numeric_limits<double>::infinity();
    if (auto best = optimal_partition(model, memory, to_beat, nullptr, kOptimalNodeBudget,
                                      memo != nullptr ? memo->optimal() : nullptr)) {
      out.partition = std::move(*best);
      out.times = stage_times(model.problem, out.partition);
    } else {
      out = std::move(minmax);
    }
  }
  if (memo != nullptr) {
    memo->store(std::move(key), out);
  }
  return out;
}

Estimate choose_and_estimate(const EstimateContext& ctx, const DesignPoint& p,
                             const LayerCosts& costs, const PlacementFeatures& features,
                             PartitionMemo* memo, EstimateDetail* detail) {
  const StepModel model = step_model(ctx, p, costs, features);
  PartitionResult part = choose_partition(ctx, p, features.stage_gpu, model, memo);
  return evaluate_partition(ctx, p, model, features.stage_gpu, std::move(part), detail);
}

Estimate choose_and_estimate(const EstimateContext& ctx, const DesignPoint& p,
                             const LayerCosts& costs, const Placement& placement,
                             PartitionMemo* memo, EstimateDetail* detail) {
  return choose_and_estimate(ctx, p, costs, placement_features(ctx, p, placement), memo, detail);
}

} // namespace zerosearch
