#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/moe_kernels.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace zerosearch {

namespace {

constexpr double kAlphaPrior_s = 20e-6;

/// Widths of one model, with the defaults resolved.
struct Shape {
  double h, s, a, g, d, f, V;
  bool gated;
  double experts, top_k, f_expert, f_shared;
  /// Multi-head latent attention: q and kv LoRA ranks, rope, nope and value head widths.
  bool mla;
  double q_lora, kv_lora, rope, nope, v;
};

Shape shape_of(const ModelSpec& m, int sequence_length) noexcept {
  Shape x{};
  x.h = static_cast<double>(m.hidden_size);
  x.s = static_cast<double>(sequence_length > 0 ? sequence_length : m.sequence_length);
  x.a = static_cast<double>(m.num_attention_heads);
  x.g = static_cast<double>(m.num_key_value_heads > 0 ? m.num_key_value_heads
                                                       : m.num_attention_heads);
  x.d = m.head_dim > 0 ? static_cast<double>(m.head_dim) : x.h / x.a;
  x.f = static_cast<double>(m.ffn_hidden_size);
  x.V = static_cast<double>(m.vocab_size);
  x.gated = m.gated_mlp;
  x.experts = static_cast<double>(m.num_experts);
  x.top_k = static_cast<double>(m.experts_per_token);
  x.f_expert = static_cast<double>(m.moe_ffn_hidden_size > 0 ? m.moe_ffn_hidden_size
                                                             : m.ffn_hidden_size);
  x.f_shared = static_cast<double>(m.shared_expert_ffn_hidden_size);
  x.mla = m.is_mla();
  x.q_lora = static_cast<double>(m.q_lora_rank);
  x.kv_lora = static_cast<double>(m.kv_lora_rank);
  x.rope = static_cast<double>(m.qk_rope_head_dim);
  x.nope = static_cast<double>(m.qk_nope_head_dim);
  x.v = static_cast<double>(m.v_head_dim);
  return x;
}

double gemm_efficiency(double e_max, const AnalyticCalibration& c, double flops) noexcept {
  return std::max(1e-3, e_max * (1.0 - std::exp(-flops / c.gemm_x0_flops)));
}

/// The HBM class prior's large-GEMM efficiency (0.7, LM head 0.8) is A100's. A100 SXM's
/// maximum achievable matmul rate is 271.2 of 312 TFLOPS (stas00/ml-engineering
/// compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS comparison table"); another
/// HBM GPU with a measured rate gets the prior scaled by its own fraction over this one
/// (docs/native.md §3.1).
constexpr double kReferenceMamfFraction = 271.2 / 312.0;

/// The fit for group size n: exact, else the largest smaller one, else the smallest.
const CollectiveFit* collective_for(const std::map<int, CollectiveFit>& m, int n) noexcept {
  if (m.empty()) {
    return nullptr;
  }
  auto it = m.upper_bound(n);
  if (it == m.begin()) {
    return &it->second;
  }
  return &std::prev(it)->second;
}

double allreduce_s(const CollectiveFit& c, int n, double bytes) noexcept {
  if (n <= 1) {
    return 0.0;
  }
  const double k = static_cast<double>(n - 1);
  return 2.0 * k * c.alpha_s + 2.0 * k / n * bytes / c.bus_bytes_per_s;
}

/// Bus bandwidth prior of the intra-node link: NVLink/xGMI reach ~80 % of the per-direction
/// figure, PCIe with P2P ~60 %, without P2P (staged through the host) ~40 %.
double link_bus_prior(const GpuSpec& gpu) noexcept {
  const double per_dir = gpu.intra_node.GBps_per_dir * 1e9;
  if (gpu.gpu_class == "hbm-nvlink") {
    return 0.8 * per_dir;
  }
  return (gpu.intra_node.p2p ? 0.6 : 0.4) * per_dir;
}

/// Latency of one step of a ring all-reduce over the intra-node link, for a group of n.
/// NVLink: NCCL's own tuning model (NVIDIA/nccl src/graph/tuning.cc, unchanged from 2.7 to
/// 2.2x: ring/Simple costs 8.4 us per call plus 3.4 us per step over NVLink), the per-call
/// part spread over the 2(n-1) steps. Other links keep the prior fitted to the measured PCIe
/// profiles (docs/analytic.md).
double ring_alpha_prior(const GpuSpec& gpu, int n) noexcept {
  if (gpu.intra_node.link.rfind("nvlink", 0) == 0 && n > 1) {
    return 3.4e-6 + 8.4e-6 / (2.0 * (n - 1));
  }
  return kAlphaPrior_s;
}

/// Memory traffic an eager PyTorch layer adds to the fused one (torchtitan without
/// torch.compile; scripts/measure_layers.py times such layers): each op reads its inputs and
/// writes its output. RMSNorm as x.float() * rsqrt(x.float().pow(2).mean(-1) + eps), cast back,
/// times the weight: 28 + 4 elem bytes per element against a fused norm's 2 elem; RoPE's
/// rotate-half on q and k (four products, two sums, a cat: 18 bytes per bf16 element);
/// grouped-query attention's repeat_kv copies of k and v to the query width; the attention
/// output transposed back to (b, s, heads x d); SwiGLU as silu(g) * up (5 elem per element
/// against a fused kernel's 3). LayerNorm and GELU are one kernel either way.
double eager_extra_bytes(const ModelSpec& model, const Shape& x, const AnalyticSettings& st,
                         double elem, double tokens, double f_act) noexcept {
  const double t = static_cast<double>(std::max(1, st.tp));
  const bool rotary = !model.is_gpt_family();
  const double qw = x.a * (x.mla ? x.nope + x.rope : x.d) / t;
  const double kw = x.mla ? qw : x.g * x.d / t;
  double per_token = 0.0;
  if (rotary) {
    per_token += 2 * (28 + 4 * elem - 2 * elem) * x.h; // two RMSNorms
    per_token += 9 * elem * (qw + kw);                  // RoPE of q and k
  }
  if (!x.mla && x.g < x.a) per_token += 2 * elem * (qw + kw); // repeat_kv of k and v
  per_token += 2 * elem * qw;                                  // attention output to (b, s, ...)
  if (x.gated) per_token += 2 * elem * f_act / t;              // silu(g) * up: two kernels
  return per_token * tokens;
}

} // namespace

