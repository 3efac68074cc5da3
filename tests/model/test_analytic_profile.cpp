#include <catch2/catch.hpp>

#include <cmath>

#include "zerosearch/io/hardware_json.hpp"
#include "zerosearch/io/model_json.hpp"
#include "zerosearch/model/analytic_profile.hpp"

using namespace zerosearch;

namespace {

const HardwareCatalog& catalog() {
  static const HardwareCatalog c = load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  return c;
}
const ModelCatalog& models() {
  static const ModelCatalog m = load_model_catalog(ZEROSEARCH_TEST_PROFILEDB "/models.json");
  return m;
}

ModelSpec gpt3_175b() {
  ModelSpec m;
  m.name = "gpt3_175B";
  m.hidden_size = 12288;
  m.num_layers = 96;
  m.num_attention_heads = 96;
  m.ffn_hidden_size = 4 * 12288;
  m.sequence_length = 2048;
  m.vocab_size = 50257;
  m.gated_mlp = false;
  return m;
}

/// Megatron-LM's num_floating_point_operations (training = 3 x forward), written out:
/// 6 b s [L (h f m + h (q + 2 kv) + q s + q h) + h V] with the causal half of the scores.
double megatron_training_flops(double h, double L, double f, double m, double q, double kv,
                               double s, double V) {
  return 6 * s * (L * (h * f * m + h * (q + 2 * kv) + q * s + q * h) + h * V);
}

} // namespace

TEST_CASE("forward FLOPs follow Megatron-LM's formula", "[analytic]") {
  const ModelSpec& llama = models().find("llama2_13B");
  const double llama_train = 3 * model_forward_flops(llama, 4096);
  CHECK(llama_train == Approx(megatron_training_flops(5120, 40, 13824, 3, 5120, 5120, 4096, 32000)));
  CHECK(llama_train == Approx(3.3646e14).epsilon(2e-4)); // ANALYTIC.md 1.3
  const double gpt3_train = 3 * model_forward_flops(gpt3_175b(), 2048);
  CHECK(gpt3_train ==
        Approx(megatron_training_flops(12288, 96, 49152, 2, 12288, 12288, 2048, 50257)));
  CHECK(gpt3_train == Approx(2.1747e15).epsilon(2e-4));
}

TEST_CASE("a hand-worked layer at full efficiency", "[analytic]") {
  ModelSpec m;
  m.name = "tiny";
  m.hidden_size = 4;
  m.sequence_length = 8;
  m.num_layers = 1;
  m.num_attention_heads = 2;
  m.ffn_hidden_size = 8;
  m.vocab_size = 16;
  m.gated_mlp = false;
  GpuSpec g;
  g.name = "unit";
  g.has_specs = true;
  g.peak_tflops.fp32 = 1.0;
  g.peak_tflops.bf16 = 1.0;
  g.memory_gbps = 1000.0;
  AnalyticCalibration c;
  c.gemm_e_max = 1.0;
  c.gemm_x0_flops = 1e-3;
  c.attention_efficiency = 1.0;
  c.memory_efficiency = 1.0;
  c.layer_overhead_s = 0.0;
  AnalyticSettings st;
  // GEMMs 768 (qkv) + 256 (o) + 2 x 512 (MLP) = 2048 FLOP, attention 4*8*8*4 = 1024 FLOP,
  // at 1 TFLOP/s; bytes 2*8*4*10 + 2*8*8*2 + 2*2*64*4 = 1920 at 1 TB/s.
  CHECK(layer_forward_flops_per_gpu(m, st) == 3072.0);
  const AnalyticLayerTimes t = analytic_layer_times(m, g, c, st);
  CHECK(t.layer.forward_s == Approx(3072e-12 + 1920e-12));
  CHECK(t.layer.backward_s == Approx(2 * 3072e-12 + 2 * 1920e-12));
}

TEST_CASE("more tensor parallelism never means more FLOPs per GPU", "[analytic]") {
  for (const char* name : {"llama2_13B", "gpt2XL"}) {
    const ModelSpec& m = models().find(name);
    double last = 1e300;
    for (const int tp : {1, 2, 4, 8}) {
      AnalyticSettings st;
      st.tp = tp;
      const double f = layer_forward_flops_per_gpu(m, st);
      CHECK(f < last);
      CHECK(f == Approx(layer_forward_flops_per_gpu(m, AnalyticSettings{}) / tp));
      last = f;
    }
  }
}

