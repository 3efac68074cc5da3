#include "zerosearch/model/moe.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/model/native.hpp"

namespace zerosearch {

double effective_moe_imbalance(const ModelSpec& m, double imbalance) noexcept {
  double x = std::max(1.0, imbalance);
  if (m.capacity_factor > 0.0) {
    // Tokens beyond capacity x average are dropped: no rank gets more than that.
    x = std::min(x, std::max(1.0, m.capacity_factor));
  }
  return x;
}

namespace {

/// The expert layouts the frameworks that shard parameters run (docs/moe.md §2.1). Without
/// expert parallelism the experts are split as the dense MLP (etp = tp). torchtitan's FSDP2
/// (the fsdp method) takes ep from dp_shard x cp x tp with etp 1 or etp = tp
/// (torchtitan/distributed/parallel_dims.py at v0.2.2, _validate: 'Currently we only support
/// ETP=TP or ETP=1'). DeepSpeed ZeRO-3 (zero3) shards experts only as AutoEP layers, with
/// expert_tensor_parallel_size 1 and no sequence parallelism (deepspeed/runtime/engine.py,
/// _validate_zero3_moe_compatibility, DeepSpeed >= 0.19.3).
std::string sharded_expert_reason(const DesignPoint& p) {
  const char* method = to_string(p.method);
  if (p.method == DpMethod::zero3 && p.tp > 1) {
    // A dense model's ZeRO-3 runs beside Megatron's tensor parallelism (Megatron-DeepSpeed,
    // DpMethodInfo::native_allows_tensor_parallel); an MoE model's runs only as AutoEP layers,
    // which take none (engine.py _validate_zero3_moe_compatibility rejects AutoTP).
    return fmt::format("tp {} with zero3 on an MoE model: DeepSpeed ZeRO-3 runs MoE layers only "
                       "as AutoEP layers, which take no tensor parallelism ('AutoEP with ZeRO "
                       "Stage 3 does not support AutoTP yet', deepspeed/runtime/engine.py); tp 1",
                       p.tp);
  }
  if (p.ep == 1) {
    if (p.etp != p.tp) {
      return fmt::format("--ep 1 --etp {} with {}: without expert parallelism the experts are "
                         "split as the dense MLP (etp = tp {})",
                         p.etp, method, p.tp);
    }
    return {};
  }
  if (p.method == DpMethod::zero3) {
    if (p.etp != 1) {
      return fmt::format("--ep {} --etp {} with zero3: DeepSpeed ZeRO-3 shards experts only as "
                         "AutoEP layers, with expert_tensor_parallel_size 1 (etp 1)",
                         p.ep, p.etp);
    }
    if (p.cp > 1) {
      return fmt::format("--ep {} --cp {} with zero3: DeepSpeed's AutoEP with ZeRO Stage 3 does "
                         "not support sequence parallelism (cp 1)",
                         p.ep, p.cp);
    }
    return {};
  }
  if (p.etp != 1 && p.etp != p.tp) {
    return fmt::format("--ep {} --etp {} with {}: torchtitan's FSDP2 runs expert parallelism with "
                       "etp 1 or etp = tp {} only",
                       p.ep, p.etp, method, p.tp);
  }
  return {};
}

} // namespace

std::string moe_invalid_reason(const ModelSpec& m, const DesignPoint& p) {
  if (!m.is_moe()) {
    if (p.ep > 1 || p.etp > 1) {
      return fmt::format("--ep {} --etp {}: {} is a dense model (expert parallelism needs "
                         "num_experts > 0)",
                         p.ep, p.etp, m.name);
    }
    return {};
  }
  if (p.ep < 1 || p.etp < 1) {
    return fmt::format("--ep {} --etp {}: both must be at least 1", p.ep, p.etp);
  }
  if (m.num_experts % p.ep != 0) {
    return fmt::format("--ep {} does not divide the {} experts of {}", p.ep, m.num_experts,
                       m.name);
  }
  if (m.moe_ffn_hidden_size % p.etp != 0) {
    return fmt::format("--etp {} does not divide the expert FFN width {} of {}", p.etp,
                       m.moe_ffn_hidden_size, m.name);
  }
  // The tp x cp x dp GPUs of a stage (MoE parallel folding).
  const long long stage = static_cast<long long>(p.tp) * p.cp * p.dp;
  const long long experts = static_cast<long long>(p.ep) * p.etp;
  if (stage % experts != 0) {
    return fmt::format("--etp {} x --ep {} = {} does not divide tp {}{} x dp {} = {} (the GPUs of "
                       "a pipeline stage hold the experts as etp x ep x edp)",
                       p.etp, p.ep, experts, p.tp,
                       p.cp > 1 ? fmt::format(" x cp {}", p.cp) : std::string(), p.dp, stage);
  }
  if (info(p.method).native.shard_level >= 3) {
    return sharded_expert_reason(p);
  }
  return {};
}

int stage_moe_layers(const ModelSpec& m, const DesignPoint& p, const std::vector<int>& partition,
                     int j) {
  if (!m.is_moe() || partition.empty()) return 0;
  const int pp = static_cast<int>(partition.size());
  if (p.virtual_stages > 1 && pp > 1) {
    // Chunk k of interleaved 1F1B is on rank k % pp, its layers in model order.
    const std::vector<int> chunks =
        interleaved_chunks(static_cast<int>(m.num_layers), pp, p.virtual_stages);
    std::int64_t first = 0;
    int moe = 0;
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      if (static_cast<int>(k % static_cast<std::size_t>(pp)) == j) {
        moe += static_cast<int>(moe_layers_in(m, first, chunks[k]));
      }
      first += chunks[k];
    }
    return moe;
  }
  std::int64_t first = 0;
  for (int i = 0; i < j; ++i) {
    first += partition[static_cast<std::size_t>(i)] - (i == 0 ? 1 : 0);
  }
  const int entries = partition[static_cast<std::size_t>(j)];
  const int layers = entries - (j == 0 ? 1 : 0) - (j == pp - 1 ? 1 : 0);
  return static_cast<int>(moe_layers_in(m, first, layers));
}

