// Megatron-DeepSpeed (deepspeedai/Megatron-DeepSpeed master 4efb479d: megatron/arguments.py)
// launched by DeepSpeed's per-node launcher (deepspeed/launcher/runner.py, --no_ssh).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "writer.hpp"
#include "zerosearch/model/zero_bubble.hpp"
#include "zerosearch/core/error.hpp"

namespace zerosearch::launch {

std::vector<int> pipeline_partition_of(const std::vector<int>& transformer) {
  std::vector<int> out = transformer;
  out.front() += 1;
  out.back() += 1;
  return out;
}

namespace {

// Megatron's sequence parallelism (--sequence-parallel, tp > 1) splits the norms' inputs over
// the tp ranks' sequence slices, so each rank's gradient of a norm weight (and of a
// row-parallel bias) is a partial sum that must be summed over tp: the parameters carry
// `sequence_parallel = True` (megatron/model/fused_layer_norm.py, rmsnorm.py) and
// MegatronOptimizer.allreduce_layernorm_grads does the sum (megatron/optimizer/optimizer.py
// 257-277). Under --deepspeed that optimizer is not used: megatron/training.py train_step
// calls optimizer.reduce_model_grads only `if not args.deepspeed` (731-732; DeepSpeed's
// pipeline engine, train_batch, bypasses it too), and DeepSpeed never reads the attribute:
// ZeRO 1/2 reduce gradients over the data-parallel group, and ZeRO-3 reduce-scatters each
// gradient over its partition group in a gradient hook and frees param.grad
// (deepspeed/runtime/zero/stage3.py create_reduce_and_remove_grad_hooks, 0.19.6 edaa7221), so
// no later tp sum is possible either. Read at microsoft/Megatron-DeepSpeed f4157bea and
// deepspeedai/Megatron-DeepSpeed 4efb479d (whose only later change, PR #468, tags
// torch.nn.LayerNorm's weight with the same attribute). The tp ranks' norm weights drift apart:
// Megatron-DeepSpeed issues #170 ("Does DeepSpeed work with sequence parallel?": "Not.") and
// #223 (LayerNorm weights differ between tp ranks of a --sequence-parallel checkpoint).
// Every ZeRO stage, so no file is written for a plan that assumed it (docs/launch.md).
std::string sequence_parallel_refusal(const Facts& f) {
  const NativeSettings* st = native_settings(f);
  if (st == nullptr || !st->sequence_parallel || f.p.tp <= 1) {
    return {};
  }
  return fmt::format("no Megatron-DeepSpeed files: the plan assumes Megatron's sequence "
                     "parallelism (tp {}), whose norm-weight gradients Megatron-DeepSpeed sums "
                     "over tp only without --deepspeed (megatron/training.py train_step, "
                     "optimizer.reduce_model_grads) and DeepSpeed's ZeRO never does, so the tp "
                     "ranks' norm weights would drift apart; plan with --sequence_parallel off",
                     f.p.tp);
}

std::string refusal(const Facts& f) {
  if (f.p.pp > 1 && is_split_schedule(f.p.schedule)) {
    return fmt::format("no Megatron-DeepSpeed files: DeepSpeed's pipeline engine runs its own 1F1B (TrainSchedule in deepspeed/runtime/pipe/schedule.py), not the {} schedule",
                       to_string(f.p.schedule));
  }
  if (std::string why = pipeline_layout_refusal(f, "no Megatron-DeepSpeed files",
                                                "Megatron-DeepSpeed (DeepSpeed's pipeline "
                                                "engine, which has no layout argument)");
      !why.empty()) {
    return why;
  }
  if (std::string why = recompute_modules_refusal(f, "no Megatron-DeepSpeed files",
                                                  "Megatron-DeepSpeed (its selective recompute "
                                                  "is core attention's only)");
      !why.empty()) {
    return why;
  }
  if (std::string why = interleaved_refusal(f, "no Megatron-DeepSpeed files"); !why.empty()) {
    return why;
  }
  switch (f.launch.kind) {
  case DpLaunchKind::deepspeed_zero: break;
  case DpLaunchKind::replicate:
  case DpLaunchKind::fsdp:
    return fmt::format("no Megatron-DeepSpeed files: {} is not a ZeRO method",
                       to_string(f.p.method));
  }
  if (std::string why = fused_loss_refusal(f, "Megatron-DeepSpeed"); !why.empty()) {
    return why;
  }
  if (std::string why = deepspeed_master_weights_refusal(f, "no Megatron-DeepSpeed files");
      !why.empty()) {
    return why;
  }
  if (std::string why = moe_a2a_overlap_refusal(f, "no Megatron-DeepSpeed files",
                                                "Megatron-DeepSpeed");
      !why.empty()) {
    return why;
  }
  if (std::string why = moe_dispatcher_refusal(f, "no Megatron-DeepSpeed files",
                                               "Megatron-DeepSpeed");
      !why.empty()) {
    return why;
  }
  if (f.p.cp > 1 && f.p.cp_comm != CpComm::a2a) {
    return fmt::format("no Megatron-DeepSpeed files: it splits sequences with DeepSpeed-Ulysses "
                       "only (--ds-sequence-parallel-size, an all-to-all), not {} (cp {} {})",
                       f.p.cp_comm == CpComm::ring ? "ring attention" : "all-gather attention",
                       f.p.cp, to_string(f.p.cp_comm));
  }
  if (f.p.cp > 1) {
    const NativeSettings* st = native_settings(f);
    if (st != nullptr && st->sequence_parallel && f.p.tp > 1) {
      // megatron/arguments.py (4efb479d), --ds-sequence-parallel-size: 'Cannot be combined with
      // "--sequence-parallel", which enables Megatron-LM's sequence parallel.'
      return "no Megatron-DeepSpeed files: --ds-sequence-parallel-size cannot be combined with "
             "--sequence-parallel (megatron/arguments.py), and the plan has both (tp > 1); plan "
             "with --sequence_parallel off";
    }
  }
  if (std::string why = sequence_parallel_refusal(f); !why.empty()) {
    return why;
  }
  const ModelSpec& m = f.model;
  if (m.qkv_bias && !m.mlp_bias) {
    // megatron/arguments.py has --disable-bias-linear (all linear biases) and no QKV-only bias.
    return fmt::format("Megatron-DeepSpeed cannot build {}: it has no QKV-only bias "
                       "(--add-qkv-bias is Megatron-LM's; megatron/arguments.py 4efb479d has "
                       "--disable-bias-linear for all linear layers only)",
                       m.name);
  }
  if (m.is_moe() && (m.moe_ffn_hidden_size != m.ffn_hidden_size ||
                     m.shared_expert_ffn_hidden_size != 0)) {
    return fmt::format("Megatron-DeepSpeed cannot build {}: its experts are --ffn-hidden-size "
                       "wide and it has no shared expert",
                       m.name);
  }
  if (m.is_moe() && f.launch.zero_stage == 3) {
    // deepspeed/runtime/engine.py, _validate_zero3_moe_compatibility (DeepSpeed 0.19.6):
    // Megatron-DeepSpeed's experts are deepspeed.moe.layer.MoE.
    return "no Megatron-DeepSpeed files: its experts are DeepSpeed's native MoE layers, which "
           "ZeRO stage 3 rejects ('Native DeepSpeed MoE is not supported with ZeRO Stage 3', "
           "deepspeed/runtime/engine.py)";
  }
  if (m.is_moe() && f.p.etp != 1 && f.p.etp != f.p.tp) {
    return fmt::format("Megatron-DeepSpeed cannot split experts over etp {} with tp {}: its "
                       "experts are whole (etp 1) or split like the dense MLP "
                       "(--enable-expert-tensor-parallelism, etp = tp)",
                       f.p.etp, f.p.tp);
  }
  return {};
}

void rules(const Facts& f) {
  const ModelSpec& m = f.model;
  // megatron/arguments.py:446-448 (4efb479d).
  if (m.num_attention_heads % m.num_key_value_heads != 0) {
    throw InputError(fmt::format("cannot emit: Megatron-DeepSpeed requires num_attention_heads "
                                 "divisible by num_key_value_heads ({} and {})",
                                 m.num_attention_heads, m.num_key_value_heads));
  }
  // megatron/model/transformer.py:566-567 splits the key/value heads over tp with
  // core.utils.divide, which asserts '{kv} is not divisible by {tp}' (megatron/core/utils.py:18).
  if (m.num_key_value_heads % f.p.tp != 0) {
    throw InputError(fmt::format("cannot emit: Megatron-DeepSpeed splits the key/value heads over "
                                 "tp: '{} is not divisible by {}' (megatron/model/transformer.py)",
                                 m.num_key_value_heads, f.p.tp));
  }
}

void model_shape(Args& a, const Facts& f) {
  const ModelSpec& m = f.model;
  a.add("--num-layers", m.num_layers);
  a.add("--hidden-size", m.hidden_size);
  a.add("--ffn-hidden-size", m.ffn_hidden_size);
  a.add("--num-attention-heads", m.num_attention_heads);
  a.add("--num-key-value-heads", m.num_key_value_heads);
  if (m.head_dim != m.hidden_size / m.num_attention_heads) {
    a.add("--kv-channels", m.head_dim);
  }
  a.add("--seq-length", m.sequence_length);
  a.add("--max-position-embeddings", std::max(m.sequence_length, m.max_position_embeddings));
  if (m.norm == Norm::rmsnorm) {
    a.add("--normalization", "rmsnorm");
  }
  if (m.gated_mlp) {
    a.add("--swiglu");
  }
  if (!m.learned_position_embeddings) {
    a.add("--use-rotary-position-embeddings");
  }
  if (!m.tied_embeddings) {
    a.add("--untie-embeddings-and-output-weights");
  }
  if (!m.mlp_bias && !m.attention_output_bias && !m.qkv_bias) {
    a.add("--disable-bias-linear");
  }
  a.add("--no-query-key-layer-scaling");
  if (m.is_moe()) {
    // megatron/arguments.py:608-616: experts per MoE layer, top-k, every layer an MoE layer.
    a.add("--num-experts", m.num_experts);
    a.add("--topk", m.experts_per_token);
    a.add("--expert-interval", 1);
    a.add("--moe-expert-parallel-size", f.p.ep);
    if (f.p.etp > 1) {
      // arguments.py _add_distributed_args: experts split like the dense MLP (etp = tp).
      a.add("--enable-expert-tensor-parallelism");
    }
  }
  a.add("--attention-dropout", "0");
  a.add("--hidden-dropout", "0");
}

Args args(const Facts& f) {
  Args a;
  a.add("--tensor-model-parallel-size", f.p.tp);
  a.add("--pipeline-model-parallel-size", f.p.pp);
  if (f.p.pp == 1) {
    a.add("--no-pipeline-parallel");
  }
  if (f.p.cp > 1) {
    // DeepSpeed-Ulysses over cp ranks (megatron/arguments.py: --ds-sequence-parallel-size;
    // dp = world / (tp pp sp)).
    a.add("--ds-sequence-parallel-size", f.p.cp);
  }
  model_shape(a, f);
  a.add("--micro-batch-size", f.p.mbs);
  a.add("--global-batch-size", f.ctx.global_batch);
  switch (f.precision) {
  case Precision::bf16: a.add("--bf16"); break;
  case Precision::fp16: a.add("--fp16"); break;
  case Precision::fp32: break;
  }
  const ModelFamily* fam = model_family(f.model.name);
  a.add("--tokenizer-type", fam != nullptr ? fam->megatron_ds_tokenizer : "HFTokenizer");
  if (f.model.learned_position_embeddings) {
    a.add("--vocab-file", "\"${VOCAB_FILE:?set VOCAB_FILE}\"");
    a.add("--merge-file", "\"${MERGE_FILE:?set MERGE_FILE}\"");
  } else {
    a.add("--tokenizer-model", "\"${TOKENIZER_MODEL:?set TOKENIZER_MODEL}\"");
  }
  a.add("--data-path", "\"${DATA_PREFIX:?set DATA_PREFIX}\"");
  a.add("--data-impl", "mmap");
  a.add("--split", "949,50,1");
  recompute_args(a, f, true);
  // No --sequence-parallel: a plan that assumed it is refused (sequence_parallel_refusal).
  a.add("--optimizer", "adam");
  training_args(a);
  a.add("--deepspeed");
  a.add("--deepspeed_config", "\"$PLAN_DIR/ds_config.json\"");
  a.add("--zero-stage", f.launch.zero_stage);
  return a;
}

std::string launch_text(const Facts& f, bool split) {
  std::string out = "#!/bin/bash\n# Megatron-DeepSpeed + DeepSpeed launcher, one launcher per node "
                    "(--no_ssh).\n# " + plan_line(f) +
                    "\n# Run on every node of the hostfile (slurm.sbatch does it), or run "
                    "`deepspeed --hostfile hostfile ...`\n# without --no_ssh/--node_rank once, on "
                    "the first node (pdsh).\n"
                    "# MEGATRON_DS: a Megatron-DeepSpeed checkout (default: the current folder).\n"
                    "set -euo pipefail\n";
  out += node_rank_lines();
  out += "MEGATRON_DS=${MEGATRON_DS:-$PWD}\n";
  out += "source \"$PLAN_DIR/megatron_deepspeed_args.sh\"\n";
  if (f.p.tp > 1) {
    out += "export CUDA_DEVICE_MAX_CONNECTIONS=1  # tensor parallelism overlaps on one stream\n";
  }
  if (split) {
    out += "# The planned split needs ds_explicit_partition.py (see PLAN.md): pretrain_gpt.py must\n"
           "# `import ds_explicit_partition` before building the model.\n";
    out += fmt::format("export DS_PIPE_PARTITION={}\n", fmt::join(f.transformer, "-"));
    out += "export PYTHONPATH=\"$PLAN_DIR${PYTHONPATH:+:$PYTHONPATH}\"\n";
  }
  out += fmt::format("exec deepspeed --hostfile \"$HOSTFILE\" --no_ssh --node_rank \"$NODE_RANK\" "
                     "\\\n  --master_addr \"$MASTER_ADDR\" --master_port {} \\\n  "
                     "\"$MEGATRON_DS/pretrain_gpt.py\" \"${{MEGATRON_ARGS[@]}}\"\n",
                     kMasterPort);
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

Estimate estimate_with(const LaunchPlan& plan, const std::vector<int>& partition) {
  const LayerCosts costs = layer_costs(*plan.ctx, plan.point);
  return estimate(*plan.ctx, plan.point, costs, plan.placement, partition);
}

void files(const Facts& f, Output& out) {
  const auto closest = deepspeed_default_split(static_cast<int>(f.model.num_layers), f.p.pp);
  const bool split = f.p.pp > 1 && f.transformer != closest;
  std::string extra;
  if (split) {
    const Estimate e = estimate_with(f.plan, pipeline_partition_of(closest));
    const double d = e.step_s - f.plan.estimate.step_s;
    out.notes.push_back(fmt::format(
        "Megatron-DeepSpeed cannot express the planned split {} (transformer layers per stage): "
        "it always balances transformer layers ('type:transformer'), which gives {}. "
        "`ds_explicit_partition.py` (a monkeypatch, not upstream; `launch_deepspeed.sh` sets "
        "DS_PIPE_PARTITION) runs the planned split; without it the job runs {}, estimated "
        "{:.4f} s/step instead of {:.4f} ({:+.4f} s, {:+.1f} %){}.",
        fmt::join(f.transformer, "-"), fmt::join(closest, "-"), fmt::join(closest, "-"),
        e.step_s, f.plan.estimate.step_s, d, 100.0 * d / f.plan.estimate.step_s,
        e.oom ? fmt::format(", and it does not fit in memory ({:.2f} GiB)", e.gpumem_gib) : ""));
    extra = fmt::format("# Planned split (transformer layers per stage): {}; see PLAN.md.\n",
                        fmt::join(f.transformer, "-"));
  }
  const ModelFamily* fam = model_family(f.model.name);
  if (!f.model.learned_position_embeddings && (fam == nullptr || fam->rotary_base != 10000.0)) {
    out.notes.push_back(fmt::format(
        "Megatron-DeepSpeed has no rotary-base flag (megatron/model/rotary_pos_embedding.py "
        "uses 10000): {} was trained with {}; the step time and memory are unaffected, the "
        "positions are not those of the published model.",
        f.model.name,
        fam != nullptr ? fmt::format("rope_theta {:g}", fam->rotary_base) : "an unknown rope_theta"));
  }
  out.add("megatron_deepspeed_args.sh",
          args_file(f, args(f), "Megatron-DeepSpeed (master 4efb479d)", extra), false,
          "Megatron-DeepSpeed arguments: model shape, parallel sizes, batch, precision");
  out.add("launch_deepspeed.sh", launch_text(f, split), true,
          "per-node DeepSpeed launcher (--no_ssh, node rank = hostfile line); "
          "MEGATRON_DS = the Megatron-DeepSpeed checkout holding pretrain_gpt.py");
  if (split) {
    out.add("ds_explicit_partition.py", shim_text(), false,
            "monkeypatch that gives DeepSpeed's pipeline the planned per-stage layer counts");
  }
}

} // namespace

const Writer& megatron_deepspeed_writer() {
  static const Writer w{"megatron_deepspeed",
                        "Megatron-DeepSpeed master (read at 4efb479d) with DeepSpeed 0.19.x",
                        refusal, rules, files};
  return w;
}

} // namespace zerosearch::launch
