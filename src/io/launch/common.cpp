#include <algorithm>
#include <array>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "writer.hpp"
#include "zerosearch/io/columns.hpp"
#include "zerosearch/model/estimator.hpp"
#include "zerosearch/model/estimator_ops.hpp"
#include "zerosearch/model/moe.hpp"

namespace zerosearch::launch {

namespace {
// rope_theta from each model's config.json (the catalog's source addresses); tokenizers: Llama-2
// ships a SentencePiece model (Megatron-LM Llama2Tokenizer, Megatron-DeepSpeed
// GPTSentencePieceTokenizer); Llama-3, Mistral and Qwen2.5 ship a Hugging Face tokenizer.json
// (Megatron-LM HuggingFaceTokenizer, megatron/core/tokenizers/utils/build_tokenizer.py:68;
// Megatron-DeepSpeed HFTokenizer, megatron/arguments.py:1306). GPT models: GPT-2 BPE.
constexpr std::array<ModelFamily, 12> kFamilies{{
    {"llama2_7B", 10000, "Llama2Tokenizer", "GPTSentencePieceTokenizer", "tokenizer.model",
     "meta-llama/Llama-2-7b-hf config.json rope_theta 10000"},
    {"llama2_13B", 10000, "Llama2Tokenizer", "GPTSentencePieceTokenizer", "tokenizer.model",
     "meta-llama/Llama-2-13b-hf config.json rope_theta 10000"},
    {"llama2_70B", 10000, "Llama2Tokenizer", "GPTSentencePieceTokenizer", "tokenizer.model",
     "meta-llama/Llama-2-70b-hf config.json rope_theta 10000"},
    {"llama3_8B", 500000, "HuggingFaceTokenizer", "HFTokenizer", "meta-llama/Meta-Llama-3-8B",
     "meta-llama/Meta-Llama-3-8B config.json rope_theta 500000"},
    {"llama3_70B", 500000, "HuggingFaceTokenizer", "HFTokenizer", "meta-llama/Meta-Llama-3-70B",
     "meta-llama/Meta-Llama-3-70B config.json rope_theta 500000"},
    {"llama3_405B", 500000, "HuggingFaceTokenizer", "HFTokenizer", "meta-llama/Llama-3.1-405B",
     "meta-llama/Llama-3.1-405B config.json rope_theta 500000"},
    {"mistral_7B", 10000, "HuggingFaceTokenizer", "HFTokenizer", "mistralai/Mistral-7B-v0.1",
     "mistralai/Mistral-7B-v0.1 config.json rope_theta 10000.0"},
    {"mixtral_8x7B", 1000000, "HuggingFaceTokenizer", "HFTokenizer",
     "mistralai/Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x7B-v0.1 config.json rope_theta 1e6"},
    {"qwen2.5_7B", 1000000, "HuggingFaceTokenizer", "HFTokenizer", "Qwen/Qwen2.5-7B",
     "Qwen/Qwen2.5-7B config.json rope_theta 1000000.0"},
    {"qwen2.5_72B", 1000000, "HuggingFaceTokenizer", "HFTokenizer", "Qwen/Qwen2.5-72B",
     "Qwen/Qwen2.5-72B config.json rope_theta 1000000.0"},
    {"gpt2XL", 0, "GPT2BPETokenizer", "GPT2BPETokenizer", "", "GPT-2: learned positions"},
    {"gpt3_175B", 0, "GPT2BPETokenizer", "GPT2BPETokenizer", "", "GPT-3: learned positions"},
}};
} // namespace

const ModelFamily* model_family(const std::string& model) noexcept {
  for (const ModelFamily& m : kFamilies) {
    if (model == m.model) {
      return &m;
    }
  }
  return nullptr;
}

std::string Args::bash_array(const std::string& name) const {
  std::string out = name + "=(\n";
  for (const auto& [f, v] : items) {
    out += "  " + f + (v.empty() ? "" : " " + v) + "\n";
  }
  return out + ")\n";
}

void Output::add(std::string name, std::string text, bool exe, std::string what) {
  listing.push_back(fmt::format("- `{}`: {}", name, what));
  files.push_back(LaunchFile{std::move(name), std::move(text), exe});
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    out += (i == 0 ? "" : sep) + v[i];
  }
  return out;
}

bool uneven(const std::vector<int>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) != v.end();
}