StageShards stage_shards(const ModelSpec& m, const DesignPoint& p, double stage_params,
                         int moe_layers) noexcept {
  StageShards s;
  const double experts = static_cast<double>(moe_layers) *
                         static_cast<double>(expert_parameters(m));
  if (experts <= 0.0) {
    s.dense = stage_params / p.tp;
    return s;
  }
  s.dense = (stage_params - experts) / p.tp;
  s.expert = experts / (static_cast<double>(p.ep) * p.etp);
  return s;
}

double all_to_all_s(double bytes, int n, int intra, const A2aLink& node,
                    const A2aLink& network) noexcept {
  if (n <= 1 || bytes <= 0.0) return 0.0;
  intra = std::clamp(intra, 1, n);
  const double share = bytes / n;
  const double inside = (intra - 1) * share / node.bytes_per_s;
  const double outside = (n - intra) * share / network.bytes_per_s;
  const double latency = n > intra ? network.latency_s : node.latency_s;
  return latency + std::max(inside, outside);
}

const char* moe_dispatcher_name(MoeDispatcher d) noexcept {
  switch (d) {
  case MoeDispatcher::deepep: return "deepep";
  case MoeDispatcher::hybridep: return "hybridep";
  case MoeDispatcher::alltoall: break;
  }
  return "alltoall";
}

double group_hit_share(int experts, int topk, int groups) noexcept {
  if (experts <= 0 || topk <= 0 || groups <= 0) return 0.0;
  if (groups == 1) return 1.0;
  // C(E - E/g, k) / C(E, k) = prod_{i < k} (E - E/g - i) / (E - i): the chance none of the k
  // distinct experts is among the group's E/g.
  const double e = experts;
  const double outside = e - e / groups;
  double none = 1.0;
  for (int i = 0; i < topk; ++i) {
    const double num = outside - i;
    if (num <= 0.0) return 1.0;
    none *= num / (e - i);
  }
  return 1.0 - none;
}

double flex_all_to_all_s(double token_bytes, int experts, int topk, int n, int intra,
                         const A2aLink& node, const A2aLink& network) noexcept {
  if (n <= 1 || token_bytes <= 0.0) return 0.0;
  intra = std::clamp(intra, 1, n);
  const int nodes = (n + intra - 1) / intra;
  const double net_copies = (nodes - 1) * group_hit_share(experts, topk, nodes);
  const double nvl_copies = (n - nodes) * group_hit_share(experts, topk, n);
  const double inside = nvl_copies * token_bytes / node.bytes_per_s;
  const double outside = net_copies * token_bytes / network.bytes_per_s;
  const double latency = nodes > 1 ? network.latency_s : node.latency_s;
  return latency + std::max(inside, outside);
}

int ep_ranks_per_node(const DesignPoint& p, int gpus_per_node) noexcept {
  const int per_node = std::max(1, gpus_per_node / std::max(1, static_cast<int>(p.etp)));
  return std::max(1, std::min(static_cast<int>(p.ep), per_node));
}

double dispatch_bytes(const ModelSpec& m, const DesignPoint& p, double elem_bytes,
                      double imbalance) noexcept {
  // This GPU's tokens: its cp share of the sequence, split over tp (sequence parallel).
  const double tokens = static_cast<double>(m.sequence_length) * p.mbs / (p.tp * p.cp);
  return imbalance * tokens * static_cast<double>(m.experts_per_token) *
         static_cast<double>(m.hidden_size) * elem_bytes;
}

bool moe_a2a_overlap_runs(const ModelSpec& m, const DesignPoint& p) noexcept {
  if (!m.is_moe() || p.ep <= 1 || p.recompute == Recompute::full) return false;
  if (p.pp == 1) return p.schedule == Schedule::one_f_one_b;
  return p.schedule == Schedule::interleaved && p.virtual_stages > 1;
}

double moe_a2a_overlap_pairs(int pp, int r, int v, int m) noexcept {
  const double passes = static_cast<double>(m) * v;
  if (pp <= 1) return std::max(0.0, static_cast<double>(m) - 1.0);
  // Megatron-Core's warm-up forwards, then the first steady forward runs alone.
  const double warmup = interleaved_warmup_forwards(pp, v, m, r) + 1.0;
  return std::max(0.0, passes - warmup);
}

double moe_a2a_hidden_s(double a2a_forward_s, double a2a_backward_s, double forward_compute_s,
                        double backward_compute_s) noexcept {
  return std::min(std::max(0.0, a2a_forward_s), std::max(0.0, backward_compute_s)) +
         std::min(std::max(0.0, a2a_backward_s), std::max(0.0, forward_compute_s));
}

} // namespace zerosearch
