#include "zerosearch/io/launch.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/output_file.hpp"
#include "zerosearch/io/report_format.hpp"
#include "zerosearch/model/native.hpp"

namespace zerosearch {

namespace fs = std::filesystem;

namespace {

constexpr int kMasterPort = 29500;

std::string join_lines(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    out += (i == 0 ? "" : sep) + v[i];
  }
  return out;
}

bool uses_bf16(const std::string& gpu) {
  // Pre-Ampere GPUs have no bf16.
  for (const char* old : {"V100", "T4", "P100", "P40", "K80"}) {
    if (gpu.find(old) != std::string::npos) {
      return false;
    }
  }
  return true;
}

/// The precision flag of the plan: "--bf16", "--fp16" or "" (32-bit).
std::string precision_flag(const LaunchPlan& plan) {
  if (plan.ctx->precision_bits != 16) {
    return "";
  }
  for (const auto& g : plan.ctx->cluster.groups) {
    if (g.count > 0 && !uses_bf16(g.gpu)) {
      return "--fp16";
    }
  }
  return "--bf16";
}

int zero_stage(DpMethod m) {
  switch (m) {
  case DpMethod::zero0: return 0;
  case DpMethod::zero1: return 1;
  case DpMethod::zero2: return 2;
  case DpMethod::zero3: return 3;
  default: return -1;
  }
}

/// A flag list as shell lines: one "--flag value" group per line, continued with backslashes.
struct Args {
  std::vector<std::pair<std::string, std::string>> items; // flag, value ("" = switch)
  void add(const std::string& flag, const std::string& value = "") { items.emplace_back(flag, value); }
  void add(const std::string& flag, long long value) { items.emplace_back(flag, std::to_string(value)); }
  [[nodiscard]] std::string bash_array(const std::string& name) const {
    std::string out = name + "=(\n";
    for (const auto& [f, v] : items) {
      out += "  " + f + (v.empty() ? "" : " " + v) + "\n";
    }
    return out + ")\n";
  }
};

/// The block's architecture as the catalog's memory formula implies it: Llama (rotary positions,
/// RMSNorm, SwiGLU, untied output layer, no biases) or GPT (Megatron's defaults).
bool llama_block(const ModelSpec& m) { return m.memory_formula == MemoryFormula::llama; }

void model_shape_megatron_lm(Args& a, const ModelSpec& m) {
  a.add("--num-layers", m.num_layers);
  a.add("--hidden-size", m.hidden_size);
  a.add("--ffn-hidden-size", m.ffn_hidden_size);
  a.add("--num-attention-heads", m.num_attention_heads);
  a.add("--seq-length", m.sequence_length);
  a.add("--max-position-embeddings", m.sequence_length);
  if (llama_block(m)) {
    a.add("--position-embedding-type", "rope");
    a.add("--normalization", "RMSNorm");
    a.add("--swiglu");
    a.add("--untie-embeddings-and-output-weights");
    a.add("--disable-bias-linear");
  }
  a.add("--attention-dropout", "0.0");
  a.add("--hidden-dropout", "0.0");
}

void model_shape_megatron_deepspeed(Args& a, const ModelSpec& m) {
  a.add("--num-layers", m.num_layers);
  a.add("--hidden-size", m.hidden_size);
  a.add("--ffn-hidden-size", m.ffn_hidden_size);
  a.add("--num-attention-heads", m.num_attention_heads);
  if (llama_block(m)) {
    a.add("--num-key-value-heads", m.num_attention_heads);
  }
  a.add("--seq-length", m.sequence_length);
  a.add("--max-position-embeddings", m.sequence_length);
  if (llama_block(m)) {
    a.add("--normalization", "rmsnorm");
    a.add("--swiglu");
    a.add("--use-rotary-position-embeddings");
    a.add("--untie-embeddings-and-output-weights");
    a.add("--disable-bias-linear");
    a.add("--no-query-key-layer-scaling");
  }
  a.add("--attention-dropout", "0");
  a.add("--hidden-dropout", "0");
}

void training_args(Args& a, bool deepspeed) {
  if (deepspeed) {
    a.add("--optimizer", "adam");
  }
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

const char* kDataNote =
    "# Data and tokenizer: set TOKENIZER_MODEL and DATA_PREFIX (a Megatron .bin/.idx prefix).\n";

/// Shell lines that find this node's rank: its line in the hostfile (or NODE_RANK if set).
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

std::string lower_alnum(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out.empty() ? "gpu" : out;
}

struct Facts {
  const LaunchPlan& plan;
  const EstimateContext& ctx;
  const Cluster& cluster;
  const ModelSpec& model;
  const DesignPoint& p;
  std::vector<int> transformer;      // per stage
  std::vector<std::string> hosts;    // per node, rank order
  std::vector<int> stage_gpu;        // node type per stage
  int gpus_per_node = 1;
  int nodes = 1;
  std::string precision;
};

/// PLAN.md's line on activation recomputation.
std::string recompute_note(const DesignPoint& p) {
  switch (p.recompute) {
  case Recompute::none: return "- Recompute (activation checkpointing) is off: the estimate assumes none.\n";
  case Recompute::selective:
    return "- Recompute: selective, as estimated (Megatron: --recompute-granularity selective; "
           "torchtitan: per-op selective checkpointing). DeepSpeed's pipeline engine does not "
           "honour selective recompute when pp > 1.\n";
  case Recompute::full:
    return "- Recompute: full, every layer, as estimated.\n";
  }
  return {};
}

std::string plan_line(const Facts& f) {
  return fmt::format("{} on {}: {}, tp {}, pp {}, dp {}, micro-batch {}, global batch {} ({} "
                     "micro-batches), partition {}",
                     f.model.name, compress_placement(f.cluster, f.plan.placement),
                     to_string(f.p.method), f.p.tp, f.p.pp, f.p.dp, f.p.mbs, f.ctx.global_batch,
                     f.p.num_micro_batches, fmt::join(f.plan.estimate.partition, "-"));
}

std::string hostfile_text(const Facts& f) {
  std::string out = "# zerosearch plan: " + plan_line(f) + "\n";
  out += "# Line order is rank order: node i runs global ranks i*G .. i*G+G-1 (G = slots), and\n"
         "# pipeline stage s owns ranks s*tp*dp .. (s+1)*tp*dp-1. Replace the placeholder names\n"
         "# with real hosts of the same GPU type; keep the order.\n";
  const int per_stage = f.p.tp * f.p.dp;
  for (int n = 0; n < f.nodes; ++n) {
    const int first_rank = n * f.gpus_per_node;
    const int last_rank = first_rank + f.gpus_per_node - 1;
    const int s0 = first_rank / per_stage;
    const int s1 = last_rank / per_stage;
    const std::string& gpu =
        f.cluster.groups[static_cast<std::size_t>(f.plan.placement[static_cast<std::size_t>(n)])].gpu;
    out += fmt::format("{} slots={}  # {}, ranks {}-{}, stage {}\n", f.hosts[static_cast<std::size_t>(n)],
                       f.gpus_per_node, gpu, first_rank, last_rank,
                       s0 == s1 ? std::to_string(s0) : fmt::format("{}-{}", s0, s1));
  }
  return out;
}

/// Megatron's activation recomputation flags for the plan's --recompute.
void recompute_args(Args& a, const DesignPoint& p, bool deepspeed) {
  if (p.recompute == Recompute::selective) {
    a.add("--recompute-granularity", "selective");
  } else if (p.recompute == Recompute::full) {
    a.add("--recompute-granularity", "full");
    a.add("--recompute-method", "uniform");
    a.add("--recompute-num-layers", 1);
    if (deepspeed) {
      a.add("--deepspeed-activation-checkpointing");
    }
  }
}

/// The native estimator's settings the plan was estimated with, or null (zerosearch estimator):
/// the launch files follow those that change what the run must do.
const NativeSettings* native_settings(const Facts& f) {
  return f.ctx.estimator == Estimator::native && f.ctx.native ? &f.ctx.native->settings : nullptr;
}

/// Whether the native estimate overlapped the gradient reduction with backward because
/// --overlap_grad_reduce on was given (ZeRO-3 and FSDP overlap anyway).
bool overlap_grad_reduce(const Facts& f) {
  const NativeSettings* st = native_settings(f);
  return st != nullptr && st->overlap_grad_reduce.value_or(false);
}

std::string ds_config_text(const Facts& f) {
  nlohmann::ordered_json j;
  const int gas = f.ctx.global_batch / (f.p.mbs * f.p.dp);
  j["train_batch_size"] = f.ctx.global_batch;
  j["train_micro_batch_size_per_gpu"] = f.p.mbs;
  j["gradient_accumulation_steps"] = gas;
  j["steps_per_print"] = 10;
  j["gradient_clipping"] = 1.0;
  nlohmann::ordered_json z;
  z["stage"] = zero_stage(f.p.method);
  z["reduce_bucket_size"] = 500000000;
  z["allgather_bucket_size"] = 500000000;
  z["overlap_comm"] = zero_stage(f.p.method) == 3 || overlap_grad_reduce(f);
  z["contiguous_gradients"] = true;
  if (f.p.offload != Offload::none) {
    z["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  }
  if (f.p.offload == Offload::optimizer_params) {
    z["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  }
  j["zero_optimization"] = z;
  j["bf16"] = {{"enabled", f.precision == "--bf16"}};
  j["fp16"] = {{"enabled", f.precision == "--fp16"}};
  if (f.p.pp > 1) {
    nlohmann::ordered_json pipe;
    // DeepSpeed's pipeline checkpoints every layer (full recompute) or none.
    pipe["activation_checkpoint_interval"] = f.p.recompute == Recompute::full ? 1 : 0;
    pipe["pipe_partitioned"] = true;
    pipe["grad_partitioned"] = true;
    j["pipeline"] = pipe;
  }
  j["wall_clock_breakdown"] = false;
  return j.dump(2) + "\n";
}

/// Megatron's sequence parallelism when the native estimate assumed it (tp > 1 and
/// --sequence_parallel on, the default): its activation memory depends on it.
void sequence_parallel_arg(Args& a, const Facts& f) {
  const NativeSettings* st = native_settings(f);
  if (st != nullptr && f.p.tp > 1 && st->sequence_parallel) {
    a.add("--sequence-parallel");
  }
}

Args megatron_deepspeed_args(const Facts& f) {
  Args a;
  a.add("--tensor-model-parallel-size", f.p.tp);
  a.add("--pipeline-model-parallel-size", f.p.pp);
  if (f.p.pp == 1) {
    a.add("--no-pipeline-parallel");
  }
  model_shape_megatron_deepspeed(a, f.model);
  a.add("--micro-batch-size", f.p.mbs);
  a.add("--global-batch-size", f.ctx.global_batch);
  if (!f.precision.empty()) {
    a.add(f.precision);
  }
  if (llama_block(f.model)) {
    a.add("--tokenizer-type", "GPTSentencePieceTokenizer");
    a.add("--tokenizer-model", "\"${TOKENIZER_MODEL:?set TOKENIZER_MODEL}\"");
  }
  a.add("--data-path", "\"${DATA_PREFIX:?set DATA_PREFIX}\"");
  a.add("--data-impl", "mmap");
  a.add("--split", "949,50,1");
  recompute_args(a, f.p, true);
  sequence_parallel_arg(a, f);
  training_args(a, true);
  a.add("--deepspeed");
  a.add("--deepspeed_config", "\"$PLAN_DIR/ds_config.json\"");
  a.add("--zero-stage", zero_stage(f.p.method));
  return a;
}

Args megatron_lm_args(const Facts& f) {
  Args a;
  a.add("--tensor-model-parallel-size", f.p.tp);
  a.add("--pipeline-model-parallel-size", f.p.pp);
  const auto& t = f.transformer;
  if (f.p.pp > 1 && std::adjacent_find(t.begin(), t.end(), std::not_equal_to<>()) != t.end()) {
    a.add("--pipeline-model-parallel-layout", "'" + megatron_layout(f.plan.estimate.partition) + "'");
  }
  if (f.p.method == DpMethod::fsdp) {
    a.add("--use-torch-fsdp2");
    a.add("--ckpt-format", "torch_dist");
  }
  model_shape_megatron_lm(a, f.model);
  a.add("--micro-batch-size", f.p.mbs);
  a.add("--global-batch-size", f.ctx.global_batch);
  if (!f.precision.empty()) {
    a.add(f.precision);
  }
  if (llama_block(f.model)) {
    a.add("--tokenizer-type", "Llama2Tokenizer");
    a.add("--tokenizer-model", "\"${TOKENIZER_MODEL:?set TOKENIZER_MODEL}\"");
  }
  a.add("--data-path", "\"${DATA_PREFIX:?set DATA_PREFIX}\"");
  a.add("--split", "949,50,1");
  recompute_args(a, f.p, false);
  if (f.p.virtual_stages > 1) {
    a.add("--num-virtual-stages-per-pipeline-rank", f.p.virtual_stages);
  }
  sequence_parallel_arg(a, f);
  if (f.p.method != DpMethod::fsdp && overlap_grad_reduce(f)) {
    a.add("--overlap-grad-reduce");
  }
  // The estimate hid the tp collectives behind the GEMMs (--tp_comm_overlap on): Megatron-LM
  // runs them with Transformer Engine's userbuffers.
  if (const NativeSettings* st = native_settings(f);
      st != nullptr && st->tp_comm_overlap && f.p.tp > 1) {
    a.add("--tp-comm-overlap");
  }
  training_args(a, false);
  return a;
}

std::string args_file(const Facts& f, const Args& a, const std::string& framework,
                      const std::string& extra) {
  const std::string tokenizer =
      llama_block(f.model) ? ""
                           : "# GPT tokenizer: append your tokenizer flags (e.g. GPT-2 BPE "
                             "vocabulary and merges) to MEGATRON_ARGS.\n";
  return "# " + framework + " arguments for the zerosearch plan:\n# " + plan_line(f) +
         "\n# Source this file, then pass \"${MEGATRON_ARGS[@]}\" to pretrain_gpt.py.\n" +
         kDataNote + tokenizer + extra + a.bash_array("MEGATRON_ARGS");
}

std::string launch_deepspeed_text(const Facts& f, bool uneven) {
  std::string out = "#!/bin/bash\n# Megatron-DeepSpeed + DeepSpeed launcher, one launcher per node "
                    "(--no_ssh).\n# " + plan_line(f) +
                    "\n# Run on every node of the hostfile from a Megatron-DeepSpeed checkout "
                    "(slurm.sbatch does it),\n# or run `deepspeed --hostfile hostfile ...` "
                    "without --no_ssh/--node_rank once, on the first node (pdsh).\n"
                    "set -euo pipefail\n";
  out += node_rank_lines();
  out += "source \"$PLAN_DIR/megatron_deepspeed_args.sh\"\n";
  if (uneven) {
    out += "# The planned split needs ds_explicit_partition.py (see PLAN.md): pretrain_gpt.py must\n"
           "# `import ds_explicit_partition` before building the model.\n";
    out += fmt::format("export DS_PIPE_PARTITION={}\n", fmt::join(f.transformer, "-"));
    out += "export PYTHONPATH=\"$PLAN_DIR${PYTHONPATH:+:$PYTHONPATH}\"\n";
  }
  out += fmt::format("exec deepspeed --hostfile \"$HOSTFILE\" --no_ssh --node_rank \"$NODE_RANK\" "
                     "\\\n  --master_addr \"$MASTER_ADDR\" --master_port {} \\\n  pretrain_gpt.py "
                     "\"${{MEGATRON_ARGS[@]}}\"\n",
                     kMasterPort);
  return out;
}

std::string launch_torchrun_text(const Facts& f, const std::string& framework,
                                 const std::string& command) {
  std::string out = "#!/bin/bash\n# " + framework + " with torchrun, static rendezvous: "
                    "--node-rank fixes which node runs which stage.\n# " + plan_line(f) +
                    "\n# Run on every node of the hostfile (slurm.sbatch does it).\n"
                    "set -euo pipefail\n";
  out += node_rank_lines();
  out += command;
  return out;
}

std::string slurm_text(const Facts& f, const std::string& launcher) {
  std::set<std::string> types;
  for (int n = 0; n < f.nodes; ++n) {
    types.insert(f.cluster.groups[static_cast<std::size_t>(f.plan.placement[static_cast<std::size_t>(n)])].gpu);
  }
  std::string out = "#!/bin/bash\n# zerosearch plan: " + plan_line(f) + "\n";
  out += "# Slurm does not keep the order of --nodelist: each task looks its host name up in the\n"
         "# hostfile, whose line order is the plan's stage order (see " + launcher + ").\n";
  if (types.size() > 1) {
    out += "# Node types in different partitions: use a heterogeneous job instead (one component\n"
           "# per type, `#SBATCH hetjob` between them, `srun --het-group=0,1`); the lookup is the same.\n";
  }
  out += "#SBATCH --job-name=zerosearch-plan\n";
  out += fmt::format("#SBATCH --nodes={}\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node={}\n",
                     f.nodes, f.gpus_per_node);
  out += "#SBATCH --exclusive\n";
  out += "#SBATCH --nodelist=" + join_lines(f.hosts, ",") + "\n";
  out += "set -euo pipefail\n";
  out += "PLAN_DIR=${PLAN_DIR:-$SLURM_SUBMIT_DIR}\n";
  out += "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";
  out += "srun --ntasks-per-node=1 \"$PLAN_DIR/" + launcher + "\"\n";
  return out;
}

std::string torchtitan_toml(const Facts& f) {
  const ModelSpec& m = f.model;
  std::string out = "# torchtitan v0.2.x job config (torchtitan/config/job_config.py).\n# " +
                    plan_line(f) + "\n";
  out += "# torchtitan has no flavor for this model: register one in\n"
         "# torchtitan/models/llama3/__init__.py, e.g.\n";
  out += fmt::format("#   \"{}\": TransformerModelArgs(dim={}, n_layers={}, n_heads={}, n_kv_heads={}, "
                     "vocab_size={}, ...)  # ffn {}\n",
                     m.name, m.hidden_size, m.num_layers, m.num_attention_heads,
                     m.num_attention_heads,
                     m.vocab_size, m.ffn_hidden_size);
  out += "[model]\nname = \"llama3\"\n";
  out += fmt::format("flavor = \"{}\"\n\n", m.name);
  out += "[training]\n";
  out += fmt::format("local_batch_size = {}\nglobal_batch_size = {}\nseq_len = {}\nsteps = 1000\n\n",
                     f.ctx.global_batch / f.p.dp, f.ctx.global_batch, m.sequence_length);
  out += "[parallelism]\n";
  const bool shard = f.p.method == DpMethod::fsdp;
  out += fmt::format("data_parallel_replicate_degree = {}\n", shard ? 1 : f.p.dp);
  out += fmt::format("data_parallel_shard_degree = {}\n", shard ? f.p.dp : 1);
  if (shard) {
    out += "fsdp_reshard_after_forward = \"default\"\n";
  }
  out += fmt::format("tensor_parallel_degree = {}\ncontext_parallel_degree = 1\n", f.p.tp);
  out += fmt::format("pipeline_parallel_degree = {}\n", f.p.pp);
  if (f.p.pp > 1) {
    out += f.p.virtual_stages > 1 ? "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                                  : "pipeline_parallel_schedule = \"1F1B\"\n";
    out += fmt::format("pipeline_parallel_microbatch_size = {}\n", f.p.mbs);
    out += "# The planned split: the embedding with stage 0, norm and output with the last stage.\n";
    out += "module_fqns_per_model_part = [\n";
    int layer = 0;
    // Interleaved: pp x v model parts, part k on pipeline rank k % pp, split as estimated
    // (interleaved_chunks: equal when pp x v divides the layers, torchtitan's split otherwise).
    std::vector<int> parts = f.transformer;
    if (f.p.virtual_stages > 1) {
      parts = interleaved_chunks(static_cast<int>(f.model.num_layers), f.p.pp, f.p.virtual_stages);
    }
    for (std::size_t s = 0; s < parts.size(); ++s) {
      std::vector<std::string> names;
      if (s == 0) {
        names.emplace_back("\"tok_embeddings\"");
      }
      for (int k = 0; k < parts[s]; ++k) {
        names.push_back(fmt::format("\"layers.{}\"", layer++));
      }
      if (s + 1 == parts.size()) {
        names.emplace_back("\"norm\"");
        names.emplace_back("\"output\"");
      }
      out += "  [" + join_lines(names, ", ") + "],\n";
    }
    out += "]\n";
  }
  if (f.p.recompute != Recompute::none) {
    out += "\n[activation_checkpoint]\n";
    out += f.p.recompute == Recompute::full ? "mode = \"full\"\n"
                                            : "mode = \"selective\"\nselective_ac_option = \"op\"\n";
  }
  if (const NativeSettings* st = native_settings(f); st != nullptr && st->fused_loss) {
    // The estimate's loss memory assumed a compiled loss (--fused_loss on).
    out += "\n[compile]\nenable = true\ncomponents = [\"loss\"]\n";
  }
  return out;
}

std::string shim_text() {
  return R"(# Explicit per-stage layer counts for Megatron-DeepSpeed's pipeline (written by zerosearch).
# Not part of DeepSpeed: DeepSpeed's PipelineModule only partitions 'uniform', 'parameters' or
# 'type:<regex>', and Megatron-DeepSpeed fixes 'type:transformer'. Importing this module before
# the model is built replaces that choice with DS_PIPE_PARTITION, the transformer layers per
# stage ("4-6-6-3"); the embedding stays with stage 0 and the head with the last stage.
import os

from deepspeed.runtime.pipe import module as _pipe_module

_upstream = _pipe_module.PipelineModule._partition_layers


def _bounds(layer_positions, spec_count, counts):
    if sum(counts) != len(layer_positions):
        raise ValueError(f"DS_PIPE_PARTITION sums to {sum(counts)}, the model has "
                         f"{len(layer_positions)} transformer layers")
    bounds, taken = [0], 0
    for c in counts[:-1]:
        taken += c
        bounds.append(layer_positions[taken - 1] + 1 if taken > 0 else 0)
    bounds.append(spec_count)
    return bounds


def _partition_layers(self, method="uniform"):
    text = os.environ.get("DS_PIPE_PARTITION", "").strip()
    if not text:
        return _upstream(self, method)
    counts = [int(x) for x in text.split("-")]
    stages = self._topo.get_dim("pipe")
    if len(counts) != stages:
        raise ValueError(f"DS_PIPE_PARTITION has {len(counts)} stages, the pipeline {stages}")
    kind = method.split(":", 1)[1] if method.lower().startswith("type:") else "transformer"
    self.parts = _bounds(self._find_layer_type(kind), len(self._layer_specs), counts)
    stage = self._topo.get_coord(self.global_rank).pipe
    self._set_bounds(start=self.parts[stage], stop=self.parts[stage + 1])


_pipe_module.PipelineModule._partition_layers = _partition_layers
)";
}

/// The estimate of the plan with `partition` instead of its own (same point and placement).
Estimate estimate_with(const LaunchPlan& plan, const std::vector<int>& partition) {
  const LayerCosts costs = layer_costs(*plan.ctx, plan.point);
  return estimate(*plan.ctx, plan.point, costs, plan.placement, partition);
}

std::vector<int> pipeline_partition_of(const std::vector<int>& transformer) {
  std::vector<int> out = transformer;
  out.front() += 1;
  out.back() += 1;
  return out;
}

void check_rules(const Facts& f, const std::vector<LaunchFramework>& fw) {
  const DesignPoint& p = f.p;
  if (f.ctx.global_batch % (p.mbs * p.dp) != 0) {
    throw InputError(fmt::format("cannot emit: global batch {} is not a multiple of micro-batch {} x "
                                 "data-parallel {} (DeepSpeed and Megatron require train_batch_size "
                                 "== micro x accumulation x dp)",
                                 f.ctx.global_batch, p.mbs, p.dp));
  }
  if (zero_stage(p.method) >= 2 && p.pp > 1) {
    throw InputError(fmt::format("cannot emit: DeepSpeed's PipelineEngine rejects ZeRO stage {} with "
                                 "pipeline parallelism (pp {}); ZeRO-2/3 need pp 1",
                                 zero_stage(p.method), p.pp));
  }
  (void)fw;
  if (f.model.num_attention_heads % p.tp != 0) {
    throw InputError(fmt::format("cannot emit: Megatron requires num_attention_heads ({}) to be a "
                                 "multiple of tensor-model-parallel-size ({})",
                                 f.model.num_attention_heads, p.tp));
  }
  if (f.plan.estimate.oom) {
    throw InputError(fmt::format("cannot emit: the plan needs {:.2f} GiB on its fullest stage, more "
                                 "than its GPU holds (OOM); choose a feasible row with --rank",
                                 f.plan.estimate.gpumem_gib));
  }
}

} // namespace

std::vector<int> transformer_layers_per_stage(const std::vector<int>& partition) {
  std::vector<int> out = partition;
  out.front() -= 1;
  out.back() -= 1;
  return out;
}

std::string megatron_layout(const std::vector<int>& partition) {
  const std::vector<int> t = transformer_layers_per_stage(partition);
  std::vector<std::string> stages;
  for (std::size_t s = 0; s < t.size(); ++s) {
    std::string text = s == 0 ? "E" : "";
    if (t[s] == 1) {
      text += "t";
    } else if (t[s] > 1) {
      text += fmt::format("t*{}", t[s]);
    }
    if (s + 1 == t.size()) {
      text += "L";
    }
    stages.push_back(text);
  }
  return join_lines(stages, "|");
}

std::vector<int> deepspeed_default_split(int num_layers, int pp) {
  std::vector<int> out(static_cast<std::size_t>(pp), num_layers / pp);
  for (int s = 0; s < num_layers % pp; ++s) {
    ++out[static_cast<std::size_t>(s)];
  }
  return out;
}

std::vector<std::string> placeholder_hosts(const Cluster& cluster, const Placement& placement) {
  std::map<int, int> seen;
  std::vector<std::string> out;
  for (const int g : placement) {
    const int k = ++seen[g];
    out.push_back(fmt::format("{}-node{:02d}", lower_alnum(cluster.groups[static_cast<std::size_t>(g)].gpu), k));
  }
  return out;
}

std::vector<LaunchFramework> launch_frameworks(const DesignPoint& p) {
  if (flavour_of(p.method) == Flavour::deepspeed) {
    return {LaunchFramework::megatron_deepspeed};
  }
  if (p.method == DpMethod::fsdp && p.pp > 1) {
    // Megatron-LM asserts pipeline_model_parallel_size == 1 with --use-torch-fsdp2.
    return {LaunchFramework::torchtitan};
  }
  return {LaunchFramework::megatron_lm, LaunchFramework::torchtitan};
}

const std::vector<std::string>& launch_file_names() {
  static const std::vector<std::string> names{
      "PLAN.md", "hostfile", "slurm.sbatch", "ds_config.json", "megatron_deepspeed_args.sh",
      "launch_deepspeed.sh", "ds_explicit_partition.py", "megatron_lm_args.sh",
      "launch_megatron_lm.sh", "torchtitan.toml", "launch_torchtitan.sh"};
  return names;
}

std::vector<LaunchFile> launch_files(const LaunchPlan& plan) {
  const EstimateContext& ctx = *plan.ctx;
  Facts f{plan, ctx, ctx.cluster, ctx.model, plan.point, {}, {}, {}, 0, 0, {}};
  f.transformer = transformer_layers_per_stage(plan.estimate.partition);
  f.hosts = placeholder_hosts(ctx.cluster, plan.placement);
  f.gpus_per_node = ctx.cluster.gpus_per_node;
  f.nodes = static_cast<int>(plan.placement.size());
  f.stage_gpu = stage_gpu_types(plan.point.pp, plan.placement, ctx.slowness);
  f.precision = precision_flag(plan);
  auto fw = launch_frameworks(plan.point);
  check_rules(f, fw);
  std::vector<std::string> notes;
  if (!llama_block(f.model)) {
    // torchtitan ships Llama-family models only.
    if (fw == std::vector<LaunchFramework>{LaunchFramework::torchtitan}) {
      throw InputError(fmt::format("cannot emit: Megatron-LM rejects --use-torch-fsdp2 with "
                                   "pipeline parallelism (pp {}) and torchtitan has no GPT model "
                                   "for {}",
                                   f.p.pp, f.model.name));
    }
    std::erase(fw, LaunchFramework::torchtitan);
    notes.push_back("No torchtitan config: torchtitan ships Llama-family models only.");
  }

  std::vector<LaunchFile> files;
  std::vector<std::string> listing;
  const auto add = [&](std::string name, std::string text, bool exe, std::string what) {
    listing.push_back(fmt::format("- `{}`: {}", name, what));
    files.push_back(LaunchFile{std::move(name), std::move(text), exe});
  };
  add("hostfile", hostfile_text(f), false,
      "the plan's nodes in rank order (line order = stage order), DeepSpeed hostfile syntax, with "
      "node type and stages per line; replace the placeholder names");
  const bool uneven_vs_ds =
      f.transformer != deepspeed_default_split(static_cast<int>(f.model.num_layers), f.p.pp);
  const int T = f.p.tp * f.p.dp;
  const int G = f.gpus_per_node;
  if (T % G != 0 && G % T != 0) {
    notes.push_back(fmt::format("A stage has tp x dp = {} GPUs and a node {}: stages straddle "
                                "nodes, so a stage may span two node types.",
                                T, G));
  }
  std::string primary_launcher;
  for (const LaunchFramework w : fw) {
    if (w == LaunchFramework::megatron_deepspeed) {
      add("ds_config.json", ds_config_text(f), false,
          fmt::format("DeepSpeed config: train_batch_size {} = micro {} x accumulation {} x dp {}, "
                      "ZeRO stage {}",
                      ctx.global_batch, f.p.mbs, ctx.global_batch / (f.p.mbs * f.p.dp), f.p.dp,
                      zero_stage(f.p.method)));
      std::string extra;
      if (f.p.pp > 1 && uneven_vs_ds) {
        const auto closest = deepspeed_default_split(static_cast<int>(f.model.num_layers), f.p.pp);
        const Estimate e = estimate_with(plan, pipeline_partition_of(closest));
        const double d = e.step_s - plan.estimate.step_s;
        notes.push_back(fmt::format(
            "Megatron-DeepSpeed cannot express the planned split {} (transformer layers per stage): "
            "it always balances transformer layers ('type:transformer'), which gives {}. "
            "`ds_explicit_partition.py` (a monkeypatch, not upstream; `launch_deepspeed.sh` sets "
            "DS_PIPE_PARTITION) runs the planned split; without it the job runs {}, estimated "
            "{:.4f} s/step instead of {:.4f} ({:+.4f} s, {:+.1f} %){}.",
            fmt::join(f.transformer, "-"), fmt::join(closest, "-"), fmt::join(closest, "-"),
            e.step_s, plan.estimate.step_s, d, 100.0 * d / plan.estimate.step_s,
            e.oom ? fmt::format(", and it does not fit in memory ({:.2f} GiB)", e.gpumem_gib) : ""));
        extra = fmt::format("# Planned split (transformer layers per stage): {}; see PLAN.md.\n",
                            fmt::join(f.transformer, "-"));
      }
      add("megatron_deepspeed_args.sh",
          args_file(f, megatron_deepspeed_args(f), "Megatron-DeepSpeed (master 4efb479d)", extra),
          false, "Megatron-DeepSpeed arguments: model shape, parallel sizes, batch, precision");
      add("launch_deepspeed.sh", launch_deepspeed_text(f, f.p.pp > 1 && uneven_vs_ds), true,
          "per-node DeepSpeed launcher (--no_ssh, node rank = hostfile line)");
      if (f.p.pp > 1 && uneven_vs_ds) {
        add("ds_explicit_partition.py", shim_text(), false,
            "monkeypatch that gives DeepSpeed's pipeline the planned per-stage layer counts");
      }
      primary_launcher = primary_launcher.empty() ? "launch_deepspeed.sh" : primary_launcher;
    } else if (w == LaunchFramework::megatron_lm) {
      std::string extra;
      if (f.p.pp > 1 && std::adjacent_find(f.transformer.begin(), f.transformer.end(),
                                           std::not_equal_to<>()) != f.transformer.end()) {
        extra = "# The uneven split uses --pipeline-model-parallel-layout (megatron-core >= 0.13):\n"
                "# E = embedding, t = transformer layer, L = loss, | between stages.\n";
        notes.push_back(fmt::format("Megatron-LM expresses the split exactly as "
                                    "--pipeline-model-parallel-layout '{}' (megatron-core >= 0.13).",
                                    megatron_layout(plan.estimate.partition)));
      }
      if (f.p.method == DpMethod::dp && f.p.dp > 1) {
        extra += "# Plain data parallelism: no --use-distributed-optimizer (that would be ZeRO-1-like).\n";
      }
      add("megatron_lm_args.sh", args_file(f, megatron_lm_args(f), "Megatron-LM (core 0.20)", extra),
          false, "Megatron-LM arguments: model shape, parallel sizes, batch, precision, layout");
      add("launch_megatron_lm.sh",
          launch_torchrun_text(
              f, "Megatron-LM",
              "source \"$PLAN_DIR/megatron_lm_args.sh\"\n" +
                  fmt::format("exec torchrun --nnodes {} --nproc-per-node {} --node-rank "
                              "\"$NODE_RANK\" \\\n  --master-addr \"$MASTER_ADDR\" --master-port "
                              "{} \\\n  pretrain_gpt.py \"${{MEGATRON_ARGS[@]}}\"\n",
                              f.nodes, G, kMasterPort)),
          true, "per-node torchrun launcher for Megatron-LM (run from a Megatron-LM checkout)");
      primary_launcher = primary_launcher.empty() ? "launch_megatron_lm.sh" : primary_launcher;
    } else {
      add("torchtitan.toml", torchtitan_toml(f), false,
          fmt::format("torchtitan v0.2.x config ({} over dp, tp, pp, the planned split as "
                      "module_fqns_per_model_part)",
                      f.p.method == DpMethod::fsdp ? "FSDP2" : "DDP"));
      add("launch_torchtitan.sh",
          launch_torchrun_text(
              f, "torchtitan v0.2.x",
              fmt::format("exec torchrun --nnodes {} --nproc-per-node {} --node-rank \"$NODE_RANK\" "
                          "\\\n  --master-addr \"$MASTER_ADDR\" --master-port {} \\\n  -m "
                          "torchtitan.train --job.config_file \"$PLAN_DIR/torchtitan.toml\"\n",
                          f.nodes, G, kMasterPort)),
          true, "per-node torchrun launcher for torchtitan");
      if (f.p.method == DpMethod::fsdp && f.p.pp > 1) {
        notes.push_back("Megatron-LM rejects --use-torch-fsdp2 with pipeline parallelism, so this "
                        "FSDP plan is written for torchtitan only (FSDP2 under a pipeline keeps "
                        "parameters gathered between forward and backward, ZeRO-2-like).");
      }
      if (f.p.pp > 1 && f.p.num_micro_batches < f.p.pp) {
        notes.push_back(fmt::format("torchtitan warns when micro-batches ({}) are fewer than "
                                    "stages ({}): the pipeline has a bubble (the estimate includes it).",
                                    f.p.num_micro_batches, f.p.pp));
      }
      primary_launcher = primary_launcher.empty() ? "launch_torchtitan.sh" : primary_launcher;
    }
  }
  add("slurm.sbatch", slurm_text(f, primary_launcher), true,
      fmt::format("Slurm batch script running `{}` once per node", primary_launcher));

  // PLAN.md
  const Estimate& e = plan.estimate;
  std::string md = "# zerosearch plan\n\n";
  std::string stages;
  for (std::size_t s = 0; s < f.stage_gpu.size(); ++s) {
    stages += fmt::format("{}{}", s == 0 ? "" : ", ", ctx.cluster.groups[static_cast<std::size_t>(f.stage_gpu[s])].gpu);
  }
  md += fmt::format(
      "Train {} on {} ({} GPUs, {} per node) with {} ({}), tensor parallel {}, pipeline parallel {} "
      "and data parallel {}: each step of {} sequences runs {} micro-batches of {} per data-parallel "
      "replica (train_batch_size {} = {} x {} x {}). Pipeline stage s owns the tp x dp = {} GPUs "
      "of ranks s*{}..(s+1)*{}-1, so the hostfile's line order places the stages on {} in that "
      "order. The layers per stage are {} (pipeline layers, the embedding counted with stage 0 and "
      "the output layer with stage {}), i.e. {} transformer layers. zerosearch estimates {:.4f} s "
      "per step ({:.4f} s of pipeline, {:.4f} s of data-parallel sync, {:.4f} s of embedding sync), "
      "{:.2f} GiB on the fullest GPU and ${:.6f} per step. Source: {}.\n\n",
      f.model.name, compress_placement(ctx.cluster, plan.placement), ctx.cluster.world_size(), G,
      to_string(f.p.method), info(f.p.method).summary, f.p.tp, f.p.pp, f.p.dp, ctx.global_batch,
      f.p.num_micro_batches, f.p.mbs, ctx.global_batch, f.p.mbs, f.p.num_micro_batches, f.p.dp, T, T,
      T, stages, fmt::join(e.partition, "-"), f.p.pp - 1, fmt::join(f.transformer, "-"), e.step_s,
      e.pipeline_s, e.dp_sync_s, e.embedding_sync_s, e.gpumem_gib, e.price_per_step_usd,
      plan.origin);
  md += "## Files\n\n" + join_lines(listing, "\n") + "\n\n";
  md += "## Before you launch\n\n"
        "- Replace the placeholder host names in `hostfile` and `slurm.sbatch` with real hosts of "
        "the same GPU type, keeping the line order.\n"
        "- Set `TOKENIZER_MODEL` and `DATA_PREFIX`; run the launch script from the framework's "
        "checkout (`pretrain_gpt.py` for Megatron, `torchtitan` installed for torchtitan).\n"
        + recompute_note(f.p);
  if (f.p.offload != Offload::none) {
    md += fmt::format("- Offload: {} to host memory (DeepSpeed `offload_optimizer`{} in "
                      "`ds_config.json`), as estimated.\n",
                      to_string(f.p.offload),
                      f.p.offload == Offload::optimizer_params ? " and `offload_param`" : "");
  }
  if (f.p.virtual_stages > 1) {
    md += fmt::format("- Interleaved 1F1B with {} model chunks per pipeline rank, as estimated.\n",
                      f.p.virtual_stages);
  }
  if (f.p.dtype == Dtype::fp8) {
    md += "- fp8: the estimate assumes fp8 linear layers (Megatron-LM with Transformer Engine: "
          "`--fp8-format hybrid`; torchtitan: the float8 converter); add them, the files set "
          "bf16.\n";
  }
  if (f.precision == "--bf16") {
    md += "- Precision: bf16 (16-bit, as estimated); use --fp16 on GPUs without bf16.\n";
  }
  if (!notes.empty()) {
    md += "\n## Notes\n\n";
    for (const auto& n : notes) {
      md += "- " + n + "\n";
    }
  }
  files.insert(files.begin(), LaunchFile{"PLAN.md", md, false});
  return files;
}

void write_launch_file(const fs::path& path, const std::string& text, bool executable) {
  // The rules of every output (io/output_file.hpp): atomic for files, through for devices.
  const OutputTarget target = check_output(path, "output");
  write_output(target, [&](std::ostream& out) { out << text; });
  if (executable && target.kind != OutputKind::stream) {
    std::error_code ec;
    fs::permissions(target.resolved,
                    fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add, ec);
  }
}

void check_launch_dir(const fs::path& dir) {
  std::error_code ec;
  if (dir.empty()) {
    throw InputError("--emit needs a folder name");
  }
  if (!fs::exists(dir, ec)) {
    return;
  }
  if (!fs::is_directory(dir, ec)) {
    throw InputError(fmt::format("--emit '{}' is a file, not a folder", dir.string()));
  }
  const auto& ours = launch_file_names();
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::find(ours.begin(), ours.end(), name) == ours.end()) {
      throw InputError(fmt::format("--emit '{}' is not empty and holds '{}', which --emit does not "
                                   "write; give a new or empty folder",
                                   dir.string(), name));
    }
  }
  if (ec) {
    throw InputError(fmt::format("--emit '{}': {}", dir.string(), ec.message()));
  }
}

void write_launch_files(const fs::path& dir, const std::vector<LaunchFile>& files) {
  check_launch_dir(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw InputError(fmt::format("cannot create '{}': {}", dir.string(), ec.message()));
  }
  for (const LaunchFile& file : files) {
    write_launch_file(dir / file.name, file.text, file.executable);
  }
  for (const std::string& name : launch_file_names()) {
    const bool written = std::any_of(files.begin(), files.end(),
                                     [&](const LaunchFile& lf) { return lf.name == name; });
    if (!written) {
      fs::remove(dir / name, ec);
    }
  }
}

} // namespace zerosearch
