// DeepSpeed ZeRO-3 before PR #1453 (--zero3_impl per_param, model/deepspeed_zero3.hpp): the
// collectives it issues per layer, counted by hand from partition_parameters.py and stage3.py
// at v0.3.14 with the default stage3_param_persistence_threshold (1e5) and
// stage3_max_reuse_distance (1e9).
#include <catch2/catch.hpp>

#include "native_fixtures.hpp"
#include "zerosearch/model/deepspeed_zero3.hpp"
#include "zerosearch/model/moe_kernels.hpp"

using namespace zerosearch;

namespace {

ModelSpec gpt(std::int64_t h, std::int64_t heads, std::int64_t ffn) {
  ModelSpec m;
  m.architecture = "gpt3";
  m.hidden_size = h;
  m.num_attention_heads = heads;
  m.num_key_value_heads = heads;
  m.ffn_hidden_size = ffn;
  m.num_layers = 96;
  m.norm = Norm::layernorm;
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = true;
  m.learned_position_embeddings = true;
  return m;
}

} // namespace

TEST_CASE("per-parameter ZeRO-3: GPT-3 175B's layer gathers its four linear weights",
          "[native][zero3]") {
  // h 12288, 96 heads of 128, ffn 49152. Weights: qkv 12288 x 36864 = 452,984,832, proj
  // 150,994,944, fc1 and fc2 603,979,776 each; the biases (36864, 12288, 49152, 12288) and the
  // norms' weights and biases (12288) are under 1e5 elements and persist.
  const Zero3LayerCalls c = zero3_per_param_layer(gpt(12288, 96, 49152));
  CHECK(c.gathers == 4.0);
  CHECK(c.gathered_elements == 452984832.0 + 150994944.0 + 2 * 603979776.0);
  // Every tensor's gradient is reduce-scattered: 4 weights, 4 biases, 2 norms x 2.
  CHECK(c.reduces == 12.0);
  // The rerun forward under full recompute: fc2 is next used by its backward at once (distance
  // 0) and stays; fc1 waits for fc2's rerun and backward, 2 x 603,992,064 = 1,207,984,128
  // elements >= 1e9, so it is released and gathered again, and so are proj and qkv.
  CHECK(c.regathers == 3.0);
  CHECK(c.regathered_elements == 452984832.0 + 150994944.0 + 603979776.0);
}

TEST_CASE("per-parameter ZeRO-3: small layers stay gathered from the rerun to backward",
          "[native][zero3]") {
  // GPT-2 XL's layer (h 1600, 25 heads, ffn 6400): fc1 and fc2 10,240,000, qkv 7,680,000,
  // proj 2,560,000: every reuse distance is far below 1e9.
  const Zero3LayerCalls xl = zero3_per_param_layer(gpt(1600, 25, 6400));
  CHECK(xl.gathers == 4.0);
  CHECK(xl.regathers == 0.0);
  CHECK(xl.regathered_elements == 0.0);
  // A GPT layer of h 25600 and ffn 102400 (GPT 1T): fc1's bias, 102,400 elements, is over the
  // threshold and gathered on its own.
  const Zero3LayerCalls t = zero3_per_param_layer(gpt(25600, 160, 102400));
  CHECK(t.gathers == 5.0);
  CHECK(t.reduces == 12.0);
  // Llama (no biases, RMSNorm weights only): 4 gathers, 4 + 2 reduce-scatters; qkv 4096 x
  // (32 + 2 x 8) x 128 = 25,165,824, proj 16,777,216, fc1 (gate and up) 117,440,512, fc2
  // 58,720,256: all kept from the rerun to backward.
  const Zero3LayerCalls l = zero3_per_param_layer(test::test_llama());
  CHECK(l.gathers == 4.0);
  CHECK(l.reduces == 6.0);
  CHECK(l.gathered_elements == 25165824.0 + 16777216.0 + 117440512.0 + 58720256.0);
  CHECK(l.regathers == 0.0);
}

TEST_CASE("per-parameter ZeRO-3: each call copies through world-size views", "[native][zero3]") {
  // 10 calls of 1 ms over 1536 ranks: 1536 copies launched at 3.8 us each, 5.8368 ms a call.
  CHECK(kCudaLaunch_s == 3.8e-6);
  CHECK(zero3_list_calls_s(10, 1e-3, 1536) == Approx(10 * (1e-3 + 1536 * 3.8e-6)));
  CHECK(zero3_list_calls_s(10, 1e-3, 1536) == Approx(0.068368));
  CHECK(zero3_list_calls_s(0, 1e-3, 1536) == 0.0);
  CHECK(zero3_impl_named("per_param") == Zero3Impl::per_param);
  CHECK(zero3_impl_named("coalesced") == Zero3Impl::coalesced);
  CHECK(!zero3_impl_named("v0.3"));
}
