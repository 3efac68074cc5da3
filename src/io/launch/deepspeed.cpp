// DeepSpeed's JSON config (deepspeedai/DeepSpeed 0.19.6, edaa7221): deepspeed/runtime/config.py
// and the pydantic models of deepspeed/runtime/zero/config.py (docs/launch.md).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "writer.hpp"
#include "zerosearch/model/zero_bubble.hpp"
#include "zerosearch/core/error.hpp"

namespace zerosearch::launch {

namespace {

std::string refusal(const Facts& f) {
  if (f.p.pp > 1 && is_split_schedule(f.p.schedule)) {
    return fmt::format("no DeepSpeed config: DeepSpeed's pipeline engine runs its own 1F1B (TrainSchedule in deepspeed/runtime/pipe/schedule.py), not the {} schedule",
                       to_string(f.p.schedule));
  }
  if (std::string why = pipeline_layout_refusal(f, "no DeepSpeed config",
                                                "DeepSpeed's pipeline engine (PipelineModule's "
                                                "partition_method)");
      !why.empty()) {
    return why;
  }
  if (std::string why = recompute_modules_refusal(f, "no DeepSpeed config",
                                                  "DeepSpeed (activation checkpointing of whole "
                                                  "layers only)");
      !why.empty()) {
    return why;
  }
  if (std::string why = interleaved_refusal(f, "no DeepSpeed config"); !why.empty()) {
    return why;
  }
  switch (f.launch.kind) {
  case DpLaunchKind::deepspeed_zero: {
    if (std::string why = deepspeed_master_weights_refusal(f, "no DeepSpeed config");
        !why.empty()) {
      return why;
    }
    std::string why = fused_loss_refusal(f, "DeepSpeed");
    if (why.empty()) why = moe_a2a_overlap_refusal(f, "no DeepSpeed config", "DeepSpeed");
    if (why.empty()) why = moe_dispatcher_refusal(f, "no DeepSpeed config", "DeepSpeed");
    return why.empty() ? autoep_refusal(f) : why;
  }
  case DpLaunchKind::replicate:
  case DpLaunchKind::fsdp:
    return fmt::format("no DeepSpeed config: {} is not a ZeRO method", to_string(f.p.method));
  }
  return "unknown data-parallel kind";
}

void rules(const Facts& f) {
  // deepspeed/runtime/pipe/engine.py:76-77 (PipelineEngine.__init__).
  if (f.launch.zero_stage >= 2 && f.p.pp > 1) {
    throw InputError(fmt::format("cannot emit: DeepSpeed's PipelineEngine rejects ZeRO stage {} "
                                 "with pipeline parallelism (pp {}): 'ZeRO-2 and ZeRO-3 are "
                                 "incompatible with pipeline parallelism'; ZeRO-2/3 need pp 1",
                                 f.launch.zero_stage, f.p.pp));
  }
}

void files(const Facts& f, Output& out) {
  nlohmann::ordered_json j;
  const int gas = f.ctx.global_batch / (f.p.mbs * f.p.dp);
  j["train_batch_size"] = f.ctx.global_batch;
  j["train_micro_batch_size_per_gpu"] = f.p.mbs;
  j["gradient_accumulation_steps"] = gas;
  j["steps_per_print"] = 10;
  j["gradient_clipping"] = 1.0;
  nlohmann::ordered_json z;
  z["stage"] = f.launch.zero_stage;
  z["reduce_bucket_size"] = 500000000;
  z["allgather_bucket_size"] = 500000000;
  z["overlap_comm"] = f.launch.zero_stage == 3 || overlap_grad_reduce(f);
  z["contiguous_gradients"] = true;
  switch (f.p.offload) {
  case Offload::none: break;
  case Offload::optimizer: z["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}}; break;
  case Offload::optimizer_params:
    z["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
    z["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
    break;
  }
  j["zero_optimization"] = z;
  j["bf16"] = {{"enabled", f.precision == Precision::bf16}};
  if (pure_16bit(f)) {
    // --master_weights off: DeepSpeed's 16-bit master partition and Adam moments
    // (deepspeed/runtime/precision_config.py; ZeRO stages 1-3, config.py:1040-1049).
    j["bf16"]["bf16_master_weights_and_grads"] = true;
    j["bf16"]["bf16_optimizer_states"] = true;
  }
  j["fp16"] = {{"enabled", f.precision == Precision::fp16}};
  // --grad_reduce_fp32: DeepSpeed's top-level fp32_allreduce (deepspeed/runtime/constants.py
  // FP32_ALLREDUCE, default false) all-reduces an fp32 copy of the 16-bit gradients.
  if (const std::optional<bool> fp32 = grad_reduce_fp32(f)) j["fp32_allreduce"] = *fp32;
  // --grad_accum_fp32 on: fp32 gradient accumulation, which with bf16 and ZeRO stage 1 makes
  // DeepSpeed take its BF16_Optimizer (engine.py get_data_types, _do_optimizer_sanity_check).
  if (grad_accum_fp32(f)) j["data_types"] = {{"grad_accum_dtype", "fp32"}};
  if (f.p.pp > 1) {
    nlohmann::ordered_json pipe;
    // DeepSpeed's pipeline checkpoints every layer (full recompute) or none; 0 is written
    // explicitly for none (deepspeed/runtime/config.py get_pipeline_config).
    pipe["activation_checkpoint_interval"] = recompute_of(f) == Recompute::full ? 1 : 0;
    // Megatron-DeepSpeed asserts both off for an MoE model with pp > 1 and tp > 1
    // (megatron/model/gpt_model.py, GPTModelPipe: 'Pipe and/or Grad partitioning are not
    // supported for MoE model').
    const bool partitioned = !(f.model.is_moe() && f.p.tp > 1);
    pipe["pipe_partitioned"] = partitioned;
    pipe["grad_partitioned"] = partitioned;
    j["pipeline"] = pipe;
  }
  j["wall_clock_breakdown"] = false;
  const bool autoep = uses_autoep(f);
  if (autoep) {
    j["expert_parallel"] = autoep_section(f);
  }
  out.add("ds_config.json", j.dump(2) + "\n", false,
          fmt::format("DeepSpeed config: train_batch_size {} = micro {} x accumulation {} x dp {}, "
                      "ZeRO stage {}{}",
                      f.ctx.global_batch, f.p.mbs, gas, f.p.dp, f.launch.zero_stage,
                      autoep ? fmt::format(", AutoEP autoep_size {} (preset {}, top-{})", f.p.ep,
                                           autoep_preset(f.model), f.model.experts_per_token)
                             : std::string()));
  if (autoep) {
    out.add("launch_deepspeed_autoep.sh", autoep_launch_text(f), true,
            "per-node DeepSpeed launcher (--no_ssh, node rank = hostfile line) of your Hugging "
            "Face training script (TRAIN_SCRIPT) with ds_config.json");
    out.notes.push_back(fmt::format(
        "MoE under ZeRO stage 3 runs as DeepSpeed AutoEP (DeepSpeed >= 0.19.3, transformers >= "
        "5.0.0): ds_config.json's expert_parallel section (autoep_size {}, preset_model {}) makes "
        "deepspeed.initialize replace the Hugging Face model's MoE blocks with grouped-GEMM "
        "experts, {} of {} per GPU, and partition them over the {} expert-data-parallel ranks, "
        "the rest of the model over all {} (deepspeed/runtime/engine.py "
        "_resolve_zero3_param_placement), as estimated. Activation checkpointing ({}) is the "
        "training script's to enable (model.gradient_checkpointing_enable()).",
        f.p.ep, autoep_preset(f.model), f.model.num_experts / f.p.ep, f.model.num_experts,
        f.p.edp(), f.p.dp, to_string(recompute_of(f))));
    if (f.model.router_bias) {
      // docs/code-docs/source/autoep.rst (edaa7221): the DeepSeek presets disable the expert
      // bias; a non-null load_balance_coeff is rejected.
      out.notes.push_back(fmt::format(
          "{}'s router bias (auxiliary-loss-free load balancing) is not run by AutoEP: its "
          "DeepSeek presets disable it and reject a load_balance_coeff (DeepSpeed's AutoEP "
          "documentation); the routing balance then rests on the auxiliary loss.",
          f.model.name));
    }
  }
  if (f.fp8) {
    out.notes.push_back(
        "fp8: DeepSpeed's engine has no fp8 training mode (its config has bf16 and fp16 blocks "
        "only, deepspeed/runtime/precision_config.py), so ds_config.json runs bf16: the run "
        "will be slower than the fp8 estimate. Megatron-LM (--fp8-format hybrid) or torchtitan "
        "(the float8 converter) with dp or fsdp run fp8.");
  }
  if (f.precision == Precision::fp16) {
    out.notes.push_back("fp16 with dynamic loss scaling (DeepSpeed's fp16 block, loss_scale 0 "
                        "by default).");
  }
}

} // namespace

const Writer& deepspeed_writer() {
  static const Writer w{"deepspeed", "DeepSpeed 0.19.x (read at deepspeedai/DeepSpeed edaa7221)",
                        refusal, rules, files};
  return w;
}

} // namespace zerosearch::launch
