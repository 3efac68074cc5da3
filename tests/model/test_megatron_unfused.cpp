// Megatron-LM's GPT layer with its fusion flags off (--layer_impl megatron_unfused, issue 23;
// docs/native.md §2.2): Megatron-LM v1.1.5 as the AMP paper's fork runs it, with the eager
// masked_fill_ before softmax, the bias add before GeLU and bias-dropout-add as three ops.
#include <catch2/catch.hpp>

#include "zerosearch/model/analytic_profile.hpp"
#include "native_fixtures.hpp"

using namespace zerosearch;

namespace {

AnalyticSettings layer(int mbs, int tp, LayerImpl impl, bool flash = false) {
  AnalyticSettings st;
  st.micro_batch = mbs;
  st.tp = tp;
  st.dtype = Dtype::fp16;
  st.flash_attention = flash;
  st.attention_dropout_bytes = true;
  st.layer_impl = impl;
  return st;
}

} // namespace

TEST_CASE("Megatron-LM without its fusion flags: the elements its eager ops move beyond the "
          "fused layer",
          "[native][kernels]") {
  const MegatronUnfusedExtra u = megatron_unfused_extra(LayerImpl::megatron_unfused);
  CHECK(u.per_score == 2.0);  // masked_fill_ in place: read and write each score
  CHECK(u.per_ffn == 2.0);    // x + bias written and read back before GeLU
  CHECK(u.per_hidden == 8.0); // two bias-dropout-adds: x + bias and dropout's output, 4 each
  CHECK(u.kernels == 6);      // masked_fill_, the bias add, 2 x 2 more ops of bias-dropout-add
  for (const LayerImpl other : {LayerImpl::framework, LayerImpl::hf_gpt2, LayerImpl::hf_gpt2_amp}) {
    const MegatronUnfusedExtra none = megatron_unfused_extra(other);
    CHECK(none.per_score == 0.0);
    CHECK(none.per_ffn == 0.0);
    CHECK(none.per_hidden == 0.0);
    CHECK(none.kernels == 0);
  }
  CHECK(layer_impl_named("megatron_unfused") == LayerImpl::megatron_unfused);
  CHECK_FALSE(is_eager_gpt2_layer(LayerImpl::megatron_unfused));
  CHECK(is_eager_gpt2_layer(LayerImpl::megatron_v1));
  CHECK(is_eager_gpt2_layer(LayerImpl::hf_gpt2));
}

TEST_CASE("Megatron-LM without its fusion flags: a GPT-2 medium layer's forward moves 100.7 MB "
          "more at micro-batch 1",
          "[native][kernels]") {
  const NativeGpu g = test::h100_like();
  const double bw = g.spec.memory_GBps * 1e9 * g.calibration.memory_efficiency;
  const ModelSpec m = test::gpt2_medium();
  const auto extra_s = [&](int mbs, int tp, bool flash) {
    return analytic_layer_times(m, g.spec, g.calibration,
                                layer(mbs, tp, LayerImpl::megatron_unfused, flash))
               .elementwise_forward_s -
           analytic_layer_times(m, g.spec, g.calibration,
                                layer(mbs, tp, LayerImpl::framework, flash))
               .elementwise_forward_s;
  };
  // tp 1, mbs 1, fp16: scores 2 B x 2 x 16 x 1024^2 = 67,108,864; FFN 2 B x 2 x 4096 x 1024
  // = 16,777,216; hidden 2 B x 8 x 1024 x 1024 = 16,777,216: 100,663,296 B.
  CHECK(extra_s(1, 1, false) == Approx(100663296.0 / bw));
  // Linear in the micro-batch.
  CHECK(extra_s(4, 1, false) == Approx(4 * 100663296.0 / bw));
  // tp 2: each rank holds half the heads and half the FFN, the whole hidden state (no sequence
  // parallelism in Megatron v1.1.5): 33,554,432 + 8,388,608 + 16,777,216 = 58,720,256 B.
  CHECK(extra_s(1, 2, false) == Approx(58720256.0 / bw));
  // With FlashAttention the scores are never written: the FFN and hidden parts only.
  CHECK(extra_s(1, 1, true) == Approx(33554432.0 / bw));
}

TEST_CASE("Megatron-LM without its fusion flags launches six more kernels per layer forward",
          "[native][kernels]") {
  const ModelSpec m = test::gpt2_medium();
  const LayerKernels fused = layer_kernels(m, layer(1, 1, LayerImpl::framework));
  const LayerKernels unfused = layer_kernels(m, layer(1, 1, LayerImpl::megatron_unfused));
  CHECK(unfused.forward == fused.forward + 6);
  CHECK(unfused.backward == 2 * unfused.forward);
  CHECK(unfused.forward_gemms == fused.forward_gemms);
  // With FlashAttention there is no masked_fill_ on the scores.
  CHECK(layer_kernels(m, layer(1, 1, LayerImpl::megatron_unfused, true)).forward ==
        layer_kernels(m, layer(1, 1, LayerImpl::framework, true)).forward + 5);
}