HfGpt2Extra hf_gpt2_extra(LayerImpl impl, double h, double f) noexcept {
  // Hugging Face transformers' eager GPT2Block (src/transformers/models/gpt2/modeling_gpt2.py
  // and activations.py at v4.12.0, the version of the DeepSpeedExamples autotuning runs;
  // unchanged in these parts through 2022): the ops it launches and the bytes they move, each
  // op reading its inputs and writing its output, beyond the fused layer's (two norms and two
  // residual adds on h, the activation reading and writing f, the scores written, softmaxed
  // and read by PV, the probabilities' dropout). Counted with 16-bit e = 2 bytes.
  //  - Conv1D (c_attn, c_proj, c_fc, mlp.c_proj) is torch.addmm(bias, x, W): the output is
  //    first filled with the broadcast bias, which the GEMM reads back (beta = 1): 2e per
  //    output element, one copy kernel per Conv1D: 2e (3h + h + f + h) per token.
  //  - _split_heads views q, k, v as (b, heads, s, d) permutes; torch.matmul folds them into
  //    3-D bmm operands, which needs contiguous copies of q, k^T and v: 2e 3h; _merge_heads
  //    copies the output back to (b, s, h): 2e h.
  //  - attn_dropout is the fused layer's; resid_dropout and mlp.dropout are not (fused
  //    bias-dropout-add): two dropouts of (2e + 1) h (output and a 1-byte mask).
  //  - gelu_new = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): pow, mul, add, mul, tanh,
  //    add, mul, mul, reading 10 and writing 8 elements per element: 18e f against a fused
  //    bias-GeLU's 2e f.
  //  - _attn on the (b, heads, s, s) scores beside the matmuls, softmax and dropout: the
  //    division by sqrt(d) (2e), torch.where with the causal mask (2e + 1 byte of mask), the
  //    attention-mask add (2e; the DeepSpeedExamples and ColossalAI benchmarks pass
  //    attention_mask): 6e + 1.
  // Kernels (forward): ln_1, c_attn (copy, GEMM), three operand copies, QK^T, division, the
  // mask's .bool() copy, where, mask add, softmax, dropout, PV, merge copy, c_proj (copy,
  // GEMM), dropout, add, ln_2, c_fc (copy, GEMM), gelu_new's 8, mlp.c_proj (copy, GEMM),
  // dropout, add: 34.
  // Under torch.cuda.amp.autocast the module is fp32 and autocast casts per op (the fp32
  // list: layer_norm, softmax, pow): the norms read and write the fp32 residual stream (8 h
  // against 4 h each) and the GEMMs after them cast their fp32 output (read 4, write 2: 6 h
  // each); the residual adds add fp16 to fp32 into fp32 (10 h against 6 h each); gelu_new
  // casts x to fp32 for pow and runs in fp32 but for 0.5 x (76 bytes per element with the
  // cast of its fp32 output before mlp.c_proj, against 4); the attention-mask add promotes the
  // fp16 scores to fp32 (the extended mask has the module's dtype), softmax and dropout run in
  // fp32 and PV's autocast casts the probabilities back: 42 bytes per score against the fused
  // 13; each Conv1D weight and bias cast once per forward (read 4, write 2; autocast's cache
  // holds them for the forward). Kernels: + 2 norm-output casts, 8 weight and bias casts,
  // pow's input cast and gelu's output cast, the fill value's and the probabilities' casts: 48.
  //
  // Megatron-LM v1's GPT2ParallelTransformerLayer as DeepSpeedExamples ships it
  // (microsoft/DeepSpeedExamples@a79272c Megatron-LM/mpu/transformer.py and layers.py, the
  // code of DLPerf's DeepSpeed GPT-2 runs; PyTorch 1.6) is the same eager layer but for three
  // things, each from that source:
  //  - ColumnParallelLinear is F.linear(x, W, b) on a 3-D input, which PyTorch runs as a
  //    matmul and an in-place bias add (read and write the output: 2e per output element);
  //    RowParallelLinear adds its bias after the (tp 1: identity) all-reduce, output_ + bias
  //    (2e): the same 2e (3h + h + f + h) per token as Conv1D's fill, a separate kernel each.
  //  - The attention scores: / sqrt(d) (2e), torch.mul by the [1, 1, s, s] fp16 causal mask
  //    (2e) and the subtraction of 10000 (1 - mask) (2e; the mask's own ops are on s x s once,
  //    not per sample and head, and not counted): 6e, no 1-byte mask read. Kernels: the
  //    division, mul, rsub, mul, sub (5).
  //  - gelu is the @torch.jit.script gelu_impl (OpenAI's tanh form): TorchScript's CUDA fuser
  //    runs its element-wise graph as one kernel, reading and writing f: the fused layer's
  //    activation bytes, nothing beyond (the bias add before it is counted above).
  // q, k, v are permuted views (_transpose_for_scores) that torch.matmul copies for its bmm
  // (2e 3h) and the context is permuted back with .contiguous() (2e h), as in HF's code; the
  // attention output and the MLP output each have their own dropout ((2e + 1) h each).
  // Kernels (forward): input_layernorm (apex FusedLayerNorm), qkv (GEMM, bias add), three
  // operand copies, QK^T, the five score ops, softmax, dropout, PV, the contiguous copy, dense
  // (GEMM, bias add), dropout, add, post_attention_layernorm, dense_h_to_4h (GEMM, bias add),
  // gelu, dense_4h_to_h (GEMM, bias add), dropout, add: 28.
  HfGpt2Extra x;
  if (!is_eager_gpt2_layer(impl)) return x;
  constexpr double e = 2.0;
  const double common = 2 * e * (5 * h + f) + 2 * e * 3 * h + 2 * e * h + 2 * (2 * e + 1) * h;
  if (impl == LayerImpl::megatron_v1) {
    x.kernels = 28;
    x.per_token = common;
    x.per_score = 6 * e;
    return x;
  }
  if (impl == LayerImpl::hf_gpt2) {
    x.kernels = 34;
    x.per_token = common + (18 * e - 2 * e) * f;
    x.per_score = 6 * e + 1;
    return x;
  }
  x.kernels = 48;
  x.per_token = common + 2 * (8 - 4) * h + 2 * 6 * h + 2 * (10 - 6) * h + (76 - 2 * e) * f;
  x.per_score = 42 - (4 * e + 2 * e + 1);
  x.per_weight = 6;
  return x;
}

MegatronUnfusedExtra megatron_unfused_extra(LayerImpl impl) noexcept {
  // Megatron-LM v1.1.5's GPT layer as the AMP paper's fork runs it (DachengLi1/AMP@72eeea4,
  // DeepSpeed/DeepSpeedExamples/Megatron-LM-v1.1.5-3D_parallelism): its launch script
  // (examples/ds_pretrain_gpt2_pipe.sh) passes none of --scaled-upper-triang-masked-softmax-
  // fusion, --scaled-masked-softmax-fusion, --bias-gelu-fusion, --bias-dropout-fusion, all
  // store_true (off) in megatron/arguments.py, so:
  //  - FusedScaleMaskSoftmax (megatron/model/fused_softmax.py) takes its eager branch:
  //    gpt2_attention_mask_func's in-place masked_fill_ on the b x heads x s x s scores (read
  //    and write: 2 elements per score; its 1 x 1 x s x s mask is broadcast) before
  //    torch.nn.Softmax, which reads and writes as the fused kernel does; 2 kernels for 1.
  //  - ParallelMLP adds the bias before GeLU (intermediate_parallel + bias_parallel, then
  //    the activation): the sum written and read back, 2 elements per FFN element; + 1 kernel.
  //  - get_bias_dropout_add: dropout(x + bias) then residual + out, three ops for the fused
  //    one (read x and the residual, write the output): x + bias written and read, the
  //    dropout's output written and read, 4 elements per hidden element, twice per layer;
  //    + 2 kernels each.
  // Softmax in fp16 (no --attention-softmax-in-fp32 or --apply-query-key-layer-scaling).
  MegatronUnfusedExtra x;
  if (impl != LayerImpl::megatron_unfused) return x;
  x.per_score = 2.0;
  x.per_ffn = 2.0;
  x.per_hidden = 2.0 * 4.0;
  x.kernels = 1 + 1 + 2 * 2;
  return x;
}

double peak_flops(const GpuSpec& gpu, Dtype dtype) noexcept {
  const PeakTflops& p = gpu.peak_tflops;
  std::optional<double> v = p.of(dtype);
  if (!v && dtype == Dtype::bf16) v = p.fp16;
  if (!v && dtype == Dtype::fp8) v = p.bf16 ? p.bf16 : p.fp16;
  if (!v && dtype == Dtype::tf32) v = p.fp32;
  return v.value_or(p.fp32.value_or(1.0)) * 1e12;
}

double flash_attention_efficiency(double e_max, double forward_flops,
                                  double peak16_flops) noexcept {
  constexpr double kH100Peak16 = 989.4e12;
  const double x0 = kAttentionFillFlops * peak16_flops / kH100Peak16;
  return std::max(1e-3, e_max * (1.0 - std::exp(-forward_flops / x0)));
}

double fused_attention_efficiency(const GpuSpec& gpu, const AnalyticCalibration& c,
                                  AttentionKernel kernel) noexcept {
  const double measured =
      gpu.flash_attention_efficiency.value_or(std::max(c.attention_efficiency, 0.8 * c.gemm_e_max));
  if (kernel == AttentionKernel::automatic) return measured;
  const double fa2 = std::min(measured, gpu.flash_attention2_efficiency.value_or(measured));
  return kernel == AttentionKernel::fa2 ? fa2 : fa2 * kTritonAttentionShare;
}

double softmax_exp_factor(const GpuSpec& gpu, double tensor_flops_per_score) noexcept {
  if (!gpu.sfu_exp2 || tensor_flops_per_score <= 0) return 1.0;
  const double r =
      gpu.sfu_exp2->tensor16_flops_per_clock_per_sm / gpu.sfu_exp2->per_clock_per_sm;
  return std::max(1.0, r / tensor_flops_per_score);
}

