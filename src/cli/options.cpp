#include "options.hpp"
#include "option_table.hpp"

#include <algorithm>
#include <cctype>
#include <memory>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/core/version.hpp"
#include "zerosearch/search/plan.hpp"

namespace zerosearch::cli {

namespace {

/// CLI11's formatter with option descriptions word-wrapped to fit 100 columns.
class WrappingFormatter : public CLI::Formatter {
public:
  std::string make_option_desc(const CLI::Option* opt) const override {
    constexpr std::size_t kWidth = 100 - 32;
    const std::string text = CLI::Formatter::make_option_desc(opt);
    std::string out;
    std::size_t line = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t end = text.find(' ', pos);
      if (end == std::string::npos) {
        end = text.size();
      }
      const std::size_t word = end - pos;
      if (line > 0 && line + 1 + word > kWidth) {
        out += '\n';
        line = 0;
      } else if (line > 0) {
        out += ' ';
        ++line;
      }
      out.append(text, pos, word);
      line += word;
      pos = end + 1;
    }
    return out;
  }
};

/// CLI11's message for a bad command line, on one line and in the words of our other errors.
std::string parse_error_text(const CLI::ParseError& e) {
  std::string what = e.what();
  if (const auto nl = what.find('\n'); nl != std::string::npos) {
    what.resize(nl);
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    // "--node_type: 1 required TEXT missing", "--num_node: At Most 1 required but received 2"
    const std::string flag = what.substr(0, what.find(':'));
    if (what.find("missing") != std::string::npos) {
      return fmt::format("{} needs a value", flag);
    }
    if (what.find("received") != std::string::npos) {
      return fmt::format("{} takes one value and was given more", flag);
    }
  }
  return what;
}

/// Levenshtein distance of two short strings.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

/// --schedule's help, written from the schedule table (kSchedules) and the plan's default: a new
/// schedule is listed without an edit here.
std::string schedule_help() {
  std::string names;
  for (const ScheduleInfo& s : schedules()) {
    names += fmt::format("{}{}{}", names.empty() ? "" : ", ", s.name,
                         s.interleaves ? " (with --virtual_stages > 1)" : "");
  }
  std::string defaults;
  for (const Schedule s : SearchPlan{}.schedules) {
    defaults += fmt::format("{}{}", defaults.empty() ? "" : ",", to_string(s));
  }
  return fmt::format("Pipeline schedules to search: {}, or a list (default: {}; docs/native.md)",
                     names, defaults);
}

} // namespace

std::string suggest_flag(const std::string& flag, const std::vector<std::string>& flags) {
  // Names users bring from other tools, then spelling: '-' for '_', case, a letter or two.
  static const std::pair<const char*, const char*> kAliases[] = {
      {"--model", "--type"},          {"--model_name", "--type"},
      {"--gpu", "--node_type"},       {"--gpu_type", "--node_type"},
      {"--nodes", "--num_node"},      {"--num_nodes", "--num_node"},
      {"--gpus_per_node", "--gpu_per_node"}, {"--global_batch_size", "--custom_gbs"},
      {"--gbs", "--custom_gbs"},      {"--batch_size", "--custom_gbs"},
      {"--seq_length", "--seq_len"},  {"--sequence_length", "--seq_len"},
      {"--output", "-o"}};
  std::string norm = flag;
  for (std::size_t i = 2; i < norm.size(); ++i) {
    norm[i] = norm[i] == '-' ? '_'
                             : static_cast<char>(std::tolower(static_cast<unsigned char>(norm[i])));
  }
  for (const auto& [alias, meant] : kAliases) {
    if (norm == alias) {
      return meant;
    }
  }
  std::string best;
  std::size_t best_distance = 3; // at most 2 edits
  for (const std::string& f : flags) {
    const std::size_t d = edit_distance(norm, f);
    if (d < best_distance) {
      best_distance = d;
      best = f;
    }
  }
  return best;
}