std::string plan_line(const Facts& f) {
  const std::string cp = f.p.cp > 1 ? fmt::format(", cp {} ({})", static_cast<int>(f.p.cp),
                                                  to_string(f.p.cp_comm))
                                    : std::string{};
  return fmt::format("{} on {}: {}, tp {}, pp {}, dp {}{}, micro-batch {}, global batch {} ({} "
                     "micro-batches), partition {}",
                     f.model.name, compress_placement(f.cluster, f.plan.placement),
                     to_string(f.p.method), f.p.tp, f.p.pp, f.p.dp, cp, f.p.mbs,
                     f.ctx.global_batch, f.p.num_micro_batches,
                     fmt::join(f.plan.estimate.partition, "-"));
}

std::string node_rank_lines() {
  return "PLAN_DIR=$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\n"
         "HOSTFILE=\"$PLAN_DIR/hostfile\"\n"
         "# The node rank is this host's line in the hostfile: line order is stage order.\n"
         "if [ -z \"${NODE_RANK:-}\" ]; then\n"
         "  NODE_RANK=$(awk -v h=\"$(hostname -s)\" '!/^#/ && NF {if ($1 == h) {print n + 0; "
         "exit}; n++}' \"$HOSTFILE\")\n"
         "fi\n"
         "[ -n \"$NODE_RANK\" ] || { echo \"$(hostname -s) is not in $HOSTFILE: replace the "
         "placeholder names\" >&2; exit 1; }\n"
         "MASTER_ADDR=${MASTER_ADDR:-$(awk '!/^#/ && NF {print $1; exit}' \"$HOSTFILE\")}\n";
}

const NativeSettings* native_settings(const Facts& f) {
  return plan_settings(f.ctx);
}

bool overlap_grad_reduce(const Facts& f) {
  const NativeSettings* st = native_settings(f);
  return st != nullptr && st->overlap_grad_reduce.value_or(false);
}

std::string fused_loss_refusal(const Facts& f, const char* framework) {
  const NativeSettings* st = native_settings(f);
  if (st == nullptr || !st->fused_loss) {
    return {};
  }
  // Megatron's vocab-parallel cross-entropy, fused or not, upcasts the logits and keeps their
  // fp32 softmax for the backward (megatron/core/tensor_parallel/cross_entropy.py,
  // VocabParallelCrossEntropy.calculate_logits_max; megatron/core/fusions/fused_cross_entropy.py
  // calls it too); DeepSpeed leaves the loss to the model's code.
  return fmt::format("no {} files: the plan was estimated with --fused_loss on (a fused "
                     "cross-entropy keeping the logits and their gradient in the training dtype), "
                     "and {}'s loss keeps an fp32 softmax of the logits; estimate it with "
                     "--fused_loss off",
                     framework, framework);
}

bool moe_a2a_overlapped(const Facts& f) {
  const NativeSettings* st = native_settings(f);
  return st != nullptr && st->moe_a2a_overlap && moe_a2a_overlap_runs(f.model, f.p);
}

const char* flex_backend(const Facts& f) {
  const NativeSettings* st = native_settings(f);
  if (st == nullptr || !flex_dispatcher(st->moe_dispatcher) || !f.model.is_moe() || f.p.ep <= 1) {
    return nullptr;
  }
  return moe_dispatcher_name(st->moe_dispatcher);
}

std::string moe_dispatcher_refusal(const Facts& f, const char* what, const char* framework) {
  const char* backend = flex_backend(f);
  if (backend == nullptr) return {};
  // DeepEP and HybridEP are Megatron-Core's flex dispatcher backends
  // (megatron/core/transformer/moe/token_dispatcher.py, MoEFlexTokenDispatcher, at d98e8a64);
  // the other writers' frameworks dispatch every top-k copy.
  return fmt::format("{}: the plan was estimated with --moe_dispatcher {} (Megatron-Core's flex "
                     "token dispatcher, a token sent once per destination node and rank), which "
                     "{} does not run; estimate it with --moe_dispatcher alltoall or write "
                     "Megatron-LM files",
                     what, backend, framework);
}

std::string moe_a2a_overlap_refusal(const Facts& f, const char* what, const char* framework) {
  if (!moe_a2a_overlapped(f)) {
    return {};
  }
  // The overlap is Megatron-Core's combined 1F1B (megatron/core/pipeline_parallel/
  // combined_1f1b.py, --overlap-moe-expert-parallel-comm): one micro-batch's forward layers
  // run beside another's backward layers. The other writers' frameworks run each pass alone.
  return fmt::format("{}: the plan was estimated with --moe_a2a_overlap on (each micro-batch's "
                     "MoE all-to-alls hidden behind another micro-batch's compute, Megatron-Core's "
                     "combined 1F1B, --overlap-moe-expert-parallel-comm), which {} does not run; "
                     "estimate it with --moe_a2a_overlap off or write Megatron-LM files",
                     what, framework);
}