TEST_CASE("a longer sequence is never faster, on every catalog GPU", "[analytic]") {
  for (const auto& [name, gpu] : catalog().gpus) {
    if (!gpu.has_specs) continue;
    const AnalyticCalibration c = prior_calibration(gpu);
    for (const char* model : {"llama2_13B", "gpt2XL"}) {
      for (const int tp : {1, 2, 4, 8}) {
        AnalyticLayerTimes last{};
        for (const int s : {256, 1024, 2048, 4096, 8192}) {
          INFO(name << " " << model << " tp " << tp << " s " << s);
          AnalyticSettings st;
          st.tp = tp;
          st.sequence_length = s;
          const AnalyticLayerTimes t = analytic_layer_times(models().find(model), gpu, c, st);
          CHECK(t.layer.forward_s > last.layer.forward_s);
          CHECK(t.layer.backward_s > last.layer.backward_s);
          CHECK(t.embedding.forward_s > last.embedding.forward_s);
          CHECK(t.post_process.forward_s > last.post_process.forward_s);
          CHECK(t.layer.backward_s > t.layer.forward_s);
          last = t;
        }
      }
    }
  }
}

TEST_CASE("a faster GPU or FlashAttention is never slower", "[analytic]") {
  const ModelSpec& m = models().find("llama2_13B");
  AnalyticSettings st;
  const auto layer = [&](const char* gpu, bool flash) {
    AnalyticSettings s2 = st;
    s2.flash_attention = flash;
    const GpuSpec& g = catalog().gpu(gpu);
    return analytic_layer_times(m, g, prior_calibration(g), s2).layer.forward_s;
  };
  CHECK(layer("H100-SXM", false) < layer("A100-80GB", false));
  CHECK(layer("A100-80GB", false) < layer("V100-32GB", false));
  CHECK(layer("B200", false) < layer("H100-SXM", false));
  CHECK(layer("H100-SXM", true) < layer("H100-SXM", false));
}

TEST_CASE("an analytic profile has the measured profiles' shape", "[analytic]") {
  const ModelSpec& m = models().find("llama2_13B");
  const GpuSpec& g = catalog().gpu("L40S");
  const GpuProfile p =
      analytic_profile(m, g, prior_calibration(g), Flavour::deepspeed, {1, 2, 4, 8}, Dtype::bf16);
  CHECK(p.model == "llama2_13B");
  CHECK(p.gpu == "L40S");
  CHECK(p.layer_times_s.size() == 4);
  for (const auto& [tp, v] : p.layer_times_s) {
    REQUIRE(v.size() == 42);
    CHECK(v[1] == v[40]);
    CHECK(v[0] > 0.0);
    CHECK(v[41] > 0.0);
  }
  CHECK(p.layer_times_s.at(2)[1] < p.layer_times_s.at(1)[1]);
  CHECK(p.origin.find("analytic uncalibrated") == 0);
}

TEST_CASE("the Megatron-LM flavour keeps the LM head whole, as measured", "[analytic]") {
  const ModelSpec& m = models().find("gpt2XL");
  const GpuSpec& g = catalog().gpu("A10");
  const auto c = prior_calibration(g);
  const GpuProfile mp = analytic_profile(m, g, c, Flavour::megatron, {1, 4}, Dtype::fp16);
  const GpuProfile dp = analytic_profile(m, g, c, Flavour::deepspeed, {1, 4}, Dtype::fp16);
  CHECK(mp.layer_times_s.at(4).back() == mp.layer_times_s.at(1).back());
  CHECK(dp.layer_times_s.at(4).back() < dp.layer_times_s.at(1).back());
}

