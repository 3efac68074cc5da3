#include "zerosearch/estimate.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "zerosearch/error.hpp"
#include "zerosearch/memory.hpp"
#include "zerosearch/pipeline.hpp"

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

double torch_mean_of_identical(double x, int n) noexcept {
  // ATen's CPU sum over an outer dimension (multi_row_sum): rows are added in blocks of 16,
  // block sums carried up through four levels, then the levels added together.
  constexpr int kLevels = 4;
  constexpr int kStep = 16; // max(4, ceil(log2(n)) / 4) bits for any n below 2^20
  double acc[kLevels] = {0.0, 0.0, 0.0, 0.0};
  int i = 0;
  while (i + kStep <= n) {
    for (int j = 0; j < kStep; ++j, ++i) {
      acc[0] += x;
    }
    for (int level = 1; level < kLevels; ++level) {
      acc[level] += acc[level - 1];
      acc[level - 1] = 0.0;
      const int mask = (kStep - 1) << (level * 4);
      if ((i & mask) != 0) {
        break;
      }
    }
  }
  for (; i < n; ++i) {
    acc[0] += x;
  }
  for (int level = 1; level < kLevels; ++level) {
    acc[0] += acc[level];
  }
  return acc[0] / static_cast<double>(n);
}

LayerCosts layer_costs(const EstimateContext& ctx, const DesignPoint& p) {
  // Forward + backward as multiples of the profiled forward time.
  double factor = 3.0;
  if (p.method == DpMethod::zero3) {
    factor = (1.0 * 1.6) * 4.0;
  } else if (flavour_of(p.method) == Flavour::deepspeed) {
    factor = 4.0;
  }
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
      v[j] = torch_mean_of_identical(scale * (factor * raw[j]), p.dp);
    }
  }
  return out;
}

std::size_t PlacementFeaturesHash::operator()(const PlacementFeatures& f) const noexcept {
  std::size_t h = std::hash<float>{}(f.ring_bps) ^ (std::hash<float>{}(f.embedding_sync_s) << 1);
  const auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const int g : f.stage_gpu) {
    mix(std::hash<int>{}(g));
  }
  for (const float l : f.link_s) {
    mix(std::hash<float>{}(l));
  }
  return h;
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
  f.ring_bps = dp_ring_bandwidth_bps(layout, placement, ctx.links);
  f.embedding_sync_s = embedding_sync_time_s(layout, placement, ctx.links,
                                             static_cast<double>(ctx.model.hidden_size),
                                             static_cast<double>(ctx.model.vocab_size),
                                             ctx.precision_bits);
  return f;
}

Estimate estimate(const EstimateContext& ctx, const DesignPoint& p, const LayerCosts& costs,
                  const Placement& placement, const std::vector<int>& partition,
                  EstimateDetail* detail) {
  return estimate(ctx, p, costs, placement_features(ctx, p, placement), partition, detail);
}

Estimate estimate(const EstimateContext& ctx, const DesignPoint& p, const LayerCosts& costs,
                  const PlacementFeatures& features, const std::vector<int>& partition,
                  EstimateDetail* detail) {
  const std::vector<int>& stage_gpu = features.stage_gpu;

  PartitionProblem problem;
  problem.stage_layer_costs.reserve(stage_gpu.size());
  for (const int g : stage_gpu) {
    problem.stage_layer_costs.push_back(&costs.by_type[static_cast<std::size_t>(g)]);
  }
  const std::vector<float>& links = features.link_s;
  problem.link_s.assign(links.begin(), links.end());

  PartitionResult part;
  if (!partition.empty()) {
    part.partition = partition;
    part.times = stage_times(problem, partition);
  } else {
    part = minmax_partition(problem);
  }

  // Pipeline: pp == 1 is m * compute, in float32 (the original's micro-batch count is a float32
  // tensor); otherwise the 1F1B simulation in float64.
  const float m_f32 = torch_rdiv(static_cast<float>(ctx.global_batch),
                                static_cast<float>(p.dp) * static_cast<float>(p.mbs));
  std::vector<double> stage_end;
  double pipeline_s = 0.0;
  if (p.pp == 1) {
    const float t = m_f32 * static_cast<float>(part.times.comp_s[0]);
    stage_end.push_back(static_cast<double>(t));
    pipeline_s = static_cast<double>(t);
  } else {
    const ForwardShare share = (p.method == DpMethod::zero0 || p.method == DpMethod::zero1)
                                   ? ForwardShare::quarter
                                   : ForwardShare::third;
    stage_end = simulate_1f1b(p.num_micro_batches, part.times, share);
    pipeline_s = stage_end[0];
  }

  const float hidden = static_cast<float>(ctx.model.hidden_size);
  const float vocab = static_cast<float>(ctx.model.vocab_size);
  const float params = stage0_param_count(part.partition[0], problem.layers(), hidden, vocab,
                                          static_cast<float>(p.tp));
  const float dp_s =
      dp_sync_time_s(p.method, p.dp, params, ctx.precision_bits, features.ring_bps, m_f32);
  const float emb_s = features.embedding_sync_s;

  // Each stage's end plus the data-parallel time, in float32; the first maximum wins.
  float slowest = 0.0F;
  for (std::size_t s = 0; s < stage_end.size(); ++s) {
    const float t = static_cast<float>(stage_end[s]) + dp_s;
    if (s == 0 || t > slowest) {
      slowest = t;
    }
  }
  const float step = slowest + emb_s;

  std::vector<float> limits;
  limits.reserve(stage_gpu.size());
  for (const int g : stage_gpu) {
    limits.push_back(ctx.memory_limit_gib[static_cast<std::size_t>(g)]);
  }
  const MemoryEstimate mem =
      estimate_memory(ctx.model, p, part.partition, limits, ctx.cluster.gpus_per_node,
                      ctx.global_batch);

  Estimate e;
  e.step_s = static_cast<double>(step);
  e.pipeline_s = pipeline_s;
  e.dp_sync_s = static_cast<double>(dp_s);
  e.embedding_sync_s = static_cast<double>(emb_s);
  e.oom = mem.oom;
  e.gpumem_gib = static_cast<double>(mem.gpumem_gib);
  e.price_per_step_usd = ctx.price_per_s_usd * e.step_s;
  e.train_cost_usd = e.price_per_step_usd * static_cast<double>(ctx.iterations);
  if (detail != nullptr) {
    detail->stage_gpu = stage_gpu;
    detail->times = part.times;
    detail->stage_end_s = stage_end;
    detail->link_s = links;
    detail->stage_mem_gib = mem.stage_gib;
  }
  e.partition = std::move(part.partition);
  return e;
}

} // namespace zerosearch
