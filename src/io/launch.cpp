#include "zerosearch/model/zero_bubble.hpp"
#include "zerosearch/model/estimator.hpp"
#include "zerosearch/io/launch.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "launch/writer.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/io/columns.hpp"
#include "zerosearch/io/output_file.hpp"

namespace zerosearch {

namespace fs = std::filesystem;

namespace {

using launch::Facts;
using launch::Output;
using launch::Precision;
using launch::Writer;

/// The registry: one row per launch target, in writing order (the first launcher written is
/// the one slurm.sbatch runs). A new target is one file in src/io/launch/ and one row here.
const std::array<const Writer*, 5>& registry() {
  static const std::array<const Writer*, 5> rows{
      &launch::deepspeed_writer(), &launch::megatron_deepspeed_writer(),
      &launch::megatron_lm_writer(), &launch::torchtitan_writer(), &launch::slurm_writer()};
  return rows;
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

/// The precision of the files from the plan's dtype and each GPU's GpuSpec: bf16 only when
/// every GPU of the plan has a bf16 peak in the catalog, else fp16 (with the reason).
void set_precision(Facts& f) {
  if (f.plan.hardware == nullptr) {
    throw std::logic_error("launch_files: LaunchPlan.hardware is not set");
  }
  std::vector<std::string> no_bf16;
  for (const NodeGroup& g : f.cluster.groups) {
    if (g.count <= 0) {
      continue;
    }
    const GpuSpec* spec = f.plan.hardware->find_gpu(g.gpu);
    if (spec == nullptr) {
      throw InputError(fmt::format("cannot emit: GPU '{}' is not in the hardware catalog", g.gpu));
    }
    if (!spec->peak_tflops.bf16) {
      no_bf16.push_back(spec->name);
    }
  }
  const Precision half = no_bf16.empty() ? Precision::bf16 : Precision::fp16;
  const Dtype dtype = f.ctx.precision_bits == 32 ? Dtype::fp32 : f.p.dtype;
  switch (dtype) {
  case Dtype::fp32:
  case Dtype::tf32: f.precision = Precision::fp32; break;
  case Dtype::fp16: f.precision = Precision::fp16; break;
  case Dtype::bf16: f.precision = half; break;
  case Dtype::fp8:
    f.precision = half;
    f.fp8 = true;
    break;
  }
  if (!no_bf16.empty() && (dtype == Dtype::bf16 || dtype == Dtype::fp8)) {
    f.precision_note = fmt::format("{} has no bf16 (hardware catalog: no bf16 peak), so the files "
                                   "train in fp16 with loss scaling.",
                                   fmt::join(no_bf16, ", "));
  }
}

/// PLAN.md's words on where a split schedule runs: " as <torchtitan's class>..." from the
/// schedule table, or the other places that run the schedules torchtitan cannot.
std::string where_torchtitan_runs(const ScheduleInfo& s) {
  if (s.torchtitan != nullptr) {
    return fmt::format(" as {}{}", s.torchtitan, s.torchtitan_note);
  }
  std::string elsewhere;
  for (const ScheduleInfo& other : schedules()) {
    if (other.splits_backward && other.torchtitan == nullptr && other.elsewhere[0] != '\0') {
      elsewhere += fmt::format("{}{}: {}", elsewhere.empty() ? "" : "; ", other.title,
                               other.elsewhere);
    }
  }
  return fmt::format(": no framework here runs it ({})", elsewhere);
}

void check_general_rules(const Facts& f) {
  const DesignPoint& p = f.p;
  if (f.ctx.global_batch % (p.mbs * p.dp) != 0) {
    throw InputError(fmt::format("cannot emit: global batch {} is not a multiple of micro-batch {} x "
                                 "data-parallel {} (DeepSpeed and Megatron require train_batch_size "
                                 "== micro x accumulation x dp)",
                                 f.ctx.global_batch, p.mbs, p.dp));
  }
  if (f.model.num_attention_heads % p.tp != 0) {
    throw InputError(fmt::format("cannot emit: Megatron requires num_attention_heads ({}) to be a "
                                 "multiple of tensor-model-parallel-size ({})",
                                 f.model.num_attention_heads, p.tp));
  }
  switch (p.schedule) {
  case Schedule::one_f_one_b:
  case Schedule::interleaved:
  case Schedule::zb_h1:
  case Schedule::zb_h2:
  case Schedule::zbv:
  case Schedule::dualpipe:
  case Schedule::dualpipev: break; // each writer says whether its framework has the schedule
  case Schedule::terapipe:
    throw InputError("cannot emit: TeraPipe's token-level pipeline runs in none of the frameworks "
                     "written here (Megatron-LM, Megatron-DeepSpeed and torchtitan pipeline whole "
                     "micro-batches); choose a 1f1b or interleaved row");
  }
  // --layer_impl prices another code base's layers (Hugging Face's or Megatron-LM v1's eager
  // GPT-2, or Megatron-LM without its fusions): the files written here start the frameworks'
  // own fused layers, not what was estimated.
  if (const NativeSettings* st = native_settings(f);
      st != nullptr && st->layer_impl == LayerImpl::megatron_unfused) {
    throw InputError(
        "cannot emit: the plan was estimated with --layer_impl megatron_unfused (Megatron-LM's "
        "layer with its softmax, bias-GeLU and bias-dropout-add fusions off), which the launch "
        "files written here do not set up (they run the frameworks' fused layers); estimate it "
        "with --layer_impl framework");
  }
  if (const NativeSettings* st = native_settings(f);
      st != nullptr && st->layer_impl != LayerImpl::framework) {
    throw InputError(fmt::format(
        "cannot emit: the plan was estimated with --layer_impl {} ({} eager GPT-2 "
        "code), which none of the launch files written here runs (they start Megatron-LM, "
        "Megatron-DeepSpeed or torchtitan layers); estimate it with --layer_impl framework",
        kLayerImplNames[static_cast<std::size_t>(st->layer_impl)],
        layer_impl_owner(st->layer_impl)));
  }
  // --zero3_impl per_param prices DeepSpeed's ZeRO-3 before v0.6.0 (one gather per parameter,
  // nothing overlapped); the DeepSpeed configs written here are read by DeepSpeed 0.19, whose
  // ZeRO-3 gathers coalesced and prefetched: another step time than the one estimated.
  if (const NativeSettings* st = native_settings(f);
      st != nullptr && p.method == DpMethod::zero3 && st->zero3_impl == Zero3Impl::per_param) {
    throw InputError(
        "cannot emit: the plan was estimated with --zero3_impl per_param (DeepSpeed v0.3.12 to "
        "v0.5.4's ZeRO-3, one gather per parameter), but the files written here run DeepSpeed "
        "0.19, whose ZeRO-3 gathers coalesced; estimate it with --zero3_impl coalesced");
  }
  if (f.plan.estimate.oom) {
    throw InputError(fmt::format("cannot emit: the plan needs {:.2f} GiB on its fullest stage, more "
                                 "than its GPU holds (OOM); choose a feasible row with --rank",
                                 f.plan.estimate.gpumem_gib));
  }
}

Facts make_facts(const LaunchPlan& plan) {
  const EstimateContext& ctx = *plan.ctx;
  Facts f{plan, ctx, ctx.cluster, ctx.model, plan.point, info(plan.point.method).launch,
          {}, {}, {}, 0, 0, Precision::bf16, false, {}, {}};
  f.transformer = transformer_layers_per_stage(plan.estimate.partition);
  f.hosts = placeholder_hosts(ctx.cluster, plan.placement);
  f.gpus_per_node = ctx.cluster.gpus_per_node;
  f.nodes = static_cast<int>(plan.placement.size());
  f.stage_gpu = stage_gpu_types(plan.point.pp, plan.placement, ctx.slowness);
  set_precision(f);
  return f;
}

/// The command that reproduces the search, for PLAN.md's native comparison.
std::string search_command(const Facts& f) {
  if (!f.plan.command.empty()) {
    return f.plan.command;
  }
  std::vector<std::string> types;
  std::vector<std::string> counts;
  for (const NodeGroup& g : f.cluster.groups) {
    if (g.count > 0) {
      types.push_back(g.gpu);
      counts.push_back(std::to_string(g.count));
    }
  }
  return types.size() == 1
             ? fmt::format("--node_type {} --num_node {} --gpu_per_node {} --type {}", types[0],
                           counts[0], f.gpus_per_node, f.model.name)
             : fmt::format("--node_type {} --node_type_num_node {} --gpu_per_node {} --type {}",
                           fmt::join(types, " "), fmt::join(counts, " "), f.gpus_per_node,
                           f.model.name);
}

/// PLAN.md's lines on activation recomputation and how the estimate's times were obtained.
std::string recompute_lines(const Facts& f) {
  if (!estimator_info(f.ctx.estimator).models_recompute) {
    return fmt::format(
        "- Recompute (activation checkpointing): none, written explicitly (Megatron: no "
        "--recompute-* flag; DeepSpeed pipeline activation_checkpoint_interval 0; torchtitan "
        "mode \"none\"). The zerosearch estimator's layer times are the original "
        "ZeROSearch's profiles, measured with its Megatron-DeepSpeed fork without activation "
        "checkpointing (its Megatron-DeepSpeed/_01_run_inter_homo.sh passes no "
        "--checkpoint-activations or --recompute-* flag and its ds_config.json no "
        "activation_checkpointing, so GPTModelPipe's activation_checkpoint_interval is 0), in "
        "fp16; its memory formula is the activations of a layer without recompute "
        "(docs/launch.md). Its runs had one micro-batch per step (its _00_conf.sh: "
        "GLOBAL_BATCH_SIZE = MICRO_BATCH_SIZE x NUM_MB x DP, NUM_MB=1), and its memory check "
        "counts about one micro-batch of activations per layer, while 1F1B with {} "
        "micro-batches keeps up to {} in flight on stage 0: check the memory with the analytic "
        "model, same plan, also without recompute: "
        "`zerosearch {} --custom_gbs {} --exhaustive --estimator native --dp_method {} --tp {} "
        "--pp {} --dp {} --mbs {} --recompute none` (if it reports OOM, that command with "
        "--recompute full --emit DIR writes the files of the plan that fits).\n",
        f.p.num_micro_batches, std::min(f.p.num_micro_batches, f.p.pp),
        search_command(f), f.ctx.global_batch, to_string(f.p.method), f.p.tp, f.p.pp, f.p.dp,
        f.p.mbs);
  }
  switch (f.p.recompute) {
  case Recompute::none:
    return "- Recompute (activation checkpointing): none, as estimated; written explicitly "
           "(torchtitan v0.2.2 would otherwise checkpoint every second layer).\n";
  case Recompute::selective:
    if (const RecomputeModules* mods = launch::recompute_modules(f)) {
      return fmt::format("- Recompute: selective of the modules {}, as estimated (Megatron: "
                         "--recompute-granularity selective --recompute-modules {}).\n",
                         to_string(*mods, ", "), to_string(*mods, " "));
    }
    return "- Recompute: selective, as estimated (Megatron: --recompute-granularity selective; "
           "torchtitan: per-op selective checkpointing). DeepSpeed's pipeline engine does not "
           "honour selective recompute when pp > 1.\n";
  case Recompute::full: return "- Recompute: full, every layer, as estimated.\n";
  }
  return {};
}

std::string precision_line(const Facts& f) {
  std::string out;
  switch (f.precision) {
  case Precision::bf16: out = "- Precision: bf16"; break;
  case Precision::fp16: out = "- Precision: fp16"; break;
  case Precision::fp32: out = "- Precision: fp32"; break;
  }
  if (f.fp8) {
    switch (f.launch.kind) {
    case DpLaunchKind::replicate:
    case DpLaunchKind::fsdp:
      out += " with fp8 linear layers, as estimated (Megatron-LM: --fp8-format hybrid "
             "--fp8-recipe tensorwise, with Transformer Engine; torchtitan: the float8 "
             "converter, tensorwise)";
      break;
    case DpLaunchKind::deepspeed_zero:
      out += ", not the estimate's fp8: DeepSpeed has no fp8 mode (see Notes)";
      break;
    }
  }
  if (!f.precision_note.empty()) {
    out += ". " + f.precision_note;
  }
  return out + ".\n";
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
  return launch::join(stages, "|");
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


std::vector<LaunchTarget> launch_targets() {
  std::vector<LaunchTarget> out;
  for (const Writer* w : registry()) {
    out.push_back({w->name, w->versions});
  }
  return out;
}

const std::vector<std::string>& launch_file_names() {
  static const std::vector<std::string> names{
      "PLAN.md", "hostfile", "slurm.sbatch", "ds_config.json", "megatron_deepspeed_args.sh",
      "launch_deepspeed.sh", "ds_explicit_partition.py", "megatron_lm_args.sh",
      "launch_megatron_lm.sh", "torchtitan.toml", "launch_torchtitan.sh",
      "launch_torchtitan_main.sh", "launch_deepspeed_autoep.sh"};
  return names;
}

LaunchChoice launch_choice(const LaunchPlan& plan) {
  Facts f = make_facts(plan);
  LaunchChoice out;
  for (const Writer* w : registry()) {
    if (std::string(w->name) == "slurm") {
      continue;
    }
    std::string why = w->refusal(f);
    if (why.empty()) {
      out.written.emplace_back(w->name);
    } else {
      out.refused.emplace_back(w->name, std::move(why));
    }
  }
  return out;
}

std::vector<LaunchFile> launch_files(const LaunchPlan& plan) {
  Facts f = make_facts(plan);
  check_general_rules(f);
  Output out;
  out.add("hostfile", launch::hostfile_text(f), false,
          "the plan's nodes in rank order (line order = stage order), DeepSpeed hostfile syntax, "
          "with node type and stages per line; replace the placeholder names");
  std::vector<std::string> refused;
  std::vector<std::string> targets;
  for (const Writer* w : registry()) {
    if (std::string(w->name) == "slurm") {
      // The first launcher written is the one Slurm runs.
      for (const LaunchFile& lf : out.files) {
        if (f.primary_launcher.empty() && lf.name.rfind("launch_", 0) == 0) {
          f.primary_launcher = lf.name;
        }
      }
    }
    const std::string why = w->refusal(f);
    if (!why.empty()) {
      if (!f.primary_launcher.empty() || std::string(w->name) != "slurm") {
        refused.push_back(why);
      }
      continue;
    }
    w->rules(f);
    w->files(f, out);
    targets.push_back(fmt::format("{} ({})", w->name, w->versions));
  }
  if (f.primary_launcher.empty()) {
    throw InputError(fmt::format("cannot emit: no framework can run this plan: {}",
                                 fmt::join(refused, "; ")));
  }
  const int T = f.p.tp * f.p.cp * f.p.dp; // a stage's GPUs (tp x cp x dp)
  const int G = f.gpus_per_node;
  if (T % G != 0 && G % T != 0) {
    out.notes.push_back(fmt::format("A stage has {} = {} GPUs and a node {}: stages straddle "
                                    "nodes, so a stage may span two node types.",
                                    f.p.cp > 1 ? "tp x cp x dp" : "tp x dp", T, G));
  }

  const EstimateContext& ctx = f.ctx;
  const Estimate& e = plan.estimate;
  std::string md = "# zerosearch plan\n\n";
  std::string stages;
  for (std::size_t s = 0; s < f.stage_gpu.size(); ++s) {
    stages += fmt::format("{}{}", s == 0 ? "" : ", ",
                          ctx.cluster.groups[static_cast<std::size_t>(f.stage_gpu[s])].gpu);
  }
  md += fmt::format(
      "Train {} on {} ({} GPUs, {} per node) with {} ({}), tensor parallel {}, pipeline parallel {} "
      "and data parallel {}: each step of {} sequences of {} tokens runs {} micro-batches of {} per "
      "data-parallel replica (train_batch_size {} = {} x {} x {}). Pipeline stage s owns the {} "
      "= {} GPUs of ranks s*{}..(s+1)*{}-1, so the hostfile's line order places the stages on "
      "{} in that order. The layers per stage are {} (pipeline layers, the embedding counted with "
      "stage 0 and the output layer with stage {}), i.e. {} transformer layers. zerosearch "
      "({} estimator) estimates {:.4f} s per step ({:.4f} s of pipeline, {:.4f} s of "
      "data-parallel sync, {:.4f} s of embedding sync), {:.2f} GiB on the fullest GPU and "
      "${:.6f} per step. Source: {}.\n\n",
      f.model.name, compress_placement(ctx.cluster, plan.placement), ctx.cluster.world_size(), G,
      to_string(f.p.method), info(f.p.method).summary, f.p.tp, f.p.pp, f.p.dp, ctx.global_batch,
      f.model.sequence_length, f.p.num_micro_batches, f.p.mbs, ctx.global_batch, f.p.mbs,
      f.p.num_micro_batches, f.p.dp, f.p.cp > 1 ? "tp x cp x dp" : "tp x dp", T, T, T, stages, fmt::join(e.partition, "-"), f.p.pp - 1,
      fmt::join(f.transformer, "-"), to_string(ctx.estimator), e.step_s, e.pipeline_s,
      e.dp_sync_s, e.embedding_sync_s, e.gpumem_gib, e.price_per_step_usd, plan.origin);
  md += "## Files\n\n" + launch::join(out.listing, "\n") + "\n\n";
  md += "Written for: " + launch::join(targets, "; ") + ".\n\n";
  md += "## Before you launch\n\n"
        "- Replace the placeholder host names in `hostfile` and `slurm.sbatch` with real hosts of "
        "the same GPU type, keeping the line order.\n"
        "- Set `TOKENIZER_MODEL` and `DATA_PREFIX`; run the launch script from the framework's "
        "checkout (or set MEGATRON_LM / MEGATRON_DS to it: the launchers call "
        "`$MEGATRON_LM/pretrain_gpt.py`), `torchtitan` installed for torchtitan.\n" +
        recompute_lines(f) + precision_line(f);
  if (f.p.offload != Offload::none) {
    md += fmt::format("- Offload: {} to host memory (DeepSpeed `offload_optimizer`{} in "
                      "`ds_config.json`), as estimated.\n",
                      to_string(f.p.offload),
                      f.p.offload == Offload::optimizer_params ? " and `offload_param`" : "");
  }
  if (f.p.cp > 1) {
    md += fmt::format(
        "- Context parallelism: each sequence split over cp {} GPUs ({}; ranks tp innermost, then "
        "cp, so a stage's {} GPUs are tp x cp x dp). Megatron-LM `--context-parallel-size {} "
        "--cp-comm-type {}`; torchtitan `context_parallel_degree` (ring only); "
        "Megatron-DeepSpeed `--ds-sequence-parallel-size` (all-to-all only).\n",
        static_cast<int>(f.p.cp),
        f.p.cp_comm == CpComm::ring  ? "ring attention with causal load balance"
        : f.p.cp_comm == CpComm::a2a ? "DeepSpeed-Ulysses all-to-alls"
        : f.p.cp_comm == CpComm::torch_allgather
            ? "keys and values all-gathered, PyTorch context_parallel's variant"
            : "keys and values all-gathered, Llama 3's variant",
        T, static_cast<int>(f.p.cp), megatron_cp_comm_type(f.p.cp_comm));
  }
  if (f.p.virtual_stages > 1) {
    md += fmt::format("- Interleaved 1F1B with {} model chunks per pipeline rank, as estimated.\n",
                      f.p.virtual_stages);
  }
  if (f.p.pp > 1 && is_split_schedule(f.p.schedule)) {
    md += fmt::format("- Pipeline schedule {} as estimated: backward split into input-gradient "
                      "and weight-gradient passes{}. Of the frameworks written here only "
                      "torchtitan (torch.distributed.pipelining) runs it{}; the frameworks that "
                      "cannot are listed under Not written.\n",
                      to_string(f.p.schedule),
                      schedule_chunks_per_rank(f.p.schedule) > 1
                          ? ", two model chunks per rank in a V (stage k and 2 pp - 1 - k on "
                            "rank k)"
                          : "",
                      where_torchtitan_runs(info(f.p.schedule)));
  }
  if (f.model.is_moe()) {
    md += fmt::format("- MoE: {} experts per layer, top-{} routing, expert width {} (Megatron-LM "
                      "--num-experts --moe-router-topk --moe-ffn-hidden-size); expert parallel "
                      "size {}, expert tensor parallel size {}, expert data parallel size {} "
                      "(--expert-model-parallel-size --expert-tensor-parallel-size), as "
                      "estimated.\n",
                      f.model.num_experts, f.model.experts_per_token, f.model.moe_ffn_hidden_size,
                      f.p.ep, f.p.etp, f.p.edp());
  }
  if (!refused.empty()) {
    md += "\n## Not written\n\n";
    for (const auto& r : refused) {
      md += "- " + r + "\n";
    }
  }
  if (!out.notes.empty()) {
    md += "\n## Notes\n\n";
    for (const auto& n : out.notes) {
      md += "- " + n + "\n";
    }
  }
  std::vector<LaunchFile> result;
  result.reserve(out.files.size() + 1);
  result.push_back(LaunchFile{"PLAN.md", std::move(md), false});
  std::move(out.files.begin(), out.files.end(), std::back_inserter(result));
  return result;
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