Dtype dtype_for_precision(const GpuSpec& gpu, int bits) noexcept {
  if (bits <= 8 && gpu.peak_tflops.fp8) return Dtype::fp8;
  if (bits <= 16) return gpu.peak_tflops.bf16 ? Dtype::bf16 : Dtype::fp16;
  return Dtype::fp32;
}

double gddr_gemm_fill_flops(int sm_count) noexcept {
  if (sm_count <= 0) return kGddrPriorX0Flops;
  return kGddrPriorX0Flops * static_cast<double>(sm_count) / static_cast<double>(kGddrPriorSms);
}

AnalyticCalibration prior_calibration(const GpuSpec& gpu) {
  AnalyticCalibration c;
  c.gpu = gpu.name;
  // Class priors from the fits of docs/analytic.md (A10, A6000: gddr-pcie) and published
  // large-GEMM efficiencies of HBM parts.
  if (gpu.gpu_class == "hbm-nvlink" || gpu.gpu_class == "hbm-pcie") {
    c.gemm_e_max = 0.7;
    c.gemm_x0_flops = 1e10;
    c.attention_efficiency = 0.35;
    c.memory_efficiency = 0.85;
    c.layer_overhead_s = 2e-4;
    c.lm_head_efficiency = 0.8;
    c.embedding_overhead_s = 1.5e-4;
  } else {
    c.gemm_e_max = 0.6;
    // Per SM (docs/native.md, "GPUs below their datasheet clocks"): the T4's 40 SMs fill at
    // 3.3e9 FLOPs, whatever its power cap does to the clock.
    c.gemm_x0_flops = gddr_gemm_fill_flops(gpu.sm_count.value_or(0));
    c.attention_efficiency = 0.3;
    c.memory_efficiency = 0.8;
    c.layer_overhead_s = 3e-4;
    c.lm_head_efficiency = 0.75;
    c.embedding_overhead_s = 3e-4;
  }
  c.post_overhead_s = 8e-5;
  if (gpu.mamf) {
    const MatmulBenchmark& m = *gpu.mamf;
    const auto fraction = [](std::optional<double> tflops, std::optional<double> peak) {
      return tflops && peak ? *tflops / *peak / kReferenceMamfFraction : 0.0;
    };
    if (gpu.gpu_class == "gddr-pcie") {
      // A measured rate sets the efficiency of any class from the same A100 reference (the
      // HBM prior's 0.7 and 0.8): the gddr prior's 0.6 is a fit of A10 and A6000, whose own
      // rates are not in the table. T4: the power cap keeps it at 24 of 65 TFLOPS.
      c.gemm_e_max = 0.7;
      c.lm_head_efficiency = 0.8;
    }
    double r16 = fraction(m.bf16_tflops, gpu.peak_tflops.bf16);
    if (r16 <= 0) {
      r16 = fraction(m.fp16_tflops, gpu.peak_tflops.fp16);
    }
    if (r16 > 0) {
      c.gemm_e_max *= r16;
      c.lm_head_efficiency *= r16;
    }
    if (gpu.gpu_class == "gddr-pcie" && r16 > 0) {
      // A power cap lowers the clock for every tensor-core kernel alike: the attention core
      // (the class prior's 0.3 goes with its 0.6 for GEMMs) follows the matmul rate.
      c.attention_efficiency *= c.gemm_e_max / 0.6;
    }
    const double r8 = fraction(m.fp8_tflops, gpu.peak_tflops.fp8);
    if (r8 > 0) {
      c.gemm_e_max_fp8 = c.gemm_e_max / (r16 > 0 ? r16 : 1.0) * r8;
    }
  }
  const double bus = link_bus_prior(gpu);
  for (const int n : {2, 4, 8, 16}) {
    c.tp_allreduce[n] = CollectiveFit{ring_alpha_prior(gpu, n), bus};
    c.embedding_allreduce[n] = CollectiveFit{ring_alpha_prior(gpu, n), bus};
  }
  c.source = "class prior " + gpu.gpu_class;
  if (gpu.benchmark) {
    const GpuBenchmark& b = *gpu.benchmark;
    if (c.gemm_e_max_fp8 > 0) {
      // keep the matmul benchmark's fp8-to-16-bit ratio
      c.gemm_e_max_fp8 *= b.gemm_e_max / c.gemm_e_max;
    }
    c.gemm_e_max = b.gemm_e_max;
    c.gemm_x0_flops = b.gemm_x0_flops;
    c.lm_head_efficiency = b.gemm_e_max;
    c.memory_efficiency = b.memory_efficiency;
    for (const auto& [n, GBps] : b.allreduce_bus_GBps) {
      c.tp_allreduce[n] = CollectiveFit{ring_alpha_prior(gpu, n), GBps * 1e9};
      c.embedding_allreduce[n] = CollectiveFit{ring_alpha_prior(gpu, n), GBps * 1e9};
    }
    c.calibrated = true;
    c.source = "benchmark" + (b.source.empty() ? std::string() : " " + b.source);
  }
  return c;
}

void with_intra_node_bus(AnalyticCalibration& c, double bus_bytes_per_s) {
  for (auto* fits : {&c.tp_allreduce, &c.embedding_allreduce}) {
    for (const int n : {2, 4, 8, 16}) {
      const auto it = fits->find(n);
      (*fits)[n] = CollectiveFit{it != fits->end() ? it->second.alpha_s : kAlphaPrior_s,
                                 bus_bytes_per_s};
    }
    for (auto& [n, fit] : *fits) fit.bus_bytes_per_s = bus_bytes_per_s;
  }
}

double gemm_sm_fill(double m, double n, double k, int sm_count) noexcept {
  if (sm_count <= 0 || m <= 0 || n <= 0 || k <= 0) {
    return 1.0;
  }
  // 128 x 128 output tiles (the CTA tile of cuBLAS's and CUTLASS's large tensor-core kernels,
  // NVIDIA's "Matrix Multiplication Background User's Guide"); while tiles leave SMs idle, the
  // library splits K (split-K, stream-K: Osama et al., PPoPP 2023), each slice keeping at least
  // 256 of K (4 main-loop steps of a 64-deep k tile) so that its prologue and fix-up amortise.
  constexpr double kTile = 128.0;
  constexpr double kMinSlice = 256.0;
  const double tiles = std::ceil(m / kTile) * std::ceil(n / kTile);
  const double sms = static_cast<double>(sm_count);
  if (tiles >= sms) {
    return 1.0; // a full wave without splitting K (the common case: M = tokens)
  }
  const double slices = std::min(std::max(1.0, std::floor(k / kMinSlice)),
                                 std::max(1.0, std::ceil(sms / tiles)));
  return std::min(1.0, tiles * slices / sms);
}

double gemm_shape_s(double m, double n, double k, double peak, double e_max,
                    const AnalyticCalibration& c, int sm_count, double in_bytes,
                    double out_bytes, double memory_bytes_per_s) noexcept {
  const double flops = 2.0 * m * n * k;
  if (flops <= 0) {
    return 0.0;
  }
  // The size curve e(F) was fitted on the layers' near-square GEMMs: a GEMM fills the SMs
  // worse than the cube of its FLOPs only when its shape is skinnier.
  double fill = gemm_sm_fill(m, n, k, sm_count);
  if (fill < 1.0) {
    const double cube = std::cbrt(flops / 2.0);
    fill = std::min(1.0, fill / gemm_sm_fill(cube, cube, cube, sm_count));
  }
  // A dimension that is not a whole number of 16-byte vectors takes cuBLAS's narrower loads
  // (gemm_alignment_rate).
  const double compute =
      flops / (peak * gemm_efficiency(e_max, c, flops) * fill * gemm_alignment_rate(n, k, in_bytes));
  const double memory = (in_bytes * (m * k + k * n) + out_bytes * m * n) / memory_bytes_per_s;
  return std::max(compute, memory);
}

