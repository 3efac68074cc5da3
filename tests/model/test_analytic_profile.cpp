#include <catch2/catch.hpp>

#include <cmath>

#include "zerosearch/io/hardware_json.hpp"
#include "zerosearch/io/model_json.hpp"
#include "zerosearch/model/analytic_profile.hpp"

#include "native_fixtures.hpp"

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
  const ModelSpec m = test::hand_worked_layer_model();
  const GpuSpec g = test::unit_gpu();
  const AnalyticCalibration c = test::ideal_calibration();
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

TEST_CASE("with_intra_node_bus: a user's intra-node figure for every collective in a node",
          "[analytic]") {
  // T4 prior: PCIe 3 with P2P, 60 % of 16 GB/s per direction, 20 us a step.
  AnalyticCalibration t4 = prior_calibration(catalog().gpu("T4"));
  REQUIRE(t4.tp_allreduce.at(4).bus_bytes_per_s == Approx(0.6 * 16e9));
  with_intra_node_bus(t4, 30e9 / 8); // --intra_node_gbps 30
  for (const int n : {2, 4, 8, 16}) {
    CHECK(t4.tp_allreduce.at(n).bus_bytes_per_s == Approx(3.75e9));
    CHECK(t4.embedding_allreduce.at(n).bus_bytes_per_s == Approx(3.75e9));
    CHECK(t4.tp_allreduce.at(n).alpha_s == 20e-6); // latencies kept
  }
  // NVLink's latencies stay NCCL's; a calibration without fits gets every group size.
  AnalyticCalibration h100 = prior_calibration(catalog().gpu("H100-SXM"));
  with_intra_node_bus(h100, 100e9);
  CHECK(h100.tp_allreduce.at(8).alpha_s == Approx(3.4e-6 + 8.4e-6 / 14));
  AnalyticCalibration bare;
  with_intra_node_bus(bare, 5e9);
  CHECK(bare.tp_allreduce.size() == 4);
  CHECK(bare.embedding_allreduce.at(16).bus_bytes_per_s == 5e9);
}

