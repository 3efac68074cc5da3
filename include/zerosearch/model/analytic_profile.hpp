#pragma once
// Analytic per-layer profiles (docs/analytic.md, research ANALYTIC.md section 2): forward and
// backward time of the embedding, one transformer layer and the post-process (final norm, LM
// head, loss) of any model on any GPU with specifications, from FLOPs and bytes moved, a
// per-GPU size-dependent GEMM efficiency, a fixed per-layer overhead and tensor-parallel
// all-reduces. Pure functions; generating a profile costs microseconds.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/core/enum_table.hpp"
#include "zerosearch/core/hardware.hpp"
#include "zerosearch/core/model.hpp"
#include "zerosearch/core/profile.hpp"
#include "zerosearch/model/fp8_rowwise.hpp"

namespace zerosearch {

/// Ring all-reduce of one group size: time = 2(n-1)*alpha_s + 2(n-1)/n * bytes / bus.
struct CollectiveFit {
  double alpha_s = 20e-6;
  /// Bus bandwidth (nccl-tests convention), bytes/s.
  double bus_bytes_per_s = 10e9;
};

/// The per-GPU parameters of the analytic model: fitted to measured profiles, taken from a
/// micro-benchmark, or a class prior.
struct AnalyticCalibration {
  std::string gpu;
  /// True when fitted to measured profiles or a benchmark of this GPU.
  bool calibrated = false;
  /// Where the figures come from, for people: "fit of 6 layers ...", "class prior gddr-pcie".
  std::string source;
  /// GEMM efficiency e(F) = gemm_e_max * (1 - exp(-F / gemm_x0_flops)) of the dtype's peak.
  double gemm_e_max = 0.6;
  /// gemm_e_max of fp8 GEMMs (of the fp8 peak); 0: the same as gemm_e_max.
  double gemm_e_max_fp8 = 0.0;
  double gemm_x0_flops = 1e10;
  /// Attention core (QK^T, PV) as a fraction of the peak.
  double attention_efficiency = 0.3;
  /// Element-wise work as a fraction of the memory bandwidth.
  double memory_efficiency = 0.8;
  /// Fixed time per transformer layer (launches, host work), seconds.
  double layer_overhead_s = 3e-4;
  /// Tensor-parallel all-reduces inside a layer, by group size (nearest smaller when absent).
  std::map<int, CollectiveFit> tp_allreduce;
  /// The vocabulary-parallel embedding all-reduce, by group size.
  std::map<int, CollectiveFit> embedding_allreduce;
  double embedding_overhead_s = 3e-4;
  /// LM head GEMM as a fraction of the peak.
  double lm_head_efficiency = 0.75;
  double post_overhead_s = 8e-5;
};

/// `c` with every intra-node collective (tp and embedding all-reduces, groups of 2 to 16) at
/// bus bandwidth `bus_bytes_per_s`, their latencies kept: a user's intra-node figure.
void with_intra_node_bus(AnalyticCalibration& c, double bus_bytes_per_s);


/// The gddr class prior's GEMM fill size x0 (7e9 FLOPs) is the A6000's fit
/// (profiledb/calibration.json: 7.0e9), a GPU of kGddrPriorSms SMs.
inline constexpr double kGddrPriorX0Flops = 7e9;
inline constexpr int kGddrPriorSms = 84;

/// x0 of the gddr prior on a GPU of `sm_count` SMs: the size at which a GEMM fills the GPU grows
/// with its SMs (its tiles spread over that many SMs, in waves: NVIDIA's "Matrix Multiplication
/// Background User's Guide", wave quantization), at the same tensor-core work per SM and clock
/// (Turing and GA102: 1024 dense fp16 FLOPs; the T4 65 TFLOPS / (40 x 1.59 GHz), the A6000
/// 154.8 / (84 x 1.80)). A clock cap changes the rate, not the FLOPs that fill the GPU.
/// kGddrPriorX0Flops x sm_count / kGddrPriorSms; sm_count <= 0: kGddrPriorX0Flops.
[[nodiscard]] double gddr_gemm_fill_flops(int sm_count) noexcept;

/// The class prior of a GPU with specifications (its benchmark block when it has one).
[[nodiscard]] AnalyticCalibration prior_calibration(const GpuSpec& gpu);

/// The fused attention kernel a run uses (--attention_kernel, docs/native.md §2). `automatic`:
/// the GPU's catalog rate (`flash_attention_efficiency`, measured on H100 with PyTorch's
/// scaled_dot_product_attention; the class prior elsewhere). `fa2`: FlashAttention-2, below that
/// on Hopper (`flash_attention2_efficiency`). `triton`: FlashAttention's 2022 Triton kernel
/// (llm-foundry's attn_impl triton) at kTritonAttentionShare of FlashAttention-2's rate.
enum class AttentionKernel : std::uint8_t { automatic, fa2, triton };

/// The flag's names, in the enum's order.
inline constexpr std::array<const char*, 3> kAttentionKernelNames{"auto", "fa2", "triton"};

/// The kernel named `text` (one of kAttentionKernelNames), or nullopt.
[[nodiscard]] inline std::optional<AttentionKernel> attention_kernel_named(std::string_view text) {
  return enum_named<AttentionKernel>(kAttentionKernelNames, text);
}

/// FlashAttention's Triton kernel (flash_attn/flash_attn_triton.py, tested with triton
/// 2.0.0.dev20221202 on A100 only) over FlashAttention-2, forward and backward together: its
/// header states that its forward + backward is slightly slower than FlashAttention's CUDA
/// kernel (v1), and FlashAttention-2 runs about twice as fast as v1 (Dao 2023, abstract and
/// sec. 4.1). Not fitted to the validation rows (docs/validation.md).
inline constexpr double kTritonAttentionShare = 0.5;

/// Whose code runs the transformer layers (--layer_impl, docs/native.md §2.2). `framework`: the
/// dp method's framework's own layers (Megatron-LM's and Megatron-DeepSpeed's fused kernels,
/// torchtitan's eager modules). `hf_gpt2`: Hugging Face transformers' eager GPT2Block
/// (modeling_gpt2.py of 2021-22, e.g. v4.12.0: Conv1D as addmm, unfused attention with a
/// division, a causal torch.where and an attention-mask add, gelu_new as eight element-wise
/// ops, separate dropouts) with the module in 16 bits (DeepSpeed's and ColossalAI's fp16
/// engines convert it); `hf_gpt2_amp`: the same code, the module in fp32 under
/// torch.cuda.amp.autocast (HF Trainer --fp16 without DeepSpeed, Lightning precision 16 with
/// DDP): layer norms, softmax and pow in fp32, weights cast per forward. `megatron_v1`:
/// Megatron-LM v1's eager GPT2ParallelTransformerLayer as DeepSpeedExamples ships it
/// (Megatron-LM/mpu/transformer.py at a79272c, 2020: linears with a separate bias add, the
/// same unfused attention with a division and a multiplicative mask, a TorchScript-fused
/// GeLU, separate dropouts), the module in 16 bits under DeepSpeed's fp16 engine.
/// `megatron_unfused`: Megatron-LM's own GPT layer with its fusion flags off (v1.1.5 as the
/// AMP paper's fork runs it: no --scaled-upper-triang-masked-softmax-fusion, --bias-gelu-fusion
/// or --bias-dropout-fusion, all off by default there), megatron_unfused_extra.
enum class LayerImpl : std::uint8_t { framework, hf_gpt2, hf_gpt2_amp, megatron_v1, megatron_unfused };

/// The flag's names, in the enum's order.
inline constexpr std::array<const char*, 5> kLayerImplNames{
    "framework", "hf_gpt2", "hf_gpt2_amp", "megatron_v1", "megatron_unfused"};

/// Whether `impl` replaces the framework's layer by a whole eager GPT-2 layer priced by
/// hf_gpt2_extra (hf_gpt2, hf_gpt2_amp, megatron_v1: one GPU's layer, tp, pp and cp 1);
/// megatron_unfused keeps the framework's layer and adds its unfused ops.
[[nodiscard]] constexpr bool is_eager_gpt2_layer(LayerImpl impl) noexcept {
  return impl == LayerImpl::hf_gpt2 || impl == LayerImpl::hf_gpt2_amp ||
         impl == LayerImpl::megatron_v1;
}

/// Whose code `impl` names, for messages: "Hugging Face's", "Megatron-LM v1's" or
/// "Megatron-LM's" (the framework's own for `framework`).
[[nodiscard]] inline const char* layer_impl_owner(LayerImpl impl) noexcept {
  switch (impl) {
  case LayerImpl::hf_gpt2:
  case LayerImpl::hf_gpt2_amp:
    return "Hugging Face's";
  case LayerImpl::megatron_v1:
    return "Megatron-LM v1's";
  case LayerImpl::megatron_unfused:
    return "Megatron-LM's";
  case LayerImpl::framework:
    break;
  }
  return "the framework's";
}

/// The layer code named `text` (one of kLayerImplNames), or nullopt.
[[nodiscard]] inline std::optional<LayerImpl> layer_impl_named(std::string_view text) {
  return enum_named<LayerImpl>(kLayerImplNames, text);
}

/// Which test decides whether Megatron's unfused attention runs its fused scale-mask-softmax
/// kernel or falls back to PyTorch ops (FusedScaleMaskSoftmax.is_kernel_available,
/// megatron/model/fused_softmax.py; --fused_softmax_check, docs/native.md §2.2). `megatron`:
/// Megatron-LM's test as Megatron-DeepSpeed has it since bigscience-workshop/Megatron-DeepSpeed
/// #260 (1cb76a64, 2022-03-06, a sync of Megatron-LM's fused_kernels tree): 16 < keys <= 4096,
/// queries % 4 == 0, b x heads-per-rank % 4 == 0 and, causal, a multiple of the kernel's
/// batches per block for the key length. `bigscience_pre260`: the same fork from #151
/// (9f5f5d4c, 2021-10-21) to #260, whose get_batch_per_block(b, np, sq, sk) was called as
/// (sq, sk, b, np), so the CUDA helper sized the block from the heads per rank in place of
/// the key length (and keys <= 2048): b x heads-per-rank must then be a multiple of 32 with
/// 5-8 heads per rank, 16 with 9-16 (the BigScience 176B design sweep of February 2022 ran it).
enum class SoftmaxCheck : std::uint8_t { megatron, bigscience_pre260 };

/// The flag's names, in the enum's order.
inline constexpr std::array<const char*, 2> kSoftmaxCheckNames{"megatron", "bigscience_pre260"};

/// The check named `text` (one of kSoftmaxCheckNames), or nullopt.
[[nodiscard]] inline std::optional<SoftmaxCheck> softmax_check_named(std::string_view text) {
  return enum_named<SoftmaxCheck>(kSoftmaxCheckNames, text);
}

/// Batches (rows of b x heads) one 128-thread block of Megatron's masked-softmax kernel handles
/// for rows of `key_len` elements (get_batch_per_block in
/// megatron/fused_kernels/scaled_masked_softmax.h): warps of min(next power of two, 32)
/// threads, two rows per warp up to 128 elements, one above. 2048 keys: 4.
[[nodiscard]] int softmax_batch_per_block(int key_len) noexcept;

/// Whether causal self-attention of `micro_batch` sequences of `seq` tokens with
/// `heads_per_rank` heads on this rank runs Megatron's fused upper-triangular softmax (16-bit
/// scores) under `check`; false: the PyTorch fallback (forward_torch_softmax).
[[nodiscard]] bool megatron_fused_softmax(int micro_batch, int heads_per_rank, int seq,
                                          SoftmaxCheck check) noexcept;

/// Bytes per attention score that Megatron's PyTorch softmax fallback moves beyond the fused
/// kernel (which reads and writes the 16-bit scores once forward, reads the gradient and the
/// probabilities and writes once backward), 16-bit scores, query-key layer scaling on
/// (Megatron's default, which sets attention_softmax_in_fp32): forward .float(), * scale,
/// masked_fill_, softmax, .half(): 2 + 4, 4 + 4, 4 + 4, 4 + 4, 4 + 2 bytes, 32 more than the
/// fused 2 + 2 (the broadcast causal mask, [b, 1, s, s], not counted); backward through the
/// same five ops: 2 + 4, 3 x 4, 4 + 4, 4 + 4, 4 + 2 = 40, 34 more than the fused 6.
inline constexpr double kTorchSoftmaxExtraForwardBytes = 32.0;
inline constexpr double kTorchSoftmaxExtraBackwardBytes = 34.0;
/// Kernels the fallback launches in place of the fused one, forward: five for one.
inline constexpr int kTorchSoftmaxExtraKernels = 4;

/// Forward kernels and bytes of an eager GPT-2 layer (Hugging Face's GPT2Block, Megatron-LM
/// v1's GPT2ParallelTransformerLayer) beyond the fused layer's (docs/native.md §2.2), for one
/// layer on one GPU (no tensor parallelism).
struct HfGpt2Extra {
  /// Kernels one forward launches (the whole layer, not the difference).
  int kernels = 0;
  /// Bytes moved per token (b s tokens), per attention score (b heads s s) and per weight
  /// parameter, beyond the fused layer's (analytic_layer_times' fused bytes).
  double per_token = 0.0;
  double per_score = 0.0;
  double per_weight = 0.0;
};
/// `impl` hf_gpt2, hf_gpt2_amp or megatron_v1; for `framework` all zero.
[[nodiscard]] HfGpt2Extra hf_gpt2_extra(LayerImpl impl, double hidden, double ffn) noexcept;

/// Forward elements and kernels of Megatron-LM's GPT layer with its fusion flags off
/// (--layer_impl megatron_unfused, docs/native.md §2.2) beyond the fused layer's, for one layer
/// on one GPU: elements moved per attention score (the eager masked_fill_, when the scores are
/// written), per FFN element of the rank (the bias add before GeLU) and per hidden element of a
/// token (two bias-dropout-adds as three ops each), in elements of the training dtype.
struct MegatronUnfusedExtra {
  double per_score = 0.0;
  double per_ffn = 0.0;
  double per_hidden = 0.0;
  /// Forward kernels beyond the fused layer's.
  int kernels = 0;
};
[[nodiscard]] MegatronUnfusedExtra megatron_unfused_extra(LayerImpl impl) noexcept;

/// Bytes of the attention mask a pipeline stage sends with every activation send besides the
/// hidden states (docs/native.md §2): Megatron-LM v1.1.5's GPT2ModelPipe passes (hidden,
/// mask) between its layers, and DeepSpeed's PipelineEngine of that era sends every tensor of
/// the tuple, the bool 1 x 1 x s x s causal mask cast to half (2 bytes an element), and drops
/// it from the gradient sent back (megatron_unfused: 2 s^2; other layer implementations: 0).
/// Source: DachengLi1/AMP@72eeea4, DeepSpeed/deepspeed/runtime/pipe/engine.py
/// (_exec_send_activations, _exec_send_grads) and the fork's Megatron-LM-v1.1.5-3D_parallelism
/// megatron/utils.py (get_ltor_masks_and_position_ids: the mask is 1 x 1 x s x s without
/// --reset-attention-mask, not partitioned over tp). Megatron-DeepSpeed's GPTModelPipe keeps
/// the mask out of the stage tuple, so the framework layers send none.
[[nodiscard]] constexpr double pipe_mask_send_bytes(LayerImpl impl, double seq_len) noexcept {
  return impl == LayerImpl::megatron_unfused ? 2.0 * seq_len * seq_len : 0.0;
}

/// What one analytic evaluation is for.
struct AnalyticSettings {
  int tp = 1;
  int micro_batch = 1;
  /// Tokens per sequence; 0 = the model's.
  int sequence_length = 0;
  /// Context-parallel degree (docs/native.md §2.4): the GPU runs s / cp of each sequence's
  /// tokens through the GEMMs and element-wise work, and its queries attend to keys of the
  /// whole sequence (causal load balance: 1/cp of the attention FLOPs).
  int context_parallel = 1;
  Dtype dtype = Dtype::bf16;
  /// FlashAttention (causal half of the scores, no s^2 traffic) instead of unfused attention.
  bool flash_attention = false;
  /// Which fused kernel runs it (with flash_attention).
  AttentionKernel attention_kernel = AttentionKernel::automatic;
  /// How fp8 linears are scaled (with dtype fp8; fp8_rowwise.hpp): tensorwise runs them at the
  /// fp8 rate plus the casts, rowwise at their 16-bit time over torchao's measured speedup.
  Fp8Recipe fp8_recipe = Fp8Recipe::tensorwise;
  /// Whether the LM head is split over tp: DeepSpeed's profiles are, Megatron-LM's measured
  /// ones are not (their post_process time does not change with tp).
  bool lm_head_tp_split = true;
  /// Sequence parallelism: the norm outputs are cast to fp8 on the rank's s/tp tokens, before
  /// the all-gather.
  bool sequence_parallel = false;

