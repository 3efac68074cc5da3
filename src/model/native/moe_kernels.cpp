// The kernels and host synchronisations of one MoE layer (docs/native.md §2.2, "MoE layers").
#include "zerosearch/model/moe_kernels.hpp"

#include <algorithm>

namespace zerosearch {

namespace {

/// Megatron-Core (NVIDIA/Megatron-LM d98e8a64, megatron/core/transformer/moe/), forward.
MoeLayerKernels megatron_core(const ModelSpec& m, int tp, int ep, int etp) {
  const int local = static_cast<int>(std::max<std::int64_t>(1, m.num_experts / std::max(1, ep)));
  const int t = etp > 0 ? etp : tp; // the dispatcher's tp group is the experts' (etp)
  MoeLayerKernels k;
  // router.py TopKRouter.forward: the gate GEMM (a linear call), TE's fused top-k with its
  // score function (moe_utils.py topk_routing_with_score_function, fused=True); with an
  // expert bias, _apply_expert_bias's routing_map.sum and the add into local_tokens_per_expert.
  k.linear += 1;
  k.kernels += 1;
  if (m.router_bias) k.kernels += 2;
  // token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess: routing_map.sum(dim=0); with
  // ep > 1 or tp > 1 the input splits (a sum), the all-gather of the counts over the tp x ep
  // group, the local experts' slice made contiguous, the per-rank, per-tp-rank and per-local-
  // expert sums; then _maybe_dtoh_and_synchronize copies tokens_per_expert, input_splits,
  // output_splits and output_splits_tp to the host (one copy each; tokens_per_expert alone
  // without ep and tp).
  if (ep > 1 || t > 1) {
    k.kernels += 7 + 4;
  } else {
    k.kernels += 1 + 1;
  }
  // dispatch_preprocess: permute (TE's fused_permute_with_probs); token_dispatch: the tokens'
  // and the probabilities' all-to-all (ep > 1); dispatch_postprocess: their all-gather over
  // etp (etp > 1) and the sort by local expert (several local experts, fused).
  k.kernels += 1;
  if (ep > 1) k.kernels += 2;
  if (t > 1) k.kernels += 2;
  if (local > 1) k.kernels += 1;
  // experts.py TEGroupedMLP: fc1 and fc2 are Transformer Engine GroupedLinear calls, each a
  // cuBLAS GEMM per local expert launched in one C++ loop; between them the (fused) weighted
  // activation.
  k.linear += 2;
  k.loop += 2 * (local - 1);
  k.kernels += 1;
  // combine_preprocess: the sort back (several local experts), the reduce-scatter over etp
  // (etp > 1); token_combine: the all-to-all (ep > 1); combine_postprocess: unpermute (fused).
  if (local > 1) k.kernels += 1;
  if (t > 1) k.kernels += 1;
  if (ep > 1) k.kernels += 1;
  k.kernels += 1;
  // shared_experts.py: fc1 and fc2 linear calls and the activation (and the gate: a linear,
  // its sigmoid and the product), then the add into the routed output.
  if (m.shared_expert_ffn_hidden_size > 0) {
    k.linear += 2;
    k.kernels += 1 + 1;
    if (m.shared_expert_gate) {
      k.linear += 1;
      k.kernels += 2;
    }
  }
  // One synchronisation per forward: the dropless dispatcher reads the split sizes on the host
  // at its cuda_sync_point (before the all-to-all with ep or tp > 1, else before returning the
  // counts); there is none in backward (the splits are kept).
  k.syncs = 1;
  return k;
}

/// torchtitan v0.2.2 (torchtitan/models/moe/moe.py, torchtitan/distributed/expert_parallel.py),
/// forward, eager.
MoeLayerKernels torchtitan(const ModelSpec& m, int ep) {
  MoeLayerKernels k;
  // TokenChoiceTopKRouter.forward: the gate (a linear call), the cast to float32, the score
  // function, (the expert bias added), topk, gather of the top scores, the route scale, histc.
  k.linear += 1;
  k.kernels += 6 + (m.router_bias ? 1 : 0);
  // MoE.forward: tokens_per_expert.add_; TokenReorderer: histc, argsort, the scores gathered;
  // the routed input indexed (floor-divide, index) and scaled by its score before the experts
  // (cast, multiply, cast back).
  k.kernels += 1 + 3 + 2 + 3;
  if (ep > 1) {
    // ExpertParallel._token_dispatch: the counts' all-to-all, the input splits (sum and a
    // copy to the host), the output splits (sum and a blocking copy: the synchronisation), the
    // tokens' all-to-all, _permute (generate_permute_indices, the index).
    k.kernels += 1 + 2 + 2 + 1 + 2;
    k.syncs = 1;
  } else {
    // indices_padding_wrapper: generate_permute_indices and the index.
    k.kernels += 2;
  }
  // GroupedExperts (_run_experts_grouped_mm): the offsets' cumsum, three torch._grouped_mm
  // (one kernel each for every local expert), silu, the product.
  k.kernels += 1 + 3 + 2;
  // The unpermute (zeros, index_put), the combine all-to-all (ep > 1); the top-k copies put
  // back in token order (zeros, index_put) and summed.
  k.kernels += 2 + (ep > 1 ? 1 : 0) + 3;
  if (m.shared_expert_ffn_hidden_size > 0) {
    // FeedForward: w1, w3, w2 linear calls, silu and the product; the add.
    k.linear += 3;
    k.kernels += 2 + 1;
  }
  return k;
}

} // namespace

MoeLayerKernels moe_layer_kernels(const ModelSpec& m, bool fused, int tp, int ep,
                                  int etp) noexcept {
  return fused ? megatron_core(m, tp, ep, etp) : torchtitan(m, ep);
}

DenseMlpKernels dense_mlp_kernels(const ModelSpec& m, bool fused) noexcept {
  if (fused) return {2, 1};        // fc1 (gate and up fused), fc2; bias-activation
  if (m.gated_mlp) return {3, 2};  // w1, w3, w2; silu and the product
  return {2, 1};                   // fc1, fc2; GeLU
}

} // namespace zerosearch
