#pragma once
// Mixture-of-experts and expert parallelism in the native estimator (issue 27, docs/moe.md):
// MoE parallel folding (attention on tp x cp x dp, experts on etp x ep x edp of the same GPUs
// of a stage), the token dispatch/combine all-to-all, the split of a stage's parameters into
// the dense part (sharded by tp, ZeRO over dp x cp) and the routed experts (sharded by ep x etp,
// ZeRO over edp). Pure functions: no I/O, no state.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/core/model.hpp"

namespace zerosearch {

/// Tokens of the busiest expert rank over the average (--moe_imbalance). The default, 1, is
/// balanced routing: what Megatron-LM's FLOP and memory formulas and the grouped-GEMM sizes of
/// a dropless MoE assume. A measured router's MaxVio (max load / mean load - 1, Wang et al.
/// 2024, arXiv:2408.15664) gives 1 + MaxVio.
inline constexpr double kDefaultMoeImbalance = 1.0;

/// The load the busiest expert rank gets: the imbalance, capped by the capacity factor when
/// the model drops tokens beyond it (capacity_factor > 0), never below 1.
[[nodiscard]] double effective_moe_imbalance(const ModelSpec& m, double imbalance) noexcept;

/// Why `p`'s expert layout is not possible for model `m` (a one-line reason naming the values
/// and what is allowed), or an empty string: ep and etp only for an MoE model; ep divides the
/// experts; etp divides the expert FFN width; etp x ep divides the tp x cp x dp GPUs of a stage
/// (edp integral); methods that shard parameters take their frameworks' layouts: etp = tp
/// with ep 1; with ep > 1, fsdp (torchtitan's FSDP2) etp 1 or tp, zero3 (DeepSpeed AutoEP)
/// etp 1 and cp 1 (docs/moe.md §2.1).
[[nodiscard]] std::string moe_invalid_reason(const ModelSpec& m, const DesignPoint& p);

/// Transformer layers of pipeline rank j that are MoE layers, for a partition of pipeline
/// entries (embedding and post-process included, as native_partition gives) and, when
/// interleaved, the model chunks of interleaved_chunks.
[[nodiscard]] int stage_moe_layers(const ModelSpec& m, const DesignPoint& p,
                                   const std::vector<int>& partition, int j);

/// Parameters one GPU of a stage holds before data-parallel sharding: the dense part (attention,
/// norms, router, shared experts, dense layers, embedding, LM head) / tp, the routed experts /
/// (ep x etp).
struct StageShards {
  double dense = 0.0;
  double expert = 0.0;
  [[nodiscard]] double local() const noexcept { return dense + expert; }
  /// What ZeRO keeps on one GPU: dense / (dp x cp) + expert / edp.
  [[nodiscard]] double sharded(double dp, double edp) const noexcept {
    return dense / dp + expert / edp;
  }
};
/// `stage_params` (the stage's parameters, all experts) with `moe_layers` MoE layers.
[[nodiscard]] StageShards stage_shards(const ModelSpec& m, const DesignPoint& p,
                                       double stage_params, int moe_layers) noexcept;

/// One link tier of an all-to-all: bandwidth per GPU (bytes/s) and latency per call (s).
struct A2aLink {
  double bytes_per_s = 1.0;
  double latency_s = 0.0;
};

/// An all-to-all in which each of n ranks sends `bytes` spread evenly over the n ranks (itself
/// included), `intra` of them in its node: (intra - 1)/n of the bytes over the node's link,
/// (n - intra)/n over the network, both at once; the slower sets the time, plus the latency of
/// the slowest tier crossed (the sends run concurrently, one call).
[[nodiscard]] double all_to_all_s(double bytes, int n, int intra, const A2aLink& node,
                                  const A2aLink& network) noexcept;

/// Megatron-Core's token dispatcher (--moe_dispatcher; docs/moe.md §3.2):
/// `alltoall` (MoEAlltoAllTokenDispatcher: each of a token's top-k expert copies is sent to its
/// expert's rank) or the flex dispatcher (MoEFlexTokenDispatcher, --moe-token-dispatcher-type
/// flex) with DeepEP or HybridEP (--moe-flex-dispatcher-backend deepep|hybridep), which send a
/// token once to each node holding one of its experts and forward it there once to each rank
/// holding one (megatron/core/transformer/moe/token_dispatcher.py and fused_a2a.py at
/// NVIDIA/Megatron-LM@d98e8a64; deepseek-ai/DeepEP csrc/kernels/internode.cu).
enum class MoeDispatcher { alltoall, deepep, hybridep };

[[nodiscard]] const char* moe_dispatcher_name(MoeDispatcher d) noexcept;
/// The dispatcher named `text` (alltoall, deepep or hybridep: moe_dispatcher_name's names), or
/// nullopt.
[[nodiscard]] inline std::optional<MoeDispatcher> moe_dispatcher_named(std::string_view text) {
  for (const MoeDispatcher d : {MoeDispatcher::alltoall, MoeDispatcher::deepep,
                                MoeDispatcher::hybridep}) {
    if (text == moe_dispatcher_name(d)) return d;
  }
  return std::nullopt;
}
[[nodiscard]] inline bool flex_dispatcher(MoeDispatcher d) noexcept {
  return d != MoeDispatcher::alltoall;
}

/// The chance that one of `groups` equal groups of experts (experts / groups each) holds at
/// least one of a token's `topk` experts under uniform routing without repeats:
/// 1 - C(E - E/groups, k) / C(E, k). 1 when groups is 1; 0 without experts.
[[nodiscard]] double group_hit_share(int experts, int topk, int groups) noexcept;

/// The flex dispatcher's dispatch (or combine) over n expert-parallel ranks, `intra` of them in
/// a node (or NVLink domain), N = n / intra nodes: each GPU's tokens (`token_bytes`: one copy of
/// every token) go over the network once per other node holding one of a token's top-k
/// experts, (N - 1) x group_hit_share(E, k, N) copies, and over NVLink once per rank holding one
/// that is not the GPU the token entered its node by, (n - N) x group_hit_share(E, k, n) copies
/// (DeepEP's internode dispatch: RDMA to the same-index GPU of each destination node, then
/// NVLink forwarding by is_token_in_nvl_rank). Both tiers at once, plus the slowest tier's
/// latency, as all_to_all_s.
[[nodiscard]] double flex_all_to_all_s(double token_bytes, int experts, int topk, int n,
                                       int intra, const A2aLink& node,
                                       const A2aLink& network) noexcept;

/// Ranks of one expert-parallel group inside a node: ep ranks at a stride of etp (expert ranks:
/// etp innermost, then ep, then edp), at most ep.
[[nodiscard]] int ep_ranks_per_node(const DesignPoint& p, int gpus_per_node) noexcept;

/// Bytes one GPU sends in one dispatch of one MoE layer for one micro-batch: its
/// s x mbs / (tp x cp) tokens (cp share, sequence-parallel split), top-k copies of h elements each, times the imbalance (the
/// busiest rank receives that much).
[[nodiscard]] double dispatch_bytes(const ModelSpec& m, const DesignPoint& p, double elem_bytes,
                                    double imbalance) noexcept;

/// Megatron-Core's EP all-to-all overlap (--moe_a2a_overlap on; Megatron-LM
/// --overlap-moe-expert-parallel-comm with --delay-wgrad-compute, docs/moe.md §3.1): one
/// micro-batch's forward runs layer by layer beside another's backward, the forward's dispatch
/// and combine hidden by the backward's compute and the backward's by the forward's
/// (megatron/core/pipeline_parallel/combined_1f1b.py). Megatron runs it only with expert
/// parallelism, without full recomputation, and with no pipeline or an interleaved one
/// (TransformerConfig.__post_init__: 'virtual_pipeline_model_parallel_size must be specified
/// when pipeline_model_parallel_size > 1'); true when `p` is such a plan of an MoE model on
/// the 1F1B or interleaved 1F1B schedule.
[[nodiscard]] bool moe_a2a_overlap_runs(const ModelSpec& m, const DesignPoint& p) noexcept;

/// Model-chunk passes of pipeline rank r (of pp, v chunks each, m micro-batches) that run as
/// combined forward-and-backward pairs under the overlap: with pp 1 every micro-batch but the
/// first (its forward runs alone, then F(i+1) with B(i), then the last backward alone:
/// combined_1f1b_schedule_for_no_pipelining), m - 1; interleaved, the m v passes less the
/// warm-up forwards, 2 (pp - r - 1) + (v - 1) pp + 1 (schedules.py,
/// get_pp_rank_microbatches: one more forward before the first pair with the overlap), at
/// least 0.
[[nodiscard]] double moe_a2a_overlap_pairs(int pp, int r, int v, int m) noexcept;

/// The all-to-all time one combined pair hides: the forward's all-to-all behind the backward's
/// compute and the backward's behind the forward's, each up to that compute (the same rule as
/// a DualPipe F&B pair, zero_bubble.hpp overlapped_s).
[[nodiscard]] double moe_a2a_hidden_s(double a2a_forward_s, double a2a_backward_s,
                                      double forward_compute_s, double backward_compute_s) noexcept;

} // namespace zerosearch