const PipelineLayout* pipeline_layout(const Facts& f) {
  const NativeSettings* st = native_settings(f);
  return st != nullptr ? st->pipeline_layout.get() : nullptr;
}

std::string pipeline_layout_refusal(const Facts& f, const char* what, const char* framework) {
  const PipelineLayout* layout = pipeline_layout(f);
  if (layout == nullptr) {
    return {};
  }
  return fmt::format("{}: the plan was estimated with --pipeline_layout '{}' (Megatron-Core's "
                     "layers per model chunk, Megatron-LM's --pipeline-model-parallel-layout), "
                     "which {} cannot place; estimate it without --pipeline_layout or write "
                     "Megatron-LM files",
                     what, layout->text, framework);
}

const RecomputeModules* recompute_modules(const Facts& f) {
  const NativeSettings* st = native_settings(f);
  if (st == nullptr || recompute_of(f) != Recompute::selective || st->recompute_modules.is_default()) {
    return nullptr;
  }
  return &st->recompute_modules;
}

std::string recompute_modules_refusal(const Facts& f, const char* what, const char* framework) {
  const RecomputeModules* mods = recompute_modules(f);
  if (mods == nullptr) {
    return {};
  }
  return fmt::format("{}: the plan was estimated with --recompute_modules {} (Megatron-Core's "
                     "selective recompute of named modules, Megatron-LM's --recompute-modules), "
                     "which {} cannot express; estimate it without --recompute_modules or write "
                     "Megatron-LM files",
                     what, to_string(*mods), framework);
}

std::string interleaved_refusal(const Facts& f, const char* what) {
  if (f.p.pp <= 1 || f.p.virtual_stages <= 1) {
    return {};
  }
  return fmt::format("{}: DeepSpeed's pipeline engine runs one model chunk per rank "
                     "(TrainSchedule in deepspeed/runtime/pipe/schedule.py), not interleaved "
                     "1F1B with {} virtual stages (Megatron-LM runs it with "
                     "--use-distributed-optimizer)",
                     what, f.p.virtual_stages);
}

bool pure_16bit(const Facts& f) {
  const NativeSettings* st = native_settings(f);
  return st != nullptr && !st->master_weights && f.precision != Precision::fp32;
}

std::string megatron_master_weights_refusal(const Facts& f) {
  if (!pure_16bit(f)) {
    return {};
  }
  // megatron/core/optimizer/__init__.py (d98e8a64): '--use-precision-aware-optimizer only
  // supported with distributed optimizer'; megatron/training/arguments.py: --main-params-dtype
  // choices fp32 and fp16.
  return "no Megatron-LM files: the plan was estimated with --master_weights off (pure 16-bit "
         "training: no fp32 master weights, Adam's moments in 16 bits); Megatron-LM lowers them "
         "only with --use-precision-aware-optimizer, which runs with the distributed optimizer "
         "alone ('--use-precision-aware-optimizer only supported with distributed optimizer', "
         "megatron/core/optimizer/__init__.py at d98e8a64: zero1's, not dp's or fsdp's), and "
         "whose --main-params-dtype takes fp32 or fp16, not bf16 "
         "(megatron/training/arguments.py); estimate it with --master_weights on";
}

std::string deepspeed_master_weights_refusal(const Facts& f, const char* what) {
  if (!pure_16bit(f)) {
    return {};
  }
  if (f.launch.zero_stage == 0) {
    // deepspeed/runtime/config.py:1044 (edaa7221).
    return fmt::format("{}: the plan was estimated with --master_weights off, and DeepSpeed keeps "
                       "16-bit master weights and optimizer states under ZeRO stage 1, 2 or 3 "
                       "only ('Bf16_master_weights_and_grads is only supported with ZeRO Stage 1, "
                       "2, or 3', deepspeed/runtime/config.py); estimate zero0 with "
                       "--master_weights on, or a ZeRO stage",
                       what);
  }
  if (f.precision == Precision::fp16) {
    // deepspeed/runtime/base_optimizer.py _configure_master_weights: fp16 master weights need
    // ZeRO-Offload with DeepSpeedCPUAdam; bf16_optimizer_states is the only 16-bit state option.
    return fmt::format("{}: the plan was estimated with --master_weights off in fp16, and "
                       "DeepSpeed has no fp16 optimizer states (fp16_master_weights_and_grads "
                       "needs ZeRO-Offload and keeps Adam's moments in fp32: "
                       "deepspeed/runtime/base_optimizer.py; bf16_optimizer_states is bf16 "
                       "only); estimate it with --master_weights on",
                       what);
  }
  return {};
}

std::optional<bool> grad_reduce_fp32(const Facts& f) {
  const NativeSettings* st = native_settings(f);
  return st != nullptr ? st->grad_reduce_fp32 : std::nullopt;
}

