#pragma once
// Internal to io/launch: the facts every launch writer reads (all from the tables: the method
// table's launch column, ModelSpec, GpuSpec, the plan) and the writers' registry rows
// (docs/launch.md). One file per framework: deepspeed.cpp, megatron_deepspeed.cpp,
// megatron_lm.cpp, torchtitan.cpp, slurm.cpp; common.cpp holds what they share.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "zerosearch/core/hardware.hpp"
#include "zerosearch/io/launch.hpp"
#include "zerosearch/model/native.hpp"

namespace zerosearch::launch {

inline constexpr int kMasterPort = 29500;

/// The training precision of the files: bf16, fp16 (no bf16 on a GPU of the plan) or fp32;
/// fp8 = bf16 plus fp8 linear layers.
enum class Precision : std::uint8_t { fp32, fp16, bf16 };

/// Facts of one model family the catalog does not hold (rotary base, tokenizer); keyed by the
/// catalog's model name, each with its source. Empty optional: unknown, PLAN.md says so.
struct ModelFamily {
  const char* model;
  /// rope_theta of the model's config.json (Megatron-LM --rotary-base).
  double rotary_base;
  /// Megatron-LM --tokenizer-type.
  const char* megatron_lm_tokenizer;
  /// Megatron-DeepSpeed --tokenizer-type.
  const char* megatron_ds_tokenizer;
  /// What TOKENIZER_MODEL names (a tokenizer file, or a Hugging Face repository).
  const char* tokenizer_model;
  const char* source;
};
[[nodiscard]] const ModelFamily* model_family(const std::string& model) noexcept;

struct Facts {
  const LaunchPlan& plan;
  const EstimateContext& ctx;
  const Cluster& cluster;
  const ModelSpec& model;
  const DesignPoint& p;
  LaunchTraits launch;               // the method table's launch column
  std::vector<int> transformer;      // per stage
  std::vector<std::string> hosts;    // per node, rank order
  std::vector<int> stage_gpu;        // node type per stage
  int gpus_per_node = 1;
  int nodes = 1;
  Precision precision = Precision::bf16;
  bool fp8 = false;
  /// Why the plan's dtype was changed (a GPU without bf16), or empty.
  std::string precision_note;
  /// The launcher slurm.sbatch runs (the first writer's).
  std::string primary_launcher;
};

/// A flag list as shell lines: one "--flag value" group per line.
struct Args {
  std::vector<std::pair<std::string, std::string>> items; // flag, value ("" = switch)
  void add(const std::string& flag, const std::string& value = "") { items.emplace_back(flag, value); }
  void add(const std::string& flag, long long value) { items.emplace_back(flag, std::to_string(value)); }
  [[nodiscard]] std::string bash_array(const std::string& name) const;
};

/// What a writer adds: files (with their PLAN.md line) and notes for PLAN.md.
struct Output {
  std::vector<LaunchFile> files;
  std::vector<std::string> listing;
  std::vector<std::string> notes;
  void add(std::string name, std::string text, bool exe, std::string what);
};

/// One row of the registry: a launch target.
struct Writer {
  const char* name;
  /// The framework versions the files are written for.
  const char* versions;
  /// Empty when the writer applies to the plan; else why not (PLAN.md says it).
  std::string (*refusal)(const Facts&);
  /// Throws InputError naming the framework's rule when the plan breaks one the writer cannot
  /// avoid (called only when the writer applies).
  void (*rules)(const Facts&);
  void (*files)(const Facts&, Output&);
};

// common.cpp
[[nodiscard]] std::string join(const std::vector<std::string>& v, const std::string& sep);
[[nodiscard]] std::string plan_line(const Facts& f);
[[nodiscard]] std::string node_rank_lines();
[[nodiscard]] const NativeSettings* native_settings(const Facts& f);
[[nodiscard]] bool overlap_grad_reduce(const Facts& f);
/// Why `framework`, whose cross-entropy keeps an fp32 softmax of the logits, cannot run a plan
/// estimated with --fused_loss on (16-bit logits and gradient); empty when the plan has none.
[[nodiscard]] std::string fused_loss_refusal(const Facts& f, const char* framework);
/// Whether the estimate hid the MoE all-to-alls with Megatron-Core's EP overlap
/// (--moe_a2a_overlap on and moe_a2a_overlap_runs for the plan).
[[nodiscard]] bool moe_a2a_overlapped(const Facts& f);
/// Why `framework` (`what`: "no DeepSpeed config", ...) cannot run a plan whose estimate hid
/// the MoE all-to-alls with Megatron-Core's combined 1F1B; empty when it did not.
[[nodiscard]] std::string moe_a2a_overlap_refusal(const Facts& f, const char* what,
                                                  const char* framework);
/// The flex dispatcher backend the estimate priced the plan's MoE all-to-alls with
/// (--moe_dispatcher deepep|hybridep, an MoE model with ep > 1), or null: the all-to-all one.
[[nodiscard]] const char* flex_backend(const Facts& f);
/// Why `framework` (`what`: "no DeepSpeed config", ...) cannot run a plan whose all-to-alls were
/// priced as Megatron-Core's flex dispatcher (DeepEP or HybridEP); empty when they were not.
[[nodiscard]] std::string moe_dispatcher_refusal(const Facts& f, const char* what,
                                                 const char* framework);
/// The --pipeline_layout the plan was estimated with (Megatron-Core's layout), or null.
[[nodiscard]] const PipelineLayout* pipeline_layout(const Facts& f);
/// Why `framework` (`what`: "no DeepSpeed config", ...) cannot run a plan estimated with a
/// --pipeline_layout (Megatron-Core's per-chunk layout, Megatron-LM's
/// --pipeline-model-parallel-layout); empty when it had none.
[[nodiscard]] std::string pipeline_layout_refusal(const Facts& f, const char* what,
                                                  const char* framework);
/// The --recompute_modules the plan was estimated with when they are not Megatron's default
/// (core_attn alone) and the plan recomputes selectively, or null.
[[nodiscard]] const RecomputeModules* recompute_modules(const Facts& f);
/// Why `framework` (`what`: "no DeepSpeed config", ...) cannot run a plan estimated with
/// recompute_modules(f); empty when there are none.
[[nodiscard]] std::string recompute_modules_refusal(const Facts& f, const char* what,
                                                    const char* framework);
/// Why DeepSpeed's pipeline engine cannot run an interleaved plan (`what`: "no DeepSpeed
/// config", "no Megatron-DeepSpeed files"); empty when the plan is not interleaved.
[[nodiscard]] std::string interleaved_refusal(const Facts& f, const char* what);
/// The plan was estimated in pure 16-bit training (--master_weights off: no fp32 master weights,
/// Adam's moments in the training dtype) and the files train in 16 bits.
[[nodiscard]] bool pure_16bit(const Facts& f);
/// Why Megatron-LM cannot run a plan estimated with --master_weights off; empty when the plan
/// keeps fp32 master weights.
[[nodiscard]] std::string megatron_master_weights_refusal(const Facts& f);
/// Why DeepSpeed (`what`: "no DeepSpeed config", "no Megatron-DeepSpeed files") cannot run a plan
/// estimated with --master_weights off: ZeRO stage 0, or fp16; empty otherwise.
[[nodiscard]] std::string deepspeed_master_weights_refusal(const Facts& f, const char* what);
/// --grad_reduce_fp32 as the estimate ran it: empty when unset (the framework's default).
[[nodiscard]] std::optional<bool> grad_reduce_fp32(const Facts& f);
/// --grad_accum_fp32 as the estimate ran it (DeepSpeed's data_types.grad_accum_dtype fp32).
[[nodiscard]] bool grad_accum_fp32(const Facts& f);
[[nodiscard]] bool uneven(const std::vector<int>& v);
/// The recompute actually to run: the plan's (native), none for the zerosearch estimator
/// (its profiles were measured without activation checkpointing: docs/launch.md).
[[nodiscard]] Recompute recompute_of(const Facts& f);
[[nodiscard]] std::string hostfile_text(const Facts& f);
/// Megatron-style args file: header comments, then MEGATRON_ARGS=( ... ).
[[nodiscard]] std::string args_file(const Facts& f, const Args& a, const std::string& framework,
                                    const std::string& extra);
[[nodiscard]] std::string launch_torchrun_text(const Facts& f, const std::string& framework,
                                               const std::string& env,
                                               const std::string& command);
/// Megatron's activation recomputation flags for the plan's recompute.
void recompute_args(Args& a, const Facts& f, bool deepspeed);
/// Megatron's --sequence-parallel where the native estimate assumed it (tp > 1).
void sequence_parallel_arg(Args& a, const Facts& f);
/// The optimizer schedule and run length both Megatron launchers write (the Llama-2 recipe).
void training_args(Args& a);
[[nodiscard]] std::string gpt_tokenizer_note(const Facts& f);

// One registry row per framework.
[[nodiscard]] const Writer& deepspeed_writer();
[[nodiscard]] const Writer& megatron_deepspeed_writer();
[[nodiscard]] const Writer& megatron_lm_writer();
[[nodiscard]] const Writer& torchtitan_writer();
[[nodiscard]] const Writer& slurm_writer();

// autoep.cpp: DeepSpeed AutoEP, how DeepSpeed runs an MoE model under ZeRO stage 3.
/// The AutoEP preset of the model's architecture (mixtral, qwen3_moe, deepseek_v2, deepseek_v3),
/// or nullptr when AutoEP has none.
[[nodiscard]] const char* autoep_preset(const ModelSpec& m) noexcept;
/// True for an MoE plan under ZeRO stage 3: DeepSpeed runs its experts only as AutoEP layers.
[[nodiscard]] bool uses_autoep(const Facts& f) noexcept;
/// Empty when AutoEP can run the plan (or the plan does not use it); else why not.
[[nodiscard]] std::string autoep_refusal(const Facts& f);
/// ds_config.json's "expert_parallel" section. Precondition: uses_autoep and no refusal.
[[nodiscard]] nlohmann::ordered_json autoep_section(const Facts& f);
/// launch_deepspeed_autoep.sh: the per-node deepspeed launcher of the user's training script.
[[nodiscard]] std::string autoep_launch_text(const Facts& f);

// megatron_deepspeed.cpp (used by launch.cpp for the split estimate)
[[nodiscard]] std::vector<int> pipeline_partition_of(const std::vector<int>& transformer);

} // namespace zerosearch::launch
