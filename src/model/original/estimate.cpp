#include "zerosearch/model/estimate.hpp"

#include <cstdint>
#include <cstring>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/core/parity.hpp"
#include "zerosearch/model/memory.hpp"
#include "zerosearch/model/pipeline.hpp"

namespace zerosearch {

const char* to_string(PartitionMethod m) noexcept {
  switch (m) {
  case PartitionMethod::minmax: return "minmax";
  case PartitionMethod::ga: return "ga";
  case PartitionMethod::optimal: return "optimal";
  }
  return "?";
}

PartitionMethod parse_partition_method(const std::string& text) {
  if (text == "minmax") return PartitionMethod::minmax;
  if (text == "ga") return PartitionMethod::ga;
  if (text == "optimal") return PartitionMethod::optimal;
  throw InputError(
      fmt::format("unknown search method '{}' (allowed: minmax, ga, optimal)", text));
}

const GpuProfile* profile_for(const EstimateContext& ctx, int g, DpMethod m) noexcept {
  const auto& v = flavour_of(m) == Flavour::megatron ? ctx.megatron_profiles : ctx.deepspeed_profiles;
  return v[static_cast<std::size_t>(g)];
}

LayerCosts layer_costs(const EstimateContext& ctx, const DesignPoint& p) {
  // Forward + backward as multiples of the profiled forward time.
  const double factor = info(p.method).compute_factor;
  LayerCosts out;
  out.by_type.resize(ctx.cluster.groups.size());
  for (std::size_t g = 0; g < ctx.cluster.groups.size(); ++g) {
    if (ctx.cluster.groups[g].count == 0) {
      continue;
    }
    const GpuProfile* prof = profile_for(ctx, static_cast<int>(g), p.method);
    const auto it = prof ? prof->layer_times_s.find(p.tp) : decltype(prof->layer_times_s.end()){};
    if (prof == nullptr || it == prof->layer_times_s.end()) {
      throw InputError(fmt::format("no {} profile for {} on {} at tp {}", to_string(flavour_of(p.method)),
                                   ctx.model.name, ctx.cluster.groups[g].gpu, p.tp));
    }
    const auto& raw = it->second;
    auto& v = out.by_type[g];
    v.resize(raw.size());
    const std::size_t last = raw.size() - 1;
    for (std::size_t j = 0; j < raw.size(); ++j) {
      const bool end_layer = j == 0 || j == last;
      const double scale = (end_layer && prof->ends_per_micro_batch) ? 1.0 : static_cast<double>(p.mbs);
      // The original stacks dp identical rows of these costs and takes torch.mean over them.
      v[j] = torch_mean_column(scale * (factor * raw[j]), p.dp, static_cast<std::int64_t>(j),
                               static_cast<std::int64_t>(raw.size()));
    }
  }
  return out;
}

namespace {

/// The bits of a float for hashing, with -0 as +0 (they compare equal).
std::uint64_t float_bits(float v) noexcept {
  if (v == 0.0F) {
    return 0;
  }
  std::uint32_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

} // namespace

// Called once per placement of every design point: an inline mix of the raw values, not
// std::hash (which runs a byte-wise hash per float).
std::size_t PlacementFeaturesHash::operator()(const PlacementFeatures& f) const noexcept {
  std::uint64_t h = float_bits(f.ring_bits_per_s) * 0x9e3779b97f4a7c15ULL ^ float_bits(f.embedding_sync_s);
  const auto mix = [&h](std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  for (const int g : f.stage_gpu) {
    mix(static_cast<std::uint32_t>(g));
  }
  for (const float l : f.link_s) {
    mix(float_bits(l));
  }
  return static_cast<std::size_t>(h ^ (h >> 29));
}

PlacementFeatures placement_features(const EstimateContext& ctx, const DesignPoint& p,
                                     const Placement& placement) {
  const RankLayout layout{p.tp, p.dp, p.pp, ctx.cluster.gpus_per_node};
  PlacementFeatures f;
  f.stage_gpu = stage_gpu_types(p.pp, placement, ctx.slowness);
  const float activation_elems = static_cast<float>(p.mbs) *
                                 static_cast<float>(ctx.model.sequence_length) *
                                 static_cast<float>(ctx.model.hidden_size);
  f.link_s = pipeline_link_times_s(layout, placement, ctx.links, activation_elems);
  f.ring_bits_per_s = dp_ring_bandwidth_bits_per_s(layout, placement, ctx.links);
  f.embedding_sync_s = embedding_sync_time_s(layout, placement, ctx.links,
                                             static_cast<double>(ctx.model.hidden_size),
                                             static_cast<double>(ctx.model.vocab_size),
                                             ctx.precision_bits);
  return f;
}

StepModel step_model(const EstimateContext& ctx, const DesignPoint& p, const LayerCosts& costs,
                     const PlacementFeatures& features) {
  StepModel m;
  m.problem.stage_layer_costs.reserve(features.stage_gpu.size());
  m.stage_limit_gib.reserve(features.stage_gpu.size());
  for (const int g : features.stage_gpu) {
    m.problem.stage_layer_costs.push_back(&costs.by_type[static_cast<std::size_t>(g)]);
    m.stage_limit_gib.push_back(ctx.memory_limit_gib[static_cast<std::size_t>(g)]);
  }
  m.problem.link_s.assign(features.link_s.begin(), features.link_s.end());
  m.micro_batches = p.num_micro_batches;
  m.micro_batches_f32 = torch_rdiv(static_cast<float>(ctx.global_batch),
                                   static_cast<float>(p.dp) * static_cast<float>(p.mbs));
  m.share = info(p.method).forward_share;
  m.method = p.method;
  m.dp = p.dp;
  m.tp = static_cast<float>(p.tp);
  m.hidden = static_cast<float>(ctx.model.hidden_size);
  m.vocab = static_cast<float>(ctx.model.vocab_size);
  m.precision_bits = ctx.precision_bits;
  m.ring_bits_per_s = features.ring_bits_per_s;
  m.embedding_sync_s = features.embedding_sync_s;
  return m;
}

StepModel step_model(const EstimateContext& ctx, const DesignPoint& p, const LayerCosts& costs,
                     const Placement& placement, std::vector<int>* stage_gpu) {
  PlacementFeatures f = placement_features(ctx, p, placement);
  StepModel m = step_model(ctx, p, costs, f);
  if (stage_gpu != nullptr) {
    *stage_gpu = std::move(f.stage_gpu);
  }
  return m;
}

Estimate estimate(const EstimateContext& ctx, const DesignPoint& p, const LayerCosts& costs,
                  const Placement& placement, const std::vector<int>& partition,
                  EstimateDetail* detail) {
  return estimate(ctx, p, costs, placement_features(ctx, p, placement), partition, detail);
}

Estimate estimate(const EstimateContext& ctx, const DesignPoint& p, const LayerCosts& costs,
                  const PlacementFeatures& features, const std::vector<int>& partition,
                  EstimateDetail* detail) {
  const StepModel model = step_model(ctx, p, costs, features);
  if (!valid_partition(partition, p.pp, model.layers())) {
    throw InputError(fmt::format("partition {} is not {} stages of at least one layer summing "
                                 "to {}",
                                 fmt::join(partition, ","), p.pp, model.layers()));
  }
  PartitionResult part;
  part.partition = partition;
  part.times = stage_times(model.problem, partition);
  return evaluate_partition(ctx, p, model, features.stage_gpu, std::move(part), detail);
}

Estimate evaluate_partition(const EstimateContext& ctx, const DesignPoint& p,
                            const StepModel& model, const std::vector<int>& stage_gpu,
                            PartitionResult part, EstimateDetail* detail) {
  std::vector<double> stage_end = model.pipeline_ends(part.times);
  return evaluate_pipeline(ctx, p, model, stage_gpu, std::move(part), std::move(stage_end),
                           detail);
}

bool same_pipeline(const DesignPoint& a, const DesignPoint& b) noexcept {
  const DpMethodInfo& ia = info(a.method);
  const DpMethodInfo& ib = info(b.method);
  // Every field but the method equal, so that a field added to DesignPoint is compared too.
  DesignPoint b_as_a = b;
  b_as_a.method = a.method;
  return ia.flavour == ib.flavour && ia.compute_factor == ib.compute_factor &&
         ia.forward_share == ib.forward_share && a == b_as_a;
}

Estimate evaluate_pipeline(const EstimateContext& ctx, const DesignPoint& p,
                           const StepModel& model, const std::vector<int>& stage_gpu,
                           PartitionResult part, std::vector<double> stage_end,
                           EstimateDetail* detail) {
  const double step = model.step_from_ends(part.partition[0], stage_end);
  const MemoryEstimate mem = estimate_memory(ctx.model, p, part.partition, model.stage_limit_gib,
                                             ctx.cluster.gpus_per_node, ctx.global_batch);

  Estimate e;
  e.step_s = step;
  e.pipeline_s = stage_end[0];
  e.dp_sync_s = static_cast<double>(model.dp_sync_s(part.partition[0]));
  e.embedding_sync_s = static_cast<double>(model.embedding_sync_s);
  e.oom = mem.oom;
  e.gpumem_gib = static_cast<double>(mem.gpumem_gib);
  e.price_per_step_usd = ctx.price_per_s_usd * e.step_s;
  e.train_cost_usd = e.price_per_step_usd * static_cast<double>(ctx.iterations);
  if (detail != nullptr) {
    detail->stage_gpu = stage_gpu;
    detail->times = std::move(part.times);
    detail->stage_end_s = std::move(stage_end);
    detail->link_s.assign(model.problem.link_s.begin(), model.problem.link_s.end());
    detail->stage_mem_gib = stage_memory_gib(ctx.model, p, part.partition,
                                             ctx.cluster.gpus_per_node, ctx.global_batch);
    detail->stage_limit_gib = model.stage_limit_gib;
  }
  e.partition = std::move(part.partition);
  return e;
}

Estimate to_estimate(const EstimateContext& ctx, const NativeEstimate& n) {
  Estimate e;
  e.partition = n.partition;
  e.step_s = n.step_s;
  e.pipeline_s = n.pipeline_s;
  e.dp_sync_s = n.dp_sync_s;
  e.embedding_sync_s = n.embedding_sync_s;
  e.native.optimizer_s = static_cast<float>(n.optimizer_s);
  e.native.offload_s = static_cast<float>(n.offload_s);
  e.oom = n.oom;
  e.gpumem_gib = n.peak_memory_gib;
  e.native.host_gib_per_node = static_cast<float>(n.host_gib_per_node);
  for (const NativeStage& st : n.stages) {
    e.native.a2a_s = std::max(e.native.a2a_s, static_cast<float>(st.moe_comm_s));
    e.native.cp_s = std::max(e.native.cp_s, static_cast<float>(st.cp_comm_s));
  }
  if (!n.stages.empty()) {
    const NativeMemory& m = n.stages[static_cast<std::size_t>(n.peak_stage)].memory;
    e.native.peak_memory = {static_cast<float>(m.weights),     static_cast<float>(m.gradients),
                     static_cast<float>(m.optimizer),   static_cast<float>(m.activations),
                     static_cast<float>(m.buffers),     static_cast<float>(m.overhead)};
  }
  e.native.slices.assign(n.slices.begin(), n.slices.end());
  e.price_per_step_usd = ctx.price_per_s_usd * e.step_s;
  e.train_cost_usd = e.price_per_step_usd * static_cast<double>(ctx.iterations);
  return e;
}

Estimate estimate_native(const EstimateContext& ctx, const DesignPoint& p,
                         const Placement& placement, const std::vector<int>& partition,
                         NativeEstimate* detail) {
  const NativeContext& n = *ctx.native;
  const NativePlacement where = native_placement(n, p, placement);
  if (const std::string why = native_invalid_reason(n, p, where); !why.empty()) {
    throw InputError(why);
  }
  NativeEstimate ne = native_estimate(n, p, where, partition);
  Estimate e = to_estimate(ctx, ne);
  if (detail != nullptr) {
    *detail = std::move(ne);
  }
  return e;
}

} // namespace zerosearch
