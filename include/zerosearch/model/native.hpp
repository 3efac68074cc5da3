#pragma once
// The native estimator (docs/native.md): zerosearch's own model of step time and memory, from
// the analytic per-layer times (model/analytic_profile) of each stage's GPU at the design
// point's tensor-parallel degree, micro-batch size, sequence length and element type; 1F1B or
// interleaved 1F1B; per-boundary activation transfers; hierarchical data-parallel collectives
// per method with the part that overlaps compute not charged twice; the optimizer step;
// recomputation; ZeRO-Offload transfers. Memory per stage from the model's real architecture.
// Pure functions: no I/O, no state.
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/core/hardware.hpp"
#include "zerosearch/core/model.hpp"
#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/deepspeed_zero3.hpp"
#include "zerosearch/model/moe.hpp"
#include "zerosearch/model/pipeline_layout.hpp"
#include "zerosearch/model/recompute_modules.hpp"
#include "zerosearch/model/terapipe.hpp"
#include "zerosearch/model/zero_bubble.hpp"

namespace zerosearch {

/// The framework parameters of method `m`: its row of kDpMethods (docs/native.md §4).
using FrameworkParams = NativeTraits;
[[nodiscard]] inline const FrameworkParams& framework_params(DpMethod m) noexcept {
  return info(m).native;
}
/// The same, training in `d`: gradient bytes follow the dtype where the framework does
/// (`fp16_grads_in_fp16`).
[[nodiscard]] FrameworkParams framework_params(DpMethod m, Dtype d) noexcept;

/// Settings of the native estimator that are not part of a design point.
struct NativeSettings {
  /// FlashAttention-style fused attention (no s^2 tensors, causal half of the FLOPs).
  bool flash_attention = true;
  /// The fused attention kernel (--attention_kernel; with flash_attention).
  AttentionKernel attention_kernel = AttentionKernel::automatic;
  /// How fp8 linears are scaled (--fp8_recipe; with --dtype fp8): tensorwise (default) or
  /// torchao's rowwise (model/fp8_rowwise.hpp).
  Fp8Recipe fp8_recipe = Fp8Recipe::tensorwise;
  /// Megatron-LM sequence parallelism with tp > 1 (norm and dropout activations split over tp).
  bool sequence_parallel = true;
  /// The gradient reduction of dp and ZeRO 0-2 overlaps backward (--overlap_grad_reduce:
  /// Megatron-LM's --overlap-grad-reduce, DeepSpeed's overlap_comm, always with PyTorch DDP).
  /// Unset: the framework's default (off for both). ZeRO-3 and FSDP always overlap.
  std::optional<bool> overlap_grad_reduce;
  /// The loss is compiled into fused kernels (--fused_loss): torchtitan compiles its loss with
  /// [compile] enable since bbb1b61 (2025-04-02). Only the fsdp method (torchtitan) has it.
  bool fused_loss = false;
  /// The context-parallel exchange moves keys and values repeated to every query head
  /// (--cp_kv_repeat): torchtitan's Llama at 9dec370 (torchtitan/models/llama/model.py,
  /// Attention.forward) calls repeat_kv before F.scaled_dot_product_attention, and PyTorch's
  /// context_parallel exchanges the K/V that SDPA receives. Off: the key/value heads alone.
  bool cp_kv_repeat = false;
  /// The layers' element-wise ops are fused (--fused_layers: torch.compile, torchtitan's
  /// [compile] with the model among its components; or hand-fused kernels such as
  /// TinyLlama's): the norms, RoPE, SwiGLU and residual adds cost what Megatron-LM's fused
  /// kernels cost instead of eager PyTorch's op-by-op traffic. Only the fsdp method (torchtitan,
  /// eager by default) has it; Megatron-LM and DeepSpeed fuse already.
  bool fused_layers = false;
  /// Whose code runs the layers (--layer_impl): the framework's own, or Hugging Face's eager
  /// GPT-2 (in 16 bits, or fp32 under autocast), whatever the dp method (docs/native.md §2.2).
  LayerImpl layer_impl = LayerImpl::framework;
  /// Megatron's fused-softmax test with unfused attention (--fused_softmax_check): the code
  /// version whose test decides where the PyTorch softmax fallback runs (docs/native.md §2.2).
  SoftmaxCheck softmax_check = SoftmaxCheck::megatron;
  /// Which DeepSpeed ZeRO-3 runs (--zero3_impl, model/deepspeed_zero3.hpp): coalesced (v0.6.0
  /// on: gathers prefetched behind compute) or per_param (v0.3.12 to v0.5.4: one collective
  /// per parameter through PyTorch's list API, the device synchronized around each gather).
  Zero3Impl zero3_impl = Zero3Impl::coalesced;
  /// Gradients reduced in fp32 with 16-bit training (--grad_reduce_fp32): Megatron-LM's
  /// --accumulate-allreduce-grads-in-fp32 (megatron-core grad_reduce_in_fp32; its gradient
  /// buffer takes that dtype), DeepSpeed's "fp32_allreduce" (an fp32 copy for the all-reduce
  /// only), FSDP2's reduce_dtype. Unset: each framework's default (Megatron-LM on with bf16,
  /// off with fp16; DeepSpeed off; torchtitan's FSDP2 on).
  std::optional<bool> grad_reduce_fp32;
  /// DeepSpeed's fp32 gradient accumulation with bf16 (--grad_accum_fp32 on; its
  /// data_types.grad_accum_dtype "fp32"): the BF16_Optimizer, which zero1 runs then instead of
  /// the ZeRO optimizer (docs/native.md §4). Off by default: DeepSpeed's default with ZeRO
  /// stage 1 (engine.py get_data_types).
  bool grad_accum_fp32 = false;
  /// Mixed precision's fp32 master weights and fp32 Adam moments (--master_weights on, the
  /// default), or pure 16-bit training (off): parameters, gradients and Adam's m and v in the
  /// training dtype, as torchtune, Hugging Face with torch_dtype bfloat16 and torchtitan's
  /// training.dtype bfloat16 train (model/optimizer_states.hpp; docs/native.md §3).
  bool master_weights = true;
  /// Tensor-parallel collectives overlapped with the GEMMs beside them (--tp_comm_overlap:
  /// Megatron-LM --tp-comm-overlap, Transformer Engine userbuffers). Off: charged in full.
  bool tp_comm_overlap = false;
  /// Per-GPU memory besides model states and activations: CUDA context, NCCL buffers,
  /// allocator fragmentation, GiB (--framework_overhead_gib).
  double framework_overhead_gib = 2.0;
  /// Host memory per node for offload, GiB; 0 = 2x the node's GPU memory (--host_memory_gib).
  double host_memory_gib = 0.0;
  /// DeepSpeed CPU-Adam throughput per GPU process, parameters per second (an assumption:
  /// docs/native.md §4).
  double host_adam_params_per_s = 1e9;
  /// Router load imbalance of MoE layers: tokens of the busiest expert rank over the average
  /// (--moe_imbalance; docs/moe.md).
  double moe_imbalance = kDefaultMoeImbalance;
  /// Megatron-Core's EP all-to-all overlap with the combined 1F1B schedule
  /// (--moe_a2a_overlap: Megatron-LM --overlap-moe-expert-parallel-comm --delay-wgrad-compute;
  /// docs/moe.md §3.1). Off: the dispatch and combine are charged in full.
  bool moe_a2a_overlap = false;
  /// Megatron-Core's token dispatcher (--moe_dispatcher; docs/moe.md §3.2): alltoall sends
  /// every top-k copy of a token; DeepEP and HybridEP (the flex dispatcher) send a token once
  /// per destination node and rank (flex_all_to_all_s).
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  /// Megatron-Core's pipeline layout (--pipeline_layout; docs/native.md §2.5): the layers,
  /// embedding, loss and MTP layers of each (rank, virtual stage). Null: the default split.
  /// Points whose pp x virtual stages is not its chunk count are invalid.
  std::shared_ptr<const PipelineLayout> pipeline_layout;
  /// The modules --recompute selective reruns on a Megatron-family method (--recompute_modules;
  /// docs/native.md §2.7); the default, core_attn alone, is the estimator's selective as before.
  RecomputeModules recompute_modules{};
};

/// The same, with the settings' gradient-reduction dtype (--grad_reduce_fp32) where given: the
/// reduction moves 4 bytes (on) or 2 (off, 16-bit training) per element; the frameworks that
/// keep their gradient buffer in the reduction's dtype (Megatron-LM, FSDP2) keep 4 or 2 bytes
/// per gradient too, DeepSpeed keeps its 16-bit gradients and casts a copy for the reduction.
[[nodiscard]] FrameworkParams framework_params(DpMethod m, Dtype d,
                                               const NativeSettings& settings) noexcept;

/// One node type as the native model sees it.
struct NativeGpu {
  GpuSpec spec;
  AnalyticCalibration calibration;
  /// Usable memory of one GPU, GiB.
  double memory_gib = 0.0;
  /// Network bandwidth of one node, bytes/s (shared by its GPUs).
  double inter_node_bytes_per_s = 0.0;
  /// Host link (PCIe) of one GPU, bytes/s, for offload.
  double host_link_bytes_per_s = 0.0;
};

/// The host link of a GPU: its PCIe generation's x16 figure at 80 % (docs/native.md §3).
[[nodiscard]] double host_link_bytes_per_s(const GpuSpec& gpu) noexcept;

/// Host time to issue one kernel in an eager PyTorch framework (Megatron-LM, DeepSpeed,
/// torchtitan), seconds: the CUDA launch (3.8 us a kernel when launches set the pace, NVIDIA's
/// "Getting Started with CUDA Graphs") plus PyTorch's eager dispatch (4.5 us for x + 1,
/// dev-discuss.pytorch.org "Micro-optimizations for the most micro of benchmarks").
inline constexpr double kHostPerKernel_s = 3.8e-6 + 4.5e-6;
/// Bytes per parameter DeepSpeed's BF16_Optimizer moves after every micro-batch's backward:
/// hp_grad.add_(lp.grad.to(float32)), a cast of the bf16 gradient (read 2, write 4) and an
/// fp32 add (read 4 + 4, write 4) (deepspeed/runtime/bf16_optimizer.py update_hp_grads at
/// microsoft/DeepSpeed 56c5223; docs/native.md §4).
inline constexpr double kBf16OptimizerAccumulateBytes = 2.0 + 4.0 + 4.0 + 4.0 + 4.0;
/// Bytes per parameter DeepSpeed's FP16_Optimizer (ZeRO stage 0 with fp16: its fused-Adam
/// wrapper, deepspeed/runtime/fp16/fused_optimizer.py `step`, the same from microsoft/DeepSpeed
/// 7d4d742 (0.3.0, 2020) to v0.16.4) reads in its overflow check, tensor by tensor before the
/// step: CheckOverflow.has_overflow_serial's `float(x.float().sum())` on each 16-bit gradient
/// (deepspeed/runtime/utils.py), a cast (read 2, write 4) and a sum (read 4).
inline constexpr double kFp16OverflowCheckBytes = 2.0 + 4.0 + 4.0;
/// Bytes per parameter the same step moves after the check, beyond the fused Adam's own
/// (optimizer_step_bytes): each gradient cast to fp32 (`p.grad.to(float32)`: read 2, write 4)
/// and flattened (`_flatten_dense_tensors`: read 4, write 4); the norm of the flat fp32
/// gradients (get_grad_norm: read 4); `unscale_and_clip_grads` (`mul_`: read 4, write 4); the
/// fused Adam reading the fp32 gradient (4, where optimizer_step_bytes has DeepSpeed's 2); and
/// the fp32 master read again for the 16-bit copy (`p.data.copy_(q.data)`: read 4, its write
/// 2 already counted).
inline constexpr double kFp16OptimizerStepBytes =
    (2.0 + 4.0) + (4.0 + 4.0) + 4.0 + (4.0 + 4.0) + (4.0 - 2.0) + 4.0;
/// Host time of one forward torch.nn.Linear call on an H100 DGX (Xeon 8480C), bf16, 2048
/// wide, 8192 tokens: 13.48 us (NVIDIA/TransformerEngine#2053, measured CPU runtime).
inline constexpr double kHostPerLinear_s = 13.48e-6;

/// The optimizer step of an fp32 module trained under torch.cuda.amp autocast with an eager
/// per-tensor Adam (--layer_impl hf_gpt2_amp with DDP: HF Trainer 4.12's transformers.AdamW,
/// Lightning's torch.optim.Adam of torch 1.1x, whose default is the single-tensor loop), bytes
/// per parameter: GradScaler's unscale reads and writes the fp32 gradient (8; scaler.step
/// unscales when the loop has not), then per tensor exp_avg.mul_ (8), .add_(grad) (12),
/// exp_avg_sq.mul_ (8), .addcmul_(grad, grad) (16), sqrt (8), .add_(eps) (8), p.addcdiv_ (16)
/// (transformers/optimization.py AdamW.step at v4.12.0; weight decay 0, the Trainer's
/// default): 84. Gradient clipping is not counted (Lightning's default has none).
inline constexpr double kAmpEagerAdamBytes = 8.0 + 8 + 12 + 8 + 16 + 8 + 8 + 16;
/// Its kernels per parameter tensor: the seven Adam ops (the unscale is one foreach launch).
inline constexpr double kAmpEagerAdamOps = 7.0;

/// NCCL's latency model (NVIDIA/nccl src/graph/tuning.cc, 2.12 to 2.2x): a collective costs
/// a base latency per call plus a hardware latency per step of its algorithm, per protocol.
struct NcclLatency {
  /// Simple protocol: base and per ring step, seconds.
  double simple_base_s = 8.4e-6;
  double simple_step_s = 14.0e-6;
  /// LL protocol (small messages): base and per step; it moves data at a quarter of the bus
  /// bandwidth (8-byte stores carrying 4 bytes, and NCCL's tuning caps it further).
  double ll_base_s = 6.6e-6;
  double ll_step_s = 2.7e-6;
};
/// The links NCCL's model tells apart.
enum class Transport : std::uint8_t { nvlink, pci, net };
/// NCCL's latencies over NVLink (3.4 / 0.6 us a step), PCIe (5.7 / 1.0) and the network (14 /
/// 2.7, InfiniBand, RoCE and sockets alike: NCCL's model does not tell them apart).
[[nodiscard]] NcclLatency nccl_latency(Transport transport) noexcept;

/// A ring collective over n ranks as NCCL runs it: the faster of the Simple and LL protocols;
/// `steps` ring steps moving `bytes_on_wire` per rank at bus bandwidth `bus`. With
/// `tree_nodes` > 1 (an all-reduce across nodes), the tree's latency (2 log2(nodes) network
/// steps) where it is shorter than the ring's.
[[nodiscard]] double nccl_collective_s(double bytes_on_wire, int steps, double bus,
                                       const NcclLatency& lat, int tree_nodes = 0) noexcept;

/// A ring collective over ranks on several nodes as NCCL's tuning model prices it
/// (NVIDIA/nccl src/graph/tuning.cc, v2.10.3-1 to 2.2x): chunks move round the ring on every
/// hop at once, so the ring has one bus bandwidth `bus` (its slowest hop's, the caller's), and
/// its latency is the base plus `steps` - `net_steps` steps at the intra-node link's latency and
/// `net_steps` at the network's (an all-reduce crosses the network 2 (nodes - 1) times, a
/// reduce-scatter or all-gather nodes - 1). With `tree_nodes` > 1, the tree's latency
/// (2 log2(nodes) network steps) where it is shorter, as nccl_collective_s.
[[nodiscard]] double nccl_ring_s(double bytes_on_wire, int steps, int net_steps, double bus,
                                 const NcclLatency& intra, const NcclLatency& net,
                                 int tree_nodes = 0) noexcept;

/// Optimizer step kernels: a multi-tensor apply (Apex FusedAdam, PyTorch's fused and foreach
/// Adam) handles at most 36 tensors and 320 chunks of 65,536 elements per launch (depth 4:
/// gradient, parameter, m, v; csrc/multi_tensor_apply.cuh).
[[nodiscard]] double optimizer_launches(double parameters, double tensors) noexcept;

/// Everything the native model needs that does not change from one design point to the next.
struct NativeContext {
  ModelSpec model;
  int gpus_per_node = 8;
  int global_batch = 64;
  /// Per node-type index.
  std::vector<NativeGpu> gpus;
  NativeSettings settings;
};

/// Where the stages of a design point run: the node type of each stage and, per boundary
/// between stage j and j+1, whether its transfer crosses nodes (and the slower node type's
/// network then applies).
struct NativePlacement {
  std::vector<int> stage_gpu;
  /// Per stage, the node type whose network is the slowest among the stage's nodes, where it
  /// is not stage_gpu's (a stage spanning node types); empty when every stage's is.
  std::vector<int> stage_net;
  std::vector<char> boundary_inter_node;
  /// The node type whose network a collective over stage j's nodes runs at.
  [[nodiscard]] int net_gpu(int j) const noexcept {
    return stage_net.empty() ? stage_gpu[static_cast<std::size_t>(j)]
                             : stage_net[static_cast<std::size_t>(j)];
  }
  [[nodiscard]] bool operator==(const NativePlacement&) const = default;
};

/// Stage GPUs and node crossings of `p` on a placement (node type of each node, rank order:
/// tp innermost, then dp, then pp, as Megatron-LM and DeepSpeed lay ranks out). A stage whose
/// ranks span node types runs at the pace of its slowest (smallest memory, then lowest peak),
/// and its data-parallel collectives cross the nodes at the slowest of their networks.
[[nodiscard]] NativePlacement native_placement(const NativeContext& ctx, const DesignPoint& p,
                                               const std::vector<int>& node_types);
/// native_placement into `out`, reusing its buffers (the search's scratch: no allocation once
/// they are large enough).
void native_placement_into(const NativeContext& ctx, const DesignPoint& p,
                           const std::vector<int>& node_types, NativePlacement& out);

/// Memory of one GPU of one stage, GiB.
struct NativeMemory {
  double weights = 0.0;
  double gradients = 0.0;
  double optimizer = 0.0;
  /// Activations of the micro-batches in flight (and the recompute working set).
  double activations = 0.0;
  /// Embedding output (first stage), logits and their gradient (last stage), ZeRO-3/FSDP
  /// gathered-parameter buffers.
  double buffers = 0.0;
  double overhead = 0.0;
  [[nodiscard]] double total() const noexcept {
    return weights + gradients + optimizer + activations + buffers + overhead;
  }
};

struct NativeStage {
  int gpu = 0;
  /// Pipeline entries (embedding, layers, post_process) on this stage.
  int layers = 0;
  /// One micro-batch, seconds: forward, backward (with recompute), and its recompute share.
  double forward_s = 0.0;
  double backward_s = 0.0;
  double recompute_s = 0.0;
  /// The weight-gradient part of backward_s (the weight GEMMs and the gradient accumulation;
  /// W of the zero-bubble schedules); backward_s - weight_s is the input-gradient part.
  double weight_s = 0.0;
  /// Exposed parameter gathers / gradient reduce-scatters per micro-batch (ZeRO-3, FSDP).
  double sharded_comm_s = 0.0;
  /// Gradient accumulation into the 16-bit .grad after the first micro-batch (DeepSpeed ZeRO
  /// 0-2: autograd's AccumulateGrad), per micro-batch on average, inside backward_s.
  double grad_accumulation_s = 0.0;
  /// MoE layers on this stage, and their token dispatch and combine (all-to-all over ep, all-
  /// gather and reduce-scatter over etp) per micro-batch, forward + backward (recompute
  /// included), inside forward_s and backward_s (docs/moe.md).
  int moe_layers = 0;
  double moe_comm_s = 0.0;
  /// The forward pass's share of moe_comm_s (the rest is in backward_s; the timeline draws
  /// both).
  double moe_comm_forward_s = 0.0;
  /// With the EP all-to-all overlap (NativeSettings::moe_a2a_overlap, where
  /// moe_a2a_overlap_runs): the all-to-all one combined forward-and-backward pair of a whole
  /// micro-batch of this stage hides (moe_a2a_hidden_s); 0 otherwise. The pipeline takes it
  /// off each pair of the rank (moe_a2a_overlap_pairs).
  double moe_a2a_overlap_s = 0.0;
  /// The expert gradients' reduction over edp, inside dp_sync_s.
  double expert_dp_sync_s = 0.0;
  /// Exposed context-parallel exchange per micro-batch (forward, backward and recompute; inside
  /// forward_s and backward_s), seconds (docs/native.md §2.4).
  double cp_comm_s = 0.0;
  /// The forward pass's share of cp_comm_s (the rest, recompute's rerun included, is in
  /// backward_s).
  double cp_comm_forward_s = 0.0;
  /// Send to the next stage, seconds (0 for the last stage).
  double send_s = 0.0;
  /// Data-parallel sync after the last backward, exposed part, seconds.
  double dp_sync_s = 0.0;
  double optimizer_s = 0.0;
  double offload_s = 0.0;
  /// Micro-batches whose activations this stage holds at its peak.
  double in_flight = 0.0;
  NativeMemory memory;
  double memory_limit_gib = 0.0;
  /// Host memory this GPU's offloaded states take, GiB.
  double host_gib = 0.0;
  [[nodiscard]] bool fits() const noexcept { return memory.total() <= memory_limit_gib; }
};

struct NativeEstimate {
  /// Pipeline entries per stage (embedding and post_process included), like the partitions of
  /// the zerosearch estimator.
  std::vector<int> partition;
  std::vector<NativeStage> stages;
  double step_s = 0.0;
  double pipeline_s = 0.0;
  double dp_sync_s = 0.0;
  double embedding_sync_s = 0.0;
  double optimizer_s = 0.0;
  double offload_s = 0.0;
  /// Peak over stages, GiB, and the stage it is on.
  double peak_memory_gib = 0.0;
  int peak_stage = 0;
  bool oom = false;
  /// Host memory per node for offload, GiB, and whether it exceeds the node's.
  double host_gib_per_node = 0.0;
  bool host_oom = false;
  /// Token slices per sequence (schedule terapipe; empty otherwise), in tokens.
  Slicing slices;
  /// The pipeline was not simulated (NativePruning): pipeline_s and step_s are lower bounds,
  /// every other figure (memory, oom) is exact.
  bool pruned = false;
};

/// Step times past which a search will not use a plan's estimate (search/search.cpp): a split
/// schedule's pipeline (zb-h1, zb-h2, zbv, dualpipe, dualpipev) is then not simulated when its
/// lower bound (pipe_busy_bound) already puts the step time past the limit of its kind (a plan
/// that fits, one that does not). The defaults simulate every plan.
struct NativePruning {
  double fits_above = HUGE_VAL;
  double oom_above = HUGE_VAL;
};

/// Why the native model cannot evaluate `p` (virtual stages that do not divide the layers,
/// interleaving without a pipeline, fp8 on a GPU without it, offload with a method that has
/// none), or an empty string.
[[nodiscard]] std::string native_invalid_reason(const NativeContext& ctx, const DesignPoint& p,
                                                const NativePlacement& where);

/// Transformer layers of each of the pp x v model chunks of interleaved 1F1B, chunk k on
/// pipeline rank k % pp: torchtitan's default split (generate_split_points at 9dec370: the
/// first chunk gets L / (pp v) layers, the middle chunks one more while the remainder lasts, the
/// last chunk what is left), which is Megatron-LM's equal split when pp x v divides L.
[[nodiscard]] std::vector<int> interleaved_chunks(int layers, int pp, int virtual_stages);
/// Chunk k's layers of interleaved_chunks(layers, total, 1) (total chunks in all), without
/// building the list: interleaved_chunks(layers, pp, v)[k] == interleaved_chunk(layers, pp * v, k).
[[nodiscard]] int interleaved_chunk(int layers, int total, int k);
/// Equal interleaved chunks as Megatron-LM builds them: 0 when pp x virtual_stages divides the
/// layers, 1 when it divides them plus the input embedding counted as a layer
/// (--account-for-embedding-in-pipeline-split), 2 when plus the embedding and the loss
/// (--account-for-loss-in-pipeline-split too); -1 when none does.
[[nodiscard]] int interleaved_split_accounts(long long layers, int pp, int virtual_stages) noexcept;

/// The layer partition the native model uses when none is given: Megatron-LM's uniform split
/// when pp (times the virtual stages) divides the layers and the stages are alike, the sum of
/// each rank's interleaved_chunks when interleaving (uneven for fsdp, as torchtitan splits,
/// and for dp, as Megatron-LM's --pipeline-model-parallel-layout writes them), else the min-max
/// split of the per-stage times.
[[nodiscard]] std::vector<int> native_partition(const NativeContext& ctx, const DesignPoint& p,
                                                const NativePlacement& where);

/// The analytic settings of one transformer layer of `p` as the native estimator evaluates it:
/// its tp, micro-batch, dtype, attention and sequence parallelism, and the native costs of the
/// framework its method implies (GEMM shapes, host issue, fused or eager kernels).
[[nodiscard]] AnalyticSettings native_layer_settings(const ModelSpec& model, const DesignPoint& p,
                                                     const NativeSettings& settings) noexcept;

/// Activation bytes one transformer layer keeps for one micro-batch on one GPU.
[[nodiscard]] double layer_activation_bytes(const ModelSpec& model, const DesignPoint& p,
                                            const NativeSettings& settings) noexcept;
/// Bytes a deferred weight-gradient pass (W) of one transformer layer holds for one
/// micro-batch on one GPU, its recompute policy aside: each weight GEMM's input and its
/// output's gradient (Qi et al.'s M_W = 32 s b h for a GPT layer at tp 1).
[[nodiscard]] double layer_weight_pass_bytes(const ModelSpec& model, const DesignPoint& p,
                                             const NativeSettings& settings) noexcept;

/// The token-level pipeline of `p` (schedule terapipe) from a native estimate's stages: per
/// stage, the slice cost fitted to the analytic layer times at the full sequence and at an
/// eighth of it (fixed + per-token part of the GEMMs and element-wise work, per token pair
/// for causal attention), backward as the stage's backward/forward ratio, and the sends per
/// token. One slice of the whole sequence reproduces the stage's forward and backward times.
[[nodiscard]] TokenPipeline native_token_pipeline(const NativeContext& ctx, const DesignPoint& p,
                                                  const NativeEstimate& stages);

/// The pass-by-pass run of a zero-bubble or DualPipe plan (is_split_schedule) behind
/// `est`'s pipeline time, every pass recorded: what the timeline draws.
[[nodiscard]] PipeRun native_pipe_run(const NativeContext& ctx, const DesignPoint& p,
                                      const NativeEstimate& est);

/// The pass-by-pass run of a --pipeline_layout's interleaved plan (virtual stages > 1) behind
/// est.pipeline_s: the per-chunk times layout_chunk_times gave the estimate and every pass
/// simulate_interleaved ran on them (what the timeline draws); makespan_s == est.pipeline_s.
/// Empty (no passes) for any other plan.
struct InterleavedRun {
  InterleavedTimes times;
  std::vector<InterleavedPass> passes;
  double makespan_s = 0.0;
};
[[nodiscard]] InterleavedRun native_interleaved_run(const NativeContext& ctx,
                                                    const DesignPoint& p,
                                                    const NativePlacement& where,
                                                    const NativeEstimate& est);

/// The lower bound of a split-schedule plan's makespan that the pruning search tries first,
/// from `est`'s stages alone (each rank's passes end to end; with one chunk per rank also the
/// forwards that reach it and the backwards after it): never above est.pipeline_s of the
/// simulated plan. 0 for a plan that is not split (docs/native.md §2.3 "Search cost").
/// With `stop_above` (both pruning limits at that step time), the bound as the pruning search
/// takes it: it stops at the first rank that puts the step time (est's other terms added)
/// past the limit, a lower value past it whenever the whole bound is.
[[nodiscard]] double native_split_stage_bound(const NativeContext& ctx, const DesignPoint& p,
                                              const NativeEstimate& est,
                                              double stop_above = HUGE_VAL);

/// Estimates `p` on `where` with `partition` (pipeline entries per stage; empty: the
/// native_partition). Call native_invalid_reason first.
[[nodiscard]] NativeEstimate native_estimate(const NativeContext& ctx, const DesignPoint& p,
                                             const NativePlacement& where,
                                             std::vector<int> partition = {},
                                             const NativePruning& prune = {});

/// Whether `a` and `b` are the same configuration: every field equal but the schedule and the
/// virtual stages (the search estimates a configuration's split schedules together).
[[nodiscard]] bool same_configuration(const DesignPoint& a, const DesignPoint& b) noexcept;

/// native_estimate(ctx, *points[i], where, {}, prune) of each point into out[i], bit for bit,
/// for points of one configuration (same_configuration): the layer times, the default
/// partitions (one per kind: one chunk per rank, interleaved, the V of zbv and dualpipev,
/// DualPipe's) and the cost of each distinct stage (its GPU type and entries) are computed
/// once and shared; each point's sends, activations in flight, memory and pipeline are its
/// own. Call native_invalid_reason on each point first.
void native_estimates(const NativeContext& ctx, std::span<const DesignPoint* const> points,
                      const NativePlacement& where, const NativePruning& prune,
                      std::vector<NativeEstimate>& out);

/// What a configuration's 1F1B estimate (one chunk per rank) computed that does not depend on
/// the schedule and that its split schedules' estimates (native_estimates) compute again: its
/// layer times on each node type, its min-max partition (that of zb-h1 and zb-h2 too), its
/// point constants (the split schedules' differ in LayerActivations::weight_pass alone) and
/// its distinct stage cores (stage_core, keyed by GPU type, network and entries). Opaque: the
/// search keeps one per configuration between its two phases (docs/performance.md, zbspeed8).
struct NativeConfigShare;
struct NativeConfigShareFree {
  void operator()(NativeConfigShare* s) const noexcept;
};
using NativeConfigSharePtr = std::unique_ptr<NativeConfigShare, NativeConfigShareFree>;

/// native_estimate(ctx, p, where, {}, prune), bit for bit, and what it computed into `*keep`
/// (made where null). For a 1F1B point (virtual_stages 1) whose configuration's split
/// schedules are estimated later on the same placement.
[[nodiscard]] NativeEstimate native_estimate_keeping(const NativeContext& ctx, const DesignPoint& p,
                                                     const NativePlacement& where,
                                                     const NativePruning& prune,
                                                     NativeConfigSharePtr& keep);
/// The same into `out`, whose partition and stages buffers (a previous estimate's) are reused:
/// no allocation once they are large enough (estimate_at_keeping keeps one per thread).
void native_estimate_keeping(const NativeContext& ctx, const DesignPoint& p,
                             const NativePlacement& where, const NativePruning& prune,
                             NativeConfigSharePtr& keep, NativeEstimate& out);

/// native_estimates of a configuration's points, bit for bit, starting from what its 1F1B
/// estimate kept (`seed`, native_estimate_keeping on the same placement; nullptr: none).
void native_estimates(const NativeContext& ctx, std::span<const DesignPoint* const> points,
                      const NativePlacement& where, const NativePruning& prune,
                      std::vector<NativeEstimate>& out, const NativeConfigShare* seed);

} // namespace zerosearch
