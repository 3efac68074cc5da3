// Two costs of GPT-2 as Megatron-LM v1.1.5 under DeepSpeed's pipeline engine runs it (the AMP
// paper's runs, issue 23; docs/native.md §2 and §2.2): the attention-probability dropout's
// traffic in unfused attention, and the tied embedding's gradient all-reduced in the
// gradient's own dtype.
#include <catch2/catch.hpp>

#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/model/native_steps.hpp"
#include "native_fixtures.hpp"

using namespace zerosearch;
using namespace zerosearch::native_steps;

namespace {

AnalyticSettings unfused(int mbs, bool dropout_bytes) {
  AnalyticSettings st;
  st.micro_batch = mbs;
  st.dtype = Dtype::fp16;
  st.flash_attention = false;
  st.attention_dropout_bytes = dropout_bytes;
  return st;
}

} // namespace

TEST_CASE("unfused GPT attention: the dropout on the attention probabilities reads and writes "
          "them and writes its mask",
          "[native][kernels]") {
  const NativeGpu g = test::h100_like();
  const double bw = g.spec.memory_GBps * 1e9 * g.calibration.memory_efficiency;
  // Megatron-LM's ParallelSelfAttention: attention_probs = attention_dropout(softmax(...)),
  // --attention-dropout 0.1 by default: per element of the b x a x s x s probabilities, read
  // 2 bytes, write 2 and a 1-byte mask. mbs 2, 16 heads, 1,024 tokens: 2 x 16 x 1024^2 x 5 B
  // = 167.8 MB more per layer forward.
  const ModelSpec m = test::gpt2_medium();
  const AnalyticLayerTimes off = analytic_layer_times(m, g.spec, g.calibration, unfused(2, false));
  const AnalyticLayerTimes on = analytic_layer_times(m, g.spec, g.calibration, unfused(2, true));
  const double extra = 5.0 * 2 * 16 * 1024.0 * 1024.0;
  CHECK(on.elementwise_forward_s - off.elementwise_forward_s == Approx(extra / bw));
  // With FlashAttention the probabilities never reach memory: nothing changes.
  AnalyticSettings fa_off = unfused(2, false), fa_on = unfused(2, true);
  fa_off.flash_attention = fa_on.flash_attention = true;
  CHECK(analytic_layer_times(m, g.spec, g.calibration, fa_on).elementwise_forward_s ==
        analytic_layer_times(m, g.spec, g.calibration, fa_off).elementwise_forward_s);
  // Llama-style layers (no attention dropout in their frameworks): nothing changes either.
  const ModelSpec llama = test::test_llama(2);
  CHECK(analytic_layer_times(llama, g.spec, g.calibration, unfused(1, true))
            .elementwise_forward_s ==
        analytic_layer_times(llama, g.spec, g.calibration, unfused(1, false))
            .elementwise_forward_s);
}

TEST_CASE("the tied embedding's gradient is all-reduced in the dtype the framework keeps it",
          "[native][steps]") {
  // DeepSpeed's PipelineModule.allreduce_tied_weight_gradients: dist.all_reduce(weight.grad)
  // on the 16-bit .grad, even with fp32_allreduce (which converts only the engine's
  // data-parallel buckets). pp 2 on two nodes of one GPU: the first and the last stage sync
  // 2 B x 50304 x 1024 = 103.0 MB over the network (400e9 B/s, one GPU crossing).
  NativeContext c;
  c.model = test::gpt2_medium();
  c.gpus_per_node = 1;
  c.gpus = {test::h100_like()};
  c.settings.grad_reduce_fp32 = true;
  DesignPoint p;
  p.method = DpMethod::zero0;
  p.tp = 1;
  p.pp = 2;
  p.dp = 1;
  p.mbs = 1;
  p.num_micro_batches = 4;
  p.dtype = Dtype::fp16;
  const PointConstants k = point_constants(c, p);
  REQUIRE(k.fw.grad_reduce_bytes == 4.0); // the data-parallel buckets go in fp32
  REQUIRE(k.fw.grad_bytes == 2.0);
  const double bytes = 2.0 * 50304 * 1024;
  CHECK(embedding_sync_s(c, p, k, native_placement(c, p, {0, 0})) ==
        Approx(nccl_collective_s(bytes, 2, 400e9, nccl_latency(Transport::net))));
}