namespace {

/// A linear layer with torchao's rowwise fp8 (fp8_rowwise.hpp): its 16-bit GEMM time over the
/// speedup torchao measured for its forward M (m), K (k), N (n). Out of line: the tensorwise and
/// 16-bit paths of analytic_layer_times stay as they were.
[[gnu::noinline]] double rowwise_gemm_s(double m, double n, double k, double peak16,
                                        const AnalyticCalibration& c, bool shapes, int sms,
                                        double elem, double bw) noexcept {
  double t = 0.0;
  if (shapes) {
    t = gemm_shape_s(m, n, k, peak16, c.gemm_e_max, c, sms, elem, elem, bw);
  } else {
    const double flops = 2 * m * n * k;
    t = flops / (peak16 * gemm_efficiency(c.gemm_e_max, c, flops));
  }
  return t / fp8_rowwise_speedup(m, k, n);
}

} // namespace

double tp_overlap_exposed_s(double comm_s, double gemm_s, int t) noexcept {
  if (t <= 1 || comm_s <= 0) {
    return std::max(0.0, comm_s);
  }
  // Userbuffers splits the collective and the GEMM into t chunks in a ring: the GEMM of chunk
  // i runs while chunk i+1 moves. The first (all-gather) or last (reduce-scatter) chunk has
  // no GEMM beside it; the rest hides up to the GEMM's length.
  const double first = comm_s / t;
  return first + std::max(0.0, comm_s - first - gemm_s);
}

TpCollectiveBytes tp_collective_bytes(Dtype dtype, Fp8Recipe recipe, bool sequence_parallel,
                                      double elem) noexcept {
  // Transformer Engine (v2.2 on; NVIDIA/TransformerEngine@d0067d0): linear.py,
  // layernorm_linear.py and layernorm_mlp.py quantize the column-parallel input before
  // gather_along_first_dim(..., quantizer=input_quantizer), and base.py grad_output_preprocess
  // gathers the row-parallel output gradient with its quantizer; distributed.py
  // gather_along_first_dim all-gathers the fp8 data of delayed and current scaling (and MXFP8
  // with its scales). The reduce-scatters of the row-parallel output and of the
  // column-parallel input gradient take the 16-bit GEMM outputs, and without sequence
  // parallelism the all-reduce of the row-parallel output is 16-bit too. With userbuffers
  // (--tp-comm-overlap) base.py initialize_ub gives fp8 buffers to the all-gather layers only
  // (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad, qkv_dgrad, fc1_dgrad; a reduce-scatter only
  // where a config asks fp8_buf on a pipeline layer). torchao's Float8ColwiseParallel casts
  // before its all-gather and Float8RowwiseParallel reduce-scatters the 16-bit output
  // (torchao/float8/float8_tensor_parallel.py @36027d8).
  TpCollectiveBytes b{elem, elem};
  if (sequence_parallel && dtype == Dtype::fp8 && recipe == Fp8Recipe::tensorwise) {
    b.gather = 1.0;
  }
  return b;
}

[[gnu::noinline]] double tp_collective_pair_s(const CollectiveFit& c, int n, double elements,
                                              TpCollectiveBytes bytes) noexcept {
  if (bytes.gather == bytes.reduce) {
    return allreduce_s(c, n, bytes.gather * elements);
  }
  return 0.5 * allreduce_s(c, n, bytes.gather * elements) +
         0.5 * allreduce_s(c, n, bytes.reduce * elements);
}

int softmax_batch_per_block(int key_len) noexcept {
  int log2 = 0;
  while ((1 << log2) < key_len) ++log2;
  const int pow2 = 1 << log2;
  const int warp = std::min(pow2, 32);
  const int per_warp = pow2 <= 128 ? 2 : 1;
  return 128 / warp * per_warp;
}

bool megatron_fused_softmax(int micro_batch, int heads_per_rank, int seq,
                            SoftmaxCheck check) noexcept {
  const int batches = micro_batch * heads_per_rank;
  if (batches % 4 != 0 || seq % 4 != 0) return false;
  if (check == SoftmaxCheck::bigscience_pre260) {
    // get_batch_per_block(b, np, sq, sk) called with (sq, sk, b, np): the helper's key length
    // is the heads per rank.
    return seq > 16 && seq <= 2048 && batches % softmax_batch_per_block(heads_per_rank) == 0;
  }
  return seq > 16 && seq <= 4096 && batches % softmax_batch_per_block(seq) == 0;
}

namespace {
/// Whether the layer runs Megatron's unfused attention on a shape whose fused-softmax test
/// fails (its fused layer in 16 bits, one sequence per rank: cp 1).
bool torch_softmax_fallback(const ModelSpec& model, const AnalyticSettings& st) noexcept {
  if (!st.softmax_fallback || st.flash_attention || !st.fused_kernels ||
      st.layer_impl != LayerImpl::framework ||
      st.context_parallel > 1 || st.dtype == Dtype::fp32 || st.dtype == Dtype::tf32) {
    return false;
  }
  const int tp = std::max(1, st.tp);
  const int heads = static_cast<int>(model.num_attention_heads) / tp;
  const int seq = st.sequence_length > 0 ? st.sequence_length
                                         : static_cast<int>(model.sequence_length);
  return !megatron_fused_softmax(std::max(1, st.micro_batch), heads, seq, st.softmax_check);
}
} // namespace

LayerKernels layer_kernels(const ModelSpec& model, const AnalyticSettings& st) noexcept {
  if (is_eager_gpt2_layer(st.layer_impl)) {
    // An eager GPT-2 layer (hf_gpt2_extra): one GPU's whole layer, four GEMMs.
    LayerKernels out;
    out.forward = hf_gpt2_extra(st.layer_impl, 0.0, 0.0).kernels;
    out.forward_gemms = 4;
    out.backward = 2 * out.forward;
    if (st.sharded_parameters) {
      out.forward += 3;
      out.backward += 6;
    }
    return out;
  }
  const bool fused = st.fused_kernels;
  const bool rotary = !model.is_gpt_family();
  const bool dropout = !rotary;
  const bool rms = rotary;
  const int mats = model.gated_mlp ? 3 : 2;
  int k = 0;
  // Two norms: fused (Apex/TE LayerNorm or RMSNorm) one kernel; eager RMSNorm (torchtitan's
  // x * rsqrt(mean(x^2) + eps) * w in fp32): cast, pow, mean, add, rsqrt, mul, cast, mul.
  k += 2 * (fused || !rms ? 1 : 8);
  // GEMMs: Megatron fuses q, k, v into one and gate and up into one; eager runs each.
  const int gemms = fused ? 4 : 4 + mats;
  k += gemms;
  if (rotary) {
    // RoPE of q and k: TE's fused kernel each; eager complex multiply: cast, mul, cast each.
    k += fused ? 2 : 6;
  }
  if (st.flash_attention) {
    k += 1;
  } else {
    // baddbmm, (fused) scale-mask-softmax, dropout, bmm, two transposes to contiguous
    k += (fused ? 1 : 3) + (dropout ? 1 : 0) + 4;
    if (torch_softmax_fallback(model, st)) k += kTorchSoftmaxExtraKernels;
  }
  // Activation: fused bias-GeLU or SwiGLU; eager SiLU and the product.
  k += fused ? 1 : (model.gated_mlp ? 2 : 1);
  // Residuals: fused bias-dropout-add; eager adds (and dropouts).
  k += fused ? 2 : (dropout ? 4 : 2);
  if (st.tp > 1) {
    k += st.sequence_parallel ? 4 : 2; // all-gather + reduce-scatter, or all-reduce, twice
  }
  if (st.dtype == Dtype::fp8) {
    k += 2 * (fused ? 4 : 4 + mats); // amax and cast(+transpose) of each GEMM input
  }
  // Megatron-LM with its fusion flags off: masked_fill_, the bias add, bias-dropout-add's ops.
  k += megatron_unfused_extra(st.layer_impl).kernels -
       (st.flash_attention && st.layer_impl == LayerImpl::megatron_unfused ? 1 : 0);
  LayerKernels out;
  out.forward_gemms = gemms;
  if (model.is_moe() && model.experts_per_token > 0) {
    // An MoE layer: the router, the token dispatcher and the experts in place of the dense
    // MLP (model/moe_kernels.hpp, docs/native.md §2.2).
    const DenseMlpKernels dense = dense_mlp_kernels(model, fused);
    const MoeLayerKernels moe = moe_layer_kernels(model, fused, st.tp, st.ep, st.etp);
    k += moe.kernels + moe.linear + moe.loop - dense.gemms - dense.other;
    out.forward_gemms += moe.linear - dense.gemms;
    out.forward_loop = moe.loop;
    out.backward_loop = 2 * moe.loop;
    out.forward_syncs = moe.syncs;
  }
  out.forward = k;
  // Backward: two GEMMs per GEMM (data and weight gradient), two kernels per norm (input
  // gradient, weight-gradient reduction), one or two per element-wise op: twice forward.
  out.backward = 2 * k;
  if (st.sharded_parameters) {
    out.forward += 3;  // all-gather copy-in, all-gather, copy-out (FSDP2, ZeRO-3 alike)
    out.backward += 6; // the gather again, reduce-scatter copy-in, reduce-scatter, scaling
  }
  return out;
}