ParseResult parse_options(int argc, const char* const* argv) {
  RawOptions o;
  CLI::App app{"zerosearch finds the fastest way to train a large language model on a GPU "
               "cluster.\nIt enumerates tensor, pipeline and data-parallel degrees, micro-batch "
               "sizes, data-parallel\nmethods (dp, fsdp, ZeRO 0-3), node placements and layer "
               "partitions, and estimates\nstep time, peak GPU memory and cost of each from "
               "measured per-layer\nprofiles, or analytic ones computed from the GPU's "
               "specifications.",
               "zerosearch"};
  app.set_version_flag("--version", std::string("zerosearch ") + kVersion,
                       "Print the version and exit");
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.formatter(std::make_shared<WrappingFormatter>());
  app.get_formatter()->column_width(32);

  const char* cluster = "Cluster and model";
  app.add_option("--node_type", o.node_types,
                 "GPU node types in order, names from profiledb/hardware.json "
                 "(A10, A6000, RTX3090, ...); default: A10")
      ->expected(1, -1)->type_name("TYPE")->group(cluster);
  app.add_option("--node_type_num_node", o.node_type_counts,
                 fmt::format("Nodes of each --node_type, 1 to {} each; default: --num_node for "
                             "one type",
                             kMaxNodes))
      ->expected(1, -1)->type_name("N")->group(cluster);
  app.add_option("--num_node", o.num_node,
                 fmt::format("Nodes of the single --node_type, 1 to {} (with --pareto: the "
                             "bound per type, at most {}); default: 8",
                             kMaxNodes, kMaxParetoNodesPerType))
      ->type_name("N")->group(cluster);
  app.add_option("--gpu_per_node", o.gpu_per_node, fmt::format("GPUs per node, 1 to {}; default: the catalog's node of the GPU (8 for "
                             "H100-SXM, ...), 4 for the original's entries (A10, A6000, A100, "
                             "H100, RTX3090)",
                             kMaxGpusPerNode))
      ->type_name("N")->group(cluster);
  app.add_option("--type", o.model,
                 "Model from profiledb/models.json (llama2_13B, gpt2XL, llama3_8B, ...), or a "
                 "file: a Hugging Face config.json or a model JSON (docs/models.md); default: "
                 "llama2_13B")
      ->type_name("MODEL")->group(cluster);
  app.add_option("--seq_len", o.seq_len,
                 fmt::format("Training sequence length in tokens, 1 to {}; default: the model's",
                             kMaxSequenceLength))
      ->type_name("N")->group(cluster);
  app.add_option("--custom_gbs", o.custom_gbs, fmt::format("Global batch size, 1 to {}; default: 64", kMaxGlobalBatch))
      ->type_name("N")->group(cluster);
  app.add_option("--custom_num_layer", o.custom_num_layer,
                 "Transformer layers of a model that takes them (gpt2XL); must match its "
                 "profiles; default: 48")
      ->type_name("N")->group(cluster);
  app.add_option("--precision", o.precision,
                 fmt::format("Bits per element of gradient and embedding traffic, 1 to {}; "
                             "default: 16",
                             kMaxPrecisionBits))
      ->type_name("BITS")->group(cluster);
  app.add_option("--iter", o.iter,
                 "Training iterations, for train_cost, 0 or more; default: 12500000")
      ->type_name("N")->group(cluster);
  app.add_option("--comm_type", o.comm_type,
                 "Link bandwidth set from profiledb/hardware.json: ib, pareto; default: ib")
      ->type_name("SET")->group(cluster);
  app.add_option("--profiledb_path", o.profiledb_path,
                 "Folder with models.json, hardware.json and profiles/; default: the one "
                 "installed with zerosearch, or next to it")
      ->type_name("DIR")->group(cluster);

  app.add_option("--hardware", o.hardware,
                 "A GPU catalog in the hardware.json format (docs/hardware.md) merged over the "
                 "built-in one: new GPUs, or replaced ones")
      ->type_name("FILE")->group(cluster);
  app.add_option("--calibration", o.calibration,
                 "Fitted analytic parameters (zerosearch_calibrate -o FILE, docs/analytic.md) "
                 "merged over profiledb/calibration.json")
      ->type_name("FILE")->group(cluster);
  app.add_option("--inter_node_gbps", o.inter_node_Gbitps,
                 "Network bandwidth per node in Gbit/s, one value or one per --node_type; "
                 "replaces the --comm_type figure")
      ->expected(1, -1)->type_name("X")->group(cluster);
  app.add_option("--intra_node_gbps", o.intra_node_Gbitps,
                 "Bandwidth between the GPUs of a node in Gbit/s, one value or one per "
                 "--node_type; replaces the --comm_type figure")
      ->expected(1, -1)->type_name("X")->group(cluster);
  app.add_option("--profile_source", o.profile_source,
                 "Per-layer profiles: measured (profiledb/profiles only), analytic (computed "
                 "from the GPU's specifications, docs/analytic.md), or auto (measured when the "
                 "model has one on that GPU); default: auto")
      ->type_name("S")->group(cluster);

  // The search's flags: text each, checked in option_checks.cpp.
  static const std::vector<TextOption<RawOptions>> search_flags{
      {"-f,--framework", &RawOptions::framework, "F",
       fmt::format("m = Megatron-LM ({}), d = DeepSpeed ({}), both, or default (each method "
                   "once, from the profiles there are); default: default",
                   dp_method_names(Flavour::megatron), dp_method_names(Flavour::deepspeed))},
      {"--search_method", &RawOptions::search_method, "M",
       "Layer partitioner: minmax, ga, optimal; default: minmax"},
      {"--seed", &RawOptions::seed, "N", "--search_method ga: random seed; default: 0"},
      {"-j,--threads", &RawOptions::threads, "N",
       fmt::format("Worker threads, 0 to {}, 0 = one per core; default: 0", kMaxThreads)},
  };
  add_text_options<RawOptions>(app, o, "Search", search_flags);

  const char* output = "Output (default: a short summary on standard output)";
  app.add_option("--format", o.format,
                 "Write the ranked rows to standard output as " + report_format_names(" or ") +
                     "; default: the summary")
      ->type_name("F")->group(output);
  app.add_flag("--pretty", o.pretty,
               "Write the full ranked table to standard output; CSV and JSON get the original's "
               "report column order")
      ->group(output);
  app.add_option("--top", o.top,
                 "Only the N best plans that fit in GPU memory, the same rows in every output "
                 "(summary, files, stdout), N >= 1; --include_oom lets OOM rows count; "
                 "default: all rows (the summary then shows the 10 best that fit)")
      ->type_name("N")->group(output);
  app.add_flag("--include_oom", o.include_oom,
               "OOM rows count in --top and in the summary (is_oom marks them); default: only "
               "rows that fit")
      ->group(output);
  app.add_option("--memory_margin", o.memory_margin,
                 "Memory each GPU keeps free for the CUDA context, NCCL buffers and allocator "
                 "fragmentation: N% of its memory or N GiB; plans that fit only inside it are "
                 "marked 'within margin' (feasibility and ranks are unchanged); default: 10%")
      ->type_name("X")->group(output);
  app.add_flag("--feasible", o.feasible,
               "Leave out design points that do not fit in GPU memory; default: keep them")
      ->group(output);
  app.add_flag("--distinct", o.distinct,
               "One row per design point and distinct estimate in the CSV and JSON too, with its "
               "placement as runs (A10x3 A6000x5) and the number of placements it stands for "
               "(the summary and the table always show distinct rows); default: one row per "
               "placement, the original's format")
      ->group(output);
  app.add_option("-o,--output", o.output,
                 "Also write the ranked CSV to FILE, atomically; '-' = standard output")
      ->type_name("FILE")->group(output);
  app.add_flag("--record", o.record,
               "Also write the ranked CSV to logs/N<nodes>_M<gpus>_model_<type>_comm_<comm>"
               "<add_exp_name>_<homo|hetero>.csv (the original's name; logs/ is created; an "
               "existing file is replaced with a note, see --no_clobber)")
      ->group(output);
  app.add_flag("--no_clobber", o.no_clobber,
               "Refuse to replace an existing output file (-o, --record, --plot): exit 2 and "
               "write nothing")
      ->group(output);
  app.add_option("--add_exp_name", o.add_exp_name,
                 "Suffix of the --record file name, so that runs of a sweep keep their own "
                 "files (no '/' or '..'); default: none")
      ->type_name("TEXT")->group(output);
  app.add_flag("-q,--quiet", o.quiet,
               "Print nothing but errors and the rows asked for with --format, --pretty or "
               "-o -; no summary, notes or progress bar")
      ->group(output);

  const char* modes = "Other modes";
  app.add_flag("--pareto", o.pareto,
               "Sweep compositions of the two --node_type values, up to --num_node each "
               "(price vs time)")
      ->group(modes);
  app.add_option("--max_step_time", o.max_step_time,
                 "--pareto: the cheapest feasible plan within S seconds per step; default: none")
      ->type_name("S")->group(modes);
  app.add_option("--max_price_per_step", o.max_price_per_step,
                 "--pareto: the fastest feasible plan within P dollars per step; default: none")
      ->type_name("P")->group(modes);
  app.add_option("--budget", o.budget,
                 "--pareto: the fastest feasible plan whose train_cost is within USD; "
                 "default: none")
      ->type_name("USD")->group(modes);
  app.add_option("--plot", o.plot,
                 "--pareto: write an SVG chart of price per step vs step time to FILE")
      ->type_name("FILE")->group(modes);
  app.add_flag("--exhaustive", o.exhaustive,
               "Evaluate the one design point given by the flags below")
      ->group(modes);
  app.add_option("--dp_method", o.dp_method, "--exhaustive: " + dp_method_names())
      ->type_name("M")->group(modes);
  app.add_option("--tp", o.tp, "--exhaustive: tensor-parallel degree")
      ->type_name("N")->group(modes);
  app.add_option("--pp", o.pp, "--exhaustive: pipeline-parallel degree")
      ->type_name("N")->group(modes);
  app.add_option("--dp", o.dp, "--exhaustive: data-parallel degree")
      ->type_name("N")->group(modes);
  app.add_option("--mbs", o.mbs, "--exhaustive: micro-batch size")
      ->type_name("N")->group(modes);
  app.add_option("--partition", o.partition,
                 "--exhaustive: layers per stage, e.g. 6,5,5; default: the partitioner's")
      ->type_name("L,L,...")->group(modes);
  app.add_option("--placement", o.placement,
                 "--exhaustive: node types in rank order, e.g. A10,A10,A6000; default: the "
                 "first placement")
      ->type_name("T,T,...")->group(modes);
  app.add_option("--write_profile", o.write_profile,
                 "Write the analytic profile of --type on the first --node_type (-f m or d; "
                 "default d) to FILE in the profiledb format and exit")
      ->type_name("FILE")->group(modes);
  app.add_option("--emit", o.emit,
                 "Write launch files for one plan (DeepSpeed JSON, hostfile, Megatron/torchtitan "
                 "scripts, Slurm, PLAN.md) into DIR, created if missing (docs/launch.md)")
      ->type_name("DIR")->group(modes);
  app.add_option("--rank", o.rank,
                 "--emit/--timeline: the row shown as # N in the summary or the table (the N-th "
                 "row of the CSV or JSON), ties in `rank` apart; default: the best that fits in "
                 "memory")
      ->type_name("N")->group(modes);
  app.add_option("--timeline", o.timeline,
                 "Write an SVG timeline of the plan's pipeline schedule and memory to FILE")
      ->type_name("FILE")->group(modes);
  app.add_option("--html", o.html,
                 "Write a self-contained HTML report (summary, sortable table, timeline) to FILE")
      ->type_name("FILE")->group(modes);
  const std::string native = "Native estimator";
  // The native estimator's flags: text each, checked in option_checks.cpp.
  static const std::vector<TextOption<RawOptions>> native_flags{
      {"--estimator", &RawOptions::estimator, "E",
       "zerosearch (the original's formulas, bit for bit) or native (zerosearch's own model, "
       "docs/native.md); default: zerosearch when every node type has a measured profile of the "
       "model, else native"},
      {"--recompute", &RawOptions::recompute, "R[,R]",
       "Activation recomputation to search: none, selective, full, or a list (default: all "
       "three)"},
      {"--offload", &RawOptions::offload, "O[,O]",
       "DeepSpeed offload to search: none, optimizer, optimizer+params, or a list (default: "
       "none)"},
      {"--virtual_stages", &RawOptions::virtual_stages, "V[,V]",
       "Model chunks per pipeline rank (interleaved 1F1B when > 1), one or a list (default: "
       "1,2)"},
      {"--dtype", &RawOptions::dtype, "D[,D]",
       "Training element type: bf16, fp16, fp32, fp8, or a list (default: from --precision)"},
      {"--schedule", &RawOptions::schedule, "S[,S]", schedule_help()},
      {"--host_memory_gib", &RawOptions::host_memory_gib, "G",
       "Host memory per node for offload, GiB (default: 2x the node's GPU memory)"},
      {"--framework_overhead_gib", &RawOptions::framework_overhead_gib, "G",
       "Per-GPU memory besides model states and activations, GiB (default: 2)"},
      {"--sequence_parallel", &RawOptions::sequence_parallel, "on|off",
       "Megatron-LM sequence parallelism with tp > 1 (norm and dropout activations split over "
       "the tp ranks): on (default) or off"},
      {"--flash_attention", &RawOptions::flash_attention, "on|off",
       "Fused (FlashAttention-style) attention: on (default) or off (the scores and softmax "
       "written to memory, as before 2022)"},
      {"--attention_kernel", &RawOptions::attention_kernel, "auto|fa2|triton",
       "The fused attention kernel: auto (default: the GPU's measured rate, PyTorch's "
       "scaled_dot_product_attention on H100), fa2 (FlashAttention-2: 35 % of the peak on "
       "Hopper) or triton (FlashAttention's 2022 Triton kernel, llm-foundry's attn_impl "
       "triton: half of FlashAttention-2's rate)"},
      {"--fp8_recipe", &RawOptions::fp8_recipe, "tensorwise|rowwise",
       "With --dtype fp8, how the linears' inputs are scaled: tensorwise (default: one scale "
       "per tensor, current scaling, as Transformer Engine's Float8CurrentScaling and torchao's "
       "default) or rowwise (torchao's rowwise recipe: each linear at its bf16 time over "
       "torchao's measured rowwise speedup for its shape)"},
      {"--overlap_grad_reduce", &RawOptions::overlap_grad_reduce, "on|off",
       "Overlap the gradient reduction of dp and zero0-2 with backward (Megatron-LM "
       "--overlap-grad-reduce, DeepSpeed overlap_comm): on or off (default: off, both "
       "frameworks' default; zero3 and fsdp always overlap)"},
      {"--cp_kv_repeat", &RawOptions::cp_kv_repeat, "on|off",
       "With --cp > 1: the context-parallel exchange moves keys and values repeated to every "
       "query head (torchtitan's Llama at 9dec370 calls repeat_kv before "
       "scaled_dot_product_attention, whose K/V PyTorch's context_parallel exchanges) instead "
       "of the key/value heads alone; on or off (default)"},
      {"--fused_loss", &RawOptions::fused_loss, "on|off",
       "The loss compiled into fused kernels (torchtitan's [compile], fsdp only): the logits "
       "and their gradient stay in 16 bits; on or off (default)"},
      {"--fused_layers", &RawOptions::fused_layers, "on|off",
       "The layers' element-wise ops fused (torch.compile: torchtitan's [compile]; or "
       "hand-fused kernels), fsdp only: norms, RoPE, SwiGLU and residual adds cost what "
       "Megatron-LM's fused kernels cost; on or off (default: eager PyTorch op by op, "
       "torchtitan's default)"},
      {"--layer_impl", &RawOptions::layer_impl,
       "framework|hf_gpt2|hf_gpt2_amp|megatron_v1|megatron_unfused",
       "Whose code runs the transformer layers: framework (default: the dp method's "
       "framework's own), hf_gpt2 (Hugging Face transformers' eager GPT-2 of 2021-22 with the "
       "model in 16 bits, as DeepSpeed's fp16 engine runs it), hf_gpt2_amp (the same in fp32 "
       "under torch.cuda.amp autocast: HF Trainer --fp16 without DeepSpeed) or megatron_v1 "
       "(Megatron-LM v1's eager GPT-2 layer as DeepSpeedExamples of 2020 ships it, in 16 "
       "bits), these three implying --flash_attention off; or megatron_unfused (Megatron-LM's "
       "GPT layer with its softmax, bias-GeLU and bias-dropout-add fusions off, as Megatron-LM "
       "v1.1.5 runs by default)"},
      {"--fused_softmax_check", &RawOptions::fused_softmax_check, "megatron|bigscience_pre260",
       "With --flash_attention off: whose test decides where Megatron's fused "
       "scale-mask-softmax kernel runs and where the PyTorch fallback (fp32 casts, scale, mask, "
       "softmax as separate kernels) does: megatron (default: Megatron-LM's, and "
       "Megatron-DeepSpeed's since March 2022) or bigscience_pre260 (BigScience's "
       "Megatron-DeepSpeed from October 2021 to March 2022, its block size taken from the heads "
       "per rank)"},
      {"--zero3_impl", &RawOptions::zero3_impl, "coalesced|per_param",
       "With --dp_method zero3: which DeepSpeed ZeRO-3 runs: coalesced (default: v0.6.0 on, "
       "gathers prefetched behind compute) or per_param (v0.3.12 to v0.5.4, before DeepSpeed "
       "PR #1453: one all-gather and one reduce-scatter per parameter through PyTorch's list "
       "API, the GPU synchronized around every gather, so nothing overlaps compute)"},
      {"--grad_reduce_fp32", &RawOptions::grad_reduce_fp32, "on|off",
       "Reduce the gradients in fp32 with 16-bit training (Megatron-LM "
       "--accumulate-allreduce-grads-in-fp32 / --grad-reduce-in-bf16, DeepSpeed "
       "fp32_allreduce, torchtitan mixed_precision_reduce): on or off (default: each "
       "framework's own: Megatron-LM on with bf16, DeepSpeed off, torchtitan on)"},
      {"--grad_accum_fp32", &RawOptions::grad_accum_fp32, "on|off",
       "With bf16 and zero1: accumulate the gradients in fp32 as DeepSpeed's BF16_Optimizer does "
       "(data_types.grad_accum_dtype fp32; the BF16_Optimizer that BLOOM's Megatron-DeepSpeed "
       "ran): every micro-batch adds its bf16 gradients into fp32 buffers, which are "
       "all-reduced whole (default off: DeepSpeed's ZeRO-1 accumulates in bf16)"},
      {"--master_weights", &RawOptions::master_weights, "on|off",
       "fp32 master weights and fp32 Adam moments with 16-bit training (mixed precision): on "
       "(default) or off (pure 16-bit training: parameters, gradients and Adam's m and v in the "
       "training dtype, as torchtune, Hugging Face with torch_dtype bfloat16, torchtitan's "
       "training.dtype bfloat16 and DeepSpeed's bf16_master_weights_and_grads with "
       "bf16_optimizer_states train)"},
      {"--pipeline_layout", &RawOptions::pipeline_layout, "LAYOUT",
       "Megatron-Core's pipeline layout (--pipeline-model-parallel-layout): each model chunk's "
       "entries, E embedding, t transformer layer, m MTP layer, L loss, '|' between chunks, "
       "(...)*n and x*n repeats, e.g. 'Et*4|(t*4|)*14tmL'; pp x virtual_stages chunks, chunk k "
       "on rank k % pp (default: the even split)"},
      {"--recompute_modules", &RawOptions::recompute_modules, "M[,M]",
       "Megatron-Core's modules that --recompute selective reruns (--recompute-modules): "
       "core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts (default: "
       "core_attn); with --recompute selective only"},
  };
  add_text_options<RawOptions>(app, o, native, native_flags);
  app.add_option("--list", o.list,
                 "Print the built-in models (models) or the GPU catalog (gpus) with their key "
                 "figures and exit; also `zerosearch list models|gpus`")
      ->type_name("WHAT")->group(modes);
  app.add_option("--tp_comm_overlap", o.tp_comm_overlap,
                 "Overlap the tensor-parallel collectives with the GEMMs beside them "
                 "(Megatron-LM --tp-comm-overlap, Transformer Engine userbuffers): on or off "
                 "(default: charged in full)")
      ->type_name("on|off")->group(native);
  app.add_option("--ep", o.ep,
                 "Expert-parallel degrees to search for an MoE model, one or a list (default: "
                 "every power of two dividing the experts, up to the GPUs of a stage)")
      ->type_name("N[,N]")->group(native);
  app.add_option("--etp", o.etp,
                 "Expert tensor-parallel degrees to search for an MoE model, one or a list "
                 "(default: 1 and the point's tp)")
      ->type_name("N[,N]")->group(native);
  app.add_option("--moe_imbalance", o.moe_imbalance,
                 "Router load imbalance of MoE layers: the busiest expert rank's tokens over "
                 "the average, >= 1 (default: 1, balanced)")
      ->type_name("X")->group(native);
  app.add_option("--moe_a2a_overlap", o.moe_a2a_overlap,
                 "Overlap the MoE token all-to-alls of one micro-batch with the compute of "
                 "another (Megatron-LM --overlap-moe-expert-parallel-comm "
                 "--delay-wgrad-compute): on or off (default: charged in full)")
      ->type_name("on|off")->group(native);
  app.add_option("--moe_dispatcher", o.moe_dispatcher,
                 "Megatron-Core's MoE token dispatcher: alltoall (every top-k copy of a token "
                 "sent), deepep or hybridep (the flex dispatcher: a token sent once per "
                 "destination node and rank) (default: alltoall)")
      ->type_name("alltoall|deepep|hybridep")->group(native);
  app.add_option("--cp", o.cp,
                 "Context-parallel degrees to search (each sequence split over cp GPUs; "
                 "tp x cp x dp x pp GPUs), one or a list (default: 1 below 16,384 tokens, else "
                 "1, 2, 4, ... up to seq_len / 4096)")
      ->type_name("C[,C]")->group(native);
  app.add_option("--cp_comm", o.cp_comm,
                 "Context-parallel exchange: ring (ring attention, K/V passed round the cp "
                 "ranks), a2a (DeepSpeed-Ulysses all-to-alls) or allgather (Llama 3's "
                 "all-gathered K/V), torch_allgather (PyTorch's context_parallel with its "
                 "all-gather rotater, torchtitan's default: the gather hides behind the first "
                 "attention block only), or a list (default: ring,a2a)")
      ->type_name("ring|a2a|allgather|torch_allgather")->group(native);
  app.add_flag("--search_space", o.search_space,
               "Print the size of the search space and exit")
      ->group(modes);
  add_run_cost_options(app, o.run_cost);

  app.footer(
      "Examples:\n"
      "  zerosearch --node_type A10 --num_node 8 --type llama2_13B\n"
      "  zerosearch --node_type A10 A6000 --node_type_num_node 3 5 --pretty --top 10 --feasible\n"
      "  zerosearch --type gpt2XL -f m --num_node 16 --format json --top 1 --feasible\n"
      "\n"
      "Exit status: 0 done, 2 bad input (one line 'zerosearch: error: ...' on standard error,\n"
      "and no output file written or replaced), 1 internal failure.");

  // Left-over arguments are reported below, in command-line order.
  app.allow_extras();
  // `zerosearch list WHAT ...`: the --list mode.
  std::vector<const char*> args(argv, argv + argc);
  std::string list_word;
  if (argc >= 2 && std::string(argv[1]) == "list") {
    if (argc < 3 || argv[2][0] == '-') {
      throw InputError("list needs what to list: list models or list gpus");
    }
    list_word = argv[2];
    args.erase(args.begin() + 1, args.begin() + 3);
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return ParseResult{std::nullopt, 0};
  } catch (const CLI::CallForVersion&) {
    std::cout << app.version() << '\n';
    return ParseResult{std::nullopt, 0};
  } catch (const CLI::ParseError& e) {
    throw InputError(fmt::format("{} (see zerosearch --help)", parse_error_text(e)));
  }
  if (const std::vector<std::string> extras = app.remaining(); !extras.empty()) {
    // A mistyped flag: name it with the flag it most likely meant.
    std::vector<std::string> flags;
    for (const CLI::Option* opt : app.get_options()) {
      for (const std::string& name : opt->get_lnames()) {
        flags.push_back("--" + name);
      }
    }
    for (const std::string& arg : extras) {
      if (arg.size() > 2 && arg.rfind("--", 0) == 0) {
        const std::string flag = arg.substr(0, arg.find('='));
        const std::string meant = suggest_flag(flag, flags);
        throw InputError(meant.empty()
                             ? fmt::format("unknown flag {} (see zerosearch --help)", flag)
                             : fmt::format("unknown flag {}; did you mean {}? (see zerosearch "
                                           "--help)",
                                           flag, meant));
      }
    }
    throw InputError(fmt::format("unexpected argument{} {} (see zerosearch --help)",
                                 extras.size() == 1 ? "" : "s", fmt::join(extras, " ")));
  }
  if (!list_word.empty()) {
    o.list = list_word;
  }
  o.num_node_given = app.count("--num_node") > 0;
  o.gpu_per_node_given = app.count("--gpu_per_node") > 0;
  o.output_given = app.count("--output") > 0;
  o.comm_type_given = app.count("--comm_type") > 0;
  o.seed_given = app.count("--seed") > 0;
  o.node_type_counts_given = app.count("--node_type_num_node") > 0;
  o.command_line.assign(argv, argv + argc);
  o.custom_num_layer_given = app.count("--custom_num_layer") > 0;
  return ParseResult{validate_options(o), 0};
}

} // namespace zerosearch::cli
