// DeepSpeed AutoEP for a ZeRO-3 MoE plan (issue 27; docs/launch.md, docs/moe.md §2.1 and §6):
// the `expert_parallel` section of ds_config.json and the per-node launcher of the user's
// Hugging Face training script. Read at deepspeedai/DeepSpeed edaa7221 (0.19.6):
// - deepspeed/runtime/config.py: EXPERT_PARALLEL = "expert_parallel", get_expert_parallel_config;
// - deepspeed/module_inject/auto_ep_config.py, parse_autoep_config: the keys read ("enabled",
//   "autoep_size", "expert_tensor_parallel_size", "preset_model", "top_k", ...);
// - deepspeed/module_inject/auto_ep_presets/*.py: the presets and the Hugging Face model types
//   each covers (mixtral; qwen3_moe for qwen3_moe and qwen2_moe; deepseek_v2; deepseek_v3);
// - deepspeed/runtime/engine.py, _validate_zero3_moe_compatibility: under ZeRO stage 3 only
//   AutoEP layers, no AutoTP or tensor parallelism from mpu, no sequence parallelism,
//   expert_tensor_parallel_size 1; _resolve_zero3_param_placement: the experts partitioned over
//   the expert-data-parallel group, the rest over the data-parallel group.
#include <fmt/format.h>

#include "writer.hpp"

namespace zerosearch::launch {

const char* autoep_preset(const ModelSpec& m) noexcept {
  if (m.architecture == "mixtral") {
    return "mixtral";
  }
  if (m.architecture == "qwen3_moe" || m.architecture == "qwen2_moe") {
    return "qwen3_moe";
  }
  if (m.architecture == "deepseek_v3") {
    return "deepseek_v3";
  }
  if (m.architecture == "deepseek_v2") {
    return "deepseek_v2";
  }
  return nullptr;
}

bool uses_autoep(const Facts& f) noexcept {
  return f.model.is_moe() && f.launch.kind == DpLaunchKind::deepspeed_zero &&
         f.launch.zero_stage == 3;
}

std::string autoep_refusal(const Facts& f) {
  if (!uses_autoep(f)) {
    return {};
  }
  if (autoep_preset(f.model) == nullptr) {
    return fmt::format("no DeepSpeed config: under ZeRO stage 3 an MoE model runs only with "
                       "AutoEP layers (deepspeed/runtime/engine.py, "
                       "_validate_zero3_moe_compatibility), and AutoEP has no preset for {} "
                       "(architecture {}; presets: mixtral, qwen3_moe, deepseek_v2, deepseek_v3)",
                       f.model.name, f.model.architecture);
  }
  if (f.p.tp > 1) {
    return fmt::format("no DeepSpeed config: AutoEP with ZeRO stage 3 runs without tensor "
                       "parallelism ('AutoEP with ZeRO Stage 3 does not support AutoTP yet', "
                       "deepspeed/runtime/engine.py), and the plan has tp {}",
                       f.p.tp);
  }
  if (f.p.cp > 1) {
    return fmt::format("no DeepSpeed config: AutoEP with ZeRO stage 3 runs without sequence "
                       "parallelism ('AutoEP with ZeRO Stage 3 does not support sequence "
                       "parallelism yet', deepspeed/runtime/engine.py), and the plan has cp {}",
                       f.p.cp);
  }
  if (f.p.etp != 1) {
    return fmt::format("no DeepSpeed config: AutoEP with ZeRO stage 3 only supports "
                       "expert_parallel.expert_tensor_parallel_size=1 "
                       "(deepspeed/runtime/engine.py), and the plan has etp {}",
                       f.p.etp);
  }
  return {};
}

nlohmann::ordered_json autoep_section(const Facts& f) {
  nlohmann::ordered_json ep;
  ep["enabled"] = true;
  // The expert-parallel degree: ep ranks adjacent, edp = world / (pp x ep) ranks ep apart
  // (auto_ep_folding.py expected_folding_group_tables, utils/groups.py).
  ep["autoep_size"] = f.p.ep;
  ep["expert_tensor_parallel_size"] = f.p.etp;
  ep["preset_model"] = autoep_preset(f.model);
  // The routed experts per token; AutoEP reads the expert count from the router's weight
  // (num_experts rows) and checks it against model.config, so it is not a config key.
  ep["top_k"] = f.model.experts_per_token;
  return ep;
}

std::string autoep_launch_text(const Facts& f) {
  std::string out =
      "#!/bin/bash\n# DeepSpeed launcher for a Hugging Face MoE model with AutoEP, one launcher "
      "per node (--no_ssh).\n# " +
      plan_line(f) +
      fmt::format("\n# Experts: {} per MoE layer, top-{}, expert parallel {} (AutoEP "
                  "autoep_size), expert data parallel {}.\n",
                  f.model.num_experts, f.model.experts_per_token, f.p.ep, f.p.edp()) +
      "# TRAIN_SCRIPT: your training script. It builds the Hugging Face model (transformers >= "
      "5.0.0,\n# the version DeepSpeed's AutoEP presets need) and calls deepspeed.initialize with "
      "the config\n# that --deepspeed_config names (deepspeed.add_config_arguments reads it); "
      "AutoEP replaces its\n# MoE blocks during deepspeed.initialize.\n"
      "set -euo pipefail\n";
  out += node_rank_lines();
  out += "TRAIN_SCRIPT=${TRAIN_SCRIPT:?set TRAIN_SCRIPT to your Hugging Face training script}\n";
  out += fmt::format("exec deepspeed --hostfile \"$HOSTFILE\" --no_ssh --node_rank \"$NODE_RANK\" "
                     "\\\n  --master_addr \"$MASTER_ADDR\" --master_port {} \\\n  "
                     "\"$TRAIN_SCRIPT\" --deepspeed --deepspeed_config \"$PLAN_DIR/ds_config.json\" "
                     "\"$@\"\n",
                     kMasterPort);
  return out;
}

} // namespace zerosearch::launch