bool grad_accum_fp32(const Facts& f) {
  const NativeSettings* st = native_settings(f);
  return st != nullptr && st->grad_accum_fp32;
}

Recompute recompute_of(const Facts& f) {
  return estimator_info(f.ctx.estimator).models_recompute ? f.p.recompute : Recompute::none;
}

std::string hostfile_text(const Facts& f) {
  std::string out = "# zerosearch plan: " + plan_line(f) + "\n";
  const char* group = f.p.cp > 1 ? "tp*cp*dp" : "tp*dp";
  out += fmt::format("# Line order is rank order: node i runs global ranks i*G .. i*G+G-1 (G = "
                     "slots), and\n# pipeline stage s owns ranks s*{0} .. (s+1)*{0}-1. Replace the "
                     "placeholder names\n# with real hosts of the same GPU type; keep the order.\n",
                     group);
  const int per_stage = f.p.tp * f.p.cp * f.p.dp;
  for (int n = 0; n < f.nodes; ++n) {
    const int first_rank = n * f.gpus_per_node;
    const int last_rank = first_rank + f.gpus_per_node - 1;
    const int s0 = first_rank / per_stage;
    const int s1 = last_rank / per_stage;
    const std::string& gpu =
        f.cluster.groups[static_cast<std::size_t>(f.plan.placement[static_cast<std::size_t>(n)])].gpu;
    out += fmt::format("{} slots={}  # {}, ranks {}-{}, stage {}\n",
                       f.hosts[static_cast<std::size_t>(n)], f.gpus_per_node, gpu, first_rank,
                       last_rank, s0 == s1 ? std::to_string(s0) : fmt::format("{}-{}", s0, s1));
  }
  return out;
}

std::string gpt_tokenizer_note(const Facts& f) {
  return f.model.learned_position_embeddings
             ? "# GPT tokenizer: set VOCAB_FILE and MERGE_FILE (GPT-2 BPE vocabulary and merges).\n"
             : "";
}

std::string args_file(const Facts& f, const Args& a, const std::string& framework,
                      const std::string& extra) {
  return "# " + framework + " arguments for the zerosearch plan:\n# " + plan_line(f) +
         "\n# Source this file, then pass \"${MEGATRON_ARGS[@]}\" to pretrain_gpt.py.\n"
         "# Data and tokenizer: set TOKENIZER_MODEL and DATA_PREFIX (a Megatron .bin/.idx "
         "prefix).\n" +
         gpt_tokenizer_note(f) +
         fmt::format("# Vocabulary: {} tokens (the tokenizer sets it; Megatron pads it).\n",
                     f.model.vocab_size) +
         extra + a.bash_array("MEGATRON_ARGS");
}

std::string launch_torchrun_text(const Facts& f, const std::string& framework,
                                 const std::string& env, const std::string& command) {
  std::string out = "#!/bin/bash\n# " + framework +
                    " with torchrun, static rendezvous: --node-rank fixes which node runs which "
                    "stage.\n# " +
                    plan_line(f) +
                    "\n# Run on every node of the hostfile (slurm.sbatch does it), or directly.\n"
                    "set -euo pipefail\n";
  out += node_rank_lines();
  out += env;
  out += command;
  return out;
}

void recompute_args(Args& a, const Facts& f, bool deepspeed) {
  switch (recompute_of(f)) {
  case Recompute::none: break; // Megatron's default: --recompute-granularity None
  case Recompute::selective: a.add("--recompute-granularity", "selective"); break;
  case Recompute::full:
    a.add("--recompute-granularity", "full");
    a.add("--recompute-method", "uniform");
    a.add("--recompute-num-layers", 1);
    if (deepspeed) {
      a.add("--deepspeed-activation-checkpointing");
    }
    break;
  }
}

void sequence_parallel_arg(Args& a, const Facts& f) {
  const NativeSettings* st = native_settings(f);
  if (st != nullptr && f.p.tp > 1 && st->sequence_parallel) {
    a.add("--sequence-parallel");
  }
}

void training_args(Args& a) {
  a.add("--lr", "3e-4");
  a.add("--min-lr", "3e-5");
  a.add("--lr-decay-style", "cosine");
  a.add("--lr-warmup-iters", "2000");
  a.add("--weight-decay", "0.1");
  a.add("--clip-grad", "1.0");
  a.add("--adam-beta1", "0.9");
  a.add("--adam-beta2", "0.95");
  a.add("--train-iters", "\"${TRAIN_ITERS:-1000}\"");
  a.add("--log-interval", "1");
  a.add("--eval-iters", "10");
}

} // namespace zerosearch::launch
