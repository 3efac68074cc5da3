// Issue 27: the kernels and host synchronisations of one MoE layer (model/moe_kernels.hpp,
// docs/native.md §2.2 "MoE layers"), counted by hand from Megatron-Core's and torchtitan's code.
#include <catch2/catch.hpp>

#include "native_fixtures.hpp"
#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/moe_kernels.hpp"
#include "zerosearch/model/native.hpp"

using namespace zerosearch;

namespace {

ModelSpec small_moe() { return test::test_small_moe(); } // 16 experts, top-2, SwiGLU

AnalyticSettings moe_settings(int tp, int ep, int etp) {
  AnalyticSettings st;
  st.tp = tp;
  st.ep = ep;
  st.etp = etp;
  st.flash_attention = true;
  st.dtype = Dtype::bf16;
  return st;
}

} // namespace

TEST_CASE("Megatron-Core's MoE layer: router, dispatcher, grouped GEMM per local expert, one sync",
          "[moe][kernels]") {
  const ModelSpec m = small_moe();
  // tp 1, ep 4: 4 local experts. Router: gate (linear) + fused top-k (1). Preprocess: 7 device
  // ops (counts, splits, all-gather, slice, three sums) + 4 copies to the host. Permute 1, the
  // tokens' and probabilities' all-to-alls 2, sort 1; fc1 and fc2 (2 linear calls + 3 more
  // cuBLAS launches each), activation 1; unsort 1, combine all-to-all 1, unpermute 1.
  MoeLayerKernels k = moe_layer_kernels(m, true, 1, 4, 1);
  CHECK(k.linear == 3);
  CHECK(k.loop == 6);
  CHECK(k.kernels == 1 + 11 + 1 + 2 + 1 + 1 + 1 + 1 + 1);
  CHECK(k.syncs == 1);
  // ep 1: all 16 experts local, no all-to-all; the counts still go to the host (one copy).
  k = moe_layer_kernels(m, true, 1, 1, 1);
  CHECK(k.loop == 2 * 15);
  CHECK(k.kernels == 1 + 2 + 1 + 1 + 1 + 1 + 1);
  CHECK(k.syncs == 1);
  // etp 2 (tp 2, ep 4): the dispatcher's all-gathers of tokens and probabilities and the
  // reduce-scatter over etp.
  CHECK(moe_layer_kernels(m, true, 2, 4, 2).kernels == 20 + 3);
  // A gated shared expert and a router bias: +3 linear (fc1, fc2, gate), activation, sigmoid,
  // product, add; the bias's count and add.
  ModelSpec s = m;
  s.shared_expert_ffn_hidden_size = 1024;
  s.shared_expert_gate = true;
  s.router_bias = true;
  k = moe_layer_kernels(s, true, 1, 4, 1);
  CHECK(k.linear == 3 + 3);
  CHECK(k.kernels == 20 + 2 + 2 + 2);
}

TEST_CASE("torchtitan's MoE layer: eager router and reorder, three grouped_mm, a blocking copy "
          "with ep > 1",
          "[moe][kernels]") {
  const ModelSpec m = small_moe();
  // Router 6 (cast, score, topk, gather, scale, histc) + 9 (tokens_per_expert add, reorder 3,
  // index 2, score-before-experts 3) + dispatch 8 (counts all-to-all, two sums, two copies,
  // tokens all-to-all, permute indices, index) + experts 6 (cumsum, 3 grouped_mm, silu, product)
  // + combine 6 (unpermute 2, all-to-all, zeros, index_put, sum).
  MoeLayerKernels k = moe_layer_kernels(m, false, 1, 4, 1);
  CHECK(k.linear == 1);
  CHECK(k.loop == 0);
  CHECK(k.kernels == 6 + 9 + 8 + 6 + 6);
  CHECK(k.syncs == 1);
  // ep 1: no all-to-all, no copy to the host (the grouped GEMM takes device offsets).
  k = moe_layer_kernels(m, false, 1, 1, 0);
  CHECK(k.kernels == 6 + 9 + 2 + 6 + 5);
  CHECK(k.syncs == 0);
}

TEST_CASE("an MoE layer's kernels replace the dense MLP's in layer_kernels", "[moe][kernels]") {
  const ModelSpec m = small_moe();
  // Fused dense layer: 2 norms, 4 GEMMs, RoPE 2, flash 1, activation 1, residuals 2 = 12, of
  // which fc1, fc2 and the activation (3) give way to the MoE's 20 + 3 linear + 6 loop.
  const LayerKernels k = layer_kernels(m, moe_settings(1, 4, 1));
  CHECK(k.forward == 12 - 3 + 20 + 3 + 6);
  CHECK(k.forward_gemms == 4 - 2 + 3);
  CHECK(k.forward_loop == 6);
  CHECK(k.backward == 2 * 38);
  CHECK(k.backward_loop == 12);
  CHECK(k.forward_syncs == 1);
  // A dense model is unchanged: no loop, no sync.
  ModelSpec dense = m;
  dense.num_experts = 0;
  const LayerKernels d = layer_kernels(dense, moe_settings(1, 1, 0));
  CHECK(d.forward == 12);
  CHECK(d.forward_loop == 0);
  CHECK(d.forward_syncs == 0);
}

TEST_CASE("an MoE layer is never faster than the host issuing it, plus its synchronisation",
          "[moe][kernels]") {
  const ModelSpec m = small_moe();
  NativeGpu g = test::h100_like();
  // A GPU so fast that the layer's GPU time is negligible: the host sets the pace.
  g.spec.peak_tflops.bf16 = 1e9;
  g.spec.peak_tflops.fp16 = 1e9;
  g.spec.memory_GBps = 1e9;
  g.calibration.layer_overhead_s = 0.0;
  g.calibration.gemm_x0_flops = 1.0;
  AnalyticSettings st = moe_settings(1, 4, 1);
  st.host_per_kernel_s = kHostPerKernel_s;
  st.host_per_linear_s = kHostPerLinear_s;
  st.host_sync_s = kHostSync_s;
  const AnalyticLayerTimes t = analytic_layer_times(m, g.spec, g.calibration, st);
  // Forward: 5 linear calls x 13.48 us + 6 cuBLAS launches x 3.8 us + 27 kernels x 8.3 us
  // = 67.4 + 22.8 + 224.1 = 314.3 us, then the sync: 6 + 3.8 = 9.8 us.
  CHECK(kHostSync_s == Approx(9.8e-6));
  CHECK(t.host_bound_forward);
  CHECK(t.layer.forward_s == Approx(314.3e-6 + 9.8e-6));
  // Backward: 64 kernels x 8.3 us + 12 launches x 3.8 us = 531.2 + 45.6 us; no sync.
  CHECK(t.host_bound_backward);
  CHECK(t.layer.backward_s == Approx(576.8e-6));
  // On the H100-like GPU (GPU-bound) the sync adds its 9.8 us all the same, nothing else.
  const NativeGpu h = test::h100_like();
  AnalyticSettings no_sync = st;
  no_sync.host_sync_s = 0.0;
  const AnalyticLayerTimes with = analytic_layer_times(m, h.spec, h.calibration, st);
  const AnalyticLayerTimes without = analytic_layer_times(m, h.spec, h.calibration, no_sync);
  REQUIRE_FALSE(with.host_bound_forward);
  CHECK(with.layer.forward_s - without.layer.forward_s == Approx(9.8e-6));
  CHECK(with.layer.backward_s == without.layer.backward_s);
}
