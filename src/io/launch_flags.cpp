#include "zerosearch/io/launch_flags.hpp"

#include <array>

namespace zerosearch {

namespace {

// NVIDIA/Megatron-LM d98e8a64 (megatron-core 0.20.0): megatron/training/arguments.py and the
// config dataclasses it generates flags from. --pipeline-model-parallel-layout needs core >= 0.13,
// --use-torch-fsdp2 core >= 0.10.
// Recompute: --recompute-granularity/-method/-num-layers (TransformerConfig); interleaving:
// --num-virtual-stages-per-pipeline-rank (megatron/training/arguments.py:925-939); sequence
// parallelism: --sequence-parallel (ModelParallelConfig.sequence_parallel, turned off with a
// warning when tp == 1: arguments.py:1430-1439); --overlap-grad-reduce (arguments.py:3121,
// DistributedDataParallelConfig.overlap_grad_reduce, default False); --tp-comm-overlap
// (arguments.py _add_distributed_args: TP communication overlapped with GEMMs through
// Transformer Engine's userbuffers; needs --sequence-parallel).
constexpr std::array<const char*, 85> kMegatronLm{
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size",
    "--pipeline-model-parallel-layout", "--use-distributed-optimizer", "--use-torch-fsdp2",
    "--ckpt-format", "--micro-batch-size", "--global-batch-size", "--num-layers",
    "--hidden-size", "--ffn-hidden-size", "--num-attention-heads", "--group-query-attention",
    "--num-query-groups", "--seq-length", "--max-position-embeddings",
    "--position-embedding-type", "--normalization", "--swiglu",
    "--untie-embeddings-and-output-weights", "--disable-bias-linear", "--attention-dropout",
    "--hidden-dropout", "--bf16", "--fp16", "--tokenizer-type", "--tokenizer-model",
    "--data-path", "--split", "--train-iters", "--lr", "--min-lr", "--lr-decay-style",
    "--lr-warmup-iters", "--weight-decay", "--clip-grad", "--adam-beta1", "--adam-beta2",
    "--log-interval", "--eval-iters", "--recompute-granularity", "--recompute-method",
    "--recompute-num-layers", "--num-virtual-stages-per-pipeline-rank", "--sequence-parallel",
    "--overlap-grad-reduce", "--tp-comm-overlap",
    // --recompute_modules (TransformerConfig.recompute_modules, a list: nargs '+').
    "--recompute-modules",
    // --grad_reduce_fp32 (arguments.py: --accumulate-allreduce-grads-in-fp32, and
    // --grad-reduce-in-bf16 for bf16 reductions).
    "--accumulate-allreduce-grads-in-fp32", "--grad-reduce-in-bf16",
    // Interleaving when pp x v divides the layers plus the embedding (and the loss):
    // arguments.py _add_distributed_args, TransformerConfig.account_for_*_in_pipeline_split.
    "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
    // Issue 24: GQA (--num-query-groups, TransformerConfig.num_query_groups), head width,
    // QKV bias (TransformerConfig.add_qkv_bias), rotary base (arguments.py:2418), FSDP2's
    // --no-gradient-accumulation-fusion (arguments.py:2944), fp8 (transformer_config.py:587-600:
    // --fp8-format, --fp8-recipe), MoE (arguments.py:3518 --num-experts; TransformerConfig
    // moe_router_topk, moe_ffn_hidden_size, moe_shared_expert_intermediate_size;
    // ModelParallelConfig expert_model_parallel_size), GPT-2 BPE files (TrainingConfig).
    "--kv-channels", "--add-qkv-bias", "--rotary-base", "--no-gradient-accumulation-fusion",
    "--fp8-format", "--fp8-recipe", "--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size",
    "--moe-shared-expert-intermediate-size", "--expert-model-parallel-size", "--vocab-file",
    "--merge-file",
    // Issue 27: expert tensor parallelism (ModelParallelConfig.expert_tensor_parallel_size),
    // dense layers first (TransformerConfig.moe_layer_freq), DeepSeek-V3's router bias
    // (moe_router_enable_expert_bias), capacity (moe_expert_capacity_factor), dispatcher and
    // grouped GEMM (moe_token_dispatcher_type, moe_grouped_gemm), multi-head latent attention
    // (arguments.py --multi-latent-attention; MLATransformerConfig q_lora_rank, kv_lora_rank,
    // qk_head_dim, qk_pos_emb_head_dim, v_head_dim), Qwen3's qk norm (qk_layernorm).
    "--expert-tensor-parallel-size", "--moe-layer-freq", "--moe-router-enable-expert-bias",
    "--moe-expert-capacity-factor", "--moe-token-dispatcher-type", "--moe-grouped-gemm",
    "--multi-latent-attention", "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim",
    "--qk-pos-emb-head-dim", "--v-head-dim", "--qk-layernorm",
    // Issue 27: a --pipeline_layout's MTP layers (TransformerConfig.mtp_num_layers; Megatron-
    // Core's validate_layer_layout asserts the layout's m count equals it).
    "--mtp-num-layers",
    // Issue 27: context parallelism (ModelParallelConfig.context_parallel_size;
    // TransformerConfig.cp_comm_type: p2p, a2a, allgather, a2a+p2p).
    "--context-parallel-size", "--cp-comm-type",
    // Issue 27: qwen2_moe's shared-expert gate (TransformerConfig.moe_shared_expert_gate, a
    // flag through arguments.py's ArgumentGroupFactory(TransformerConfig); core >= 0.16.0).
    "--moe-shared-expert-gate",
    // The EP all-to-all overlap (ModelParallelConfig.overlap_moe_expert_parallel_comm and
    // delay_wgrad_compute at d98e8a64; megatron/core/transformer/moe/README.md lists both
    // flags: '--overlap-moe-expert-parallel-comm --delay-wgrad-compute').
    "--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute",
    // TransformerConfig.moe_flex_dispatcher_backend (Literal 'deepep', 'hybridep', 'ncclep'),
    // an argument through ArgumentGroupFactory(TransformerConfig) (arguments.py:2373 at
    // d98e8a64).
    "--moe-flex-dispatcher-backend"};

// deepspeedai/Megatron-DeepSpeed 4efb479d (master): megatron/arguments.py (--sequence-parallel:
// Megatron's sequence parallelism with tp > 1, research/LAUNCH.md's capability table).
constexpr std::array<const char*, 56> kMegatronDeepSpeed{
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--no-pipeline-parallel",
    "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
    "--num-key-value-heads", "--seq-length", "--max-position-embeddings", "--micro-batch-size",
    "--global-batch-size", "--bf16", "--fp16", "--normalization", "--swiglu",
    "--use-rotary-position-embeddings", "--untie-embeddings-and-output-weights",
    "--disable-bias-linear", "--no-query-key-layer-scaling", "--attention-dropout",
    "--hidden-dropout", "--tokenizer-type", "--tokenizer-model", "--data-path", "--data-impl",
    "--split", "--optimizer", "--lr", "--min-lr", "--lr-decay-style", "--lr-warmup-iters",
    "--weight-decay", "--clip-grad", "--adam-beta1", "--adam-beta2", "--train-iters",
    "--log-interval", "--eval-iters", "--deepspeed", "--deepspeed_config", "--zero-stage",
    "--recompute-granularity", "--recompute-method", "--recompute-num-layers",
    "--deepspeed-activation-checkpointing", "--sequence-parallel",
    // megatron/arguments.py:608-625 (MoE: --num-experts, --topk, --expert-interval;
    // --kv-channels), :1159 (--moe-expert-parallel-size); GPT-2 BPE files.
    "--kv-channels", "--num-experts", "--topk", "--expert-interval", "--moe-expert-parallel-size",
    "--vocab-file", "--merge-file",
    // megatron/arguments.py _add_distributed_args: experts split over tp (issue 27).
    "--enable-expert-tensor-parallelism",
    // megatron/arguments.py: DeepSpeed-Ulysses (issue 27).
    "--ds-sequence-parallel-size"};

// deepspeedai/DeepSpeed edaa7221 (0.19.6): deepspeed/launcher/runner.py.
constexpr std::array<const char*, 5> kDeepSpeedLauncher{"--hostfile", "--master_addr",
                                                        "--master_port", "--no_ssh",
                                                        "--node_rank"};

// pytorch/pytorch torch/distributed/run.py (static rendezvous is the default).
constexpr std::array<const char*, 5> kTorchrun{"--nnodes", "--nproc-per-node", "--node-rank",
                                               "--master-addr", "--master-port"};

// deepspeedai/DeepSpeed edaa7221 (0.19.6): deepspeed/runtime/config.py (top level, read key by
// key: unknown keys are ignored silently, so a typo passes; the tests hold us to this list).
constexpr std::array<const char*, 13> kDeepSpeedJson{
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
    "steps_per_print", "gradient_clipping", "zero_optimization", "bf16", "fp16", "pipeline",
    "wall_clock_breakdown",
    // deepspeed/runtime/constants.py FP32_ALLREDUCE (default false): --grad_reduce_fp32.
    "fp32_allreduce",
    // deepspeed/runtime/config.py EXPERT_PARALLEL: AutoEP (a ZeRO-3 MoE plan).
    "expert_parallel",
    // deepspeed/runtime/constants.py DATA_TYPES (since 0.7.6): --grad_accum_fp32.
    "data_types"};

// deepspeed/runtime/constants.py GRAD_ACCUM_DTYPE, read from the data_types block by config.py.
constexpr std::array<const char*, 1> kDeepSpeedDataTypes{"grad_accum_dtype"};

// deepspeed/runtime/zero/config.py DeepSpeedZeroConfig: pydantic extra="forbid", so any other
// key inside zero_optimization is rejected. offload_optimizer (stages 1-3) and offload_param
// (stage 3): zero/offload_config.py.
constexpr std::array<const char*, 7> kDeepSpeedZero{"stage", "reduce_bucket_size",
                                                     "allgather_bucket_size", "overlap_comm",
                                                     "contiguous_gradients", "offload_optimizer",
                                                     "offload_param"};

// deepspeed/runtime/config.py: bf16 / fp16 blocks, and the pipeline block's keys.
// --master_weights off: bf16_master_weights_and_grads and bf16_optimizer_states
// (deepspeed/runtime/precision_config.py DeepSpeedBF16Config).
constexpr std::array<const char*, 3> kDeepSpeedPrecision{"enabled", "bf16_master_weights_and_grads",
                                                         "bf16_optimizer_states"};
constexpr std::array<const char*, 3> kDeepSpeedPipeline{"activation_checkpoint_interval",
                                                        "pipe_partitioned", "grad_partitioned"};

// deepspeed/module_inject/auto_ep_config.py parse_autoep_config: the expert_parallel keys
// written (it reads each with a default; unknown keys are ignored, so the tests hold us to these).
constexpr std::array<const char*, 5> kDeepSpeedExpertParallel{
    "enabled", "autoep_size", "expert_tensor_parallel_size", "preset_model", "top_k"};

// pytorch/torchtitan v0.2.2: torchtitan/config/job_config.py, as "section.key".
constexpr std::array<const char*, 24> kTorchtitan{
    "model.name", "model.flavor", "training.local_batch_size", "training.global_batch_size",
    "training.seq_len", "parallelism.data_parallel_replicate_degree",
    "parallelism.data_parallel_shard_degree", "parallelism.fsdp_reshard_after_forward",
    "parallelism.tensor_parallel_degree", "parallelism.context_parallel_degree",
    "parallelism.pipeline_parallel_degree", "parallelism.pipeline_parallel_schedule",
    "parallelism.pipeline_parallel_microbatch_size", "parallelism.module_fqns_per_model_part",
    "training.steps", "activation_checkpoint.mode", "activation_checkpoint.selective_ac_option",
    "compile.enable", "compile.components",
    // job_config.py:118 (Model.converters), Training.mixed_precision_param, Float8Linear
    // (job_config.py:730-753, section quantize.linear.float8).
    "model.converters", "training.mixed_precision_param", "quantize.linear.float8.recipe_name",
    // job_config.py Parallelism.context_parallel_rotate_method ("allgather" | "alltoall").
    "parallelism.context_parallel_rotate_method",
    // job_config.py Training.dtype (since e99e16c): --master_weights off.
    "training.dtype"};

// pytorch/torchtitan main b5bcd76: torchtitan/config/configs.py (TrainingConfig,
// ParallelismConfig) as command-line overrides, and train.py's --module / --config.
constexpr std::array<const char*, 15> kTorchtitanMain{
    "--module", "--config", "--training.num_tokens_per_microbatch_per_dp_rank",
    "--training.num_tokens_per_train_step", "--training.max_context_length",
    "--parallelism.data_parallel_replicate_degree", "--parallelism.data_parallel_shard_degree",
    "--parallelism.tensor_parallel_degree", "--parallelism.pipeline_parallel_degree",
    "--parallelism.pipeline_parallel_schedule", "--parallelism.num_pp_microbatches",
    "--job.config_file", "--parallelism.context_parallel_degree",
    "--parallelism.context_parallel_rotate_method",
    // configs.py TrainingConfig.dtype: --master_weights off.
    "--training.dtype"};

const std::array<ArgumentList, 12> kLists{{
    {"Megatron-LM", "NVIDIA/Megatron-LM d98e8a64, megatron-core 0.20.0", kMegatronLm},
    {"Megatron-DeepSpeed", "deepspeedai/Megatron-DeepSpeed 4efb479d (master)",
     kMegatronDeepSpeed},
    {"deepspeed launcher", "deepspeedai/DeepSpeed edaa7221, 0.19.6", kDeepSpeedLauncher},
    {"torchrun", "pytorch/pytorch torch/distributed/run.py", kTorchrun},
    {"DeepSpeed JSON", "deepspeedai/DeepSpeed edaa7221, 0.19.6", kDeepSpeedJson},
    {"DeepSpeed JSON zero_optimization", "deepspeedai/DeepSpeed edaa7221, 0.19.6",
     kDeepSpeedZero},
    {"DeepSpeed JSON precision", "deepspeedai/DeepSpeed edaa7221, 0.19.6", kDeepSpeedPrecision},
    {"DeepSpeed JSON pipeline", "deepspeedai/DeepSpeed edaa7221, 0.19.6", kDeepSpeedPipeline},
    {"torchtitan TOML", "pytorch/torchtitan v0.2.2", kTorchtitan},
    {"torchtitan main", "pytorch/torchtitan main b5bcd76", kTorchtitanMain},
    {"DeepSpeed JSON expert_parallel", "deepspeedai/DeepSpeed edaa7221, 0.19.6",
     kDeepSpeedExpertParallel},
    {"DeepSpeed JSON data_types", "deepspeedai/DeepSpeed edaa7221, 0.19.6", kDeepSpeedDataTypes},
}};

} // namespace

std::span<const ArgumentList> argument_lists() noexcept { return kLists; }

const ArgumentList* argument_list(const std::string& tool) noexcept {
  for (const ArgumentList& l : kLists) {
    if (tool == l.tool) {
      return &l;
    }
  }
  return nullptr;
}

bool documented_argument(const std::string& tool, const std::string& name) noexcept {
  const ArgumentList* l = argument_list(tool);
  if (l == nullptr) {
    return false;
  }
  for (const char* n : l->names) {
    if (name == n) {
      return true;
    }
  }
  return false;
}

} // namespace zerosearch