AnalyticLayerTimes analytic_layer_times(const ModelSpec& model, const GpuSpec& gpu,
                                        const AnalyticCalibration& c,
                                        const AnalyticSettings& st) noexcept {
  const Shape x = shape_of(model, st.sequence_length);
  const double t = static_cast<double>(std::max(1, st.tp));
  const double b = static_cast<double>(std::max(1, st.micro_batch));
  // Context parallelism: this GPU's share of the tokens (x / 1.0 is x: cp 1 changes nothing).
  const double cp = static_cast<double>(std::max(1, st.context_parallel));
  const double tokens = b * x.s / cp;
  const double P = peak_flops(gpu, st.dtype);
  // Activations stay in 16 bits with fp8 GEMMs (fp8 training casts each GEMM's inputs).
  const double elem = st.dtype == Dtype::fp32 || st.dtype == Dtype::tf32 ? 4.0 : 2.0;
  const double bw = gpu.memory_GBps * 1e9 * c.memory_efficiency;
  const double e_max =
      st.dtype == Dtype::fp8 && c.gemm_e_max_fp8 > 0 ? c.gemm_e_max_fp8 : c.gemm_e_max;
  // A GEMM of M x N x K: by FLOPs on the calibrated curve, or (native) by its shape.
  const int sms = gpu.sm_count.value_or(0);
  const double in_bytes = st.dtype == Dtype::fp8 ? 1.0 : elem;
  // torchao's rowwise fp8 (fp8_rowwise.hpp): a linear takes its 16-bit time over the speedup
  // torchao measured for its shape, casts included (so no cast traffic is charged below).
  const bool rowwise = st.dtype == Dtype::fp8 && st.fp8_recipe == Fp8Recipe::rowwise;
  const auto gemm_s = [&](double m_, double n_, double k_) {
    if (rowwise) [[unlikely]] {
      return rowwise_gemm_s(m_, n_, k_, peak_flops(gpu, Dtype::bf16), c, st.gemm_shapes, sms,
                            elem, bw);
    }
    if (st.gemm_shapes) {
      return gemm_shape_s(m_, n_, k_, P, e_max, c, sms, in_bytes, elem, bw);
    }
    const double flops = 2 * m_ * n_ * k_;
    return flops / (P * gemm_efficiency(e_max, c, flops));
  };

  // Transformer layer, forward.
  double qkv = gemm_s(tokens, (x.a * x.d + 2 * x.g * x.d) / t, x.h);
  double proj = gemm_s(tokens, x.h, x.a * x.d / t);
  double up_proj = 0.0; // MLA's up-projections (what mla_up_proj recomputes)
  if (x.mla) {
    // Multi-head latent attention (Megatron-LM's MLASelfAttention): the LoRA down-projections
    // (h -> q_lora, h -> kv_lora + rope) are replicated over tp, the up-projections (q_lora ->
    // heads x (nope + rope), kv_lora -> heads x (nope + v)) and the output split by heads.
    const double qk = x.nope + x.rope;
    qkv = (x.q_lora > 0 ? gemm_s(tokens, x.q_lora, x.h) + gemm_s(tokens, x.a * qk / t, x.q_lora)
                        : gemm_s(tokens, x.a * qk / t, x.h)) +
          gemm_s(tokens, x.kv_lora + x.rope, x.h) +
          gemm_s(tokens, x.a * (x.nope + x.v) / t, x.kv_lora);
    up_proj = (x.q_lora > 0 ? gemm_s(tokens, x.a * qk / t, x.q_lora) : 0.0) +
              gemm_s(tokens, x.a * (x.nope + x.v) / t, x.kv_lora);
    proj = gemm_s(tokens, x.h, x.a * x.v / t);
  }
  double gemm = qkv + proj;
  double mlp = 0.0;
  double shared_mlp = 0.0; // the shared experts' GEMMs (what shared_experts recomputes)
  double expert_fc1_in = 0.0; // elements of the routed experts' fc1 input on this GPU
  const double mats = x.gated ? 3.0 : 2.0;
  if (x.experts > 0 && x.top_k > 0) {
    mlp += gemm_s(tokens, x.experts, x.h); // router
    // Grouped GEMM of the GPU's E/ep experts, each f_expert/etp wide, on its share of the
    // tokens (folding: tp x cp x dp GPUs hold the attention, etp x ep x edp the experts, so the
    // tokens of one expert rank are tokens x top-k x ep x etp / (E x tp)); the busiest rank
    // gets moe_imbalance times the average.
    const double ep = static_cast<double>(std::max(1, st.ep));
    const double etp = st.etp > 0 ? static_cast<double>(st.etp) : t;
    const bool folded = st.ep > 1 || st.etp > 0;
    const double per_expert_tokens =
        (folded ? tokens * x.top_k * ep * etp / (x.experts * t) : tokens * x.top_k / x.experts) *
        std::max(1.0, st.moe_imbalance);
    mlp += x.experts / ep * ((mats - 1) * gemm_s(per_expert_tokens, x.f_expert / etp, x.h) +
                             gemm_s(per_expert_tokens, x.h, x.f_expert / etp));
    expert_fc1_in = x.experts / ep * per_expert_tokens * x.h;
    if (x.f_shared > 0) {
      shared_mlp = (mats - 1) * gemm_s(tokens, x.f_shared / t, x.h) +
                   gemm_s(tokens, x.h, x.f_shared / t);
      mlp += shared_mlp;
    }
  } else {
    mlp += (mats - 1) * gemm_s(tokens, x.f / t, x.h) + gemm_s(tokens, x.h, x.f / t);
  }
  gemm += mlp;
  const double s_eff = st.flash_attention ? x.s / 2 : x.s;
  // Unfused attention's batched GEMMs (QK^T over the head dim, PV of head-dim width) take
  // the misaligned rate when the head dim is not a whole number of 16-byte vectors
  // (gemm_alignment_rate; native only, with GEMMs by shape). FlashAttention-2 pads q, k, v to
  // a multiple of 8 itself (Dao-AILab/flash-attention@0251105a flash_attn/flash_attn_interface.py
  // line 481): not charged.
  const double attention_eff =
      st.flash_attention ? fused_attention_efficiency(gpu, c, st.attention_kernel)
                         : c.attention_efficiency *
                               (st.gemm_shapes && !x.mla ? gemm_alignment_rate(x.d, x.d, elem)
                                                         : 1.0);
  // fp8 training casts the linear layers only: attention and the LM head stay in 16 bits.
  const double P16 = st.dtype == Dtype::fp8 ? peak_flops(gpu, Dtype::bf16) : P;
  // QK^T over the query/key width, PV over the value width (equal but for MLA).
  const double core_width = x.mla ? (x.nope + x.rope + x.v) / 2 : x.d;
  const double attention_flops = 4 * tokens * s_eff * x.a * core_width / t;
  const double attention_tensor =
      attention_flops /
      (P16 * (st.flash_attention ? flash_attention_efficiency(attention_eff, attention_flops, P16)
                                 : attention_eff));
  // A fused core's exponentials (one per score, forward and again in backward) on the
  // special-function units where they take longer than its matmuls (softmax_exp_factor);
  // unfused attention runs its softmax as a separate memory-bound kernel (the bytes below).
  const double attention =
      st.flash_attention ? attention_tensor * softmax_exp_factor(gpu, 4 * core_width)
                         : attention_tensor;
  const double attention_bwd =
      st.flash_attention
          ? kFlashBackwardRatio * attention_tensor * softmax_exp_factor(gpu, 10 * core_width)
          : 2.0 * attention;
  const double f_act = x.experts > 0 ? x.top_k * x.f_expert + x.f_shared : x.f;
  // Fused kernels (Megatron-LM, Transformer Engine, Apex, torch.compile): two norms reading and
  // writing the hidden state, two residual adds reading two and writing one, the activation
  // reading its input(s) and writing its output.
  double bytes = elem * tokens * x.h * 10 + elem * tokens * f_act * mats / t;
  // The parts selective recompute of named modules reruns (fused kernels' bytes): the two
  // norms (read and write h each), the activation of the routed experts, of the shared ones,
  // of the whole (dense) MLP.
  const double norm_bytes = elem * tokens * x.h * 4;
  const double expert_act_bytes =
      x.experts > 0 ? elem * tokens * x.top_k * x.f_expert * mats / t : 0.0;
  const double shared_act_bytes = x.experts > 0 ? elem * tokens * x.f_shared * mats / t : 0.0;
  double mlp_bytes = elem * tokens * f_act * mats / t;
  if (st.layer_impl == LayerImpl::megatron_unfused) {
    // Megatron-LM's layer with its fusion flags off (megatron_unfused_extra); the masked_fill_
    // runs on the scores only where they are written (no flash attention).
    const MegatronUnfusedExtra u = megatron_unfused_extra(st.layer_impl);
    bytes += elem * tokens * (u.per_hidden * x.h + u.per_ffn * f_act / t) +
             (st.flash_attention ? 0.0 : elem * u.per_score * b * x.a * x.s * x.s / t / cp);
    mlp_bytes += elem * tokens * u.per_ffn * f_act / t;
  }
  if (is_eager_gpt2_layer(st.layer_impl)) {
    const HfGpt2Extra hf = hf_gpt2_extra(st.layer_impl, x.h, x.f);
    const double weights = 4 * x.h * x.h + 2 * x.h * x.f + 5 * x.h + x.f; // Conv1D W and b
    bytes += hf.per_token * tokens + hf.per_weight * weights +
             (st.flash_attention ? 0.0 : hf.per_score * b * x.a * x.s * x.s / cp);
  } else if (!st.fused_kernels) {
    bytes += eager_extra_bytes(model, x, st, elem, tokens, f_act);
  }
  if (x.experts > 0 && x.top_k > 0) {
    // Token permutation around the experts, as Megatron-LM's all-to-all dispatcher runs it
    // (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher;
    // moe_utils.py permute, sort_chunks_by_idxs, unpermute): the tokens gathered into expert
    // order (read h, write the top-k copies), after the all-to-all sorted by local expert and
    // back again (read and write the top-k copies, twice, when the rank holds several experts
    // of an ep > 1 layout), and the weighted combine (read the top-k copies, write h). The
    // dispatcher sees the rank's s/tp tokens under sequence parallelism.
    const double ep = static_cast<double>(std::max(1, st.ep));
    const double sorted = st.ep > 1 && x.experts / ep > 1 ? 4.0 : 0.0;
    const double moe_tokens = st.sequence_parallel ? tokens / t : tokens;
    bytes += elem * moe_tokens * x.h * (2.0 + (2.0 + sorted) * x.top_k);
    mlp_bytes += elem * moe_tokens * x.h * (2.0 + (2.0 + sorted) * x.top_k);
  }
  // Megatron's PyTorch softmax fallback where its fused kernel's test fails (fp32 casts, the
  // scale, the mask and the softmax as separate kernels), forward and backward bytes.
  double softmax_fallback_fwd = 0.0;
  double softmax_fallback_bwd = 0.0;
  if (!st.flash_attention) {
    if (torch_softmax_fallback(model, st)) {
      const double scores = b * x.a / t * x.s * x.s;
      softmax_fallback_fwd = kTorchSoftmaxExtraForwardBytes * scores / bw;
      softmax_fallback_bwd = kTorchSoftmaxExtraBackwardBytes * scores / bw;
    }
    bytes += elem * b * x.a * x.s * x.s * 4 / t / cp; // scores, softmax read/write, read for PV
    if (st.attention_dropout_bytes && model.is_gpt_family()) {
      // Megatron-LM's attention_dropout on the probabilities (ParallelSelfAttention.forward,
      // --attention-dropout 0.1 by default): read them, write them and a 1-byte mask.
      bytes += (2 * elem + 1) * b * x.a * x.s * x.s / t / cp;
    }
  }
  if (st.dtype == Dtype::fp8 && !rowwise) {
    // Casts of the GEMM inputs (qkv, fc1: h; out projection: a d / tp; fc2: ffn / tp) with
    // current scaling, as Transformer Engine's Float8CurrentScaling and torchao's tensorwise
    // Float8 run: a pass that reads 2 bytes for the amax, then one that reads 2 and writes the
    // fp8 copy and its transpose for the weight-gradient GEMM (Hopper's fp8 GEMMs take only
    // the TN layout): 6 bytes per element. With sequence parallelism the norm outputs are
    // cast on the rank's s/tp tokens before the all-gather (TE reduces the amax over the tp
    // group; torchao's Float8ColwiseParallel gathers fp8). docs/native.md §2.
    const double sp = st.sequence_parallel ? t : 1.0;
    bytes += 6.0 * tokens * (2 * x.h / sp + x.a * x.d / t + f_act / t);
    if (x.experts > 0 && x.top_k > 0) {
      // An MoE layer's fc1 is the routed experts' grouped GEMM (with the shared experts' fc1
      // beside it where the model has them): Transformer Engine's GroupedLinear casts its input,
      // the top-k dispatched copies of each token (E/ep experts x their tokens x h on this
      // GPU), not the h of a dense fc1, which the line above charges once per token: that h
      // stays only for the shared experts. docs/moe.md §3, "fp8 casts of the experts' input".
      bytes += 6.0 * (expert_fc1_in - (x.f_shared > 0 ? 0.0 : tokens * x.h / sp));
    }
  }
  const double element_wise = bytes / bw;
  double tp_comm = 0.0;
  double tp_comm_bwd = 0.0;
  if (st.tp > 1) {
    if (const CollectiveFit* cf = collective_for(c.tp_allreduce, st.tp)) {
      // One all-reduce (or all-gather + reduce-scatter) beside attention's GEMMs, one beside
      // the MLP's; tensorwise fp8 all-gathers its fp8 copy (tp_collective_bytes).
      // (The 16-bit all-reduce written out, the fp8 pair out of line: the search's hot path.)
      const double one =
          st.dtype == Dtype::fp8
              ? tp_collective_pair_s(
                    *cf, st.tp, tokens * x.h,
                    tp_collective_bytes(st.dtype, st.fp8_recipe, st.sequence_parallel, elem))
              : allreduce_s(*cf, st.tp, elem * tokens * x.h);
      tp_comm = 2 * one;
      tp_comm_bwd = tp_comm;
      if (st.tp_comm_overlap) {
        tp_comm = tp_overlap_exposed_s(one, qkv + proj, st.tp) +
                  tp_overlap_exposed_s(one, mlp, st.tp);
        tp_comm_bwd = tp_overlap_exposed_s(one, 2 * (qkv + proj), st.tp) +
                      tp_overlap_exposed_s(one, 2 * mlp, st.tp);
      }
    }
  }
  AnalyticLayerTimes out;
  out.layer.forward_s = gemm + attention + element_wise + c.layer_overhead_s + tp_comm;
  out.attention_forward_s = attention;
  out.attention_backward_s = attention_bwd;
  out.gemm_forward_s = gemm;
  out.elementwise_forward_s = element_wise;
  out.norm_forward_s = norm_bytes / bw;
  out.mla_up_proj_forward_s = up_proj;
  out.moe_act_forward_s = expert_act_bytes / bw;
  out.shared_experts_forward_s = shared_mlp + shared_act_bytes / bw;
  out.mlp_forward_s = mlp + mlp_bytes / bw;
  out.tp_comm_forward_s = tp_comm;
  out.tp_comm_backward_s = tp_comm_bwd;
  out.layer.backward_s =
      2 * gemm + attention_bwd + 2 * element_wise + c.layer_overhead_s + tp_comm_bwd;
  if (softmax_fallback_fwd > 0) {
    out.layer.forward_s += softmax_fallback_fwd;
    out.attention_forward_s += softmax_fallback_fwd;
    out.attention_backward_s += softmax_fallback_bwd;
    out.layer.backward_s += softmax_fallback_bwd;
  }
  // Backward runs two GEMMs per forward GEMM: the input gradient dX = dY W^T and the weight
  // gradient dW = X^T dY, each of the forward's shape and FLOPs, so the weight-gradient part
  // (W) is one forward's GEMM time; attention, element-wise work and the collectives belong to
  // the input gradient. Set after the host bound below, as backward_s less its input part, so
  // that the two parts add up to backward_s exactly (the input part is at least half of it).

  if (st.host_per_kernel_s > 0) {
    // The host issues kernels asynchronously: the GPU runs behind it and a layer takes the
    // longer of its GPU time and the host's time to issue its kernels (a kernel cannot start
    // before it is launched; when kernels are shorter than their launch, the host sets the
    // pace and the GPU waits).
    out.kernels = layer_kernels(model, st);
    const double linear = std::max(st.host_per_linear_s, st.host_per_kernel_s);
    const double loop = std::min(kCudaLaunch_s, st.host_per_kernel_s);
    const LayerKernels& kn = out.kernels;
    const double host_fwd = kn.forward_gemms * linear + kn.forward_loop * loop +
                            (kn.forward - kn.forward_gemms - kn.forward_loop) *
                                st.host_per_kernel_s;
    const double host_bwd =
        kn.backward_loop * loop + (kn.backward - kn.backward_loop) * st.host_per_kernel_s;
    out.host_bound_forward = host_fwd > out.layer.forward_s;
    out.host_bound_backward = host_bwd > out.layer.backward_s;
    // A synchronisation drains the GPU's queue: the host cannot run ahead across it, and the
    // GPU waits for the copy and the next launch (kHostSync_s), whichever bound the layer.
    out.layer.forward_s =
        std::max(out.layer.forward_s, host_fwd) + kn.forward_syncs * st.host_sync_s;
    out.layer.backward_s = std::max(out.layer.backward_s, host_bwd);
  }
  out.layer.weight_s = out.layer.backward_s - (out.layer.backward_s - gemm);

  // Embedding: read the rows and write the activations, then the vocabulary-parallel
  // all-reduce; backward scatters the gradient and reduces it alike.
  double emb_comm = 0.0;
  if (st.tp > 1) {
    if (const CollectiveFit* cf = collective_for(c.embedding_allreduce, st.tp)) {
      emb_comm = allreduce_s(*cf, st.tp, elem * tokens * x.h);
    }
  }
  out.embedding.forward_s = c.embedding_overhead_s + 2 * elem * tokens * x.h / bw + emb_comm;
  out.embedding.backward_s = out.embedding.forward_s;
  // The embedding's backward is its weight gradient (a scatter-add into the table): nothing
  // upstream needs an input gradient.
  out.embedding.weight_s = out.embedding.backward_s;

  // Post-process: final norm, LM head GEMM, cross-entropy over the logits.
  const double split = st.lm_head_tp_split ? t : 1.0;
  const double lm_flops = 2 * tokens * x.h * x.V / split;
  const double lm = lm_flops / (P16 * std::min(0.98, c.lm_head_efficiency));
  const double post_bytes = 2 * elem * tokens * x.h + 2 * elem * tokens * x.V / split;
  out.post_process.forward_s = c.post_overhead_s + lm + post_bytes / bw;
  out.post_process.backward_s = c.post_overhead_s + 2 * lm + post_bytes / bw;
  out.post_process.weight_s = lm; // the LM head's weight-gradient GEMM
  return out;
}

