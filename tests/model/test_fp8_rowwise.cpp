#include <catch2/catch.hpp>

#include <cmath>

#include "zerosearch/io/hardware_json.hpp"
#include "zerosearch/io/model_json.hpp"
#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/fp8_rowwise.hpp"

using namespace zerosearch;

namespace {

const HardwareCatalog& catalog() {
  static const HardwareCatalog c = load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  return c;
}

} // namespace

TEST_CASE("fp8 recipes are named by the flag's words", "[fp8]") {
  CHECK(fp8_recipe_named("tensorwise") == Fp8Recipe::tensorwise);
  CHECK(fp8_recipe_named("rowwise") == Fp8Recipe::rowwise);
  CHECK_FALSE(fp8_recipe_named("delayed").has_value());
  CHECK_FALSE(fp8_recipe_named("Rowwise").has_value());
}

TEST_CASE("torchao's rowwise speedups: the table's points, between them and beyond", "[fp8]") {
  // Points of torchao's table (M, K, N), as printed.
  CHECK(fp8_rowwise_speedup(1024, 1024, 1024) == Approx(0.42));
  CHECK(fp8_rowwise_speedup(4096, 8192, 16384) == Approx(1.07));
  CHECK(fp8_rowwise_speedup(16384, 4096, 8192) == Approx(1.20));
  CHECK(fp8_rowwise_speedup(32768, 32768, 32768) == Approx(1.52));
  CHECK(fp8_rowwise_speedup(32768, 8192, 1024) == Approx(0.63));
  // Half-way in log2 of N at M 32,768, K 4,096: between 0.59 (N 1,024) and 0.81 (N 2,048).
  CHECK(fp8_rowwise_speedup(32768, 4096, 1024 * std::sqrt(2.0)) == Approx((0.59 + 0.81) / 2));
  // Half-way in M and K at N 4,096: the mean of M 8,192/16,384 x K 4,096/8,192:
  // (1.00 + 1.05 + 1.02 + 1.08) / 4.
  const double r2 = std::sqrt(2.0);
  CHECK(fp8_rowwise_speedup(8192 * r2, 4096 * r2, 4096) ==
        Approx((1.00 + 1.05 + 1.02 + 1.08) / 4));
  // Beyond the table: its nearest edge (M 98,304 as M 32,768; N 128 as N 1,024).
  CHECK(fp8_rowwise_speedup(98304, 4096, 128) == Approx(0.59));
  CHECK(fp8_rowwise_speedup(131072, 65536, 65536) == Approx(1.52));
}

TEST_CASE("rowwise fp8: each linear at its bf16 time over the speedup, without tensorwise casts",
          "[fp8][analytic]") {
  // Llama 3.1 8B at tp 8, 12 x 8,192 tokens (torchtitan's async-TP benchmark layout): the
  // GEMMs (M, K, N per rank): qkv 98,304 x 4,096 -> 768 (speedup 0.59, M and N at the table's
  // edge), the output projection 4,096/8 = 512 -> 4,096 (K at the edge: 0.77), fc1 twice
  // 4,096 -> 1,792 and fc2 1,792 -> 4,096 (interpolated).
  ModelSpec m;
  m.name = "llama3_8b";
  m.hidden_size = 4096;
  m.num_layers = 32;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 8;
  m.ffn_hidden_size = 14336;
  m.sequence_length = 8192;
  m.vocab_size = 128256;
  m.gated_mlp = true;
  const GpuSpec& g = catalog().gpu("H100-SXM-96GB");
  const AnalyticCalibration c = prior_calibration(g);
  AnalyticSettings s16;
  s16.tp = 8;
  s16.micro_batch = 12;
  s16.flash_attention = true;
  s16.sequence_parallel = true;
  s16.dtype = Dtype::bf16;
  AnalyticSettings tw = s16;
  tw.dtype = Dtype::fp8;
  AnalyticSettings rw = tw;
  rw.fp8_recipe = Fp8Recipe::rowwise;
  const AnalyticLayerTimes b = analytic_layer_times(m, g, c, s16);
  const AnalyticLayerTimes t = analytic_layer_times(m, g, c, tw);
  const AnalyticLayerTimes r = analytic_layer_times(m, g, c, rw);
  const double tokens = 12.0 * 8192;
  const auto one = [&](double k, double n) { return 2 * tokens * k * n; };
  // The FLOPs split: qkv 4,096 x 768, proj 512 x 4,096, fc1 2 x 4,096 x 1,792, fc2 1,792 x 4,096.
  const double f_qkv = one(4096, 768), f_proj = one(512, 4096), f_fc1 = 2 * one(4096, 1792),
               f_fc2 = one(1792, 4096);
  // fc1's speedup at M 32,768 (edge), K 4,096, N 1,792 = 2^0.807 x 1,024: 0.59 + 0.807 x 0.22.
  const double n_fc1 = std::log2(1792.0 / 1024.0);
  CHECK(fp8_rowwise_speedup(tokens, 4096, 1792) == Approx(0.59 + n_fc1 * (0.81 - 0.59)));
  // fc2's at K 1,792 (between 1,024 and 2,048), N 4,096: 0.77 + 0.807 x (0.91 - 0.77).
  CHECK(fp8_rowwise_speedup(tokens, 1792, 4096) == Approx(0.77 + n_fc1 * (0.91 - 0.77)));
  // With every GEMM at the same bf16 efficiency the rowwise GEMM time would be the bf16 one
  // times the FLOP-weighted mean of 1 / speedup: 1.30; the shape model's efficiencies
  // differ by GEMM, so the check is a band around it.
  const double weighted =
      (f_qkv / 0.59 + f_proj / 0.77 + f_fc1 / fp8_rowwise_speedup(tokens, 4096, 1792) +
       f_fc2 / fp8_rowwise_speedup(tokens, 1792, 4096)) /
      (f_qkv + f_proj + f_fc1 + f_fc2);
  CHECK(weighted == Approx(1.302).margin(0.001));
  CHECK(r.gemm_forward_s / b.gemm_forward_s == Approx(weighted).margin(0.08));
  // At these narrow per-rank shapes rowwise is slower than bf16 and than tensorwise, as the
  // benchmark measured (3,708.5 against 4,378 and 5,078.1 tokens/s per GPU).
  CHECK(r.layer.forward_s > b.layer.forward_s);
  CHECK(r.layer.forward_s > t.layer.forward_s);
  // No tensorwise casts: the element-wise traffic is bf16's.
  CHECK(r.elementwise_forward_s == Approx(b.elementwise_forward_s));
  CHECK(t.elementwise_forward_s > b.elementwise_forward_s);
  // Attention is the same in every recipe (16-bit).
  CHECK(r.attention_forward_s == Approx(b.attention_forward_s));
}
