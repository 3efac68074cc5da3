// torchtitan: a v0.2.x TOML job config (torchtitan/config/job_config.py at v0.2.2) and, for
// the Llama-3 flavors torchtitan ships, the current command-line form (main at b5bcd76:
// `-m torchtitan.train --module llama3 --config llama3_8b` plus overrides of
// torchtitan/config/configs.py). docs/launch.md.
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "writer.hpp"
#include "zerosearch/model/zero_bubble.hpp"
#include "zerosearch/core/error.hpp"

namespace zerosearch::launch {

namespace {

/// torchtitan's FeedForward width (torchtitan/models/llama3/model.py at v0.2.2):
/// int(2 * 4 * dim / 3), times ffn_dim_multiplier when set, rounded up to multiple_of.
std::int64_t torchtitan_ffn(std::int64_t dim, std::int64_t multiple_of, double multiplier) {
  auto hidden = static_cast<std::int64_t>(2 * 4 * dim / 3);
  if (multiplier > 0) {
    hidden = static_cast<std::int64_t>(multiplier * static_cast<double>(hidden));
  }
  return multiple_of * ((hidden + multiple_of - 1) / multiple_of);
}

struct Flavor {
  const char* name;
  std::int64_t dim, n_layers, n_heads, n_kv_heads, vocab;
  std::int64_t multiple_of;
  double multiplier; // 0 = None
  double rope_theta;
  const char* config_function; // torchtitan main's config_registry.py
};

// torchtitan/models/llama3/__init__.py at v0.2.2, lines 51-99 (vocab: the Llama-3 tokenizer).
constexpr std::array<Flavor, 3> kShipped{{
    {"8B", 4096, 32, 32, 8, 128256, 1024, 1.3, 500000, "llama3_8b"},
    {"70B", 8192, 80, 64, 8, 128256, 4096, 1.3, 500000, "llama3_70b"},
    {"405B", 16384, 126, 128, 8, 128256, 4096, 1.2, 500000, "llama3_405b"},
}};

const Flavor* shipped_flavor(const ModelSpec& m) {
  const ModelFamily* fam = model_family(m.name);
  for (const Flavor& fl : kShipped) {
    if (fl.dim == m.hidden_size && fl.n_layers == m.num_layers && fl.n_heads == m.num_attention_heads &&
        fl.n_kv_heads == m.num_key_value_heads && fl.vocab == m.vocab_size &&
        torchtitan_ffn(fl.dim, fl.multiple_of, fl.multiplier) == m.ffn_hidden_size &&
        fam != nullptr && fam->rotary_base == fl.rope_theta) {
      return &fl;
    }
  }
  return nullptr;
}

/// A mixture-of-experts flavor torchtitan v0.2.2 ships: its deepseek_v3 model
/// (torchtitan/models/deepseek_v3/__init__.py, deepseekv3_args: DeepSeek-V2-Lite, V2 and V3
/// shapes) and its qwen3 model (torchtitan/models/qwen3/__init__.py, qwen3_args).
struct MoeFlavor {
  const char* model; // [model] name
  const char* flavor;
  std::int64_t dim, n_layers, n_heads, n_kv_heads, vocab;
  std::int64_t moe_inter_dim, num_experts, top_k, shared_inter_dim, n_dense_layers;
  std::int64_t inter_dim; // the dense FFN (deepseek_v3 inter_dim, qwen3 hidden_dim)
  std::int64_t q_lora_rank;
};

// n_kv_heads: the MLA models have one latent per head (the key/value heads = the heads).
// shared_inter_dim: num_shared_experts x moe_inter_dim.
constexpr std::array<MoeFlavor, 5> kShippedMoe{{
    {"deepseek_v3", "16B", 2048, 27, 16, 16, 102400, 1408, 64, 6, 2 * 1408, 1, 10944, 0},
    {"deepseek_v3", "236B", 5120, 60, 128, 128, 102400, 1536, 160, 6, 2 * 1536, 1, 12288, 1536},
    {"deepseek_v3", "671B", 7168, 61, 128, 128, 129280, 2048, 256, 8, 2048, 3, 18432, 1536},
    {"qwen3", "30B-A3B", 2048, 48, 32, 4, 151936, 768, 128, 8, 0, 0, 6144, 0},
    {"qwen3", "235B-A22B", 4096, 94, 64, 4, 151936, 1536, 128, 8, 0, 0, 12288, 0},
}};

/// torchtitan's model for an MoE architecture ("deepseek_v3", "qwen3"), or nullptr.
const char* torchtitan_moe_model(const ModelSpec& m) {
  if (m.architecture == "deepseek_v3" || m.architecture == "deepseek_v2") return "deepseek_v3";
  if (m.architecture == "qwen3_moe") return "qwen3";
  return nullptr;
}

const MoeFlavor* shipped_moe_flavor(const ModelSpec& m) {
  const char* model = torchtitan_moe_model(m);
  if (model == nullptr) return nullptr;
  for (const MoeFlavor& fl : kShippedMoe) {
    if (std::string(fl.model) == model && fl.dim == m.hidden_size &&
        fl.n_layers == m.num_layers && fl.n_heads == m.num_attention_heads &&
        fl.n_kv_heads == m.num_key_value_heads && fl.vocab == m.vocab_size &&
        fl.moe_inter_dim == m.moe_ffn_hidden_size && fl.num_experts == m.num_experts &&
        fl.top_k == m.experts_per_token &&
        fl.shared_inter_dim == m.shared_expert_ffn_hidden_size &&
        fl.n_dense_layers == m.first_k_dense_layers && fl.inter_dim == m.ffn_hidden_size &&
        fl.q_lora_rank == m.q_lora_rank) {
      return &fl;
    }
  }
  return nullptr;
}

/// Why torchtitan v0.2.2 cannot run the MoE plan, or empty.
std::string moe_refusal(const Facts& f) {
  const ModelSpec& m = f.model;
  const char* model = torchtitan_moe_model(m);
  if (model == nullptr) {
    return fmt::format("no torchtitan files: torchtitan v0.2.2 has no {} model (its MoE models "
                       "are llama4, deepseek_v3, qwen3 and gpt_oss, each with its own router and "
                       "shared experts); run it with Megatron-LM",
                       m.architecture);
  }
  const MoeFlavor* fl = shipped_moe_flavor(m);
  if (fl == nullptr) {
    return fmt::format("no torchtitan files: torchtitan v0.2.2's {} model has no flavor of {}'s "
                       "shape (torchtitan/models/{}/__init__.py); run it with Megatron-LM",
                       model, m.name, model);
  }
  if (f.p.ep > 1 && f.launch.kind != DpLaunchKind::fsdp) {
    // efsdp = dp_shard x cp x tp / (etp x ep) (parallel_dims.py), and torchtitan's DDP runs
    // without tp and cp: no ranks for ep.
    return fmt::format("no torchtitan files: torchtitan takes expert parallelism from "
                       "data_parallel_shard_degree x cp x tp (torchtitan/distributed/"
                       "parallel_dims.py at v0.2.2), and this {} plan shards nothing (ep {}); "
                       "plan fsdp",
                       to_string(f.p.method), f.p.ep);
  }
  if (std::string(fl->model) == "qwen3" && f.p.pp > 1) {
    return fmt::format("no torchtitan files: torchtitan v0.2.2's qwen3 model has no pipelining "
                       "function (torchtitan/models/qwen3/__init__.py: pipelining_fn=None; "
                       "train.py: 'does not support pipelining'), and the plan has pp {}",
                       f.p.pp);
  }
  if (std::string(fl->model) == "deepseek_v3" && f.p.cp > 1) {
    return fmt::format("no torchtitan files: torchtitan's deepseek_v3 flavor {} uses FlexAttention "
                       "(attn_type \"flex\") and its context parallelism takes SDPA only "
                       "('Context Parallel only supports SDPA attention', "
                       "torchtitan/models/deepseek_v3/infra/parallelize.py at v0.2.2), cp {}",
                       fl->flavor, static_cast<int>(f.p.cp));
  }
  if (std::string(fl->model) == "deepseek_v3" && f.fp8 && f.p.tp > 1) {
    return fmt::format("no torchtitan files: 'Currently, float8 tensorwise TP is not tested for "
                       "deepseekv3' (torchtitan/models/deepseek_v3/infra/parallelize.py at "
                       "v0.2.2), and this fp8 plan has tp {}",
                       f.p.tp);
  }
  if (f.p.ep > 1 && f.p.pp > 1 && f.p.schedule == Schedule::dualpipev &&
      recompute_of(f) != Recompute::none) {
    // torchtitan/distributed/dual_pipe_v.py at v0.2.2, get_dual_pipe_v_flag.
    return fmt::format("no torchtitan files: 'Expert Parallel with DualPipeV and Activation "
                       "Checkpointing cannot be used together' (torchtitan/distributed/"
                       "dual_pipe_v.py at v0.2.2), and this plan recomputes ({})",
                       to_string(recompute_of(f)));
  }
  return {};
}

/// multiple_of and ffn_dim_multiplier (0 = None) that give the model's FFN width, if any.
std::optional<std::pair<std::int64_t, double>> ffn_args(const ModelSpec& m) {
  for (const std::int64_t mult : {256, 512, 1024, 2048, 4096}) {
    if (torchtitan_ffn(m.hidden_size, mult, 0) == m.ffn_hidden_size) {
      return std::pair{mult, 0.0};
    }
  }
  const double base = static_cast<double>(2 * 4 * m.hidden_size / 3);
  for (const std::int64_t mult : {256, 512, 1024, 2048, 4096}) {
    const double r = std::round(static_cast<double>(m.ffn_hidden_size) / base * 100.0) / 100.0;
    for (const double x : {r - 0.01, r, r + 0.01}) {
      if (torchtitan_ffn(m.hidden_size, mult, x) == m.ffn_hidden_size) {
        return std::pair{mult, x};
      }
    }
  }
  return std::nullopt;
}

/// Why torchtitan's llama3 model cannot build the dense model `m`, or empty.
std::string llama3_refusal(const ModelSpec& m) {
  if (m.learned_position_embeddings || m.norm != Norm::rmsnorm || !m.gated_mlp ||
      m.tied_embeddings || m.qkv_bias || m.mlp_bias || m.attention_output_bias) {
    return fmt::format("no torchtitan files: torchtitan's llama3 model (rotary, RMSNorm, SwiGLU, "
                       "no biases, untied output) cannot build {} ({})",
                       m.name, m.architecture);
  }
  if (m.head_dim != m.hidden_size / m.num_attention_heads) {
    return fmt::format("no torchtitan files: torchtitan's llama3 model has head_dim = dim / "
                       "n_heads, {} has {}",
                       m.name, m.head_dim);
  }
  if (shipped_flavor(m) == nullptr && !ffn_args(m)) {
    return fmt::format("no torchtitan files: torchtitan's FeedForward cannot make {}'s FFN width "
                       "{} from dim {}",
                       m.name, m.ffn_hidden_size, m.hidden_size);
  }
  return {};
}

/// torch.distributed.pipelining's name of the plan's schedule (get_schedule_class in
/// torch/distributed/pipelining/schedules.py), or nullptr where it has none.
const char* schedule_name(const Facts& f) {
  if (f.p.virtual_stages > 1) return "Interleaved1F1B";
  return info(f.p.schedule).torchtitan;
}

std::string refusal(const Facts& f) {
  if (std::string why = pipeline_layout_refusal(
          f, "no torchtitan files",
          "torchtitan v0.2.2 (pipeline_parallel_split_points cut between layers; it has no "
          "embedding, loss or MTP entries)");
      !why.empty()) {
    return why;
  }
  if (std::string why = recompute_modules_refusal(
          f, "no torchtitan files",
          "torchtitan v0.2.2 (activation_checkpoint mode selective is per-op or per-layer)");
      !why.empty()) {
    return why;
  }
  if (f.p.pp > 1 && schedule_name(f) == nullptr) {
    return fmt::format("no torchtitan files: torch.distributed.pipelining has no {} schedule "
                       "(get_schedule_class knows 1F1B, Interleaved1F1B, GPipe, LoopedBFS, "
                       "InterleavedZeroBubble, ZBVZeroBubble, DualPipeV)",
                       to_string(f.p.schedule));
  }
  switch (f.launch.kind) {
  case DpLaunchKind::deepspeed_zero:
    return fmt::format("no torchtitan files: {} is a DeepSpeed ZeRO method", to_string(f.p.method));
  case DpLaunchKind::replicate:
    // torchtitan/models/llama3/infra/parallelize.py:148-151 (v0.2.2).
    if (f.p.tp > 1 || f.p.pp > 1 || f.p.cp > 1) {
      return fmt::format("no torchtitan files: torchtitan runs plain data parallelism only "
                         "alone ('DDP has not supported > 1D parallelism', "
                         "torchtitan/models/llama3/infra/parallelize.py:151 at v0.2.2) and this "
                         "dp plan has tp {}, pp {} and cp {}; run it with Megatron-LM, or plan "
                         "fsdp",
                         f.p.tp, f.p.pp, static_cast<int>(f.p.cp));
    }
    break;
  case DpLaunchKind::fsdp: break;
  }
  if (const NativeSettings* st = native_settings(f);
      st != nullptr && !st->sequence_parallel && f.p.tp > 1) {
    // torchtitan v0.2.2's apply_tp always puts SequenceParallel() on the norms (llama3:
    // torchtitan/models/llama3/infra/parallelize.py 181, 219, 233; deepseek_v3 and qwen3 the
    // same), with no switch; main (b5bcd76) has parallelism.enable_sequence_parallel.
    return fmt::format("no torchtitan files: torchtitan v0.2.2 always runs sequence parallelism "
                       "at tp > 1 (SequenceParallel on the norms, apply_tp in "
                       "torchtitan/models/llama3/infra/parallelize.py), and the plan was "
                       "estimated without it (--sequence_parallel off, tp {}); plan with "
                       "--sequence_parallel on",
                       f.p.tp);
  }
  if (f.p.cp > 1 && f.p.cp_comm == CpComm::a2a) {
    return fmt::format("no torchtitan files: torchtitan's context parallelism is ring attention "
                       "(PyTorch's context_parallel), not DeepSpeed-Ulysses all-to-alls (cp {} "
                       "a2a); plan with --cp_comm ring",
                       f.p.cp);
  }
  const ModelSpec& m = f.model;
  if (m.is_moe()) {
    if (std::string why = moe_refusal(f); !why.empty()) return why;
    if (std::string why = moe_a2a_overlap_refusal(f, "no torchtitan files", "torchtitan v0.2.2");
        !why.empty()) {
      return why;
    }
    if (std::string why = moe_dispatcher_refusal(f, "no torchtitan files", "torchtitan v0.2.2");
        !why.empty()) {
      return why;
    }
  } else if (std::string why = llama3_refusal(m); !why.empty()) {
    return why;
  }
  if (f.precision == Precision::fp16) {
    return "no torchtitan files: torchtitan trains in bf16 or fp32 "
           "(training.mixed_precision_param), and a GPU of the plan has no bf16";
  }
  return {};
}

void rules(const Facts&) {}

std::string flavor_lines(const Facts& f) {
  const ModelSpec& m = f.model;
  if (const MoeFlavor* fl = m.is_moe() ? shipped_moe_flavor(m) : nullptr; fl != nullptr) {
    return fmt::format("[model]\nname = \"{}\"\nflavor = \"{}\"  # shipped: "
                       "torchtitan/models/{}/__init__.py\n",
                       fl->model, fl->flavor, fl->model);
  }
  if (const Flavor* fl = shipped_flavor(m); fl != nullptr) {
    return fmt::format("[model]\nname = \"llama3\"\nflavor = \"{}\"  # shipped: "
                       "torchtitan/models/llama3/__init__.py\n",
                       fl->name);
  }
  const auto ffn = ffn_args(m);
  const ModelFamily* fam = model_family(m.name);
  std::string out = "# torchtitan has no flavor for this model: add it to llama3_args in\n"
                    "# torchtitan/models/llama3/__init__.py (its FeedForward then has width " +
                    std::to_string(m.ffn_hidden_size) + "):\n";
  out += fmt::format("#   \"{}\": TransformerModelArgs(dim={}, n_layers={}, n_heads={}, n_kv_heads={}, "
                     "vocab_size={}, multiple_of={}, ffn_dim_multiplier={}, rope_theta={}),\n",
                     m.name, m.hidden_size, m.num_layers, m.num_attention_heads,
                     m.num_key_value_heads, m.vocab_size, ffn->first,
                     ffn->second > 0 ? fmt::format("{:.2f}", ffn->second) : "None",
                     fam != nullptr ? fmt::format("{:g}", fam->rotary_base) : "10000");
  out += "[model]\nname = \"llama3\"\n";
  out += fmt::format("flavor = \"{}\"\n", m.name);
  return out;
}

/// Per-rank batch: with a pipeline, a step's micro-batches are one local batch that the
/// schedule splits into pipeline_parallel_microbatch_size pieces (job_config.py:411-417), so
/// local_batch_size = mbs x micro-batches; without one, each local batch is a forward pass and
/// train.py:212-214 accumulates global / (local x dp) of them, so local_batch_size = mbs.
int local_batch_size(const Facts& f) { return f.p.pp > 1 ? f.p.mbs * f.p.num_micro_batches : f.p.mbs; }

std::vector<int> model_parts(const Facts& f) {
  // ZBVZeroBubble and DualPipeV: 2 pp stages in stage order, which torchtitan places on the
  // ranks in a V (stage k and 2 pp - 1 - k on rank k), as estimated.
  const int v = schedule_chunks_per_rank(f.p.schedule) > 1 ? 2 : f.p.virtual_stages;
  return v > 1 ? interleaved_chunks(static_cast<int>(f.model.num_layers), f.p.pp, v)
               : f.transformer;
}

/// torchtitan's key/value exchange for the estimate's cp variant
/// (parallelism.context_parallel_rotate_method, default "allgather"): the ring passes K/V
/// shard by shard ("alltoall"), the all-gather variant gathers them after the first block
/// ("allgather": torch_allgather is that gather as torch overlaps it with the first block;
/// allgather, Llama 3's, charges it exposed). Ulysses plans are refused before this.
const char* rotate_method(const Facts& f) {
  return f.p.cp_comm == CpComm::allgather || f.p.cp_comm == CpComm::torch_allgather
             ? "allgather"
             : "alltoall";
}

std::string toml(const Facts& f) {
  std::string out = "# torchtitan v0.2.x job config (torchtitan/config/job_config.py at v0.2.2).\n"
                    "# For torchtitan main (no TOML), see launch_torchtitan_main.sh.\n# " +
                    plan_line(f) + "\n";
  out += flavor_lines(f);
  if (f.fp8) {
    out += "converters = [\"quantize.linear.float8\"]\n";
  }
  out += "\n[training]\n";
  out += fmt::format("local_batch_size = {}\nglobal_batch_size = {}\nseq_len = {}\nsteps = 1000\n",
                     local_batch_size(f), f.ctx.global_batch, f.model.sequence_length);
  if (f.precision == Precision::fp32) {
    out += "mixed_precision_param = \"float32\"\n";
  }
  if (pure_16bit(f)) {
    // --master_weights off: parameters, gradients and optimizer states in bf16, no fp32 copy
    // (job_config.py Training.dtype, v0.2.2; torchtitan has it since e99e16c, 2025-09-16).
    out += "dtype = \"bfloat16\"\n";
  }
  out += "\n[parallelism]\n";
  const bool shard = f.launch.kind == DpLaunchKind::fsdp;
  out += fmt::format("data_parallel_replicate_degree = {}\n", shard ? 1 : f.p.dp);
  out += fmt::format("data_parallel_shard_degree = {}\n", shard ? f.p.dp : 1);
  if (shard) {
    out += "fsdp_reshard_after_forward = \"default\"\n";
  }
  out += fmt::format("tensor_parallel_degree = {}\ncontext_parallel_degree = {}\n", f.p.tp,
                     static_cast<int>(f.p.cp));
  if (f.p.cp > 1) {
    out += fmt::format("context_parallel_rotate_method = \"{}\"\n", rotate_method(f));
  }
  out += fmt::format("pipeline_parallel_degree = {}\n", f.p.pp);
  if (f.model.is_moe()) {
    // Experts on the sparse mesh (pp, dp_replicate, efsdp, ep, etp): efsdp = dp_shard x cp x
    // tp / (etp x ep) holds the same experts (torchtitan/distributed/parallel_dims.py). With
    // ep 1 the experts are split over tp as the dense MLP and etp has no effect.
    out += fmt::format("expert_parallel_degree = {}\nexpert_tensor_parallel_degree = {}\n", f.p.ep,
                       f.p.ep > 1 ? f.p.etp : 1);
  }
  if (f.p.pp > 1) {
    out += fmt::format("pipeline_parallel_schedule = \"{}\"\n", schedule_name(f));
    out += fmt::format("pipeline_parallel_microbatch_size = {}\n", f.p.mbs);
    out += "# The planned split: the embedding with stage 0, norm and output with the last stage.\n";
    out += "module_fqns_per_model_part = [\n";
    int layer = 0;
    const std::vector<int> parts = model_parts(f);
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
      out += "  [" + join(names, ", ") + "],\n";
    }
    out += "]\n";
  }
  // Written in every case: v0.2.2's default is selective, every second layer
  // (job_config.py:652-655).
  out += "\n[activation_checkpoint]\n";
  switch (recompute_of(f)) {
  case Recompute::none: out += "mode = \"none\"\n"; break;
  case Recompute::full: out += "mode = \"full\"\n"; break;
  case Recompute::selective: out += "mode = \"selective\"\nselective_ac_option = \"op\"\n"; break;
  }
  if (f.fp8) {
    // Per-tensor current scaling, as the native estimate's fp8 casts.
    out += "\n[quantize.linear.float8]\nrecipe_name = \"tensorwise\"\n";
  }
  if (const NativeSettings* st = native_settings(f);
      st != nullptr && (st->fused_loss || st->fused_layers)) {
    // [compile] components: "model" compiles each transformer block, "loss" the loss.
    const std::string components = st->fused_layers && st->fused_loss ? "\"model\", \"loss\""
                                   : st->fused_layers           ? "\"model\""
                                                                : "\"loss\"";
    out += "\n[compile]\nenable = true\ncomponents = [" + components + "]\n";
  }
  return out;
}

std::string launcher_v02(const Facts& f) {
  return launch_torchrun_text(
      f, "torchtitan v0.2.x", "",
      fmt::format("exec torchrun --nnodes {} --nproc-per-node {} --node-rank \"$NODE_RANK\" "
                  "\\\n  --master-addr \"$MASTER_ADDR\" --master-port {} \\\n  -m "
                  "torchtitan.train --job.config_file \"$PLAN_DIR/torchtitan.toml\"\n",
                  f.nodes, f.gpus_per_node, kMasterPort));
}

/// torchtitan main (b5bcd76): the shipped config function plus command-line overrides of
/// torchtitan/config/configs.py (token-based batch knobs, num_pp_microbatches).
std::string launcher_main(const Facts& f, const Flavor& fl) {
  const std::int64_t seq = f.model.sequence_length;
  std::string ov;
  const auto o = [&](const std::string& k, const std::string& v) {
    ov += fmt::format("  --{} {} \\\n", k, v);
  };
  o("training.num_tokens_per_microbatch_per_dp_rank", std::to_string(f.p.mbs * seq));
  o("training.num_tokens_per_train_step", std::to_string(f.ctx.global_batch * seq));
  o("training.max_context_length", std::to_string(seq));
  if (pure_16bit(f)) o("training.dtype", "bfloat16"); // --master_weights off
  const bool shard = f.launch.kind == DpLaunchKind::fsdp;
  o("parallelism.data_parallel_replicate_degree", std::to_string(shard ? 1 : f.p.dp));
  o("parallelism.data_parallel_shard_degree", std::to_string(shard ? f.p.dp : 1));
  o("parallelism.tensor_parallel_degree", std::to_string(f.p.tp));
  if (f.p.cp > 1) {
    o("parallelism.context_parallel_degree", std::to_string(f.p.cp));
    o("parallelism.context_parallel_rotate_method", rotate_method(f));
  }
  o("parallelism.pipeline_parallel_degree", std::to_string(f.p.pp));
  if (f.p.pp > 1) {
    o("parallelism.pipeline_parallel_schedule", schedule_name(f));
    o("parallelism.num_pp_microbatches", std::to_string(f.p.num_micro_batches));
  }
  std::string out = launch_torchrun_text(
      f, fmt::format("torchtitan main (read at b5bcd76; config function {})", fl.config_function),
      "",
      fmt::format("# The activation checkpointing, float8 and the uneven split are set in the\n"
                  "# config function on main (not by flags): see PLAN.md and torchtitan.toml.\n"
                  "exec torchrun --nnodes {} --nproc-per-node {} --node-rank \"$NODE_RANK\" "
                  "\\\n  --master-addr \"$MASTER_ADDR\" --master-port {} \\\n  -m "
                  "torchtitan.train --module llama3 --config {} \\\n",
                  f.nodes, f.gpus_per_node, kMasterPort, fl.config_function));
  ov.resize(ov.size() - 3); // drop the last " \\\n"
  return out + ov + "\n";
}

void files(const Facts& f, Output& out) {
  out.add("torchtitan.toml", toml(f), false,
          fmt::format("torchtitan v0.2.x config ({} over dp, tp, pp{}; local_batch_size {} = {}; "
                      "activation checkpointing written explicitly)",
                      f.launch.kind == DpLaunchKind::fsdp ? "FSDP2" : "DDP",
                      f.model.is_moe() ? ", ep, etp" : "", local_batch_size(f),
                      f.p.pp > 1 ? "micro-batch x micro-batches, split by the pipeline"
                                 : "the micro-batch, accumulated global / (local x dp) times"));
  out.add("launch_torchtitan.sh", launcher_v02(f), true,
          "per-node torchrun launcher for torchtitan v0.2.x (reads torchtitan.toml)");
  if (const Flavor* fl = shipped_flavor(f.model); fl != nullptr) {
    out.add("launch_torchtitan_main.sh", launcher_main(f, *fl), true,
            fmt::format("per-node launcher for torchtitan main (b5bcd76, no TOML: --module llama3 "
                        "--config {} and overrides)",
                        fl->config_function));
    if (recompute_of(f) != Recompute::selective || f.fp8 || (f.p.pp > 1 && uneven(model_parts(f)))) {
      out.notes.push_back(fmt::format(
          "torchtitan main: {} sets activation checkpointing (selective by default), float8 and "
          "the pipeline split in Python; edit it to match torchtitan.toml (recompute {}{}{}).",
          fl->config_function, to_string(recompute_of(f)), f.fp8 ? ", float8 tensorwise" : "",
          f.p.pp > 1 && uneven(model_parts(f)) ? ", module_fqns_per_model_part" : ""));
    }
  } else {
    out.notes.push_back(f.model.is_moe()
                            ? "torchtitan main (b5bcd76) is written here for its Llama-3 config "
                              "functions only: run this MoE plan with torchtitan v0.2.x and "
                              "torchtitan.toml."
                            : "torchtitan main (b5bcd76) has no config function for this model: "
                              "use torchtitan v0.2.x with torchtitan.toml.");
  }
  if (f.launch.kind == DpLaunchKind::fsdp && f.p.pp > 1) {
    out.notes.push_back("Megatron-LM rejects --use-torch-fsdp2 with pipeline parallelism, so this "
                        "FSDP plan is written for torchtitan only (FSDP2 under a pipeline keeps "
                        "parameters gathered between forward and backward, ZeRO-2-like).");
  }
  if (f.p.pp > 1 && f.p.num_micro_batches < f.p.pp) {
    out.notes.push_back(fmt::format("torchtitan warns when micro-batches ({}) are fewer than "
                                    "stages ({}): the pipeline has a bubble (the estimate includes it).",
                                    f.p.num_micro_batches, f.p.pp));
  }
}

} // namespace

const Writer& torchtitan_writer() {
  static const Writer w{"torchtitan",
                        "torchtitan v0.2.x TOML (read at v0.2.2); main (read at b5bcd76) "
                        "command line for the shipped Llama-3 flavors",
                        refusal, rules, files};
  return w;
}

} // namespace zerosearch::launch