GpuProfile analytic_profile(const ModelSpec& model, const GpuSpec& gpu,
                            const AnalyticCalibration& calibration, Flavour flavour,
                            const std::vector<int>& tps, Dtype dtype) {
  GpuProfile p;
  p.model = model.name;
  p.gpu = gpu.name;
  p.flavour = flavour;
  p.ends_per_micro_batch = false;
  p.origin = fmt::format("analytic {} ({})",
                         calibration.calibrated ? "calibrated" : "uncalibrated",
                         calibration.source);
  for (const int tp : tps) {
    AnalyticSettings st;
    st.tp = tp;
    st.dtype = dtype;
    st.lm_head_tp_split = flavour == Flavour::deepspeed;
    const AnalyticLayerTimes t = analytic_layer_times(model, gpu, calibration, st);
    const std::size_t n = static_cast<std::size_t>(std::max(2, model.pipeline_layers()));
    std::vector<double> times(n, t.layer.forward_s);
    times[0] = t.embedding.forward_s;
    times[n - 1] = t.post_process.forward_s;
    p.layer_times_s.emplace(tp, std::move(times));
  }
  return p;
}

double layer_forward_flops_per_gpu(const ModelSpec& model, const AnalyticSettings& st) noexcept {
  const Shape x = shape_of(model, st.sequence_length);
  const double t = static_cast<double>(std::max(1, st.tp));
  const double tokens = static_cast<double>(std::max(1, st.micro_batch)) * x.s;
  const double mats = x.gated ? 3.0 : 2.0;
  double f = 2 * tokens * x.h * (x.a * x.d + 2 * x.g * x.d) / t + 2 * tokens * x.a * x.d * x.h / t;
  if (x.experts > 0 && x.top_k > 0) {
    f += 2 * tokens * x.h * x.experts + mats * 2 * tokens * x.top_k * x.h * x.f_expert / t +
         mats * 2 * tokens * x.h * x.f_shared / t;
  } else {
    f += mats * 2 * tokens * x.h * x.f / t;
  }
  const double s_eff = st.flash_attention ? x.s / 2 : x.s;
  return f + 4 * tokens * s_eff * x.a * x.d / t;
}

