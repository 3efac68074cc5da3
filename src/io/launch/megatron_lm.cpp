// Megatron-LM (NVIDIA/Megatron-LM, megatron-core 0.13 .. 0.20; read at d98e8a64):
// megatron/training/arguments.py (validate_args) and the config dataclasses its flags come from
// (megatron/core/transformer/transformer_config.py). docs/launch.md.
#include <fmt/format.h>

#include "writer.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/model/zero_bubble.hpp"
#include "zerosearch/core/error.hpp"

namespace zerosearch::launch {

namespace {

/// The estimate's interleaved model chunks (interleaved_chunks, chunk k on rank k % pp) as
/// Megatron-LM's --pipeline-model-parallel-layout: chunk k is entry k, which megatron-core
/// places on pp rank k % pp, virtual stage k / pp (PipelineParallelLayerLayout.__init__).
std::string interleaved_layout(const Facts& f) {
  std::vector<int> entries =
      interleaved_chunks(static_cast<int>(f.model.num_layers), f.p.pp, f.p.virtual_stages);
  entries.front() += 1; // the embedding
  entries.back() += 1;  // the loss
  return megatron_layout(entries);
}

/// zero1 is ZeRO-1 memory (fp32 master weights and Adam's moments / dp, gradients whole,
/// reduce-scattered, the parameters all-gathered after the step: docs/native.md §3, §4), which
/// Megatron-Core's distributed optimizer runs (--use-distributed-optimizer: DistributedOptimizer
/// shards the fp32 main parameters and states over the data-parallel group, and the gradient
/// buffer is reduce-scattered and the parameters all-gathered, param_and_grad_buffer.py at
/// d98e8a64). Why it cannot run a zero1 plan as estimated; empty when it can.
std::string distributed_optimizer_refusal(const Facts& f) {
  const NativeSettings* st = native_settings(f);
  if (st == nullptr) {
    return "no Megatron-LM files: zero1 was estimated from DeepSpeed's measured profiles "
           "(--estimator zerosearch); Megatron-DeepSpeed runs it";
  }
  if (f.p.offload != Offload::none) {
    return fmt::format("no Megatron-LM files: the plan was estimated with DeepSpeed's ZeRO-Offload "
                       "(--offload {}: DeepSpeedCPUAdam on the host); Megatron-DeepSpeed runs it",
                       to_string(f.p.offload));
  }
  if (st->grad_accum_fp32) {
    return "no Megatron-LM files: the plan was estimated with DeepSpeed's BF16_Optimizer "
           "(--grad_accum_fp32 on: fp32 accumulation buffers beside the bf16 gradients, "
           "all-reduced); Megatron-DeepSpeed runs it";
  }
  if (st->grad_reduce_fp32.value_or(false) && f.precision != Precision::fp32) {
    // megatron/core/distributed/param_and_grad_buffer.py group_params_for_buffers (d98e8a64):
    // grad_dtype = torch.float if grad_reduce_in_fp32 else param.dtype.
    return "no Megatron-LM files: the plan was estimated with --grad_reduce_fp32 on and zero1's "
           "16-bit gradients (DeepSpeed keeps 2 bytes), and Megatron-LM keeps its gradient "
           "buffer in the reduction's dtype (4 bytes: param_and_grad_buffer.py); plan zero1 "
           "with --grad_reduce_fp32 off or unset, or Megatron-DeepSpeed runs it";
  }
  return {};
}

std::string refusal(const Facts& f) {
  if (f.p.cp > 1 && f.p.cp_comm == CpComm::torch_allgather) {
    return fmt::format("no Megatron-LM files: cp {} torch_allgather is PyTorch's context_parallel "
                       "(torchtitan); Megatron-LM's all-gather is --cp_comm allgather",
                       f.p.cp);
  }
  if (f.p.pp > 1 && is_split_schedule(f.p.schedule)) {
    return fmt::format("no Megatron-LM files: the {} schedule splits the backward into input and weight gradients, which the Megatron-LM read here (d98e8a64) does not schedule (its pipeline schedules are 1F1B and interleaved 1F1B; sail-sg/zero-bubble-pipeline-parallelism is a fork with ZB-H1/H2)",
                       to_string(f.p.schedule));
  }
  switch (f.launch.kind) {
  case DpLaunchKind::replicate:
    if (std::string why = megatron_master_weights_refusal(f); !why.empty()) return why;
    return fused_loss_refusal(f, "Megatron-LM");
  case DpLaunchKind::deepspeed_zero:
    if (f.launch.zero_stage != 1) {
      return fmt::format("no Megatron-LM files: {} is a DeepSpeed ZeRO method (Megatron-DeepSpeed "
                         "runs it)",
                         to_string(f.p.method));
    }
    if (std::string why = distributed_optimizer_refusal(f); !why.empty()) return why;
    if (std::string why = megatron_master_weights_refusal(f); !why.empty()) return why;
    return fused_loss_refusal(f, "Megatron-LM");
  case DpLaunchKind::fsdp:
    // megatron/training/arguments.py:1031-1049 (d98e8a64), validate_args.
    if (f.p.pp > 1) {
      return fmt::format("no Megatron-LM files: '--use-torch-fsdp2 is not supported with "
                         "pipeline parallelism' (megatron/training/arguments.py:1034), pp {}",
                         f.p.pp);
    }
    if (f.model.tied_embeddings) {
      return fmt::format("no Megatron-LM files: '--use-torch-fsdp2 requires "
                         "--untie-embeddings-and-output-weights' (arguments.py:1044) and {} ties "
                         "them",
                         f.model.name);
    }
    if (f.precision == Precision::fp16) {
      return "no Megatron-LM files: '--use-torch-fsdp2 not supported with fp16 yet' "
             "(arguments.py:1046), and a GPU of the plan has no bf16";
    }
    if (f.model.is_moe() && f.p.ep > 1) {
      // megatron/core/distributed/torch_fully_sharded_data_parallel.py (d98e8a64): one
      // DeviceMesh from get_data_parallel_group(with_context_parallel=True) for every module.
      return fmt::format("no Megatron-LM files: --use-torch-fsdp2 shards every parameter over the "
                         "data-parallel group with context parallelism "
                         "(torch_fully_sharded_data_parallel.py), not the experts over their "
                         "expert-data-parallel group (ep {}, edp {}); torchtitan runs this plan",
                         f.p.ep, f.p.edp());
    }
    if (std::string why = megatron_master_weights_refusal(f); !why.empty()) return why;
    return fused_loss_refusal(f, "Megatron-LM");
  }
  return "unknown data-parallel kind";
}

void rules(const Facts& f) {
  const ModelSpec& m = f.model;
  // megatron/core/transformer/transformer_config.py:1446-1450 and 1461-1468 (d98e8a64).
  if (m.num_attention_heads % f.p.tp != 0) {
    throw InputError(fmt::format("cannot emit: Megatron requires num_attention_heads ({}) to be a "
                                 "multiple of tensor-model-parallel-size ({})",
                                 m.num_attention_heads, f.p.tp));
  }
  if (m.num_key_value_heads % f.p.tp != 0 && f.p.tp % m.num_key_value_heads != 0) {
    throw InputError(fmt::format("cannot emit: Megatron-LM: 'num_query_groups ({}) must be a "
                                 "multiple or divisor of tensor_model_parallel_size ({})'",
                                 m.num_key_value_heads, f.p.tp));
  }
}

void model_shape(Args& a, const Facts& f) {
  const ModelSpec& m = f.model;
  a.add("--num-layers", m.num_layers);
  a.add("--hidden-size", m.hidden_size);
  a.add("--ffn-hidden-size", m.ffn_hidden_size);
  a.add("--num-attention-heads", m.num_attention_heads);
  if (m.num_key_value_heads != m.num_attention_heads) {
    a.add("--group-query-attention");
    a.add("--num-query-groups", m.num_key_value_heads);
  }
  if (m.is_mla()) {
    // Multi-head latent attention (MLATransformerConfig: q_lora_rank, kv_lora_rank,
    // qk_head_dim = the non-rotary part, qk_pos_emb_head_dim, v_head_dim).
    a.add("--multi-latent-attention");
    if (m.q_lora_rank > 0) {
      a.add("--q-lora-rank", m.q_lora_rank);
    }
    a.add("--kv-lora-rank", m.kv_lora_rank);
    a.add("--qk-head-dim", m.qk_nope_head_dim);
    a.add("--qk-pos-emb-head-dim", m.qk_rope_head_dim);
    a.add("--v-head-dim", m.v_head_dim);
  } else if (m.head_dim != m.hidden_size / m.num_attention_heads) {
    a.add("--kv-channels", m.head_dim);
  }
  if (m.qk_norm) {
    a.add("--qk-layernorm"); // Qwen3's q and k RMSNorm (TransformerConfig.qk_layernorm)
  }
  a.add("--seq-length", m.sequence_length);
  a.add("--max-position-embeddings", std::max(m.sequence_length, m.max_position_embeddings));
  if (!m.learned_position_embeddings) {
    a.add("--position-embedding-type", "rope");
    const ModelFamily* fam = model_family(m.name);
    if (fam != nullptr && fam->rotary_base > 0) {
      a.add("--rotary-base", static_cast<long long>(fam->rotary_base));
    }
  }
  if (m.norm == Norm::rmsnorm) {
    a.add("--normalization", "RMSNorm");
  }
  if (m.gated_mlp) {
    a.add("--swiglu");
  }
  if (!m.tied_embeddings) {
    a.add("--untie-embeddings-and-output-weights");
  }
  if (!m.mlp_bias && !m.attention_output_bias) {
    a.add("--disable-bias-linear");
    if (m.qkv_bias) {
      a.add("--add-qkv-bias");
    }
  }
  if (m.is_moe()) {
    a.add("--num-experts", m.num_experts);
    a.add("--moe-router-topk", m.experts_per_token);
    a.add("--moe-ffn-hidden-size", m.moe_ffn_hidden_size);
    if (m.shared_expert_ffn_hidden_size > 0) {
      a.add("--moe-shared-expert-intermediate-size", m.shared_expert_ffn_hidden_size);
      if (m.shared_expert_gate) {
        // qwen2_moe's sigmoid gate on the shared expert (TransformerConfig.moe_shared_expert_gate,
        // megatron-core >= 0.16.0: NVIDIA/Megatron-LM bddd0a8, "Support moe shared expert gate
        // for Qwen3-Next"); one h-wide vector per MoE layer.
        a.add("--moe-shared-expert-gate");
      }
    }
    if (m.first_k_dense_layers > 0) {
      // TransformerConfig.moe_layer_freq as a Python list expression: dense layers first.
      a.add("--moe-layer-freq", fmt::format("'([0]*{}+[1]*{})'", m.first_k_dense_layers,
                                            m.num_layers - m.first_k_dense_layers));
    }
    if (m.router_bias) {
      a.add("--moe-router-enable-expert-bias"); // DeepSeek-V3's auxiliary-loss-free balancing
    }
    if (m.capacity_factor > 0) {
      a.add("--moe-expert-capacity-factor", fmt::format("{:g}", m.capacity_factor));
    }
    // The estimated expert layout (MoE parallel folding): experts over ep ranks, each split
    // over etp; the token dispatcher and grouped GEMM the estimate charges. The flex
    // dispatcher (--moe_dispatcher deepep|hybridep) is TransformerConfig's
    // moe_token_dispatcher_type 'flex' with moe_flex_dispatcher_backend, flags of
    // megatron/training/arguments.py's ArgumentGroupFactory(TransformerConfig) at d98e8a64
    // (the older --moe-enable-deepep is deprecated there).
    a.add("--expert-model-parallel-size", f.p.ep);
    a.add("--expert-tensor-parallel-size", f.p.etp);
    if (const char* backend = flex_backend(f)) {
      a.add("--moe-token-dispatcher-type", "flex");
      a.add("--moe-flex-dispatcher-backend", backend);
    } else {
      a.add("--moe-token-dispatcher-type", "alltoall");
    }
    a.add("--moe-grouped-gemm");
  }
  a.add("--attention-dropout", "0.0");
  a.add("--hidden-dropout", "0.0");
}

Args args(const Facts& f) {
  Args a;
  a.add("--tensor-model-parallel-size", f.p.tp);
  a.add("--pipeline-model-parallel-size", f.p.pp);
  if (f.p.cp > 1) {
    // ModelParallelConfig.context_parallel_size and TransformerConfig.cp_comm_type
    // (Transformer Engine: p2p is ring attention, a2a DeepSpeed-Ulysses); rank order
    // tp-cp-ep-dp-pp, as the estimate lays the ranks out.
    a.add("--context-parallel-size", f.p.cp);
    a.add("--cp-comm-type", megatron_cp_comm_type(f.p.cp_comm));
  }
  if (const PipelineLayout* layout = pipeline_layout(f)) {
    // The layout the plan was estimated with, as given (--pipeline_layout takes Megatron-Core's
    // own syntax); it sets the virtual stages itself, and its MTP layers need
    // TransformerConfig.mtp_num_layers to match (validate_layer_layout).
    a.add("--pipeline-model-parallel-layout", "'" + layout->text + "'");
    if (layout->mtp_layers() > 0) a.add("--mtp-num-layers", layout->mtp_layers());
  } else if (f.p.pp > 1 && f.p.virtual_stages == 1 && uneven(f.transformer)) {
    a.add("--pipeline-model-parallel-layout", "'" + megatron_layout(f.plan.estimate.partition) + "'");
  }
  switch (f.launch.kind) {
  case DpLaunchKind::replicate: break; // DDP: no --use-distributed-optimizer (ZeRO-1-like)
  case DpLaunchKind::fsdp:
    a.add("--use-torch-fsdp2");
    a.add("--ckpt-format", "torch_dist");
    // arguments.py:1040-1041: FSDP2 rejects gradient accumulation fusion.
    a.add("--no-gradient-accumulation-fusion");
    break;
  case DpLaunchKind::deepspeed_zero:
    // zero1 alone (refusal): ZeRO-1 as Megatron-Core's distributed optimizer.
    a.add("--use-distributed-optimizer");
    break;
  }
  model_shape(a, f);
  a.add("--micro-batch-size", f.p.mbs);
  a.add("--global-batch-size", f.ctx.global_batch);
  switch (f.precision) {
  case Precision::bf16: a.add("--bf16"); break;
  case Precision::fp16: a.add("--fp16"); break;
  case Precision::fp32: break;
  }
  if (f.fp8) {
    // TransformerConfig.fp8 / fp8_recipe (transformer_config.py:587-600): E4M3 forward, E5M2
    // gradients, per-tensor current scaling as the native estimate assumes.
    a.add("--fp8-format", "hybrid");
    a.add("--fp8-recipe", "tensorwise");
  }
  const ModelFamily* fam = model_family(f.model.name);
  a.add("--tokenizer-type", fam != nullptr ? fam->megatron_lm_tokenizer : "HuggingFaceTokenizer");
  if (f.model.learned_position_embeddings) {
    a.add("--vocab-file", "\"${VOCAB_FILE:?set VOCAB_FILE}\"");
    a.add("--merge-file", "\"${MERGE_FILE:?set MERGE_FILE}\"");
  } else {
    a.add("--tokenizer-model", "\"${TOKENIZER_MODEL:?set TOKENIZER_MODEL}\"");
  }
  a.add("--data-path", "\"${DATA_PREFIX:?set DATA_PREFIX}\"");
  a.add("--split", "949,50,1");
  recompute_args(a, f, false);
  if (const RecomputeModules* mods = recompute_modules(f)) {
    // Megatron-Core's TransformerConfig.recompute_modules (a list argument: space-separated).
    a.add("--recompute-modules", to_string(*mods, " "));
  }
  if (f.p.virtual_stages > 1 && pipeline_layout(f) == nullptr) {
    // The estimate's chunks when pp x v divides the layers plus the embedding (and the loss):
    // megatron-core's get_num_layers_to_build counts each as a layer. Otherwise (DeepSeek-V3's
    // 61 layers) each chunk's layers as --pipeline-model-parallel-layout, which sets the
    // virtual stages itself (arguments.py: not with --num-virtual-stages-per-pipeline-rank).
    const int accounts = interleaved_split_accounts(f.model.num_layers, f.p.pp, f.p.virtual_stages);
    if (accounts < 0) {
      a.add("--pipeline-model-parallel-layout", "'" + interleaved_layout(f) + "'");
    } else {
      a.add("--num-virtual-stages-per-pipeline-rank", f.p.virtual_stages);
      if (accounts >= 1) a.add("--account-for-embedding-in-pipeline-split");
      if (accounts >= 2) a.add("--account-for-loss-in-pipeline-split");
    }
  }
  sequence_parallel_arg(a, f);
  if (f.launch.kind != DpLaunchKind::fsdp && overlap_grad_reduce(f)) {
    // dp and zero1 (the reduce-scatter of the distributed optimizer); no
    // --overlap-param-gather: the estimate charges the all-gather after the step.
    a.add("--overlap-grad-reduce");
  }
  // --grad_reduce_fp32: on is Megatron-LM's own with bf16 (arguments.py switches
  // accumulate_allreduce_grads_in_fp32 on), off reduces in bf16 (--grad-reduce-in-bf16); with
  // fp16 the fp32 reduction is --accumulate-allreduce-grads-in-fp32. zero1 was estimated with
  // DeepSpeed's 16-bit gradients, kept and reduced in bf16 (docs/native.md §4): unset, the
  // files keep them so (--grad-reduce-in-bf16: a bf16 gradient buffer, param_and_grad_buffer.py
  // group_params_for_buffers at d98e8a64); on is refused for zero1 (refusal).
  const std::optional<bool> fp32 = grad_reduce_fp32(f);
  if (fp32.value_or(false)) {
    a.add("--accumulate-allreduce-grads-in-fp32");
  } else if (f.precision == Precision::bf16 &&
             (fp32.has_value() || f.launch.kind == DpLaunchKind::deepspeed_zero)) {
    a.add("--grad-reduce-in-bf16");
  }
  // The estimate hid the tp collectives behind the GEMMs (--tp_comm_overlap on): Megatron-LM
  // runs them with Transformer Engine's userbuffers (needs --sequence-parallel).
  if (const NativeSettings* st = native_settings(f);
      st != nullptr && st->tp_comm_overlap && f.p.tp > 1) {
    a.add("--tp-comm-overlap");
  }
  // The estimate hid the MoE all-to-alls behind another micro-batch's compute
  // (--moe_a2a_overlap on, where Megatron runs it: moe_a2a_overlap_runs): Megatron-Core's
  // combined 1F1B, with the weight gradients delayed so the backward's combine overlaps them
  // (megatron/core/transformer/moe/README.md: '--overlap-moe-expert-parallel-comm
  // --delay-wgrad-compute').
  if (moe_a2a_overlapped(f)) {
    a.add("--overlap-moe-expert-parallel-comm");
    a.add("--delay-wgrad-compute");
  }
  training_args(a);
  return a;
}

/// CUDA_DEVICE_MAX_CONNECTIONS as validate_args needs it, set in the launcher itself.
std::string env_lines(const Facts& f) {
  switch (f.launch.kind) {
  case DpLaunchKind::fsdp:
    // arguments.py:1048-1049: 'FSDP always requires CUDA_DEVICE_MAX_CONNECTIONS value large
    // than one'.
    return "unset CUDA_DEVICE_MAX_CONNECTIONS  # FSDP2 needs more than one (validate_args)\n";
  case DpLaunchKind::replicate:
  case DpLaunchKind::deepspeed_zero:
    // arguments.py:1455-1479: tp > 1 (before Blackwell) asserts CUDA_DEVICE_MAX_CONNECTIONS=1.
    return f.p.tp > 1 ? "export CUDA_DEVICE_MAX_CONNECTIONS=1  # tensor parallelism (validate_args)\n"
                      : "";
  }
  return "";
}

void files(const Facts& f, Output& out) {
  std::string extra;
  const PipelineLayout* layout = pipeline_layout(f);
  const bool interleaved_layout_written =
      layout == nullptr && f.p.virtual_stages > 1 &&
      interleaved_split_accounts(f.model.num_layers, f.p.pp, f.p.virtual_stages) < 0;
  if (layout != nullptr) {
    extra = "# The layout the plan was estimated with (--pipeline_layout): E = embedding, t = "
            "transformer layer,\n# m = MTP layer, L = loss, | between chunks; chunk k on pp rank "
            "k % pp (megatron-core >= 0.13).\n";
    out.notes.push_back(fmt::format("Megatron-LM gets the plan's layout as "
                                    "--pipeline-model-parallel-layout '{}'{} (megatron-core >= "
                                    "0.13).",
                                    layout->text,
                                    layout->mtp_layers() > 0
                                        ? fmt::format(" with --mtp-num-layers {}",
                                                      layout->mtp_layers())
                                        : std::string()));
  } else if (f.p.pp > 1 && f.p.virtual_stages == 1 && uneven(f.transformer)) {
    extra = "# The uneven split uses --pipeline-model-parallel-layout (megatron-core >= 0.13):\n"
            "# E = embedding, t = transformer layer, L = loss, | between stages.\n";
    out.notes.push_back(fmt::format("Megatron-LM expresses the split exactly as "
                                    "--pipeline-model-parallel-layout '{}' (megatron-core >= 0.13).",
                                    megatron_layout(f.plan.estimate.partition)));
  } else if (interleaved_layout_written) {
    extra = "# The uneven model chunks use --pipeline-model-parallel-layout (megatron-core >= "
            "0.13):\n# E = embedding, t = transformer layer, L = loss, | between chunks; chunk k "
            "on pp rank k % pp.\n";
    out.notes.push_back(fmt::format(
        "pp x virtual stages ({} x {}) divides neither the {} layers nor them plus the embedding "
        "and the loss, so Megatron-LM gets the estimated chunks as --pipeline-model-parallel-layout "
        "'{}' (megatron-core >= 0.13; --decoder-first/last-pipeline-num-layers cannot: with "
        "interleaving every stage's layers must be a multiple of the virtual stages).",
        f.p.pp, f.p.virtual_stages, f.model.num_layers, interleaved_layout(f)));
  }
  if (f.launch.kind == DpLaunchKind::replicate && f.p.dp > 1) {
    extra += "# Plain data parallelism: no --use-distributed-optimizer (that would be ZeRO-1-like).\n";
  }
  if (f.launch.kind == DpLaunchKind::deepspeed_zero) {
    extra += "# zero1 as Megatron-Core's distributed optimizer: fp32 master weights and Adam "
             "states sharded over dp,\n# gradients reduce-scattered, parameters all-gathered "
             "after the step (ZeRO-1 memory).\n";
    out.notes.push_back(
        "zero1 runs as Megatron-LM's --use-distributed-optimizer (ZeRO-1 memory). The estimate "
        "charged DeepSpeed's gradient-accumulation adds (autograd's AccumulateGrad into the "
        "16-bit .grad, (m - 1) per step), which Megatron-LM does inside the weight-gradient "
        "GEMM: its step can be that much faster. Gradients stay bf16 as estimated "
        "(--grad-reduce-in-bf16 with bf16), where Megatron-LM's own bf16 default keeps and "
        "reduces them in fp32.");
  }
  if (f.model.sliding_window > 0) {
    out.notes.push_back(fmt::format("{} uses sliding-window attention ({} tokens); the files "
                                    "write full causal attention (same parameters).",
                                    f.model.name, f.model.sliding_window));
  }
  out.add("megatron_lm_args.sh", args_file(f, args(f), "Megatron-LM (core 0.13 .. 0.20)", extra),
          false, "Megatron-LM arguments: model shape, parallel sizes, batch, precision, layout");
  out.add("launch_megatron_lm.sh",
          launch_torchrun_text(
              f, "Megatron-LM", env_lines(f),
              "MEGATRON_LM=${MEGATRON_LM:-$PWD}  # a Megatron-LM checkout (default: here)\n"
              "source \"$PLAN_DIR/megatron_lm_args.sh\"\n" +
                  fmt::format("exec torchrun --nnodes {} --nproc-per-node {} --node-rank "
                              "\"$NODE_RANK\" \\\n  --master-addr \"$MASTER_ADDR\" --master-port "
                              "{} \\\n  \"$MEGATRON_LM/pretrain_gpt.py\" "
                              "\"${{MEGATRON_ARGS[@]}}\"\n",
                              f.nodes, f.gpus_per_node, kMasterPort)),
          true,
          "per-node torchrun launcher for Megatron-LM (sets CUDA_DEVICE_MAX_CONNECTIONS; "
          "MEGATRON_LM = the checkout holding pretrain_gpt.py)");
}

} // namespace

const Writer& megatron_lm_writer() {
  static const Writer w{"megatron_lm",
                        "Megatron-LM with megatron-core 0.13 .. 0.20 (read at d98e8a64); the "
                        "layout flag needs >= 0.13, FSDP2 >= 0.10",
                        refusal, rules, files};
  return w;
}

} // namespace zerosearch::launch
