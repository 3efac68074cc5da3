#pragma once
// The steps of native_estimate (docs/native.md §7), one function each, in the order it runs
// them: once per design point, what its stages share (point_constants); per stage, the entries
// it holds, one micro-batch's compute, the MoE dispatch, the context-parallel exchange,
// gradient accumulation, ZeRO-3/FSDP gathers, ZeRO-Infinity fetches, the send to the next
// stage, the data-parallel sync, the model states and offload, the activations, the optimizer
// step; then the pipeline's makespan (1F1B / interleaved, TeraPipe), the tied-embedding sync
// and the totals. native_estimate is their composition. Each is pure (no I/O, no hidden state:
// values out, or the one stage or memory it is given updated in place, which keeps the stage
// out of copies) and has its own tests (tests/model/test_native_steps.cpp). Most callers want
// native_estimate (model/native.hpp), not these.
#include <vector>

#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/moe.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/model/optimizer_states.hpp"

namespace zerosearch::native_steps {

/// Parameters of each pipeline entry of the model: embedding, layer, post-process. With a
/// pipeline, a tied LM head is a copy of the embedding on the last stage (Megatron-LM).
struct EntryParams {
  double embedding = 0, layer = 0, post = 0;
  /// A dense layer of an MoE model (its first_k_dense_layers); == layer for a dense model.
  double dense_layer = 0;
};
[[nodiscard]] EntryParams entry_params(const ModelSpec& m, int pp);
/// Activation bytes of one transformer layer of `p`: as it runs (its recompute policy), with
/// no recomputation, a dense layer of an MoE model, and what its deferred weight pass holds.
struct LayerActivations {
  double layer = 0.0;
  double full_layer = 0.0;
  double dense_layer = 0.0;
  /// What a deferred weight pass of one layer holds (layer_weight_pass_bytes).
  double weight_pass = 0.0;
};
[[nodiscard]] LayerActivations layer_activations(const NativeContext& ctx, const DesignPoint& p);

/// The min-max split of `layers` transformer layers over the stages (native_partition, when
/// the stages differ or pp does not divide the layers): every stage gets one, then each layer
/// goes to the stage whose time grows least, fixed[j] + (n_j + 1) per_layer[j], the lowest j
/// among equals. Transformer layers per stage (the embedding and the head not counted).
[[nodiscard]] std::vector<int> minmax_layers(const std::vector<double>& fixed,
                                             const std::vector<double>& per_layer, int layers);

/// What every stage of a design point shares, computed once per estimate (the first step).
struct PointConstants {
  /// framework_params(p.method, p.dtype).
  FrameworkParams fw{};
  /// Bytes of one element in the training dtype (fp8 trains with 16-bit weights).
  double elem_bytes = 2.0;
  EntryParams entries;
  LayerActivations act;
  /// Parameter tensors of one transformer layer (the optimizer's multi-tensor launches).
  double tensors_per_layer = 0.0;
  /// The optimizer's states per parameter (--master_weights; model/optimizer_states.hpp).
  OptimizerStateBytes opt{};
  /// Selective recompute's modules (NativeSettings::recompute_modules).
  RecomputeModules recompute_modules{};
  /// Whose code runs the layers (NativeSettings::layer_impl): with hf_gpt2_amp the optimizer
  /// steps the fp32 module's parameters tensor by tensor (optimizer_step_s).
  LayerImpl layer_impl = LayerImpl::framework;
};
[[nodiscard]] PointConstants point_constants(const NativeContext& ctx, const DesignPoint& p);

/// The pipeline entries of one stage: whether it holds the embedding and the LM head, and its
/// transformer layers, split into the MoE layers and the dense ones of an MoE model
/// (first_k_dense_layers); a dense model's layers are all `main`.
struct StageEntries {
  bool embedding = false;
  bool head = false;
  /// Transformer layers (the stage's partition entries less the embedding and the head).
  int layers = 0;
  /// MoE layers (0 for a dense model).
  int moe = 0;
  /// Layers of the model's own kind: the MoE layers of an MoE model, all of a dense one.
  int main = 0;
  /// Dense layers of an MoE model: layers - main.
  int dense = 0;
  /// Multi-token-prediction layers (a --pipeline_layout's m), inside `layers`: each one
  /// transformer layer of the model's own kind plus a second pass through the LM head and loss.
  int mtp = 0;
};
/// The entries of one chunk of a --pipeline_layout: its transformer layers (MoE from the
/// model's first_k_dense_layers on) and MTP layers (of the model's own kind), embedding, loss.
[[nodiscard]] StageEntries layout_chunk_entries(const ModelSpec& m, const LayoutChunk& chunk);
/// Rank j's entries under a --pipeline_layout: its chunks' added up.
[[nodiscard]] StageEntries layout_stage_entries(const ModelSpec& m, const PipelineLayout& layout,
                                                int pp, int j);
/// Stage j's entries: partition[j] less the embedding and the head it holds.
[[nodiscard]] StageEntries stage_entries(const ModelSpec& m, const DesignPoint& p,
                                         const std::vector<int>& partition, int j, bool embedding,
                                         bool head);

/// Sets st's forward_s, backward_s, recompute_s and weight_s: one micro-batch's compute through
/// the stage (all its chunks when interleaved), seconds, from the layer times of the model's
/// layers (`layer`) and of its dense layers (`dense`, read only when e.dense > 0): layers x
/// per-layer time, plus the embedding's and the head's; the recomputation `p.recompute` reruns
/// is inside backward.
void set_compute(NativeStage& st, const ModelSpec& m, const DesignPoint& p, const PointConstants& k,
                 const StageEntries& e, const AnalyticLayerTimes& layer,
                 const AnalyticLayerTimes& dense);

/// Adds to `st` its MoE layers'' token dispatch and combine added (docs/moe.md): all-to-all over
/// ep, all-gather and reduce-scatter over etp, twice per forward (dispatch, combine), in place
/// of the dense MLP's tp collective; again in backward, and in the recomputed forward.
void add_moe_comm(NativeStage& st, const NativeContext& ctx, const DesignPoint& p,
                  const PointConstants& k, const NativeGpu& gpu, const AnalyticLayerTimes& t,
                  int moe_layers);

/// Adds to `st` the context-parallel exchange of its `layers` (docs/native.md §2.4): the
/// part attention does not hide, forward, backward and recompute; its receive buffers (bytes)
/// added to st.memory.buffers.
void add_cp_exchange(NativeStage& st, const NativeContext& ctx, const DesignPoint& p,
                     const PointConstants& k, const NativeGpu& gpu, const AnalyticLayerTimes& t,
                     int layers);

/// The parameters of one GPU of a stage and how ZeRO shards them: the dense part over
/// dp x cp (`d`), the routed experts over edp.
struct StageParams {
  StageShards shards;
  /// shards.local(): parameters before data-parallel sharding.
  double local = 0.0;
  double d = 1.0;
  double edp = 1.0;
  /// The stage's embedding and post-process parameters (final norm, LM head), before tp: what
  /// FSDP2 wraps in the root module.
  double root = 0.0;
  /// Bytes per GPU of a state of `bytes` per parameter sharded as ZeRO shards it.
  [[nodiscard]] double zero_shard(double bytes) const noexcept {
    return bytes * shards.dense / d + bytes * shards.expert / edp;
  }
};
/// The parameters of a stage holding `e`.
[[nodiscard]] StageParams stage_params(const ModelSpec& m, const DesignPoint& p,
                                       const PointConstants& k, const StageEntries& e);

/// Gradient accumulation per micro-batch on average, seconds: DeepSpeed ZeRO 0-2 add each
/// micro-batch's gradient into .grad after the first (read both, write one, memory bound); 0
/// for the other methods and for one micro-batch. With DeepSpeed's BF16_Optimizer
/// (k.fw.fp32_grad_accumulation) every micro-batch adds its bf16 gradients into the fp32
/// buffers instead, kBf16OptimizerAccumulateBytes a parameter, or its two launches per
/// parameter tensor of the stage's `layers` (stage_tensors) where the host is slower.
[[nodiscard]] double grad_accumulation_s(const DesignPoint& p, const PointConstants& k,
                                         const NativeGpu& gpu, double local_params,
                                         int layers) noexcept;

/// Bytes per parameter DeepSpeed's BF16_Optimizer moves once a step besides the optimizer's
/// own step (zeroing the fp32 gradient buffers, the reduction's bucket copies and casts), with
/// the reduction in `reduce_bytes` per element (docs/native.md §4).
[[nodiscard]] double bf16_optimizer_step_bytes(double reduce_bytes) noexcept;

/// Parameter tensors of a stage of `layers` transformer layers: each layer's
/// (k.tensors_per_layer) and two more (the embedding and the LM head or final norm).
[[nodiscard]] double stage_tensors(const PointConstants& k, int layers) noexcept;

/// Whether the stage's parameters are sharded at all: over dp x cp > 1, or its routed experts
/// over their own edp > 1 group (etp x ep != tp, docs/moe.md §2.1), which they may be with
/// dp x cp = 1 (tp 4, ep 2, etp 1: edp 2).
[[nodiscard]] bool shards_some(const DesignPoint& p, const StageParams& params) noexcept;

/// Whether FSDP keeps parameters gathered and gradients unsharded over the micro-batches
/// (torchtitan's FSDP2 with a pipeline, docs/native.md §3): a pipeline and something sharded
/// (shards_some), the experts' own unit included (torchtitan's apply_fsdp gives the experts'
/// fully_shard the same reshard_after_forward = not pp_enabled).
[[nodiscard]] bool keeps_unsharded(const DesignPoint& p, const PointConstants& k,
                                   const StageParams& params) noexcept;

/// Adds to `st` ZeRO-3 / FSDP's per-micro-batch parameter gathers and gradient reduce-scatters
/// (the parts prefetching cannot hide) added; with keeps_unsharded, the once-a-step gather and
/// reduce-scatter in st.dp_sync_s instead. Unchanged for the other methods and for d = 1.
/// With --zero3_impl per_param, zero3 issues a collective per parameter of the stage's entries
/// `e`, none hidden (model/deepspeed_zero3.hpp).
void add_sharded_comm(NativeStage& st, const NativeContext& ctx, const DesignPoint& p,
                      const PointConstants& k, const NativeGpu& gpu, const StageParams& params,
                      const StageEntries& e);

/// Applies to `st` ZeRO-Infinity's parameter fetches over PCIe (offload optimizer+params): forward
/// and backward each take at least the fetch of this GPU's parameter shard.
void add_offload_fetch(NativeStage& st, const DesignPoint& p, const PointConstants& k,
                       const NativeGpu& gpu, const StageParams& params);

/// The activation send from stage j to j + 1 (j + 1 < pp), seconds: one latency plus the
/// micro-batch's boundary activations over the link between them.
[[nodiscard]] double send_s(const NativeContext& ctx, const DesignPoint& p, const PointConstants& k,
                            const NativePlacement& where, int j);

/// The data-parallel gradient sync after the last backward, exposed part, seconds, and the
/// routed experts' share of it (reduced over edp).
struct DpSync {
  double sync_s = 0.0;
  double expert_s = 0.0;
};
/// For the methods that do not shard parameters: all-reduce (dp, zero0) or reduce-scatter +
/// all-gather (zero1, zero2) over dp x cp, the experts' over edp; the overlap with a backward
/// of `backward_s` (--overlap_grad_reduce, else the framework's) not charged. Zero otherwise.
[[nodiscard]] DpSync dp_sync(const NativeContext& ctx, const DesignPoint& p,
                             const PointConstants& k, const NativeGpu& gpu,
                             const StageParams& params, double backward_s);

/// Model states of one GPU, bytes, and what offload moves to the host.
struct ModelStates {
  double weights = 0.0;
  double gradients = 0.0;
  double optimizer = 0.0;
  /// Gathered-parameter buffers (ZeRO-3, FSDP), to add to the stage's buffers.
  double buffers = 0.0;
  /// Host memory of the offloaded states, bytes, and the per-step offload time, seconds.
  double host_bytes = 0.0;
  double offload_s = 0.0;
};
/// The weights, gradients and optimizer states of a stage's GPU under p's method and offload
/// (docs/native.md §3); a transformer layer's parameters size the gathered-layer buffers.
[[nodiscard]] ModelStates model_states(const NativeContext& ctx, const DesignPoint& p,
                                       const PointConstants& k, const NativeGpu& gpu,
                                       const StageParams& params);

/// Chunk forwards rank j of pp holds at its peak under Megatron-Core's interleaved 1F1B with v
/// chunks per rank and m micro-batches (schedules.py get_num_warmup_microbatches and
/// forward_backward_pipelining_with_interleaving): its (pp - j - 1) 2 + (v - 1) pp warm-up
/// forwards and the steady phase's first, or all m v when the warm-up takes them all.
/// Rank 0: pp v + pp - 1 (Megatron-LM's pp (1 + (pp - 1) / (pp v)) micro-batches of the stage);
/// the last rank (v - 1) pp + 1. Precondition: pp > 1, v > 1, m % pp == 0.
[[nodiscard]] int interleaved_held_forwards(int pp, int v, int m, int j) noexcept;

/// Rank 0's forwards of its first chunk (the one with the embedding) held at the most of them
/// in its interleaved order (v > 1 chunks, m micro-batches a multiple of pp): 2 pp - 2 in the
/// warm-up, 2 pp after the first two steady forwards (m >= 2 pp); m when m = pp (all forwards
/// warm up). Independent of v.
[[nodiscard]] int interleaved_first_chunk_held(int pp, int m) noexcept;

/// Micro-batches whose activations stage j holds at its peak: pp - j under 1F1B (at most the
/// micro-batches), interleaved_held_forwards / v under interleaved 1F1B (each chunk 1/v of the
/// stage's layers), all of them under TeraPipe (GPipe order), `split_in_flight` (the simulated
/// peak) for the split schedules.
[[nodiscard]] double in_flight(const DesignPoint& p, int j, bool split,
                               double split_in_flight) noexcept;

/// Rank j's activations in flight under a --pipeline_layout with virtual stages (docs/native.md
/// §2.6): per chunk, the forwards interleaved_held_peak finds at the rank's peak in
/// Megatron-Core's interleaved order, each holding its own chunk's layers (layout_chunk_entries:
/// dense, MoE and MTP layers) and, on the chunk with the embedding, the embedding's output.
struct LayoutHeld {
  /// The held forwards' layer activations, bytes.
  double layers_bytes = 0.0;
  /// Forwards of the chunk holding the embedding held at the peak (0: no embedding here).
  double embedding_held = 0.0;
  /// The same in micro-batches of the whole stage's activations (NativeStage::in_flight).
  double in_flight = 0.0;
};
[[nodiscard]] LayoutHeld layout_held(const NativeContext& ctx, const DesignPoint& p,
                                     const PointConstants& k, int j);

/// Sets `mem`'s activations (bytes) and adds the activation-side buffers: the
/// MoE all-to-all buffers, the layer being recomputed (full), the embedding output (first
/// stage), the logits and their gradient (last stage). `held` micro-batches of every layer and
/// of the embedding output, or with `layout` (a layout's interleaved stage) its layers_bytes
/// and embedding_held.
void add_activations(NativeMemory& mem, const NativeContext& ctx, const DesignPoint& p,
                     const PointConstants& k, const StageEntries& e, double held,
                     const LayoutHeld* layout = nullptr);

/// Converts `mem` from bytes to GiB and sets the framework overhead (GiB).
void to_gib(NativeMemory& mem, double overhead_gib) noexcept;

/// The optimizer step on the GPU, seconds: reading and writing the states of the parameters
/// it updates, memory bound, or the host's multi-tensor launches over the stage's `layers`'
/// tensors, whichever is longer; 0 with offload (the host steps). Under DeepSpeed's
/// FP16_Optimizer (deepspeed_fp16_optimizer) the serial overflow check comes first and the
/// step moves kFp16OptimizerStepBytes more a parameter.
[[nodiscard]] double optimizer_step_s(const DesignPoint& p, const PointConstants& k,
                                      const NativeGpu& gpu, const StageParams& params, int layers);

/// Whether the design point runs DeepSpeed's FP16_Optimizer: ZeRO stage 0 with fp16 and an fp32
/// master (DeepSpeed wraps its fused Adam in it; bf16 takes the BF16_Optimizer, stages 1-3 the
/// ZeRO optimizers, --master_weights off none of them).
[[nodiscard]] bool deepspeed_fp16_optimizer(const DesignPoint& p, const PointConstants& k) noexcept;

/// DeepSpeed's FP16_Optimizer's overflow check, seconds (docs/native.md §2): for each of the
/// stage's `tensors` parameter tensors the host issues a cast and a sum of its gradient and
/// reads the sum back (`float(x.float().sum())`), three launches (kHostPerKernel_s) and a wait
/// (kHostSync_s) with nothing queued behind it, and the GPU reads kFp16OverflowCheckBytes a
/// parameter of the `params` it checks.
[[nodiscard]] double fp16_overflow_check_s(const NativeGpu& gpu, double params,
                                           double tensors) noexcept;

/// The 1F1B (interleaved: v chunks a rank) makespan of `mb` micro-batches through `stages`
/// (docs/native.md §2.2): mb x the slowest stage's F + B, the others' fill and drain / v, the
/// sends twice per boundary and, with a pipeline, 2 v (mb - 1) times the slowest send.
[[nodiscard]] double one_f_one_b_s(const std::vector<NativeStage>& stages, int v,
                                   double mb) noexcept;

/// TeraPipe (docs/native.md §2.3): the slicing that minimises its objective on the slowest
/// stage of `est`, and the token-level pipeline's makespan under it.
struct TeraPipeRun {
  Slicing slices;
  double pipeline_s = 0.0;
};
[[nodiscard]] TeraPipeRun terapipe_run(const NativeContext& ctx, const DesignPoint& p,
                                       const NativeEstimate& est);

/// The tied embedding's gradient all-reduce between the first and the last stage
/// (Megatron-LM), seconds: 0 without tied embeddings or a pipeline.
[[nodiscard]] double embedding_sync_s(const NativeContext& ctx, const DesignPoint& p,
                                      const PointConstants& k, const NativePlacement& where);

/// `est` (its stages, pipeline_s and embedding_sync_s set) with the totals: the slowest
/// stage's dp sync, optimizer step and offload, the memory peak and its stage, out of memory
/// (GPU or, with offload, host), and the step time.
[[nodiscard]] NativeEstimate with_totals(NativeEstimate est, const NativeContext& ctx,
                                         const DesignPoint& p);

} // namespace zerosearch::native_steps