double model_forward_flops(const ModelSpec& model, int sequence_length) noexcept {
  const Shape x = shape_of(model, sequence_length);
  const double mats = x.gated ? 3.0 : 2.0;
  double mlp = mats * x.h * x.f;
  if (x.experts > 0 && x.top_k > 0) {
    mlp = mats * x.h * x.f_expert * x.top_k + mats * x.h * x.f_shared;
  }
  const double q = x.a * x.d;
  const double kv = x.g * x.d;
  const double per_token_layer = 2 * (x.h * (q + 2 * kv) + q * x.h + mlp) + 2 * q * x.s; // causal
  return x.s * (static_cast<double>(model.num_layers) * per_token_layer + 2 * x.h * x.V);
}

std::vector<MeasuredPoint> measured_points(const GpuProfile& profile, const ModelSpec& model) {
  std::vector<MeasuredPoint> out;
  for (const auto& [tp, times] : profile.layer_times_s) {
    if (times.size() < 3) {
      continue;
    }
    MeasuredPoint m;
    m.model = model;
    m.flavour = profile.flavour;
    m.tp = tp;
    m.embedding_s = times.front();
    m.layer_s = times[1];
    m.post_process_s = times.back();
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<PointResidual> residuals(const GpuSpec& gpu, const AnalyticCalibration& c,
                                     const std::vector<MeasuredPoint>& points) {
  std::vector<PointResidual> out;
  for (const MeasuredPoint& m : points) {
    AnalyticSettings st;
    st.tp = m.tp;
    st.dtype = Dtype::fp16;
    st.lm_head_tp_split = m.flavour == Flavour::deepspeed;
    const AnalyticLayerTimes t = analytic_layer_times(m.model, gpu, c, st);
    out.push_back(PointResidual{m.model.name, m.tp, t.embedding.forward_s / m.embedding_s - 1,
                                t.layer.forward_s / m.layer_s - 1,
                                t.post_process.forward_s / m.post_process_s - 1});
  }
  return out;
}

namespace {

/// Minimises f over R^n by Nelder-Mead from x0 with initial step `step`.
template <typename F>
std::vector<double> nelder_mead(F&& f, std::vector<double> x0, double step, int iterations) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> s(n + 1, x0);
  for (std::size_t i = 0; i < n; ++i) {
    s[i + 1][i] += step;
  }
  std::vector<double> fs(n + 1);
  for (std::size_t i = 0; i <= n; ++i) {
    fs[i] = f(s[i]);
  }
  std::vector<std::size_t> order(n + 1);
  const auto along = [&](const std::vector<double>& c, const std::vector<double>& w, double k) {
    std::vector<double> r(n);
    for (std::size_t i = 0; i < n; ++i) {
      r[i] = c[i] + k * (c[i] - w[i]);
    }
    return r;
  };
  for (int it = 0; it < iterations; ++it) {
    for (std::size_t i = 0; i <= n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return fs[a] < fs[b]; });
    const std::size_t best = order[0], worst = order[n], second = order[n - 1];
    std::vector<double> c(n, 0.0);
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t i = 0; i < n; ++i) c[i] += s[order[k]][i] / static_cast<double>(n);
    }
    const auto xr = along(c, s[worst], 1.0);
    const double fr = f(xr);
    if (fr < fs[best]) {
      const auto xe = along(c, s[worst], 2.0);
      const double fe = f(xe);
      if (fe < fr) { s[worst] = xe; fs[worst] = fe; } else { s[worst] = xr; fs[worst] = fr; }
    } else if (fr < fs[second]) {
      s[worst] = xr; fs[worst] = fr;
    } else {
      const auto xc = along(c, s[worst], -0.5);
      const double fc = f(xc);
      if (fc < fs[worst]) {
        s[worst] = xc; fs[worst] = fc;
      } else {
        for (std::size_t k = 0; k <= n; ++k) {
          if (k == best) continue;
          for (std::size_t i = 0; i < n; ++i) s[k][i] = s[best][i] + 0.5 * (s[k][i] - s[best][i]);
          fs[k] = f(s[k]);
        }
      }
    }
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i <= n; ++i) {
    if (fs[i] < fs[best]) best = i;
  }
  return s[best];
}

} // namespace