  // The native estimator's costs (docs/native.md §2.2). Off, the layer times are the
  // calibrated model's (the zerosearch estimator's analytic profiles, the calibration fits).
  /// GEMMs by shape (M, N, K after the tp split): how their tiles fill the GPU's SMs, and the
  /// memory roofline of skinny GEMMs.
  bool gemm_shapes = false;
  /// Host (CPU) time to issue one kernel in the framework; 0: the host is not modelled. A
  /// layer then takes max(GPU time, the host's time to issue its kernels).
  double host_per_kernel_s = 0.0;
  /// Host time of one forward linear module call (module, autograd and GEMM launch).
  double host_per_linear_s = 0.0;
  /// GPU time lost at each device-to-host synchronisation of a layer's forward (an MoE
  /// layer's dispatcher, model/moe_kernels.hpp); 0: not charged.
  double host_sync_s = 0.0;
  /// The framework's kernels: fused (Megatron-LM, Megatron-DeepSpeed: one kernel per norm,
  /// RoPE, bias-activation, bias-dropout-add) or eager PyTorch modules (torchtitan).
  bool fused_kernels = true;
  /// Unfused attention of GPT-style layers: the attention-probability dropout's traffic.
  bool attention_dropout_bytes = false;
  /// Whose layer code runs (Hugging Face's eager GPT-2: its own kernels and traffic in place of
  /// fused_kernels' accounting).
  LayerImpl layer_impl = LayerImpl::framework;
  /// Megatron's fused-softmax test (unfused attention of the fused layer in 16 bits): where it
  /// fails, the PyTorch fallback's traffic (kTorchSoftmaxExtra*) is charged. Off (the
  /// zerosearch estimator's analytic profiles, the calibration fits): never charged.
  bool softmax_fallback = false;
  SoftmaxCheck softmax_check = SoftmaxCheck::megatron;
  /// Parameters gathered per layer (ZeRO-3, FSDP): the gather's and reduce-scatter's copy
  /// kernels count as the layer's.
  bool sharded_parameters = false;
  /// Tensor-parallel collectives overlapped with the GEMMs beside them (Megatron-LM
  /// --tp-comm-overlap, Transformer Engine userbuffers): only what cannot hide is charged.
  bool tp_comm_overlap = false;
  /// Expert parallelism (issue 27, docs/moe.md): the routed experts of an MoE layer
  /// are spread over ep ranks and each split over etp ranks (0: etp = tp, the experts split
  /// like the dense MLP, as the zerosearch estimator's analytic profiles assume). A GPU then
  /// runs E/ep experts of f_expert/etp width on tokens x top-k x ep x etp / (E x tp) tokens
  /// each (grouped GEMM), times moe_imbalance for the busiest rank.
  int ep = 1;
  int etp = 0;
  /// Tokens of the busiest expert rank over the average (router load imbalance, >= 1).
  double moe_imbalance = 1.0;
};

/// Kernels one transformer layer launches on one GPU (docs/native.md §2.2).
struct LayerKernels {
  int forward = 0;
  int backward = 0;
  /// The forward GEMMs among them (each a linear module call on the host).
  int forward_gemms = 0;
  /// Of forward and backward, the GEMMs a library launches in its own loop (an MoE layer's
  /// grouped GEMM in Transformer Engine: kCudaLaunch_s each, model/moe_kernels.hpp).
  int forward_loop = 0;
  int backward_loop = 0;
  /// Device-to-host synchronisations per forward (an MoE layer's token dispatcher).
  int forward_syncs = 0;
};
[[nodiscard]] LayerKernels layer_kernels(const ModelSpec& model,
                                         const AnalyticSettings& settings) noexcept;

/// Fraction of the SMs a GEMM of M x N x K keeps busy: its 128 x 128 output tiles, each split
/// along K into slices of at least 256 (split-K, stream-K) while SMs are idle, over the SMs;
/// 1 when they fill one wave. sm_count <= 0: 1.
[[nodiscard]] double gemm_sm_fill(double m, double n, double k, int sm_count) noexcept;

/// Rate of a GEMM whose N or K (after the tp split) is not a whole number of 16-byte vectors
/// (8 elements of 16 bits, 16 of 8 bits), over an aligned one's: cuBLAS >= 11 still runs it on
/// Tensor Cores but "efficiency is better when matrix dimensions are multiples of 16 bytes"
/// (NVIDIA, Matrix Multiplication Background User's Guide, "Tensor Core Requirements"); the
/// figure is the one measured drop we have, fp16 on an H100 (stas00/ml-engineering@168be20
/// training/performance/README.md, "SwiGLU-based MLP", swiglu-maf-bench.py: 4 x [4096 x d_ff]
/// x [d_ff x 4096], d_ff 10922 at 272.73 TFLOPS, the aligned 10944 at 398.38), used on every
/// GPU. docs/native.md §2.2.
inline constexpr double kMisalignedGemmRate = 272.73 / 398.38;

/// Whether `elements` of `bytes` each fill whole 16-byte vectors (a GEMM dimension that
/// cuBLAS's fully vectorised Tensor Core kernels take).
[[nodiscard]] inline bool gemm_dim_aligned(double elements, double bytes) noexcept {
  const double vectors = elements * bytes * (1.0 / 16.0);
  return vectors == static_cast<double>(static_cast<long long>(vectors));
}

/// kMisalignedGemmRate when N or K of a GEMM (elements of `bytes`) is not gemm_dim_aligned, else
/// 1. M (the tokens) is not checked: it is b x s, a multiple of 8 in every run, and an MoE
/// expert's M is an average over the batch.
[[nodiscard]] inline double gemm_alignment_rate(double n, double k, double bytes) noexcept {
  return gemm_dim_aligned(n, bytes) && gemm_dim_aligned(k, bytes) ? 1.0 : kMisalignedGemmRate;
}

/// Time of one GEMM of M x N x K (2MNK FLOPs) with the calibration's size curve e(F), scaled by
/// its SM fill relative to a cube of the same FLOPs (what the curve was fitted on) and by
/// gemm_alignment_rate(N, K, in_bytes), and never below its memory roofline (inputs of
/// `in_bytes`, output of `out_bytes` per element).
[[nodiscard]] double gemm_shape_s(double m, double n, double k, double peak_flops, double e_max,
                                  const AnalyticCalibration& calibration, int sm_count,
                                  double in_bytes, double out_bytes,
                                  double memory_bytes_per_s) noexcept;

/// Exposed part of a tensor-parallel collective of `comm_s` overlapped with GEMMs of `gemm_s`
/// in t chunks (userbuffers' ring exchange): the first chunk cannot hide, the rest hides up to
/// the GEMM's length.
[[nodiscard]] double tp_overlap_exposed_s(double comm_s, double gemm_s, int t) noexcept;

/// Bytes per element that the tensor-parallel collectives beside a layer's linears move.
/// Without sequence parallelism one all-reduce of the row-parallel GEMM's 16-bit output, both
/// fields `elem`. With it an all-gather (`gather`) and a reduce-scatter (`reduce`): tensorwise
/// fp8 gathers the fp8 copy (1 byte; the forward's norm outputs, the backward's output
/// gradients) and reduce-scatters the 16-bit GEMM output; rowwise fp8 (torchao, which
/// torchtitan runs without its float8 tensor parallelism) and 16-bit training move `elem`
/// bytes both ways. docs/native.md §2, "fp8 tensor-parallel collectives".
struct TpCollectiveBytes {
  double gather = 2.0;
  double reduce = 2.0;
};
[[nodiscard]] TpCollectiveBytes tp_collective_bytes(Dtype dtype, Fp8Recipe recipe,
                                                    bool sequence_parallel, double elem) noexcept;

/// Time of one all-gather + reduce-scatter pair (or all-reduce) of `elements` per rank over a
/// group of n: each of the pair is half a ring all-reduce of its own bytes; exactly
/// allreduce(bytes) where both move the same bytes.
[[nodiscard]] double tp_collective_pair_s(const CollectiveFit& c, int n, double elements,
                                          TpCollectiveBytes bytes) noexcept;

/// Backward time of the fused (FlashAttention) attention core over its forward time. Its
/// backward does 2.5x the forward's FLOPs (five GEMMs to two, recomputing the scores) at a
/// lower efficiency: 2.95 is the median over the 27 points of
/// validation/gpu/layers_h100_parts_2026-11-26.json whose forward takes at least 0.2 ms
/// (scaled_dot_product_attention, causal, bf16, H100 SXM, torch 2.11; shorter ones are
/// launch-bound); FlashAttention-2 too reports its backward at a lower fraction of the peak
/// than its forward (Dao 2023). docs/validation.md, "Per-layer times on a real GPU".
inline constexpr double kFlashBackwardRatio = 2.95;

/// Work at which the fused attention core reaches 1 - 1/e of its large-call efficiency, in
/// forward FLOPs of one call (4 tokens s_eff heads head_dim / tp) on a GPU of H100 SXM's 16-bit
/// peak (989.4 TFLOPS); a GPU of another peak needs proportionally more or less work to fill
/// (the same kernel latency at its own rate). Fitted with the H100's large-call efficiency
/// (0.43, its catalog `flash_attention_efficiency`) to the 60 attention-core forward times of
/// validation/gpu/layers_h100_parts_2026-11-26.json: the mean |log(model / measured)| falls
/// from 0.33 (one efficiency, 0.35) to 0.16. Short sequences, few heads per rank (tp) and
/// micro-batch 1 leave most SMs idle: at 2,048 tokens and tp 8 the measured forward runs at 5 to
/// 25 % of the peak, at 8,192 tokens and tp 1 at 50 to 65 %. docs/native.md §3.1.
inline constexpr double kAttentionFillFlops = 1.78e10;

/// Efficiency of a fused attention call of `forward_flops` with large-call efficiency `e_max`
/// on a GPU of 16-bit peak `peak16_flops`: e_max (1 - exp(-F / x0)), x0 = kAttentionFillFlops
/// scaled by the GPU's peak over H100 SXM's.
[[nodiscard]] double flash_attention_efficiency(double e_max, double forward_flops,
                                                double peak16_flops) noexcept;

/// The large-call efficiency of fused attention kernel `kernel` on `gpu` (calibration `c` gives
/// the class prior where the catalog has no measured rate).
[[nodiscard]] double fused_attention_efficiency(const GpuSpec& gpu, const AnalyticCalibration& c,
                                                AttentionKernel kernel) noexcept;

/// How much longer than its tensor-core time a fused attention core takes where its score
/// exponentials bound it: max(1, r / w), r = the GPU's dense 16-bit tensor FLOPs per MUFU.EX2
/// result (hardware.json `sfu_exp2`, per SM and clock) and w = the tensor FLOPs per score
/// (forward: QK^T and PV, 4 x the core width; backward: its five GEMMs, 10 x, with one
/// exponential per score recomputed). The kernel overlaps the exponentials with the matmuls
/// (FlashAttention-4, Zadouri et al. 2026: on B200 the forward is bound by the exponential
/// units, 16 per SM and clock against 8,192 tensor FLOPs), so the longer of the two roofs
/// sets its time at the kernel's efficiency: B200 and GB200 (r = 512) at head dim 128 are at
/// both roofs at once, at 64 twice the tensor time; Hopper and Blackwell Ultra (r = 256)
/// reach the exponential roof only below head dim 64. 1 where the GPU has no `sfu_exp2`.
[[nodiscard]] double softmax_exp_factor(const GpuSpec& gpu,
                                        double tensor_flops_per_score) noexcept;

struct LayerTime {
  double forward_s = 0.0;
  double backward_s = 0.0;
  /// The weight-gradient part of backward_s (the weight GEMMs, W of the zero-bubble
  /// schedules); the rest, backward_s - weight_s, is the input-gradient part.
  double weight_s = 0.0;
};

struct AnalyticLayerTimes {
  LayerTime embedding;
  /// One transformer layer (all layers of a model are alike).
  LayerTime layer;
  LayerTime post_process;
  /// The attention core's share of layer.forward_s (QK^T, softmax, PV): what selective
  /// recomputation runs again.
  double attention_forward_s = 0.0;
  /// The attention core's backward (with flash attention kFlashBackwardRatio x its tensor-core
  /// forward, times softmax_exp_factor of the backward's 10 x width FLOPs per score).
  double attention_backward_s = 0.0;
  /// The GEMMs' and the element-wise operations' shares of layer.forward_s.
  double gemm_forward_s = 0.0;
  double elementwise_forward_s = 0.0;
  /// Parts of layer.forward_s that selective recompute of named modules reruns
  /// (--recompute_modules, docs/native.md §2.7), fused kernels' memory traffic: the two norms;
  /// MLA's q and kv up-projection GEMMs; the routed experts' activation; the shared experts
  /// (GEMMs and activation); the whole MLP block (a dense MLP, or the MoE block's router,
  /// experts, shared experts, activation and token permutation).
  double norm_forward_s = 0.0;
  double mla_up_proj_forward_s = 0.0;
  double moe_act_forward_s = 0.0;
  double shared_experts_forward_s = 0.0;
  double mlp_forward_s = 0.0;
  /// The tensor-parallel collectives' exposed share of layer.forward_s.
  double tp_comm_forward_s = 0.0;
  /// The same of layer.backward_s.
  double tp_comm_backward_s = 0.0;
  /// Kernels of the layer and whether the host (issuing them) is what its time is.
  LayerKernels kernels;
  bool host_bound_forward = false;
  bool host_bound_backward = false;
};

/// The peak of `dtype` in FLOP/s, falling back to fp16 for bf16 (V100, T4) and to tf32/fp32.
[[nodiscard]] double peak_flops(const GpuSpec& gpu, Dtype dtype) noexcept;

/// Element type the GEMMs of a run with --precision `bits` use on `gpu`.
[[nodiscard]] Dtype dtype_for_precision(const GpuSpec& gpu, int bits) noexcept;

/// Per-layer times. `gpu` must have specifications (has_specs).
[[nodiscard]] AnalyticLayerTimes analytic_layer_times(const ModelSpec& model, const GpuSpec& gpu,
                                                      const AnalyticCalibration& calibration,
                                                      const AnalyticSettings& settings) noexcept;

/// A profile in the measured profiles' shape: forward times at micro-batch 1 of
/// [embedding, layers..., post_process] for each tp in `tps`. origin says "analytic ...".
[[nodiscard]] GpuProfile analytic_profile(const ModelSpec& model, const GpuSpec& gpu,
                                          const AnalyticCalibration& calibration, Flavour flavour,
                                          const std::vector<int>& tps, Dtype dtype);

/// Forward FLOPs one GPU executes for one transformer layer (GEMMs and attention core,
/// the full score square unless flash_attention).
[[nodiscard]] double layer_forward_flops_per_gpu(const ModelSpec& model,
                                                 const AnalyticSettings& settings) noexcept;

/// Forward FLOPs of one sequence as Megatron-LM counts them (causal half of the attention
/// scores, LM head included); training FLOPs are 3x this.
[[nodiscard]] double model_forward_flops(const ModelSpec& model, int sequence_length) noexcept;

/// One measured profile point: a model at one tp, the three kinds of layer, forward seconds.
struct MeasuredPoint {
  ModelSpec model;
  Flavour flavour = Flavour::deepspeed;
  int tp = 1;
  double embedding_s = 0.0;
  double layer_s = 0.0;
  double post_process_s = 0.0;
};

/// Measured points of a profile (one per tp).
[[nodiscard]] std::vector<MeasuredPoint> measured_points(const GpuProfile& profile,
                                                         const ModelSpec& model);

struct PointResidual {
  std::string model;
  int tp = 0;
  /// (predicted - measured) / measured of the embedding, the layer and the post-process.
  double embedding = 0.0, layer = 0.0, post_process = 0.0;
};

struct CalibrationFit {
  AnalyticCalibration calibration;
  std::vector<PointResidual> residuals;
  double rms = 0.0;
  double worst = 0.0;
};

/// Fits the parameters of `gpu` to `points` (least squares on log time with a weak pull
/// towards the class prior; e_max is kept at the prior when no GEMM reaches 1e11 FLOP).
[[nodiscard]] CalibrationFit fit_calibration(const GpuSpec& gpu,
                                             const std::vector<MeasuredPoint>& points);

/// Relative errors of `calibration` on `points`.
[[nodiscard]] std::vector<PointResidual> residuals(const GpuSpec& gpu,
                                                   const AnalyticCalibration& calibration,
                                                   const std::vector<MeasuredPoint>& points);

} // namespace zerosearch