TEST_CASE("fp8 casts: an amax pass and a transposed copy, on s/tp tokens with SP",
          "[analytic]") {
  const ModelSpec& m = models().find("llama2_13B");
  const GpuSpec& h = catalog().gpu("H100-SXM");
  const AnalyticCalibration c = prior_calibration(h);
  const double bw = h.memory_GBps * 1e9 * c.memory_efficiency;
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

TEST_CASE("eager layers: the element-wise traffic of each op, counted by hand", "[analytic]") {
  // llama3_8B (h 4096, 32 heads of 128, 8 kv heads, ffn 14336) on 4096 tokens, tp 2:
  // q width 2048, kv width 512, ffn 7168 per rank.
  const ModelSpec& m = models().find("llama3_8B");
  const GpuSpec& h = catalog().gpu("H100-SXM");
  const AnalyticCalibration c = prior_calibration(h);
  const double bw = h.memory_GBps * 1e9 * c.memory_efficiency;
  AnalyticSettings fused;
  fused.tp = 2;
  fused.dtype = Dtype::bf16;
  fused.sequence_length = 4096;
  AnalyticSettings eager = fused;
  eager.fused_kernels = false;
  const double tokens = 4096.0, hid = 4096.0, q = 2048.0, kv = 512.0, f = 7168.0;
  // Two eager RMSNorms (36 bytes per element against a fused norm's 4), RoPE on q and k (18),
  // repeat_kv's copies of k and v to the query width (2 x 2 bytes each way), the attention
  // output transposed back (4), SwiGLU's silu then product (10 bytes per element against 6).
  const double extra = 2 * 32 * hid + 18 * (q + kv) + 4 * (q + kv) + 4 * q + 4 * f;
  const double e_fused = analytic_layer_times(m, h, c, fused).elementwise_forward_s;
  CHECK(analytic_layer_times(m, h, c, eager).elementwise_forward_s ==
        Approx(e_fused + extra * tokens / bw).epsilon(1e-12));
  // GPT-3's LayerNorm and GeLU are one kernel either way, with no RoPE and no repeat_kv: the
  // attention output's copy is the only difference.
  ModelSpec gpt = models().find("gpt3_175B");
  gpt.sequence_length = 2048;
  AnalyticSettings g16 = fused;
  g16.sequence_length = 2048;
  AnalyticSettings g_eager = g16;
  g_eager.fused_kernels = false;
  CHECK(analytic_layer_times(gpt, h, c, g_eager).elementwise_forward_s ==
        Approx(analytic_layer_times(gpt, h, c, g16).elementwise_forward_s +
               4.0 * 12288.0 / 2 * 2048.0 / bw)
            .epsilon(1e-12));
}

TEST_CASE("fused attention fills the GPU with work: efficiency by call size", "[analytic]") {
  const double h100 = 989.4e12;
  // At x0 the call reaches 1 - 1/e of the large-call efficiency; a GPU of half the peak gets
  // there with half the work; a huge call is at the large-call efficiency.
  CHECK(flash_attention_efficiency(0.43, kAttentionFillFlops, h100) ==
        Approx(0.43 * (1.0 - std::exp(-1.0))));
  CHECK(flash_attention_efficiency(0.43, kAttentionFillFlops / 2, h100 / 2) ==
        Approx(0.43 * (1.0 - std::exp(-1.0))));
  CHECK(flash_attention_efficiency(0.43, 1e15, h100) == Approx(0.43));
  CHECK(flash_attention_efficiency(0.43, 1e9, h100) < 0.03);
  // In a layer: llama3_8B on an H100 at 2,048 tokens, tp 8 (4 heads of 128 per rank): forward
  // FLOPs 4 x 2048 x 1024 x 512 = 4.29e9, at 0.43 (1 - exp(-4.29e9 / 1.78e10)) = 0.092 of
  // the peak, not the catalog's 0.43 (measured on an H100: 0.09, layers_h100_parts).
  const ModelSpec& m = models().find("llama3_8B");
  const GpuSpec& g = catalog().gpu("H100-SXM");
  REQUIRE(g.flash_attention_efficiency);
  CHECK(*g.flash_attention_efficiency == 0.43);
  AnalyticSettings st;
  st.tp = 8;
  st.dtype = Dtype::bf16;
  st.sequence_length = 2048;
  st.flash_attention = true;
  const double flops = 4.0 * 2048 * 1024 * 4 * 128;
  const double e = 0.43 * (1.0 - std::exp(-flops / 1.78e10));
  CHECK(e == Approx(0.0922).epsilon(1e-3));
  CHECK(analytic_layer_times(m, g, prior_calibration(g), st).attention_forward_s ==
        Approx(flops / (h100 * e)).epsilon(1e-9));
}

TEST_CASE("the attention kernel: FlashAttention-2 and its Triton kernel against the measured rate",
          "[analytic]") {
  // H100 SXM: the measured rate 0.43 (auto), FlashAttention-2's 0.35 (its catalog
  // flash_attention2_efficiency), the Triton kernel at half of that: 0.175.
  const GpuSpec& h = catalog().gpu("H100-SXM");
  const AnalyticCalibration c = prior_calibration(h);
  REQUIRE(h.flash_attention2_efficiency);
  CHECK(*h.flash_attention2_efficiency == 0.35);
  CHECK(fused_attention_efficiency(h, c, AttentionKernel::automatic) == 0.43);
  CHECK(fused_attention_efficiency(h, c, AttentionKernel::fa2) == 0.35);
  CHECK(fused_attention_efficiency(h, c, AttentionKernel::triton) == Approx(0.175));
  // A100 has no measured rate: the class prior is FlashAttention-2's own (no Hopper gap), and
  // the Triton kernel runs at half of it.
  const GpuSpec& a = catalog().gpu("A100-80GB");
  const AnalyticCalibration ca = prior_calibration(a);
  REQUIRE_FALSE(a.flash_attention_efficiency);
  const double prior = std::max(ca.attention_efficiency, 0.8 * ca.gemm_e_max);
  CHECK(fused_attention_efficiency(a, ca, AttentionKernel::automatic) == prior);
  CHECK(fused_attention_efficiency(a, ca, AttentionKernel::fa2) == prior);
  CHECK(fused_attention_efficiency(a, ca, AttentionKernel::triton) == Approx(prior / 2));
  // In a layer: the attention core's forward takes 0.43 / 0.175 as long with the Triton kernel
  // (the fill curve scales both alike); the GEMMs do not change.
  const ModelSpec& m = models().find("llama3_8B");
  AnalyticSettings st;
  st.dtype = Dtype::bf16;
  st.sequence_length = 8192;
  st.flash_attention = true;
  AnalyticSettings tr = st;
  tr.attention_kernel = AttentionKernel::triton;
  const AnalyticLayerTimes t_auto = analytic_layer_times(m, h, c, st);
  const AnalyticLayerTimes t_tr = analytic_layer_times(m, h, c, tr);
  CHECK(t_tr.attention_forward_s == Approx(t_auto.attention_forward_s * 0.43 / 0.175));
  CHECK(t_tr.gemm_forward_s == t_auto.gemm_forward_s);
  CHECK(t_tr.layer.forward_s > t_auto.layer.forward_s);
  CHECK(t_tr.layer.backward_s > t_auto.layer.backward_s);
}

TEST_CASE("the softmax's exponentials bound the fused attention core where they outlast its "
          "matmuls", "[analytic]") {
  // r = tensor FLOPs per MUFU.EX2 result, per SM and clock: B200 8192 / 16 = 512, GB300
  // 8192 / 32 = 256. The forward does 4 x width tensor FLOPs per score, the backward 10 x
  // width, each with one exponential.
  const GpuSpec& b200 = catalog().gpu("B200");
  const GpuSpec& gb300 = catalog().gpu("GB300");
  CHECK(softmax_exp_factor(b200, 4 * 128) == 1.0);   // both roofs at once
  CHECK(softmax_exp_factor(b200, 4 * 64) == 2.0);    // exponentials take twice the matmuls
  CHECK(softmax_exp_factor(b200, 10 * 64) == 1.0);   // backward: 512 / 640 < 1
  CHECK(softmax_exp_factor(b200, 4 * 100) == Approx(1.28));
  CHECK(softmax_exp_factor(gb300, 4 * 64) == 1.0);
  CHECK(softmax_exp_factor(gb300, 4 * 32) == 2.0);
  CHECK(softmax_exp_factor(gb300, 4 * 48) == Approx(256.0 / 192.0));
  // GPUs without an entry (Hopper, A100): the tensor rate alone.
  CHECK(softmax_exp_factor(catalog().gpu("H100-SXM"), 4 * 8) == 1.0);
  CHECK(softmax_exp_factor(catalog().gpu("A100-80GB"), 4 * 8) == 1.0);

  // In a layer: gpt2XL (16 heads of 100) on B200 at 2,048 tokens: the forward core takes
  // 512 / 400 = 1.28 x its tensor time, the backward (1,000 FLOPs per score) its tensor time;
  // without the catalog's sfu_exp2 the core is priced on the tensor rate alone.
  const ModelSpec& m = models().find("gpt2XL");
  GpuSpec tensor_only = b200;
  tensor_only.sfu_exp2.reset();
  AnalyticSettings st;
  st.dtype = Dtype::bf16;
  st.sequence_length = 2048;
  st.flash_attention = true;
  const AnalyticCalibration c = prior_calibration(b200);
  const AnalyticLayerTimes with = analytic_layer_times(m, b200, c, st);
  const AnalyticLayerTimes without = analytic_layer_times(m, tensor_only, c, st);
  CHECK(with.attention_forward_s == Approx(1.28 * without.attention_forward_s).epsilon(1e-12));
  CHECK(with.attention_backward_s == without.attention_backward_s);
  CHECK(without.attention_backward_s ==
        Approx(kFlashBackwardRatio * without.attention_forward_s).epsilon(1e-12));
  CHECK(with.layer.forward_s - without.layer.forward_s ==
        Approx(0.28 * without.attention_forward_s).epsilon(1e-9));
  CHECK(with.layer.backward_s == without.layer.backward_s);
  CHECK(with.gemm_forward_s == without.gemm_forward_s);
  // GB300 at the same width stays on its tensor roof; llama3_8B (head dim 128) on B200 too.
  GpuSpec gb300_tensor_only = gb300;
  gb300_tensor_only.sfu_exp2.reset();
  const AnalyticCalibration c3 = prior_calibration(gb300);
  CHECK(analytic_layer_times(m, gb300, c3, st).layer.forward_s ==
        analytic_layer_times(m, gb300_tensor_only, c3, st).layer.forward_s);
  const ModelSpec& l8 = models().find("llama3_8B");
  CHECK(analytic_layer_times(l8, b200, c, st).layer.forward_s ==
        analytic_layer_times(l8, tensor_only, c, st).layer.forward_s);
}

TEST_CASE("MoE layers: the dispatcher's token permutation, counted by hand", "[analytic][moe]") {
  // mixtral_8x7B: h 4096, 8 experts, top-2. One rank's 4096 tokens: gathered into expert order
  // (read h, write 2 copies) and combined back (read 2 copies, write h): 2 + 2 x 2 elements of
  // h per token; with ep 2 the rank's 4 local experts also sort and unsort the copies after
  // the all-to-all: 4 x 2 more.
  const ModelSpec& m = models().find("mixtral_8x7B");
  const GpuSpec& h = catalog().gpu("H100-SXM");
  const AnalyticCalibration c = prior_calibration(h);
  const double bw = h.memory_GBps * 1e9 * c.memory_efficiency;
  AnalyticSettings one;
  one.dtype = Dtype::bf16;
  one.sequence_length = 4096;
  one.sequence_parallel = false;
  AnalyticSettings two = one;
  two.ep = 2;
  const double e1 = analytic_layer_times(m, h, c, one).elementwise_forward_s;
  const double e2 = analytic_layer_times(m, h, c, two).elementwise_forward_s;
  CHECK(e2 - e1 == Approx(2.0 * 4096 * 4096 * 4 * 2 / bw).epsilon(1e-9));
  // At ep 1: the norms and residuals (10 h), the permutation (2 + 2 x 2 h) and the
  // activation of the two experts' SwiGLU on top of them.
  CHECK(e1 > 2.0 * 4096 * 4096 * (10 + 2 + 2 * 2) / bw);
}

TEST_CASE("MoE layers: fp8 casts the experts' input, the top-k dispatched copies of each token",
          "[analytic][moe]") {
  // qwen3_30B_A3B: h 2048, 32 query heads of 128 (the output projection's input, 4096 wide),
  // 128 experts of 768, top-8, no shared expert. One GPU's 4096 tokens, tp 1, ep 8: its 16
  // experts get 4096 x 8 x 8 / 128 = 2048 tokens each, so their grouped fc1 casts 16 x 2048 =
  // 32768 rows of h (Transformer Engine's GroupedLinear quantizes the whole permuted input,
  // fused_multi_quantize over its m_splits), where a dense fc1 casts one row of h per token.
  // The casts: qkv's input (h), the output projection's (4096), fc2's (8 x 768 per token:
  // the experts' activations) and the experts' fc1 input, 6 bytes an element each.
  const ModelSpec& m = models().find("qwen3_30B_A3B");
  const GpuSpec& h = catalog().gpu("H100-SXM");
  const AnalyticCalibration c = prior_calibration(h);
  const double bw = h.memory_GBps * 1e9 * c.memory_efficiency;
  AnalyticSettings s16;
  s16.dtype = Dtype::bf16;
  s16.sequence_length = 4096;
  s16.sequence_parallel = false;
  s16.ep = 8;
  s16.etp = 1;
  AnalyticSettings s8 = s16;
  s8.dtype = Dtype::fp8;
  const double tokens = 4096.0;
  const double elems = tokens * (2048.0 + 4096.0 + 8 * 768.0) + 16 * 2048.0 * 2048.0;
  const double e16 = analytic_layer_times(m, h, c, s16).elementwise_forward_s;
  const double e8 = analytic_layer_times(m, h, c, s8).elementwise_forward_s;
  CHECK(e8 - e16 == Approx(6.0 * elems / bw).epsilon(1e-9));
  // The busiest rank (imbalance 1.5) casts 1.5 times the copies; the rest is per token.
  s16.moe_imbalance = 1.5;
  s8.moe_imbalance = 1.5;
  const double busy = tokens * (2048.0 + 4096.0 + 8 * 768.0) + 1.5 * 16 * 2048.0 * 2048.0;
  CHECK(analytic_layer_times(m, h, c, s8).elementwise_forward_s -
            analytic_layer_times(m, h, c, s16).elementwise_forward_s ==
        Approx(6.0 * busy / bw).epsilon(1e-9));
  // A shared expert (here 1536 wide) has its own fc1 on each token's h, and its activation
  // (1536) is fc2's input beside the routed experts'.
  ModelSpec shared = m;
  shared.shared_expert_ffn_hidden_size = 1536;
  s16.moe_imbalance = 1.0;
  s8.moe_imbalance = 1.0;
  const double with_shared =
      tokens * (2048.0 + 4096.0 + 8 * 768.0 + 2048.0 + 1536.0) + 16 * 2048.0 * 2048.0;
  CHECK(analytic_layer_times(shared, h, c, s8).elementwise_forward_s -
            analytic_layer_times(shared, h, c, s16).elementwise_forward_s ==
        Approx(6.0 * with_shared / bw).epsilon(1e-9));
}

// The native estimator's costs (docs/native.md §2.2), worked by hand.

TEST_CASE("a layer's kernels follow the framework's fused or eager path", "[analytic][kernels]") {
  ModelSpec gpt = gpt3_175b();
  gpt.architecture = "gpt3";
  AnalyticSettings st;
  st.dtype = Dtype::fp16;
  // Megatron-LM, unfused attention: 2 norms, 4 GEMMs (qkv, proj, fc1, fc2), baddbmm +
  // scale-mask-softmax + dropout + bmm + 2 transposes, bias-GeLU, 2 bias-dropout-adds.
  LayerKernels k = layer_kernels(gpt, st);
  CHECK(k.forward == 2 + 4 + 6 + 1 + 2);
  CHECK(k.forward_gemms == 4);
  CHECK(k.backward == 30);

  ModelSpec llama = models().find("llama3_8B");
  st.fused_kernels = false; // torchtitan: eager RMSNorm, q/k/v and w1/w3/w2 apart
  st.flash_attention = true;
  st.tp = 8;
  st.sequence_parallel = true;
  st.dtype = Dtype::bf16;
  k = layer_kernels(llama, st);
  // 2 x 8 (RMSNorm) + 7 GEMMs + 6 (RoPE) + 1 (flash) + 2 (SiLU, product) + 2 adds + 4 tp.
  CHECK(k.forward == 16 + 7 + 6 + 1 + 2 + 2 + 4);
  CHECK(k.forward_gemms == 7);
  st.dtype = Dtype::fp8;
  CHECK(layer_kernels(llama, st).forward == 38 + 2 * 7);
  st.dtype = Dtype::bf16;
  st.sharded_parameters = true;
  CHECK(layer_kernels(llama, st).forward == 38 + 3);
  CHECK(layer_kernels(llama, st).backward == 76 + 6);
}

TEST_CASE("a GEMM's tiles fill the SMs, split along K while SMs are idle", "[analytic][kernels]") {
  // 512 x 512: 16 tiles of 128 x 128; K 1024 splits into 4 slices of 256: 64 of 108 SMs.
  CHECK(gemm_sm_fill(512, 512, 1024, 108) == Approx(64.0 / 108.0));
  // K 4096 could split 16 ways; 7 slices already fill the SMs.
  CHECK(gemm_sm_fill(512, 512, 4096, 108) == 1.0);
  // K 128 cannot split: 4 tiles on 108 SMs.
  CHECK(gemm_sm_fill(256, 256, 128, 108) == Approx(4.0 / 108.0));
  CHECK(gemm_sm_fill(8192, 8192, 8192, 132) == 1.0);
  CHECK(gemm_sm_fill(256, 256, 128, 0) == 1.0); // SMs unknown: not modelled
}

TEST_CASE("a skinny GEMM is never faster than its memory traffic", "[analytic][kernels]") {
  AnalyticCalibration c;
  c.gemm_e_max = 0.7;
  c.gemm_x0_flops = 1e10;
  // 65536 x 128 x 128: F = 2 147 483 648, e(F) = 0.7 (1 - exp(-0.2147)) = 0.13528; the tiles
  // fill the SMs (512 of them), as do the cube's (1024^3: 64 tiles x 2 K slices).
  const double compute = 2147483648.0 / (312e12 * 0.13527890604809795);
  CHECK(gemm_shape_s(65536, 128, 128, 312e12, 0.7, c, 108, 2, 2, 1e12) ==
        Approx(compute).epsilon(1e-9));
  CHECK(compute == Approx(50.88e-6).epsilon(1e-3));
  // At 300 GB/s the 2 (65536 x 128 + 128 x 128) + 2 x 65536 x 128 = 33 587 200 bytes take
  // 112 us: the roofline binds.
  CHECK(gemm_shape_s(65536, 128, 128, 312e12, 0.7, c, 108, 2, 2, 3e11) ==
        Approx(33587200.0 / 3e11));
}

TEST_CASE("a GEMM dimension off the 16-byte vectors runs at the misaligned rate",
          "[analytic][kernels]") {
  // stas00/ml-engineering's H100 fp16 figures: 272.73 TFLOPS at d_ff 10922, 398.38 at 10944.
  CHECK(kMisalignedGemmRate == Approx(0.68460).epsilon(1e-4));
  // BigScience's 104B (h 11600, 80 heads of 145) at tp 4: 2900 x 2 bytes = 5800 = 362.5
  // vectors of 16 bytes; at tp 2, 5800 x 2 = 11600 = 725 vectors.
  CHECK_FALSE(gemm_dim_aligned(11600.0 / 4, 2));
  CHECK(gemm_dim_aligned(11600.0 / 2, 2));
  CHECK_FALSE(gemm_dim_aligned(145, 2)); // the head dim: 290 bytes
  CHECK_FALSE(gemm_dim_aligned(108, 2)); // BLOOM's 13824 / 128 heads: 216 bytes = 13.5
  CHECK(gemm_dim_aligned(128, 2));
  CHECK(gemm_dim_aligned(2900, 4));        // fp32: 11600 bytes
  CHECK_FALSE(gemm_dim_aligned(11592, 1)); // fp8 needs 16 elements: 11592 = 724.5 x 16
  CHECK_FALSE(gemm_dim_aligned(2.5, 2));   // not a whole number of elements
  // qkv at tp 4: N = 3 x 2900 = 8700, K = 11600; proj: N = 11600, K = 2900; fc1 and fc2 at
  // tp 4 (46400 / 4 = 11600) are aligned.
  CHECK(gemm_alignment_rate(8700, 11600, 2) == kMisalignedGemmRate);
  CHECK(gemm_alignment_rate(11600, 2900, 2) == kMisalignedGemmRate);
  CHECK(gemm_alignment_rate(11600, 11600, 2) == 1.0);
  CHECK(gemm_alignment_rate(17400, 11600, 2) == 1.0); // qkv at tp 2
  // The qkv GEMM of one 2,048-token sequence on a V100 (125 TFLOPS fp16, e_max 0.7, 80 SMs):
  // F = 2 x 2048 x 8700 x 11600 = 413,368,320,000; e(F) = 0.7; 16 x 68 = 1,088 tiles fill the
  // SMs: 4.7242 ms aligned, / 0.68460 = 6.9007 ms.
  AnalyticCalibration c;
  c.gemm_e_max = 0.7;
  c.gemm_x0_flops = 1e10;
  const double aligned = 413368320000.0 / (125e12 * 0.7);
  CHECK(aligned == Approx(4.7242e-3).epsilon(1e-4));
  CHECK(gemm_shape_s(2048, 8700, 11600, 125e12, 0.7, c, 80, 2, 2, 900e9) ==
        Approx(6.9007e-3).epsilon(1e-4));
  CHECK(gemm_shape_s(2048, 11600, 11600, 125e12, 0.7, c, 80, 2, 2, 900e9) ==
        Approx(2 * 2048 * 11600.0 * 11600 / (125e12 * 0.7)).epsilon(1e-9));
}

TEST_CASE("unfused attention with a head dim off the 16-byte vectors runs at the misaligned rate",
          "[analytic][kernels]") {
  // Two heads of 145 (h 290), 8 tokens, one sequence, on the unit GPU at full efficiency: the
  // attention core is 4 x 8 x 8 x 2 x 145 = 74,240 FLOPs, 74.24 ns aligned, 108.44 ns at 0.6846.
  ModelSpec m = test::hand_worked_layer_model();
  m.hidden_size = 290;
  m.ffn_hidden_size = 4 * 290;
  const GpuSpec g = test::unit_gpu();
  const AnalyticCalibration c = test::ideal_calibration();
  AnalyticSettings st;
  st.dtype = Dtype::bf16;
  st.gemm_shapes = true;
  CHECK(analytic_layer_times(m, g, c, st).attention_forward_s ==
        Approx(74240e-12 / kMisalignedGemmRate).epsilon(1e-9));
  CHECK(74240e-12 / kMisalignedGemmRate == Approx(108.44e-9).epsilon(1e-4));
  // The zerosearch estimator's analytic profiles (no GEMMs by shape): unchanged.
  st.gemm_shapes = false;
  CHECK(analytic_layer_times(m, g, c, st).attention_forward_s == Approx(74240e-12).epsilon(1e-9));
  // Head dim 128 (h 256): 4 x 8 x 8 x 2 x 128 = 65,536 FLOPs at full rate.
  st.gemm_shapes = true;
  m.hidden_size = 256;
  m.ffn_hidden_size = 4 * 256;
  CHECK(analytic_layer_times(m, g, c, st).attention_forward_s == Approx(65536e-12).epsilon(1e-9));
}

TEST_CASE("overlapped tp collectives hide all but their first chunk", "[analytic][kernels]") {
  // 80 us over 8 chunks beside a 100 us GEMM: the first 10 us show.
  CHECK(tp_overlap_exposed_s(80e-6, 100e-6, 8) == Approx(10e-6));
  // Beside a 30 us GEMM with 4 chunks: 20 us first chunk + (80 - 20 - 30) us that the GEMM
  // cannot cover.
  CHECK(tp_overlap_exposed_s(80e-6, 30e-6, 4) == Approx(50e-6));
  CHECK(tp_overlap_exposed_s(80e-6, 100e-6, 1) == Approx(80e-6));
}

TEST_CASE("tensorwise fp8 all-gathers its fp8 copy, reduce-scatters 16 bits", "[analytic]") {
  // Sequence parallelism: the all-gather moves the fp8 copy (1 byte), the reduce-scatter the
  // bf16 GEMM output (2); without it one bf16 all-reduce; rowwise and bf16 move 2 both ways.
  const TpCollectiveBytes fp8_sp = tp_collective_bytes(Dtype::fp8, Fp8Recipe::tensorwise, true, 2);
  CHECK(fp8_sp.gather == 1.0);
  CHECK(fp8_sp.reduce == 2.0);
  for (const TpCollectiveBytes b :
       {tp_collective_bytes(Dtype::fp8, Fp8Recipe::tensorwise, false, 2),
        tp_collective_bytes(Dtype::fp8, Fp8Recipe::rowwise, true, 2),
        tp_collective_bytes(Dtype::bf16, Fp8Recipe::tensorwise, true, 2)}) {
    CHECK(b.gather == 2.0);
    CHECK(b.reduce == 2.0);
  }
  // A ring of 8, 5 us a step, 100 GB/s bus, 1e6 elements per rank.
  const CollectiveFit cf{5e-6, 100e9};
  // bf16: all-reduce of 2 MB, 14 steps (70 us) + 2 * 7/8 * 2e6 / 1e11 (35 us).
  CHECK(tp_collective_pair_s(cf, 8, 1e6, {2.0, 2.0}) == Approx(105e-6));
  // fp8: all-gather of 1 MB, 7 steps (35 us) + 7/8 * 1e6 / 1e11 (8.75 us), and reduce-scatter
  // of 2 MB, 35 us + 17.5 us: 96.25 us.
  CHECK(tp_collective_pair_s(cf, 8, 1e6, fp8_sp) == Approx(96.25e-6));

  // In a layer: llama3_8B, tp 8, 4096 tokens; two pairs forward, two backward.
  const ModelSpec& m = models().find("llama3_8B");
  const GpuSpec& h = catalog().gpu("H100-SXM");
  const AnalyticCalibration c = prior_calibration(h);
  AnalyticSettings st;
  st.tp = 8;
  st.dtype = Dtype::fp8;
  st.sequence_length = 4096;
  st.sequence_parallel = true;
  const CollectiveFit& fit = c.tp_allreduce.at(8);
  const AnalyticLayerTimes t = analytic_layer_times(m, h, c, st);
  CHECK(t.tp_comm_forward_s == Approx(2 * tp_collective_pair_s(fit, 8, 4096.0 * 4096, {1, 2})));
  CHECK(t.tp_comm_backward_s == Approx(t.tp_comm_forward_s));
  st.dtype = Dtype::bf16;
  CHECK(analytic_layer_times(m, h, c, st).tp_comm_forward_s ==
        Approx(2 * tp_collective_pair_s(fit, 8, 4096.0 * 4096, {2, 2})));
}

TEST_CASE("a layer is never faster than the host issuing its kernels", "[analytic][kernels]") {
  ModelSpec m = gpt3_175b();
  m.architecture = "gpt3";
  m.hidden_size = 64;
  m.num_attention_heads = 1;
  m.ffn_hidden_size = 256;
  m.sequence_length = 16;
  GpuSpec g = catalog().gpu("A100-80GB");
  AnalyticCalibration c = prior_calibration(g);
  c.layer_overhead_s = 0.0;
  c.gemm_x0_flops = 1.0; // every GEMM at e_max: this layer's GPU time is well under 1 us
  AnalyticSettings st;
  st.dtype = Dtype::fp16;
  const AnalyticLayerTimes gpu_only = analytic_layer_times(m, g, c, st);
  CHECK(gpu_only.layer.forward_s < 1e-6);
  st.host_per_kernel_s = 10e-6;
  st.host_per_linear_s = 15e-6;
  const AnalyticLayerTimes t = analytic_layer_times(m, g, c, st);
  // 15 kernels, 4 of them linear modules: 4 x 15 + 11 x 10 us; backward 30 x 10 us.
  CHECK(t.layer.forward_s == Approx(4 * 15e-6 + 11 * 10e-6));
  CHECK(t.layer.backward_s == Approx(30 * 10e-6));
  CHECK(t.host_bound_forward);
  CHECK(t.host_bound_backward);
}

TEST_CASE("a power-capped GPU's measured matmul rate sets its efficiency (T4)", "[analytic]") {
  // T4: 24 of its 65 fp16 TFLOPS sustained under the 70 W cap (NVIDIA forum thread 264462),
  // on A100's reference (0.7 at 271.2 of 312): 0.7 x (24 / 65) / (271.2 / 312).
  const GpuSpec& t4 = catalog().gpu("T4");
  REQUIRE(t4.mamf);
  const AnalyticCalibration c = prior_calibration(t4);
  CHECK(c.gemm_e_max == Approx(0.2973451327));
  // The clock cap slows attention alike: the gddr prior's 0.3 x 0.2973 / 0.6.
  CHECK(c.attention_efficiency == Approx(0.3 * 0.2973451327 / 0.6));
  CHECK(t4.sm_count == 40);
  CHECK(catalog().gpu("A100-80GB").sm_count == 108);
}

TEST_CASE("the gddr prior's GEMM fill size scales with the SMs, not the clock (T4)",
          "[analytic]") {
  // 7e9 FLOPs at the A6000's 84 SMs: 8.333e7 per SM.
  CHECK(gddr_gemm_fill_flops(84) == Approx(7e9));
  CHECK(gddr_gemm_fill_flops(40) == Approx(3.3333333e9)); // T4: 7e9 x 40 / 84
  CHECK(gddr_gemm_fill_flops(128) == Approx(1.0666667e10)); // RTX 4090
  CHECK(gddr_gemm_fill_flops(0) == Approx(7e9));           // no SM count: the prior
  const AnalyticCalibration t4 = prior_calibration(catalog().gpu("T4"));
  CHECK(t4.gemm_x0_flops == Approx(3.3333333e9));
  // GPT-2 345M's qkv GEMM at one sequence of 1,024 tokens: 2 x 1024 x 1024 x 3072 = 6.44e9
  // FLOPs runs at 1 - exp(-6.44 / 3.333) = 0.855 of e_max (the class's 7e9: 0.601), two
  // sequences (1.288e10) at 0.979 (0.841): mbs 2 gains 14 %, not 40 %.
  CHECK(1.0 - std::exp(-6.442450944e9 / t4.gemm_x0_flops) == Approx(0.8552).epsilon(1e-3));
  CHECK(1.0 - std::exp(-1.2884901888e10 / t4.gemm_x0_flops) == Approx(0.9790).epsilon(1e-3));
  // HBM GPUs keep their prior.
  CHECK(prior_calibration(catalog().gpu("A100-80GB")).gemm_x0_flops == Approx(1e10));
}

TEST_CASE("the 500 W H100 96 GB: peak between NVL and SXM, matmul rate scaled alike",
          "[analytic]") {
  // torchtitan's benchmark hosts: "the actual peak TFLOPs number is between SXM and NVL".
  // Interpolated in board power between NVIDIA's datasheets (NVL 835.5 bf16 / 1670.5 fp8 at
  // 400 W, SXM 989.4 / 1978.9 at 700 W) at 500 W: 835.5 + 153.9 x 100 / 300 = 886.8,
  // 1670.5 + 308.4 / 3 = 1773.3.
  const GpuSpec& g = catalog().gpu("H100-SXM-96GB");
  const GpuSpec& sxm = catalog().gpu("H100-SXM");
  CHECK(*g.peak_tflops.bf16 == Approx(835.5 + (989.4 - 835.5) * (500.0 - 400.0) / 300.0)
                                  .margin(0.05));
  CHECK(*g.peak_tflops.fp8 == Approx(1670.5 + (1978.9 - 1670.5) / 3.0).margin(0.05));
  REQUIRE(g.mamf);
  // The 700 W matmul rates scaled by the same ratio: 794.5 x 886.8 / 989.4 = 712.1,
  // 1402.6 x 1773.3 / 1978.9 = 1256.9; so the achieved share of the peak is H100 SXM's.
  CHECK(*g.mamf->bf16_tflops == Approx(712.1));
  CHECK(*g.mamf->fp8_tflops == Approx(1256.9));
  const AnalyticCalibration c = prior_calibration(g);
  const AnalyticCalibration c_sxm = prior_calibration(sxm);
  CHECK(c.gemm_e_max == Approx(c_sxm.gemm_e_max).epsilon(2e-4));
  CHECK(c.gemm_e_max_fp8 == Approx(c_sxm.gemm_e_max_fp8).epsilon(2e-4));
  // A large layer's GEMMs take 989.4 / 886.8 = 1.1157 times as long as on the 700 W part
  // (compute-bound: llama2_13B at its own sequence length, bf16).
  const ModelSpec& m = models().find("llama2_13B");
  AnalyticSettings s;
  s.dtype = Dtype::bf16;
  const double t = analytic_layer_times(m, g, c, s).gemm_forward_s;
  const double t_sxm = analytic_layer_times(m, sxm, c_sxm, s).gemm_forward_s;
  CHECK(t / t_sxm == Approx(1.1157).epsilon(1e-3));
  REQUIRE(g.power);
  CHECK(g.power->tdp_w == 500.0);
}

TEST_CASE("a GeForce GPU's measured matmul rate lifts the gddr prior (RTX 4090)", "[analytic]") {
  // RTX 4090: 164.81 of its 165.2 bf16 TFLOPS measured (torch-performance-test-data #78), on
  // A100's reference: 0.7 x (164.81 / 165.2) / (271.2 / 312) = 0.8034, against the gddr class
  // prior's 0.6 (a fit of the power-limited A10 and A6000).
  const GpuSpec& g = catalog().gpu("RTX4090");
  REQUIRE(g.mamf);
  const AnalyticCalibration c = prior_calibration(g);
  CHECK(c.gemm_e_max == Approx(0.7 * (164.81 / 165.2) / (271.2 / 312.0)));
  CHECK(c.gemm_e_max > 0.8);
  CHECK(c.attention_efficiency == Approx(0.3 * c.gemm_e_max / 0.6));
  // Without a measured rate (L40S) the class prior stays.
  CHECK(prior_calibration(catalog().gpu("L40S")).gemm_e_max == Approx(0.6));
}

TEST_CASE("an RTX 3090 measured above its datasheet rate takes the rate at its peak", "[analytic]") {
  // RTX 3090: BF16 76.58 TFLOPS measured in a torch matmul (torch-performance-test-data #42),
  // above the GA102 whitepaper's 71; entered at 71, the peak (mamf may not exceed it). On A100's
  // reference: 0.7 x (71 / 71) / (271.2 / 312) = 0.7 x 312 / 271.2 = 0.80531, the gddr prior's
  // 0.6 before; the attention core follows: 0.3 x 0.80531 / 0.6 = 0.40265; the LM head
  // 0.8 x 312 / 271.2 = 0.92035.
  const GpuSpec& g = catalog().gpu("RTX3090");
  REQUIRE(g.mamf);
  REQUIRE(g.mamf->bf16_tflops);
  CHECK(*g.mamf->bf16_tflops == 71.0);
  const AnalyticCalibration c = prior_calibration(g);
  CHECK(c.gemm_e_max == Approx(0.80531).epsilon(1e-4));
  CHECK(c.attention_efficiency == Approx(0.40265).epsilon(1e-4));
  CHECK(c.lm_head_efficiency == Approx(0.92035).epsilon(1e-4));
  // Its large GEMMs: 71 TFLOPS x 0.80531 = 57.2 TFLOPS, a 1e12-FLOP GEMM about 17.5 ms
  // (the size curve is 1 there: 1 - exp(-1e12 / 7e9)).
  CHECK(1e12 / (peak_flops(g, Dtype::bf16) * c.gemm_e_max) == Approx(17.49e-3).epsilon(1e-3));
}

TEST_CASE("backward splits into its input-gradient part and W, the weight GEMMs", "[analytic][zb]") {
  // The hand-worked layer above: W is the forward's 2048 GEMM FLOP again (dW = X^T dY);
  // the input gradient keeps the other GEMM, attention and the element-wise traffic.
  const ModelSpec m = test::hand_worked_layer_model();
  const GpuSpec g = test::unit_gpu();
  const AnalyticCalibration c = test::ideal_calibration();
  AnalyticSettings st;
  st.flash_attention = false;
  const AnalyticLayerTimes t = analytic_layer_times(m, g, c, st);
  CHECK(t.layer.weight_s == Approx(2048e-12));
  CHECK(t.layer.backward_s - t.layer.weight_s == Approx(2048e-12 + 2 * 1024e-12 + 2 * 1920e-12));

  // On every catalog GPU with specifications, for two models and tp 1 and 8: the two parts
  // add up to the backward the estimator used before the split, exactly, and each is positive.
  for (const char* name : {"llama3_70B", "gpt2XL"}) {
    const ModelSpec& model = models().find(name);
    for (const auto& [gname, gpu] : catalog().gpus) {
      if (!gpu.has_specs) continue;
      for (const int tp : {1, 8}) {
        AnalyticSettings s;
        s.tp = tp;
        const AnalyticLayerTimes x = analytic_layer_times(model, gpu, prior_calibration(gpu), s);
        const double input = x.layer.backward_s - x.layer.weight_s;
        CHECK(x.layer.weight_s == Approx(x.gemm_forward_s).epsilon(1e-12));
        CHECK(input > 0.0);
        CHECK(input + x.layer.weight_s == x.layer.backward_s);
        CHECK(x.embedding.weight_s == x.embedding.backward_s);
        CHECK(x.post_process.weight_s > 0.0);
        CHECK(x.post_process.weight_s < x.post_process.backward_s);
      }
    }
  }
}

namespace {
/// GPT-2 small's layer (h 768, 12 heads, ffn 3072, sequence 1024) on the hand-worked model.
ModelSpec gpt2_small_layer_model() {
  ModelSpec m = test::hand_worked_layer_model();
  m.architecture = "gpt2";
  m.hidden_size = 768;
  m.num_attention_heads = 12;
  m.ffn_hidden_size = 3072;
  m.sequence_length = 1024;
  return m;
}
} // namespace

TEST_CASE("Hugging Face's eager GPT-2: its ops' kernels and bytes, counted by hand",
          "[analytic][kernels]") {
  // GPT-2 small (h 768, 12 heads, ffn 3072) at micro-batch 8, sequence 1024, fp16, unfused
  // attention, on the unit GPU (1 TB/s at full efficiency).
  const ModelSpec m = gpt2_small_layer_model();
  const GpuSpec g = test::unit_gpu();
  const AnalyticCalibration c = test::ideal_calibration();
  AnalyticSettings fused;
  fused.dtype = Dtype::bf16;
  fused.micro_batch = 8;
  fused.attention_dropout_bytes = true;
  AnalyticSettings hf = fused;
  hf.layer_impl = LayerImpl::hf_gpt2;
  hf.fused_kernels = false;
  AnalyticSettings amp = hf;
  amp.layer_impl = LayerImpl::hf_gpt2_amp;
  const double h = 768, f = 3072, tokens = 8 * 1024.0, scores = 8 * 12 * 1024.0 * 1024.0;
  // 16 bits, per token: addmm's bias fill written and read back on the four Conv1D outputs
  // (4 bytes x (3h + h + f + h)), q, k, v copied for the bmm (4 x 3h), the merge copy (4h), the
  // two residual dropouts (5h each: 2 read, 2 written, a 1-byte mask), gelu_new's 8 ops (36
  // bytes per element) against a fused bias-GeLU's 4: 4 (5h + f) + 12h + 4h + 10h + 32f.
  const double per_token = 4 * (3 * h + h + f + h) + 4 * 3 * h + 4 * h + 2 * 5 * h + (36 - 4) * f;
  CHECK(per_token == 145920.0);
  // Per score: the division (4), torch.where with its 1-byte mask (5), the mask add (4).
  const double per_score = 4 + 5 + 4;
  const double base = analytic_layer_times(m, g, c, fused).elementwise_forward_s;
  CHECK(analytic_layer_times(m, g, c, hf).elementwise_forward_s ==
        Approx(base + (per_token * tokens + per_score * scores) / 1e12).epsilon(1e-12));
  CHECK(per_token * tokens + per_score * scores == 2503999488.0);
  // autocast (fp32 module): the norms read and write fp32 (8h against 4h each), the GEMMs
  // after them cast their output (6h each), the residual adds write fp32 (10h against 6h
  // each), gelu_new in fp32 with pow's input cast and the output's cast back (76 bytes per
  // element); per score: where and division in fp16 (4 + 5), the mask add into fp32 (2 + 4),
  // softmax (8) and dropout (9) in fp32, PV's cast back (6), the scores written and read (4),
  // against the fused 13; each Conv1D weight and bias cast per forward (6 bytes).
  const double amp_token = 4 * (5 * h + f) + 12 * h + 4 * h + 10 * h + 2 * 4 * h + 2 * 6 * h +
                           2 * 4 * h + (76 - 4) * f;
  CHECK(amp_token == 290304.0);
  const double amp_score = 4 + 5 + 6 + 8 + 9 + 6 + 4 - 13;
  const double weights = 3 * h * h + 3 * h + h * h + h + h * f + f + f * h + h;
  CHECK(analytic_layer_times(m, g, c, amp).elementwise_forward_s ==
        Approx(base + (amp_token * tokens + amp_score * scores + 6 * weights) / 1e12)
            .epsilon(1e-12));
  // Kernels: ln_1, c_attn (fill, GEMM), q/k/v copies (3), QK^T, division, the mask's .bool(),
  // where, mask add, softmax, dropout, PV, merge, c_proj (2), dropout, add, ln_2, c_fc (2),
  // gelu_new (8), mlp.c_proj (2), dropout, add.
  LayerKernels k = layer_kernels(m, hf);
  CHECK(k.forward == 1 + 2 + 3 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 2 + 1 + 1 + 1 + 2 + 8 + 2 +
                         1 + 1);
  CHECK(k.forward == 34);
  CHECK(k.forward_gemms == 4);
  CHECK(k.backward == 68);
  // autocast adds the two norm-output casts, 8 weight and bias casts, gelu's two casts, the
  // fill value's and the probabilities' casts.
  k = layer_kernels(m, amp);
  CHECK(k.forward == 34 + 2 + 8 + 2 + 2);
  CHECK(k.backward == 96);
  // The framework's own layer is untouched by the helper.
  const HfGpt2Extra none = hf_gpt2_extra(LayerImpl::framework, h, f);
  CHECK(none.kernels == 0);
  CHECK(none.per_token == 0.0);
  CHECK(layer_impl_named("hf_gpt2_amp") == LayerImpl::hf_gpt2_amp);
  CHECK_FALSE(layer_impl_named("hf"));
}

TEST_CASE("Megatron-LM v1's eager GPT-2 layer: its ops' kernels and bytes, counted by hand",
          "[analytic][kernels]") {
  // DeepSpeedExamples@a79272c Megatron-LM/mpu/transformer.py: GPT-2 small (h 768, 12 heads,
  // ffn 3072) at micro-batch 4, sequence 1024 (DLPerf's DeepSpeed runs), fp16, on the unit GPU
  // (1 TB/s at full efficiency).
  const ModelSpec m = gpt2_small_layer_model();
  const GpuSpec g = test::unit_gpu();
  const AnalyticCalibration c = test::ideal_calibration();
  AnalyticSettings fused;
  fused.dtype = Dtype::bf16;
  fused.micro_batch = 4;
  fused.attention_dropout_bytes = true;
  AnalyticSettings v1 = fused;
  v1.layer_impl = LayerImpl::megatron_v1;
  v1.fused_kernels = false;
  AnalyticSettings hf = v1;
  hf.layer_impl = LayerImpl::hf_gpt2;
  const double h = 768, f = 3072, tokens = 4 * 1024.0, scores = 4 * 12 * 1024.0 * 1024.0;
  // Per token: the separate bias adds of F.linear on a 3-D input (qkv, fc1) and of
  // RowParallelLinear's output_ + bias (dense, fc2), each reading and writing its output
  // (4 bytes x (3h + h + f + h)), q, k, v copied for torch.matmul's bmm (4 x 3h), the
  // .contiguous() context (4h), the two output dropouts (5h each); the scripted gelu is one
  // kernel, the fused layer's own bytes.
  const double per_token = 4 * (3 * h + h + f + h) + 4 * 3 * h + 4 * h + 2 * 5 * h;
  CHECK(per_token == 47616.0);
  // Per score: / sqrt(d), torch.mul by the fp16 causal mask, the subtraction of
  // 10000 (1 - mask): read 2 and write 2 each.
  const double per_score = 4 + 4 + 4;
  const HfGpt2Extra x = hf_gpt2_extra(LayerImpl::megatron_v1, h, f);
  CHECK(x.per_token == per_token);
  CHECK(x.per_score == per_score);
  CHECK(x.per_weight == 0.0);
  const double base = analytic_layer_times(m, g, c, fused).elementwise_forward_s;
  CHECK(per_token * tokens + per_score * scores == 799014912.0);
  CHECK(analytic_layer_times(m, g, c, v1).elementwise_forward_s ==
        Approx(base + 799014912.0 / 1e12).epsilon(1e-12));
  // Against Hugging Face's layer: gelu_new's eight ops (32 bytes per ffn element beyond a
  // fused GeLU) and the where's 1-byte mask read per score are what v1 does not pay.
  CHECK(analytic_layer_times(m, g, c, hf).elementwise_forward_s -
            analytic_layer_times(m, g, c, v1).elementwise_forward_s ==
        Approx((32 * f * tokens + 1 * scores) / 1e12).epsilon(1e-9));
  // Kernels: input_layernorm, qkv (GEMM, bias add), q/k/v copies (3), QK^T, the division,
  // mul, rsub, mul, sub, softmax, dropout, PV, the contiguous copy, dense (GEMM, bias add),
  // dropout, add, post_attention_layernorm, dense_h_to_4h (GEMM, bias add), gelu,
  // dense_4h_to_h (GEMM, bias add), dropout, add.
  const LayerKernels k = layer_kernels(m, v1);
  CHECK(k.forward == 1 + 2 + 3 + 1 + 5 + 1 + 1 + 1 + 1 + 2 + 1 + 1 + 1 + 2 + 1 + 2 + 1 + 1);
  CHECK(k.forward == 28);
  CHECK(k.forward_gemms == 4);
  CHECK(k.backward == 56);
  CHECK(layer_impl_named("megatron_v1") == LayerImpl::megatron_v1);
  CHECK(std::string(layer_impl_owner(LayerImpl::megatron_v1)) == "Megatron-LM v1's");
  CHECK(std::string(layer_impl_owner(LayerImpl::hf_gpt2_amp)) == "Hugging Face's");
}

TEST_CASE("Megatron's fused-softmax test: the kernel's batches per block, by hand",
          "[analytic][kernels]") {
  // get_batch_per_block (megatron/fused_kernels/scaled_masked_softmax.h): 128 threads, warps of
  // min(next power of two, 32) threads, two rows per warp up to 128 elements.
  CHECK(softmax_batch_per_block(2048) == 4);  // 4 warps x 1 row
  CHECK(softmax_batch_per_block(128) == 8);   // 4 warps x 2 rows
  CHECK(softmax_batch_per_block(16) == 16);   // 8 warps of 16 x 2
  CHECK(softmax_batch_per_block(14) == 16);   // next power of two: 16
  CHECK(softmax_batch_per_block(8) == 32);    // 16 warps of 8 x 2
  CHECK(softmax_batch_per_block(2) == 128);   // 64 warps of 2 x 2
  CHECK(softmax_batch_per_block(1) == 256);
}

TEST_CASE("Megatron's fused-softmax test: BigScience's pre-#260 fork against Megatron-LM's",
          "[analytic][kernels]") {
  const auto pre = SoftmaxCheck::bigscience_pre260;
  const auto meg = SoftmaxCheck::megatron;
  // BLOOM design sweep, 64 heads at tp 8 (8 per rank), 2048 tokens: the fork sized the block
  // from the 8 heads (32 rows), so b x 8 must be a multiple of 32: micro-batch 4 and 8 fuse,
  // 1, 2 and 6 fall back; Megatron-LM's test (4 rows per block at 2048 keys) fuses them all.
  CHECK_FALSE(megatron_fused_softmax(1, 8, 2048, pre));
  CHECK_FALSE(megatron_fused_softmax(2, 8, 2048, pre));
  CHECK(megatron_fused_softmax(4, 8, 2048, pre));
  CHECK_FALSE(megatron_fused_softmax(6, 8, 2048, pre)); // 48 % 32
  CHECK(megatron_fused_softmax(8, 8, 2048, pre));
  CHECK(megatron_fused_softmax(1, 8, 2048, meg));
  CHECK(megatron_fused_softmax(2, 8, 2048, meg));
  // 64 heads at tp 4 (16 per rank, 16 rows per block): every micro-batch fuses.
  CHECK(megatron_fused_softmax(1, 16, 2048, pre));
  // 112 heads at tp 8 (14 per rank, 16 rows), micro-batch 4: 56 % 16 = 8, falls back;
  // 104 heads at tp 4 (26 per rank, 8 rows), micro-batch 2: 52 % 8 = 4, falls back.
  CHECK_FALSE(megatron_fused_softmax(4, 14, 2048, pre));
  CHECK_FALSE(megatron_fused_softmax(2, 26, 2048, pre));
  CHECK(megatron_fused_softmax(2, 26, 2048, meg));
  // BLOOM itself: 112 heads at tp 4, micro-batch 1: 28 rows, a multiple of 4.
  CHECK(megatron_fused_softmax(1, 28, 2048, meg));
  // Both: b x heads per rank a multiple of 4, keys up to 4096 (the fork: 2048).
  CHECK_FALSE(megatron_fused_softmax(1, 6, 2048, meg));
  CHECK(megatron_fused_softmax(1, 16, 4096, meg));
  CHECK_FALSE(megatron_fused_softmax(1, 16, 4096, pre));
  CHECK_FALSE(megatron_fused_softmax(1, 16, 8192, meg));
}

TEST_CASE("Megatron's PyTorch softmax fallback: its fp32 traffic per score, by hand",
          "[analytic][kernels]") {
  // 64 heads at tp 8, micro-batch 2, 2048 tokens, fp16, unfused attention, on the unit GPU
  // (1 TB/s at full efficiency): 2 x 8 x 2048^2 = 67,108,864 scores on the rank.
  ModelSpec m = test::hand_worked_layer_model();
  m.hidden_size = 8192;
  m.num_attention_heads = 64;
  m.ffn_hidden_size = 4 * 8192;
  m.sequence_length = 2048;
  const GpuSpec g = test::unit_gpu();
  const AnalyticCalibration c = test::ideal_calibration();
  AnalyticSettings fused;
  fused.dtype = Dtype::fp16;
  fused.tp = 8;
  fused.micro_batch = 2;
  fused.softmax_fallback = true;
  AnalyticSettings fallback = fused;
  fallback.softmax_check = SoftmaxCheck::bigscience_pre260;
  const double scores = 2 * 8 * 2048.0 * 2048.0;
  CHECK(scores == 67108864.0);
  const AnalyticLayerTimes a = analytic_layer_times(m, g, c, fused);
  const AnalyticLayerTimes b = analytic_layer_times(m, g, c, fallback);
  // Forward: .float() 2 + 4, * scale 4 + 4, masked_fill_ 4 + 4, softmax 4 + 4, .half() 4 + 2 =
  // 36 bytes against the fused kernel's 2 + 2: 32 more, 2,147,483,648 bytes, 2.147 ms.
  CHECK(b.layer.forward_s - a.layer.forward_s == Approx(32 * scores / 1e12).epsilon(1e-9));
  CHECK(32 * scores == 2147483648.0);
  // Backward through the five: 6 + 12 + 8 + 8 + 6 = 40 against the fused 6: 34 more.
  CHECK(b.layer.backward_s - a.layer.backward_s == Approx(34 * scores / 1e12).epsilon(1e-9));
  // Core attention (what selective recompute reruns) includes the fallback's forward.
  CHECK(b.attention_forward_s - a.attention_forward_s ==
        Approx(32 * scores / 1e12).epsilon(1e-9));
  // Five kernels for the fused one.
  CHECK(layer_kernels(m, fallback).forward == layer_kernels(m, fused).forward + 4);
  // Micro-batch 4 passes the fork's test: no fallback.
  fallback.micro_batch = 4;
  fused.micro_batch = 4;
  CHECK(analytic_layer_times(m, g, c, fallback).layer.forward_s ==
        analytic_layer_times(m, g, c, fused).layer.forward_s);
  // FlashAttention, an eager (torchtitan) layer or fp32 have no Megatron softmax to fall back.
  fallback.micro_batch = 2;
  fused.micro_batch = 2;
  fallback.flash_attention = fused.flash_attention = true;
  CHECK(analytic_layer_times(m, g, c, fallback).layer.forward_s ==
        analytic_layer_times(m, g, c, fused).layer.forward_s);
  fallback.flash_attention = fused.flash_attention = false;
  fallback.fused_kernels = fused.fused_kernels = false;
  CHECK(analytic_layer_times(m, g, c, fallback).layer.forward_s ==
        analytic_layer_times(m, g, c, fused).layer.forward_s);
  // Nor the zerosearch estimator's analytic profiles and the calibration fits (off).
  fallback.fused_kernels = fused.fused_kernels = true;
  fallback.softmax_fallback = false;
  fused.softmax_fallback = false;
  CHECK(analytic_layer_times(m, g, c, fallback).layer.forward_s ==
        analytic_layer_times(m, g, c, fused).layer.forward_s);
}