CalibrationFit fit_calibration(const GpuSpec& gpu, const std::vector<MeasuredPoint>& points) {
  AnalyticCalibration prior = prior_calibration(gpu);
  // The fit starts from and pulls towards the class's x0 itself (the shipped A10 and A6000 fits
  // did), not its per-SM reading for uncalibrated GPUs.
  if (gpu.gpu_class == "gddr-pcie" && !gpu.benchmark) prior.gemm_x0_flops = kGddrPriorX0Flops;
  // Which tp degrees the data have, and whether a GEMM is big enough to pin e_max.
  std::vector<int> tps;
  double largest_gemm = 0.0;
  for (const MeasuredPoint& m : points) {
    if (m.tp > 1 && std::find(tps.begin(), tps.end(), m.tp) == tps.end()) tps.push_back(m.tp);
    const Shape x = shape_of(m.model, 0);
    largest_gemm = std::max(largest_gemm, 2 * x.s * x.h * std::max(x.f, x.h));
  }
  std::sort(tps.begin(), tps.end());
  const bool fit_e_max = largest_gemm >= 1e11;

  // Parameter vector (logs): e_max?, x0, att, mem, c0, c_emb, lm, c_post, then per tp:
  // alpha, bus (layers), bus (embedding).
  std::vector<double> x0;
  if (fit_e_max) x0.push_back(std::log(prior.gemm_e_max));
  for (const double v : {prior.gemm_x0_flops, prior.attention_efficiency, prior.memory_efficiency,
                         prior.layer_overhead_s, prior.embedding_overhead_s,
                         prior.lm_head_efficiency, prior.post_overhead_s}) {
    x0.push_back(std::log(v));
  }
  const std::size_t first_link = x0.size();
  for (const int tp : tps) {
    const CollectiveFit* cf = collective_for(prior.tp_allreduce, tp);
    const CollectiveFit* ef = collective_for(prior.embedding_allreduce, tp);
    const CollectiveFit none{};
    x0.push_back(std::log((cf != nullptr ? *cf : none).alpha_s));
    x0.push_back(std::log((cf != nullptr ? *cf : none).bus_bytes_per_s));
    x0.push_back(std::log((ef != nullptr ? *ef : none).bus_bytes_per_s));
  }
  const std::vector<double> pull = x0;
  const auto unpack = [&](const std::vector<double>& v) {
    AnalyticCalibration c = prior;
    std::size_t i = 0;
    if (fit_e_max) c.gemm_e_max = std::exp(v[i++]);
    c.gemm_x0_flops = std::exp(v[i++]);
    c.attention_efficiency = std::exp(v[i++]);
    c.memory_efficiency = std::exp(v[i++]);
    c.layer_overhead_s = std::exp(v[i++]);
    c.embedding_overhead_s = std::exp(v[i++]);
    c.lm_head_efficiency = std::exp(v[i++]);
    c.post_overhead_s = std::exp(v[i++]);
    for (const int tp : tps) {
      const double alpha = std::exp(v[i++]);
      c.tp_allreduce[tp] = CollectiveFit{alpha, std::exp(v[i++])};
      c.embedding_allreduce[tp] = CollectiveFit{alpha, std::exp(v[i++])};
    }
    return c;
  };
  const auto objective = [&](const std::vector<double>& v) {
    const AnalyticCalibration c = unpack(v);
    // Physical ranges: efficiencies between 10 % and 95 % (memory up to 100 %), overheads
    // up to 5 ms.
    const auto out_of = [](double x, double lo, double hi) { return x < lo || x > hi; };
    if (out_of(c.gemm_e_max, 0.1, 0.95) || out_of(c.lm_head_efficiency, 0.1, 0.95) ||
        out_of(c.memory_efficiency, 0.1, 1.0) || out_of(c.attention_efficiency, 0.1, 0.95) ||
        out_of(c.layer_overhead_s, 0.0, 5e-3) || out_of(c.embedding_overhead_s, 0.0, 5e-3) ||
        out_of(c.post_overhead_s, 0.0, 5e-3)) {
      return 1e9;
    }
    double sum = 0.0;
    for (const PointResidual& r : residuals(gpu, c, points)) {
      for (const double e : {r.embedding, r.layer, r.post_process}) {
        // Squared log error, plus a steep term past 12 % so no single point is left far off.
        const double l = std::log1p(e);
        const double over = std::max(0.0, std::abs(l) - 0.12);
        sum += l * l + 10.0 * over * over;
      }
    }
    // A weak pull towards the prior; weaker for the links, whose nominal figure often is
    // not what the measured box had (PCIe without P2P under an NVLink-capable GPU).
    for (std::size_t i = 0; i < v.size(); ++i) {
      const bool bus = i >= first_link && (i - first_link) % 3 != 0; // not an alpha
      const double w = bus ? 0.001 : 0.01;
      sum += w * (v[i] - pull[i]) * (v[i] - pull[i]);
    }
    return sum;
  };
  // Restarts until a restart no longer improves (Nelder-Mead stalls in narrow valleys).
  std::vector<double> best = nelder_mead(objective, x0, 0.3, 4000);
  double best_f = objective(best);
  for (int restart = 0; restart < 12; ++restart) {
    const std::vector<double> next = nelder_mead(objective, best, 0.15, 4000);
    const double f = objective(next);
    const bool improved = f < best_f - 1e-9;
    if (f < best_f) {
      best = next;
      best_f = f;
    }
    if (!improved && restart >= 2) break;
  }
  CalibrationFit fit;
  fit.calibration = unpack(best);
  if (!tps.empty()) {
    // Group sizes beyond the data use the largest fitted one, not the link prior.
    for (auto* m : {&fit.calibration.tp_allreduce, &fit.calibration.embedding_allreduce}) {
      for (auto it = m->begin(); it != m->end();) {
        it = std::find(tps.begin(), tps.end(), it->first) == tps.end() ? m->erase(it) : std::next(it);
      }
    }
  }
  fit.calibration.calibrated = true;
  fit.calibration.source = fmt::format("fit of {} measured points", points.size() * 3);
  fit.residuals = residuals(gpu, fit.calibration, points);
  double sq = 0.0;
  std::size_t n = 0;
  for (const PointResidual& r : fit.residuals) {
    for (const double e : {r.embedding, r.layer, r.post_process}) {
      sq += e * e;
      ++n;
      fit.worst = std::abs(e) > std::abs(fit.worst) ? e : fit.worst;
    }
  }
  fit.rms = n > 0 ? std::sqrt(sq / static_cast<double>(n)) : 0.0;
  return fit;
}

} // namespace zerosearch
