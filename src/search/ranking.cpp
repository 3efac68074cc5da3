#include "zerosearch/search/ranking.hpp"
#include "zerosearch/model/estimator.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_map>

#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/model/native.hpp"

namespace zerosearch {

double RunThroughput::tokens_per_gpu_s(double step_s) const noexcept {
  return static_cast<double>(tokens_per_step) / step_s / std::max(gpus, 1);
}

double RunThroughput::mfu_percent(double step_s) const noexcept {
  if (peak_flops <= 0.0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return 100.0 * model_flops_per_step / step_s / peak_flops;
}

bool overlaps_comm(const RunResult& run, DpMethod method) noexcept {
  if (!estimator_info(run.estimator).models_comm_overlap) {
    return false;
  }
  const FrameworkParams& fw = framework_params(method);
  return fw.shard_level >= 3 || run.overlap_grad_reduce.value_or(fw.dp_overlap > 0.0);
}

const char* memory_fit(const RunResult& run, const Estimate& e) noexcept {
  if (e.oom) {
    return "OOM";
  }
  return e.gpumem_gib > run.margin_limit_gib ? "within margin" : "fits";
}

RunThroughput run_throughput(const EstimateContext& ctx, const HardwareCatalog& hardware) {
  RunThroughput t;
  t.seq_len = ctx.model.sequence_length;
  t.tokens_per_step = static_cast<std::int64_t>(ctx.global_batch) * ctx.model.sequence_length;
  t.model_flops_per_step =
      training_flops_per_sequence(ctx.model, ctx.model.sequence_length,
                                  megatron_padded_vocab(ctx.model.vocab_size)) *
      ctx.global_batch;
  t.gpus = ctx.cluster.world_size();
  bool all_bf16 = true;
  for (const NodeGroup& g : ctx.cluster.groups) {
    const GpuSpec* gpu = g.count > 0 ? hardware.find_gpu(g.gpu) : nullptr;
    all_bf16 = all_bf16 && (gpu == nullptr || gpu->peak_tflops.bf16.has_value());
  }
  const Dtype dtype = all_bf16 ? Dtype::bf16 : Dtype::fp16;
  t.peak_dtype = to_string(dtype);
  for (const NodeGroup& g : ctx.cluster.groups) {
    if (g.count == 0) {
      continue;
    }
    const GpuSpec* gpu = hardware.find_gpu(g.gpu);
    const std::optional<double> peak =
        gpu != nullptr ? gpu->peak_tflops.of(dtype) : std::optional<double>();
    if (!peak) {
      t.peak_flops = 0.0;
      break;
    }
    t.peak_flops += *peak * 1e12 * g.count * ctx.cluster.gpus_per_node;
  }
  return t;
}

std::vector<RankedRow> rank_results(const std::vector<RunResult>& runs) {
  std::vector<RankedRow> out;
  std::size_t n = 0;
  std::vector<LeftOutTime> left_out;
  for (const auto& run : runs) {
    n += run.rows.size();
    left_out.insert(left_out.end(), run.left_out.begin(), run.left_out.end());
  }
  std::sort(left_out.begin(), left_out.end(),
            [](const LeftOutTime& a, const LeftOutTime& b) { return a.step_s < b.step_s; });
  out.reserve(n);
  for (const auto& run : runs) {
    for (const auto& row : run.rows) {
      out.push_back(RankedRow{&run, &row, 0, 0, false, row.placements});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const RankedRow& a, const RankedRow& b) {
    return a.row->estimate.step_s < b.row->estimate.step_s;
  });
  // pandas rank(method='min'): 1 + the number of strictly smaller values, each row counted
  // as the placements it stands for, left-out (OOM) rows included.
  std::uint64_t before = 0;          // rows (weighted) ranked so far
  std::uint64_t feasible_before = 0; // of which fit in memory
  std::uint64_t left_out_before = 0; // left-out rows faster than the current time
  std::size_t next_left_out = 0;
  double last_time = 0.0;
  double last_feasible_time = 0.0;
  int last_rank = 0;
  int last_real_rank = 0;
  bool any_feasible = false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double t = out[i].row->estimate.step_s;
    while (next_left_out < left_out.size() && left_out[next_left_out].step_s < t) {
      left_out_before += left_out[next_left_out++].rows;
    }
    out[i].rank = (i > 0 && t == last_time) ? last_rank
                                            : static_cast<int>(before + left_out_before) + 1;
    last_rank = out[i].rank;
    last_time = t;
    if (!out[i].row->estimate.oom) {
      out[i].real_rank = (any_feasible && t == last_feasible_time)
                             ? last_real_rank
                             : static_cast<int>(feasible_before) + 1;
      last_real_rank = out[i].real_rank;
      last_feasible_time = t;
      any_feasible = true;
      feasible_before += out[i].placements;
    }
    before += out[i].placements;
  }
  return out;
}

std::vector<RankedRow> distinct_rows(const std::vector<RankedRow>& ranked) {
  struct Key {
    const RankedRow* r;
  };
  struct Hash {
    std::size_t operator()(const Key& k) const noexcept {
      const DesignPoint& p = k.r->row->point;
      std::size_t h = estimate_hash(k.r->row->estimate);
      for (const long long v : {static_cast<long long>(p.method), static_cast<long long>(p.tp),
                                static_cast<long long>(p.dp), static_cast<long long>(p.pp),
                                static_cast<long long>(p.mbs)}) {
        h ^= static_cast<std::size_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      }
      return h ^ std::hash<const void*>()(k.r->run);
    }
  };
  struct Equal {
    bool operator()(const Key& a, const Key& b) const noexcept {
      const DesignPoint& p = a.r->row->point;
      const DesignPoint& q = b.r->row->point;
      return a.r->run == b.r->run && p.method == q.method && p.tp == q.tp && p.dp == q.dp &&
             p.pp == q.pp && p.mbs == q.mbs &&
             same_estimate(a.r->row->estimate, b.r->row->estimate);
    }
  };
  std::vector<RankedRow> out;
  std::unordered_map<Key, std::size_t, Hash, Equal> first;
  for (const RankedRow& r : ranked) {
    const auto [it, added] = first.emplace(Key{&r}, out.size());
    if (added) {
      out.push_back(r);
    } else {
      out[it->second].placements += r.placements;
    }
  }
  return out;
}

} // namespace zerosearch
