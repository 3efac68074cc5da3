#pragma once
// The vocabulary of a design point: data-parallel methods (one table, kDpMethods, that the
// enumerator, the estimator, the planner, help texts and error messages read), frameworks,
// profile flavours and the design point itself (docs/model.md §2).
//
// Adding a data-parallel method: this header (an enum value, a row of kDpMethods and its
// LaunchTraits column), its sync formula (model/comm.cpp, dp_sync_time_s), its weight-memory
// formula (model/memory.cpp); a method the original lacked ends its row with `original` false
// (the zerosearch estimator's search leaves it out); the launch writers switch over its
// DpLaunchKind without a default, so they fail to compile until it is handled.
// docs/ARCHITECTURE.md lists every file and why.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zerosearch/core/context_parallel.hpp"
#include "zerosearch/core/enum_table.hpp"
#include "zerosearch/core/hardware.hpp"

namespace zerosearch {

/// Which training framework a profile was measured under. DeepSpeed serves ZeRO 0-3,
/// Megatron-LM serves dp and fsdp.
enum class Flavour { megatron, deepspeed };
[[nodiscard]] const char* to_string(Flavour f) noexcept;

enum class DpMethod { dp, fsdp, zero0, zero1, zero2, zero3 };

/// Which model computes the estimates (docs/native.md): the original's formulas, bit for bit,
/// or zerosearch's own model.
enum class Estimator { zerosearch, native };
[[nodiscard]] const char* to_string(Estimator e) noexcept;
/// Throws InputError listing zerosearch, native.
[[nodiscard]] Estimator parse_estimator(const std::string& text);

/// Activation recomputation (native estimator): none; selective = Megatron-LM's core-attention
/// recompute (the s^2 tensors are not kept); full = only each layer's input is kept and the
/// layer's forward runs again in backward.
enum class Recompute : std::uint8_t { none, selective, full };
[[nodiscard]] const char* to_string(Recompute r) noexcept;
/// Throws InputError listing none, selective, full.
[[nodiscard]] Recompute parse_recompute(const std::string& text);

/// DeepSpeed ZeRO-Offload / ZeRO-Infinity (native estimator): optimizer states (and fp32
/// gradients) in host memory, and with optimizer+params the parameters too (ZeRO-3 only).
enum class Offload : std::uint8_t { none, optimizer, optimizer_params };
[[nodiscard]] const char* to_string(Offload o) noexcept;
/// Throws InputError listing none, optimizer, optimizer+params.
[[nodiscard]] Offload parse_offload(const std::string& text);
/// Why method `m` cannot use offload `o` (DeepSpeed's rules), or nullptr when it can.
[[nodiscard]] const char* offload_unsupported(DpMethod m, Offload o) noexcept;

/// What the native estimator assumes of a method's framework (docs/native.md §4).
struct NativeTraits {
  /// "megatron" (Megatron-LM DDP), "fsdp" (PyTorch FSDP2, full shard, as torchtitan runs it)
  /// or "deepspeed".
  const char* framework;
  /// What is sharded over the data-parallel ranks: 0 nothing, 1 optimizer states,
  /// 2 and gradients, 3 and parameters.
  int shard_level;
  /// Bytes of one gradient element kept on the GPU (Megatron-LM: fp32 main_grad; FSDP2: fp32
  /// sharded gradients; DeepSpeed: the training dtype's 2).
  double grad_bytes;
  /// Bytes per element the gradient reduction moves.
  double grad_reduce_bytes;
  /// Parameters kept sharded in fp32 (FSDP2 with a bf16 compute policy) instead of 16-bit
  /// weights plus an fp32 master copy.
  bool fp32_sharded_params;
  /// Share of a stage's backward time that hides the gradient reduction (0: the reduction
  /// starts after backward, Megatron-LM's and DeepSpeed's defaults below ZeRO-3).
  double dp_overlap;
  /// --recompute selective is PyTorch's per-op selective checkpointing (every second matmul
  /// and the element-wise operations run again) instead of Megatron-LM's core attention.
  bool selective_per_op;
  /// The most the framework offloads to the host (DeepSpeed: the optimizer from ZeRO-1 on,
  /// parameters with ZeRO-3).
  Offload max_offload;
  /// With a pipeline, parameters stay gathered from the first micro-batch's forward to the
  /// end of the step and gradients accumulate unsharded (in the reduction's dtype), reduced
  /// once after the last micro-batch: torchtitan's FSDP2 with pp > 1.
  bool unsharded_with_pp = false;
  /// With fp16 training, gradients are kept and reduced in fp16 (2 bytes) instead of
  /// `grad_bytes` / `grad_reduce_bytes`: Megatron-LM accumulates and all-reduces in fp32 only
  /// with --accumulate-allreduce-grads-in-fp32, which it switches on for bf16 and not for fp16
  /// (megatron/training/arguments.py, validate_args, at d98e8a6; megatron/arguments.py at
  /// de7dc40, the SC21 scripts' commit).
  bool fp16_grads_in_fp16 = false;
  /// The loss is PyTorch's cross_entropy on an fp32 copy of the logits, as torchtitan runs it
  /// (train.py at 9dec370; components/loss.py since bbb1b61), instead of Megatron-LM's
  /// vocab-parallel cross-entropy; torch.compile can fuse it (NativeSettings::fused_loss).
  bool torch_loss = false;
  /// Interleaved 1F1B may split the layers into unequal chunks (torchtitan's
  /// generate_split_points); DeepSpeed needs pp x v to divide them, and Megatron-LM takes
  /// unequal ones only as --pipeline-model-parallel-layout (native_invalid_reason).
  bool uneven_chunks = false;
  /// DeepSpeed's BF16_Optimizer (--grad_accum_fp32 on; set by framework_params from the
  /// settings, never in the table): fp32 gradient accumulation buffers beside the bf16 .grad,
  /// the bf16 gradients added into them after every micro-batch's backward, all-reduced
  /// unsharded, and its own ZeRO-1 (docs/native.md §4).
  bool fp32_grad_accumulation = false;
};

/// How a launch file expresses a method's data parallelism (docs/launch.md): plain replicas
/// with an all-reduce (Megatron-LM DDP, torchtitan data_parallel_replicate_degree), DeepSpeed's
/// ZeRO optimizer at `zero_stage`, or PyTorch FSDP2 full sharding (Megatron-LM
/// --use-torch-fsdp2, torchtitan data_parallel_shard_degree). The launch writers switch over
/// this enum without a default: a new kind fails to compile there instead of becoming DDP.
enum class DpLaunchKind : std::uint8_t { replicate, deepspeed_zero, fsdp };

struct LaunchTraits {
  DpLaunchKind kind;
  /// DeepSpeed zero_optimization.stage (0-3) for deepspeed_zero; -1 otherwise.
  int zero_stage;
};

/// How a 1F1B stage's time splits between forward and backward (docs/model.md §4): the original
/// charges a quarter of a layer's cost to forward for ZeRO 0/1 and a third for the others.
enum class ForwardShare { third, quarter };

/// Everything the search needs to know about one data-parallel method, except its sync and
/// memory formulas (model/comm.cpp and model/memory.cpp switch on `id`).
struct DpMethodInfo {
  DpMethod id;
  /// Name on the command line and in outputs.
  const char* name;
  /// Framework whose profile times it uses and whose launcher runs it.
  Flavour flavour;
  /// Forward + backward time as a multiple of the profiled forward time (docs/model.md §4).
  double compute_factor;
  ForwardShare forward_share;
  /// False: only tp = 1 (ZeRO-3 in the original). The original's rule: the zerosearch
  /// estimator's enumeration and --exhaustive keep it (its goldens hold it).
  bool allows_tensor_parallel;
  /// The native estimator's rule: the framework the method stands for runs it with tp > 1
  /// (allows_tensor_parallel(DpMethod, Estimator); docs/native.md §4). ZeRO-3 does:
  /// Megatron-DeepSpeed builds its tensor-parallel model under deepspeed.zero.Init(
  /// data_parallel_group=..., mpu=mpu), so each tp rank's shard is partitioned over its
  /// data-parallel group (microsoft/Megatron-DeepSpeed@f4157bea pretrain_gpt.py
  /// model_provider; microsoft/DeepSpeedExamples@2cd968f2 Megatron-LM-v1.1.5-ZeRO3/
  /// pretrain_gpt2.py, zero.InitContext(data_parallel_group=mpu.get_data_parallel_group())),
  /// and Megatron-Core's FSDP (Megatron-FSDP, optim_grads_params) runs beside tensor
  /// parallelism (NVIDIA-NeMo/Megatron-Bridge@6725f7049 scripts/performance/configs/llama31/
  /// llama31_405b_llm_pretrain.yaml: GB200 fp8 tp 2, use_megatron_fsdp true).
  bool native_allows_tensor_parallel;
  /// False: only pp = 1 (DeepSpeed's pipeline engine rejects ZeRO-2/3).
  bool allows_pipeline_parallel;
  /// --framework default (docs/model.md §6.1): a DeepSpeed method with a Megatron-LM equivalent
  /// is searched only when the model has no Megatron-LM profile.
  bool has_megatron_equivalent;
  /// One line for --help and the docs.
  const char* summary;
  /// The native estimator's view of its framework.
  NativeTraits native;
  /// How launch files run it (io/launch/).
  LaunchTraits launch;
  /// One of the original ZeROSearch's six methods: the zerosearch estimator's search
  /// enumerates it (methods_for_framework), as the goldens hold. A method the original lacked
  /// ends its row with `false`: the native estimator searches it, the zerosearch estimator's
  /// search leaves it out and its CSVs stay the original's.
  bool original = true;
};

/// The table: one row per method, in the enum's order, which is the original's enumeration
/// order (docs/model.md §2).
// docs/model.md §2 (order, tp and pp rules) and §4.1 (compute factors: backward = 2x forward under
// Megatron-LM, 3x under DeepSpeed, and ZeRO-3's parameter gathers as 1.6x on top).
inline constexpr auto kDpMethods = std::to_array<DpMethodInfo>({
    {DpMethod::dp, "dp", Flavour::megatron, 3.0, ForwardShare::third, true, true, true, false,
     "Megatron-LM data parallelism: gradients all-reduced, every rank holds all states",
     {"megatron", 0, 4.0, 4.0, false, 0.0, false, Offload::none, false, true},
     {DpLaunchKind::replicate, -1}},
    {DpMethod::fsdp, "fsdp", Flavour::megatron, 3.0, ForwardShare::third, true, true, true, false,
     "PyTorch FSDP under Megatron-LM: optimizer states and gradients sharded",
     {"fsdp", 3, 4.0, 4.0, true, 1.0, true, Offload::none, true, false, true, true},
     {DpLaunchKind::fsdp, -1}},
    {DpMethod::zero0, "zero0", Flavour::deepspeed, 4.0, ForwardShare::quarter, true, true, true,
     true,
     "DeepSpeed without ZeRO sharding: gradients all-reduced",
     {"deepspeed", 0, 2.0, 2.0, false, 0.0, false, Offload::none},
     {DpLaunchKind::deepspeed_zero, 0}},
    {DpMethod::zero1, "zero1", Flavour::deepspeed, 4.0, ForwardShare::quarter, true, true, true,
     true,
     "DeepSpeed ZeRO-1: optimizer states sharded",
     {"deepspeed", 1, 2.0, 2.0, false, 0.0, false, Offload::optimizer},
     {DpLaunchKind::deepspeed_zero, 1}},
    {DpMethod::zero2, "zero2", Flavour::deepspeed, 4.0, ForwardShare::third, true, true, false,
     false,
     "DeepSpeed ZeRO-2: optimizer states and gradients sharded (no pipeline)",
     {"deepspeed", 2, 2.0, 2.0, false, 0.0, false, Offload::optimizer},
     {DpLaunchKind::deepspeed_zero, 2}},
    {DpMethod::zero3, "zero3", Flavour::deepspeed, (1.0 * 1.6) * 4.0, ForwardShare::third, false,
     true, false, false,
     "DeepSpeed ZeRO-3: parameters sharded too (no pipeline parallelism; tp 1 with --estimator "
     "zerosearch)",
     {"deepspeed", 3, 2.0, 2.0, false, 1.0, false, Offload::optimizer_params},
     {DpLaunchKind::deepspeed_zero, 3}},
});

static_assert(rows_follow_enum(kDpMethods),
              "kDpMethods rows must follow the DpMethod enum's order");

/// All methods, in the original's enumeration order.
[[nodiscard]] constexpr std::span<const DpMethodInfo> dp_methods() noexcept { return kDpMethods; }
[[nodiscard]] constexpr const DpMethodInfo& info(DpMethod m) noexcept {
  return kDpMethods[static_cast<std::size_t>(m)];
}
[[nodiscard]] constexpr const char* to_string(DpMethod m) noexcept { return info(m).name; }
/// Whether estimator `e`'s search and --exhaustive take method `m` with tp > 1: the original's
/// rule for zerosearch, the framework's for native (DpMethodInfo::native_allows_tensor_parallel).
[[nodiscard]] constexpr bool allows_tensor_parallel(DpMethod m, Estimator e) noexcept {
  return e == Estimator::native ? info(m).native_allows_tensor_parallel
                                : info(m).allows_tensor_parallel;
}
/// The profile flavour a method's compute times come from.
[[nodiscard]] constexpr Flavour flavour_of(DpMethod m) noexcept { return info(m).flavour; }
/// The names of the methods `keep` accepts, in table order, joined with ", ".
template <typename Keep> [[nodiscard]] std::string dp_method_names_where(Keep keep) {
  std::string out;
  for (const DpMethodInfo& m : kDpMethods) {
    if (keep(m)) {
      out += out.empty() ? "" : ", ";
      out += m.name;
    }
  }
  return out;
}

/// "dp, fsdp, zero0, zero1, zero2, zero3": for help texts and error messages.
[[nodiscard]] std::string dp_method_names();
/// The methods of one framework, "dp, fsdp".
[[nodiscard]] std::string dp_method_names(Flavour f);
/// Throws InputError listing the allowed names.
[[nodiscard]] DpMethod parse_dp_method(const std::string& text);

/// --framework: m = Megatron-LM (dp, fsdp), d = DeepSpeed (zero0-3), both, or default (each
/// data-parallel method once, from whichever framework has profiles; docs/model.md §6.1).
enum class Framework { megatron, deepspeed, both, automatic };
[[nodiscard]] const char* to_string(Framework f) noexcept;
/// Accepts m, d, both, default. Throws InputError listing them.
[[nodiscard]] Framework parse_framework(const std::string& text);

/// Pipeline schedule (native estimator): 1F1B, interleaved 1F1B (virtual_stages > 1),
/// TeraPipe's token-level pipeline (each sequence cut into token slices), the zero-bubble
/// schedules ZB-H1, ZB-H2 and ZB-V (Qi et al., ICLR 2024) and DeepSeek's DualPipe and
/// DualPipeV (model/zero_bubble.hpp). Their facts are one table, kSchedules, below.
enum class Schedule : std::uint8_t {
  one_f_one_b,
  interleaved,
  terapipe,
  zb_h1,
  zb_h2,
  zbv,
  dualpipe,
  dualpipev
};

/// Which micro-batches' activations a stage holds at its peak (native estimator's memory,
/// docs/native.md §3).
enum class InFlight : std::uint8_t {
  /// 1F1B's warm-up: stage j of pp holds min(pp - j, micro-batches) (interleaving adds
  /// Megatron-LM's (pp - 1) / (pp v) on top).
  warmup,
  /// Every micro-batch until its backward (TeraPipe runs all forwards, then all backwards).
  all,
  /// The peak of the schedule's simulated order of passes (model/zero_bubble.hpp).
  simulated
};

/// Everything the search, the estimators and the writers know of one pipeline schedule, except
/// its own code (the order of passes in model/zero_bubble.cpp, TeraPipe's slicing in
/// model/terapipe.cpp).
struct ScheduleInfo {
  Schedule id;
  /// Name on the command line (--schedule) and in outputs.
  const char* name;
  /// As its authors write it, for sentences: "ZB-H1".
  const char* title;
  /// One line for the docs.
  const char* summary;
  /// True: needs --virtual_stages > 1 (interleaved 1F1B); every other schedule needs 1.
  bool interleaves;
  /// Model chunks each pipeline rank holds, fixed by the schedule: 2 in a V (zbv, dualpipev)
  /// and in DualPipe; 1 otherwise (interleaved: --virtual_stages).
  int chunks_per_rank;
  /// Micro-batches enter from both ends and rank r holds stages r and pp - 1 - r (DualPipe):
  /// the model is cut into pp chunks, not chunks_per_rank x pp.
  bool bidirectional;
  /// The backward is split into input-gradient (B) and weight-gradient (W) passes, and the
  /// schedule's order of passes is simulated (model/zero_bubble.hpp).
  bool splits_backward;
  /// Each sequence is cut into token slices (TeraPipe, model/terapipe.hpp).
  bool token_slices;
  /// The activations held at a stage's peak.
  InFlight in_flight;
  /// Megatron-LM and DeepSpeed's pipeline engine run it (whole micro-batches, backward in one
  /// pass; Megatron-LM interleaves with --num-virtual-stages-per-pipeline-rank).
  bool megatron;
  /// torch.distributed.pipelining's class (get_schedule_class), or nullptr where it has none.
  const char* torchtitan;
  /// PLAN.md's words after "as <torchtitan>" ("" for none).
  const char* torchtitan_note;
  /// Where a schedule that torchtitan cannot run does run ("" when nowhere is known).
  const char* elsewhere;
};

/// The table: one row per schedule, in the enum's order.
inline constexpr auto kSchedules = std::to_array<ScheduleInfo>({
    {Schedule::one_f_one_b, "1f1b", "1F1B", "one forward, one backward (PipeDream-Flush)",
     false, 1, false, false, false, InFlight::warmup, true, "1F1B", "", ""},
    {Schedule::interleaved, "interleaved", "interleaved 1F1B",
     "1F1B over --virtual_stages model chunks per rank (Megatron-LM)", true, 1, false, false,
     false, InFlight::warmup, true, "Interleaved1F1B", "", ""},
    {Schedule::terapipe, "terapipe", "TeraPipe",
     "token-level pipelining: each sequence cut into token slices", false, 1, false, false,
     true, InFlight::all, false, nullptr, "", ""},
    {Schedule::zb_h1, "zb-h1", "ZB-H1",
     "zero-bubble: 1F1B whose rank i keeps i weight passes back to fill the drain", false, 1,
     false, true, false, InFlight::simulated, false, "InterleavedZeroBubble",
     " (its ZB1P) with one stage per rank", ""},
    {Schedule::zb_h2, "zb-h2", "ZB-H2",
     "zero-bubble: deeper warm-up, more weight passes kept back (Qi et al., Figure 3)", false,
     1, false, true, false, InFlight::simulated, false, nullptr, "",
     "sail-sg's Megatron-LM fork"},
    {Schedule::zbv, "zbv", "ZB-V",
     "zero-bubble in a V: two model chunks per rank (stage k and 2 pp - 1 - k)", false, 2,
     false, true, false, InFlight::simulated, false, "ZBVZeroBubble", "", ""},
    {Schedule::dualpipe, "dualpipe", "DualPipe",
     "DeepSeek's DualPipe: micro-batches from both ends, rank r holds stages r and pp - 1 - r",
     false, 2, true, true, false, InFlight::simulated, false, nullptr, "",
     "deepseek-ai/DualPipe"},
    {Schedule::dualpipev, "dualpipev", "DualPipeV",
     "DualPipe's schedule on one direction folded into a V", false, 2, false, true, false,
     InFlight::simulated, false, "DualPipeV",
     ", which needs a PyTorch whose torch.distributed.pipelining has ScheduleDualPipeV and "
     "overlaps a forward with a backward only through a custom overlap callback (the "
     "estimate's F&B hides the tensor-parallel collectives)",
     ""},
});

static_assert(rows_follow_enum(kSchedules),
              "kSchedules rows must follow the Schedule enum's order");

/// All schedules, in the enum's order.
[[nodiscard]] constexpr std::span<const ScheduleInfo> schedules() noexcept { return kSchedules; }
[[nodiscard]] constexpr const ScheduleInfo& info(Schedule s) noexcept {
  return kSchedules[static_cast<std::size_t>(s)];
}
[[nodiscard]] constexpr const char* to_string(Schedule s) noexcept { return info(s).name; }
/// Model chunks a plan of `pp` ranks cuts the model into under `s` (not interleaved).
[[nodiscard]] constexpr long long schedule_model_chunks(Schedule s, int pp) noexcept {
  return static_cast<long long>(pp) * (info(s).bidirectional ? 1 : info(s).chunks_per_rank);
}
/// "1f1b, interleaved, terapipe, ...": for help texts and error messages.
[[nodiscard]] std::string schedule_names();
/// Throws InputError listing the schedule names.
[[nodiscard]] Schedule parse_schedule(const std::string& text);

/// Throws InputError listing bf16, fp16, fp32, fp8 (--dtype).
[[nodiscard]] Dtype parse_dtype(const std::string& text);

/// One design point: parallel degrees, micro-batch size and data-parallel method, and for the
/// native estimator the memory-saving settings, pipeline interleaving and element type.
struct DesignPoint {
  DpMethod method = DpMethod::dp;
  int tp = 1;
  int dp = 1;
  int pp = 1;
  int mbs = 1;
  /// Micro-batches per step and pipeline: gbs / (dp * mbs).
  int num_micro_batches = 1;
  // Native estimator only (the zerosearch estimator ignores them; defaults = the original's).
  Recompute recompute = Recompute::none;
  Offload offload = Offload::none;
  /// Model chunks per pipeline rank (interleaved 1F1B when > 1).
  std::int16_t virtual_stages = 1;
  Dtype dtype = Dtype::bf16;
  /// interleaved exactly when virtual_stages > 1.
  Schedule schedule = Schedule::one_f_one_b;
  /// Context parallelism (native estimator): how the cp ranks exchange keys and values
  /// (docs/native.md §2.4); in the padding byte after schedule.
  CpComm cp_comm = CpComm::ring;
  /// Expert parallelism (issue 27, native estimator, MoE models): the routed experts are spread
  /// over ep ranks and each split over etp ranks; the tp x cp x dp GPUs of a stage hold them as
  /// etp x ep x edp (MoE parallel folding, edp = tp x cp x dp / (etp x ep)). 1, 1 for a dense
  /// model.
  std::int16_t ep = 1;
  std::int16_t etp = 1;
  /// Context parallelism: cp, the ranks each micro-batch's sequence is split over (tp x cp x dp
  /// x pp GPUs; dp counts data-parallel replicas only; docs/native.md §2.4). With ep and etp
  /// the design point is 40 bytes (32 before issue 27).
  std::int16_t cp = 1;
  /// Expert data parallelism: the ranks that hold the same expert shard.
  [[nodiscard]] int edp() const noexcept { return tp * cp * dp / std::max(1, ep * etp); }

  friend bool operator==(const DesignPoint&, const DesignPoint&) = default;
};

} // namespace zerosearch