TEST_CASE("a matmul benchmark scales the HBM prior relative to A100's", "[analytic]") {
  // A100 SXM's maximum achievable rate is the reference: its prior is the class prior.
  const AnalyticCalibration a100 = prior_calibration(catalog().gpu("A100-80GB"));
  CHECK(a100.gemm_e_max == 0.7);
  CHECK(a100.lm_head_efficiency == 0.8);
  CHECK(a100.gemm_e_max_fp8 == 0.0);
  // H100 SXM reaches 794.5 of 989.4 TFLOPS in bf16 and 1402.6 of 1978.9 in fp8.
  const GpuSpec& h = catalog().gpu("H100-SXM");
  const AnalyticCalibration h100 = prior_calibration(h);
  const double ref = 271.2 / 312.0;
  CHECK(h100.gemm_e_max == Approx(0.7 * (794.5 / 989.4) / ref));
  CHECK(h100.lm_head_efficiency == Approx(0.8 * (794.5 / 989.4) / ref));
  CHECK(h100.gemm_e_max_fp8 == Approx(0.7 * (1402.6 / 1978.9) / ref));
  // Without the benchmark, the class prior.
  GpuSpec bare = h;
  bare.mamf.reset();
  CHECK(prior_calibration(bare).gemm_e_max == 0.7);
  // fp8 GEMMs use their own efficiency: a linear layer takes longer than half its bf16 time.
  const ModelSpec& m = models().find("llama2_13B");
  AnalyticSettings s16;
  s16.dtype = Dtype::bf16;
  AnalyticSettings s8 = s16;
  s8.dtype = Dtype::fp8;
  const double g16 = analytic_layer_times(m, h, h100, s16).gemm_forward_s;
  const double g8 = analytic_layer_times(m, h, h100, s8).gemm_forward_s;
  CHECK(g8 == Approx(g16 * (989.4 / 1978.9) * h100.gemm_e_max / h100.gemm_e_max_fp8)
                  .epsilon(1e-9));
  CHECK(g8 > g16 / 2);
}

TEST_CASE("NVLink all-reduces start at NCCL's own latency, PCIe at the fitted prior",
          "[analytic]") {
  // NCCL's tuning model, ring/Simple over NVLink: 8.4 us per call plus 3.4 us per step; an
  // all-reduce of n ranks takes 2(n-1) steps, so alpha per step is 3.4 + 8.4 / (2(n-1)) us.
  const AnalyticCalibration h100 = prior_calibration(catalog().gpu("H100-SXM"));
  CHECK(h100.tp_allreduce.at(2).alpha_s == Approx(3.4e-6 + 8.4e-6 / 2));
  CHECK(h100.tp_allreduce.at(8).alpha_s == Approx(3.4e-6 + 8.4e-6 / 14));
  CHECK(h100.embedding_allreduce.at(8).alpha_s == h100.tp_allreduce.at(8).alpha_s);
  // 8 ranks: NCCL's 8.4 + 14 x 3.4 = 56 us of latency per all-reduce.
  CHECK(2 * 7 * h100.tp_allreduce.at(8).alpha_s == Approx(56e-6));
  // PCIe parts keep the latency fitted to the measured A10/A6000 profiles.
  CHECK(prior_calibration(catalog().gpu("L40S")).tp_allreduce.at(8).alpha_s == 20e-6);
  CHECK(prior_calibration(catalog().gpu("H100-PCIe")).tp_allreduce.at(4).alpha_s == 20e-6);
}

TEST_CASE("fp8 casts: an amax pass and a transposed copy, on s/tp tokens with SP",
          "[analytic]") {
  const ModelSpec& m = models().find("llama2_13B");
  const GpuSpec& h = catalog().gpu("H100-SXM");
  const AnalyticCalibration c = prior_calibration(h);
  const double bw = h.memory_gbps * 1e9 * c.memory_efficiency;
  const double tokens = 4096.0, hidden = 5120.0;
  for (const int tp : {1, 8}) {
    AnalyticSettings s16;
    s16.tp = tp;
    s16.dtype = Dtype::bf16;
    AnalyticSettings s8 = s16;
    s8.dtype = Dtype::fp8;
    const double t = tp;
    // The inputs of qkv and fc1 (h each), of the output projection (h / tp) and of fc2
    // (ffn / tp): read 2 bytes for the amax, read 2 and write 1 + 1 (the transposed copy).
    const double elems = tokens * (2 * hidden + hidden / t + 13824.0 / t);
    const double e16 = analytic_layer_times(m, h, c, s16).elementwise_forward_s;
    CHECK(analytic_layer_times(m, h, c, s8).elementwise_forward_s ==
          Approx(e16 + 6.0 * elems / bw).epsilon(1e-12));
    // Sequence parallelism casts the norm outputs on the rank's s/tp tokens, before the
    // all-gather (Transformer Engine's amax reduction over the tp group; torchao's fp8 TP).
    s8.sequence_parallel = true;
    const double sp_elems = tokens * (2 * hidden / t + hidden / t + 13824.0 / t);
    CHECK(analytic_layer_times(m, h, c, s8).elementwise_forward_s ==
          Approx(e16 + 6.0 * sp_elems / bw).epsilon(1e-12));
  }
}
