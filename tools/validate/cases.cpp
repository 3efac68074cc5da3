#include "validate/cases.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/deepspeed_zero3.hpp"
#include "zerosearch/model/moe.hpp"

namespace zerosearch::validate {

namespace fs = std::filesystem;

namespace {

long long to_int(const std::string& s, const Case& c, const char* what) {
  if (s.empty()) return 0;
  try {
    std::size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw BadInput(fmt::format("row {}: {} '{}' must be a whole number", c.id, what, s));
}

double to_real(const std::string& s, const Case& c, const char* what) {
  if (s.empty()) return 0.0;
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw BadInput(fmt::format("row {}: {} '{}' must be a number", c.id, what, s));
}

bool has(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

/// The fields of `s` between the separators (an empty field stays, to be rejected as a number).
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char ch : s) {
    if (ch == sep) {
      out.emplace_back();
    } else {
      out.back() += ch;
    }
  }
  return out;
}

void add_assumption(Case& c, const std::string& text) {
  c.assumption += (c.assumption.empty() ? "" : "; ") + text;
}

} // namespace

std::string framework_family(const std::string& f) {
  if (f == "megatron-lm" || f == "megatron-bridge" || f == "nemo") return "megatron";
  if (f == "deepspeed" || f == "megatron-deepspeed") return "deepspeed";
  if (f == "fsdp" || f == "torchtitan" || f == "composer") return "fsdp";
  return "other";
}

std::string framework_of_method(const std::string& m) {
  if (m == "dp") return "megatron-lm";
  if (m == "fsdp") return "fsdp";
  return "deepspeed";
}

std::string catalog_gpu_by_name(const std::string& g) {
  if (has(g, "GB200")) return "GB200";
  if (has(g, "GB300")) return "GB300";
  if (has(g, "B300")) return "B300";
  if (has(g, "B200")) return "B200";
  if (has(g, "H200")) return "H200";
  if (has(g, "H100") && has(g, "96GB")) return "H100-SXM-96GB";
  if (has(g, "H100")) return "H100-SXM";
  if (has(g, "A100")) return "A100-80GB";
  return {};
}

Case make_case(const Row& r, const HardwareCatalog& catalog) {
  static const char* const kFrameworks[] = {
      "megatron-lm", "megatron-deepspeed", "deepspeed", "fsdp", "torchtitan", "composer",
      "nemo", "megatron-bridge", "colossalai", "nanotron", "other"};
  Case c;
  c.row = &r;
  c.id = fmt::format("{}:{}", r.group, r.line);
  c.group = r.group;
  c.source = r.at("source");
  c.model = r.at("model_name");
  c.gpu = r.at("gpu");
  c.method = r.at("dp_method");
  static const char* const kMethods[] = {"dp", "fsdp", "zero0", "zero1", "zero2", "zero3"};
  if (std::find_if(std::begin(kMethods), std::end(kMethods),
                   [&](const char* m) { return c.method == m; }) == std::end(kMethods)) {
    throw BadInput(fmt::format("row {}: dp_method '{}' must be dp, fsdp, zero0, zero1, zero2 "
                               "or zero3", c.id, c.method));
  }
  c.framework = r.at("framework");
  if (c.framework.empty()) {
    c.framework = framework_of_method(c.method);
    add_assumption(c, "framework from dp_method");
  } else if (std::find_if(std::begin(kFrameworks), std::end(kFrameworks), [&](const char* f) {
               return c.framework == f;
             }) == std::end(kFrameworks)) {
    throw BadInput(fmt::format("row {}: framework '{}' must be one of megatron-lm, "
                               "megatron-deepspeed, deepspeed, fsdp, torchtitan, composer, nemo, "
                               "megatron-bridge, colossalai, nanotron, other or empty",
                               c.id, c.framework));
  }
  const bool has_catalog_column = r.fields.count("catalog_gpu") > 0;
  c.catalog_gpu = has_catalog_column ? r.at("catalog_gpu") : catalog_gpu_by_name(c.gpu);
  if (c.catalog_gpu.find('+') != std::string::npos) {
    // A mixed cluster: "A*n+B*m", node types and node counts in rank order.
    for (const std::string& part : split(c.catalog_gpu, '+')) {
      const auto star = part.find('*');
      const GpuSpec* spec =
          star == std::string::npos ? nullptr : catalog.find_gpu(part.substr(0, star));
      const long long nodes =
          star == std::string::npos ? 0 : to_int(part.substr(star + 1), c, "catalog_gpu's nodes");
      if (spec == nullptr || nodes < 1) {
        throw BadInput(fmt::format("row {}: catalog_gpu '{}' must be GPU*nodes+GPU*nodes with "
                                   "GPUs of profiledb/hardware.json and at least one node each",
                                   c.id, c.catalog_gpu));
      }
      c.node_types.emplace_back(spec->name, static_cast<int>(nodes));
    }
    c.catalog_gpu = "mixed"; // the name the CLI gives a mixed cluster's regime (plan_interval)
    c.gpu_family = "mixed";
  } else if (!c.catalog_gpu.empty()) {
    const GpuSpec* spec = catalog.find_gpu(c.catalog_gpu);
    if (spec == nullptr) {
      throw BadInput(fmt::format("row {}: catalog_gpu '{}' is not a GPU of "
                                 "profiledb/hardware.json (empty: not in the catalog)",
                                 c.id, c.catalog_gpu));
    }
    c.catalog_gpu = spec->name;
    c.gpu_family = spec->gpu_class;
  }
  c.arch = r.at("arch");
  if (c.arch.empty()) c.arch = has(c.model, "Llama") || has(c.model, "llama") ? "llama" : "gpt";
  if (c.arch != "gpt" && c.arch != "llama") {
    throw BadInput(fmt::format("row {}: arch '{}' must be gpt, llama or empty", c.id, c.arch));
  }
  c.layers = to_int(r.at("num_layers"), c, "num_layers");
  c.hidden = to_int(r.at("hidden_size"), c, "hidden_size");
  c.heads = to_int(r.at("num_attention_heads"), c, "num_attention_heads");
  c.kv_heads = to_int(r.at("num_kv_heads"), c, "num_kv_heads");
  if (c.kv_heads == 0) c.kv_heads = c.heads;
  c.ffn = to_int(r.at("ffn_hidden_size"), c, "ffn_hidden_size");
  c.vocab = to_int(r.at("vocab_size"), c, "vocab_size");
  c.seq = to_int(r.at("seq_len"), c, "seq_len");
  c.num_gpus = static_cast<int>(to_int(r.at("num_gpus"), c, "num_gpus"));
  c.gpn = static_cast<int>(to_int(r.at("gpus_per_node"), c, "gpus_per_node"));
  if (c.num_gpus <= 0 || c.gpn <= 0 || c.heads <= 0) {
    throw BadInput(fmt::format("row {}: num_gpus, gpus_per_node and num_attention_heads must be "
                               "positive", c.id));
  }
  // A link column: one figure for every node type, or one per type ("x+y").
  const auto per_type = [&](const char* column) {
    const std::string& text = r.at(column);
    std::vector<long long> figures;
    if (text.empty()) return figures;
    for (const std::string& part : split(text, '+')) figures.push_back(to_int(part, c, column));
    if (figures.size() > 1 && figures.size() != c.node_types.size()) {
      throw BadInput(fmt::format("row {}: {} '{}' has {} figures and catalog_gpu {} node types; "
                                 "give one per type or one for all",
                                 c.id, column, text, figures.size(), c.node_types.size()));
    }
    return figures;
  };
  if (std::vector<long long> inter = per_type("inter_node_gbit_per_node"); inter.size() > 1) {
    c.node_type_Gbitps = std::move(inter);
  } else if (inter.size() == 1) {
    c.inter_node_Gbitps = inter.front();
  }
  c.intra_node_Gbitps = per_type("intra_node_gbit_per_node");
  c.inter_node_busbw_Gbitps = per_type("inter_node_busbw_gbit");
  for (long long g : c.inter_node_busbw_Gbitps) {
    if (g <= 0) {
      throw BadInput(fmt::format("row {}: inter_node_busbw_gbit '{}' must be positive Gbit/s "
                                 "(a measured NCCL all-reduce bus bandwidth) or empty",
                                 c.id, r.at("inter_node_busbw_gbit")));
    }
  }
  c.pipeline_layout = r.at("pipeline_layout");
  if (!c.pipeline_layout.empty() && !r.at("partition").empty()) {
    throw BadInput(fmt::format("row {}: partition '{}' and pipeline_layout '{}': give one", c.id,
                               r.at("partition"), c.pipeline_layout));
  }
  c.partition = r.at("partition");
  if (!c.partition.empty()) {
    for (const std::string& part : split(c.partition, ',')) {
      if (to_int(part, c, "partition") < 1) {
        throw BadInput(fmt::format("row {}: partition '{}' must be positive layer counts, one "
                                   "per pipeline stage", c.id, c.partition));
      }
    }
  }
  if (c.num_gpus < c.gpn && !has(c.gpu, "NVL72")) {
    // Part of one node: a node of the GPUs the run uses (same GPUs, same links).
    add_assumption(c, fmt::format("one node, {} of its {} GPUs", c.num_gpus, c.gpn));
    c.gpn = c.num_gpus;
  }
  if (has(c.gpu, "NVL72") && !c.catalog_gpu.empty()) {
    // An NVL72 rack is one NVLink domain of 72 GPUs in trays of gpus_per_node: the GPUs a run
    // uses in one rack count as one node (the largest multiple of a tray up to 72 that
    // divides the run), and its network is the trays' links added up (the row's figure per
    // tray, else the catalog's network per GPU, times the GPUs).
    const int tray = c.gpn;
    const GpuSpec& g = catalog.gpu(c.catalog_gpu);
    const double per_gpu = c.inter_node_Gbitps > 0
                               ? static_cast<double>(c.inter_node_Gbitps) / tray
                               : g.inter_node_gbit_per_node / g.default_gpus_per_node;
    for (int n = 72 / tray * tray; n >= tray; n -= tray) {
      if (c.num_gpus % n == 0) {
        c.gpn = n;
        break;
      }
    }
    c.inter_node_Gbitps = std::llround(per_gpu * c.gpn);
    add_assumption(c, fmt::format("NVL72: {} GPUs per NVLink domain", c.gpn));
  }
  c.tp = static_cast<int>(to_int(r.at("tp"), c, "tp"));
  c.pp = static_cast<int>(to_int(r.at("pp"), c, "pp"));
  c.dp = static_cast<int>(to_int(r.at("dp"), c, "dp"));
  c.cp = r.at("cp").empty() ? 1 : static_cast<int>(to_int(r.at("cp"), c, "cp"));
  c.mbs = static_cast<int>(to_int(r.at("mbs"), c, "mbs"));
  c.ep = r.at("ep").empty() ? 1 : static_cast<int>(to_int(r.at("ep"), c, "ep"));
  c.etp = static_cast<int>(to_int(r.at("etp"), c, "etp"));
  if (c.ep < 1 || (!r.at("etp").empty() && c.etp < 1)) {
    throw BadInput(fmt::format("row {}: ep '{}' and etp '{}' must be at least 1 (or empty)",
                               c.id, r.at("ep"), r.at("etp")));
  }
  c.catalog_model = r.at("model");
  if (!std::all_of(c.catalog_model.begin(), c.catalog_model.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_' || ch == '.' ||
               ch == '-';
      })) {
    throw BadInput(fmt::format("row {}: model '{}' must be a built-in model name "
                               "(profiledb/models.json: letters, digits, _ . -) or empty",
                               c.id, c.catalog_model));
  }
  c.gbs = static_cast<int>(to_int(r.at("gbs"), c, "gbs"));
  c.recompute = r.at("recompute").empty() ? "none" : r.at("recompute");
  if (c.recompute != "none" && c.recompute != "selective" && c.recompute != "full") {
    throw BadInput(fmt::format("row {}: recompute '{}' must be none, selective, full or empty",
                               c.id, c.recompute));
  }
  c.recompute_modules = r.at("recompute_modules");
  if (!c.recompute_modules.empty() && c.recompute != "selective") {
    throw BadInput(fmt::format("row {}: recompute_modules '{}' needs recompute selective (got '{}')",
                               c.id, c.recompute_modules, c.recompute));
  }
  const std::string& precision = r.at("precision");
  c.dtype = has(precision, "fp8") ? "fp8" : has(precision, "fp16") ? "fp16" : "bf16";
  // The fp8 scaling recipe where the precision names it (torchtitan's 2025-06 async-TP
  // benchmark: "float8 rowwise"); otherwise the estimator's default, tensorwise.
  if (c.dtype == "fp8" && has(precision, "rowwise")) c.fp8_recipe = "rowwise";
  c.measured_gib = to_real(r.at("memory_gib_per_gpu"), c, "memory_gib_per_gpu");
  // on/off and yes/no settings; the corpus format allows yes/no for on/off too.
  const auto setting = [&](const char* key, const char* a, const char* b) {
    std::string v = r.at(key);
    if (std::string(a) == "on" && v == "yes") v = "on";
    if (std::string(a) == "on" && v == "no") v = "off";
    if (!v.empty() && v != a && v != b) {
      throw BadInput(fmt::format("row {}: {} '{}' must be {}, {} or empty", c.id, key, v, a, b));
    }
    return v;
  };
  c.sequence_parallel = setting("sequence_parallel", "on", "off");
  c.flash_attention = setting("flash_attention", "on", "off");
  c.tied_embeddings = setting("tied_embeddings", "yes", "no");
  c.overlap_grad_reduce = setting("overlap_grad_reduce", "on", "off");
  c.fused_loss = setting("fused_loss", "on", "off");
  c.fused_layers = setting("fused_layers", "on", "off");
  c.grad_reduce_fp32 = setting("grad_reduce_fp32", "on", "off");
  c.grad_accum_fp32 = setting("grad_accum_fp32", "on", "off");
  c.master_weights = setting("master_weights", "on", "off");
  c.moe_a2a_overlap = setting("moe_a2a_overlap", "on", "off");
  c.moe_dispatcher = r.at("moe_dispatcher");
  if (!c.moe_dispatcher.empty() && !moe_dispatcher_named(c.moe_dispatcher)) {
    throw BadInput(fmt::format("row {}: moe_dispatcher '{}' must be alltoall, deepep, hybridep "
                               "or empty",
                               c.id, c.moe_dispatcher));
  }
  c.attention_kernel = r.at("attention_kernel");
  if (!c.attention_kernel.empty() && !attention_kernel_named(c.attention_kernel)) {
    throw BadInput(fmt::format("row {}: attention_kernel '{}' must be auto, fa2, triton or empty",
                               c.id, c.attention_kernel));
  }
  c.layer_impl = r.at("layer_impl");
  if (!c.layer_impl.empty() && !layer_impl_named(c.layer_impl)) {
    throw BadInput(fmt::format("row {}: layer_impl '{}' must be framework, hf_gpt2, hf_gpt2_amp, "
                               "megatron_v1, megatron_unfused or empty",
                               c.id, c.layer_impl));
  }
  c.fused_softmax_check = r.at("fused_softmax_check");
  if (!c.fused_softmax_check.empty() && !softmax_check_named(c.fused_softmax_check)) {
    throw BadInput(fmt::format("row {}: fused_softmax_check '{}' must be megatron, "
                               "bigscience_pre260 or empty",
                               c.id, c.fused_softmax_check));
  }
  c.zero3_impl = r.at("zero3_impl");
  if (!c.zero3_impl.empty() && !zero3_impl_named(c.zero3_impl)) {
    throw BadInput(fmt::format("row {}: zero3_impl '{}' must be coalesced, per_param or empty",
                               c.id, c.zero3_impl));
  }
  const std::string& sched = r.at("schedule");
  if (sched.rfind("interleaved", 0) == 0) {
    const auto colon = sched.find(':');
    if (colon == std::string::npos && c.method == "fsdp") {
      // torchtitan's default for Interleaved1F1B without split points: 2 stages per rank
      // (generate_split_points, torchtitan/parallelisms/pipelining_utils.py at 9dec370).
      c.v = 2;
      add_assumption(c, "2 virtual stages, torchtitan's default");
    } else if (colon == std::string::npos) {
      c.not_modelled = "interleaved schedule without a stated number of virtual stages";
    } else {
      c.v = static_cast<int>(to_int(sched.substr(colon + 1), c, "schedule's virtual stages"));
    }
  }
  const std::string& metric = r.at("measured_metric");
  const double value = to_real(r.at("measured_value"), c, "measured_value");
  if (metric == "step_time_s") {
    c.measured_s = value;
  } else if (metric == "tokens_per_s_per_gpu") {
    c.measured_s = value > 0 ? static_cast<double>(c.gbs) * static_cast<double>(c.seq) /
                                   (value * c.num_gpus)
                             : 0.0;
  } else if (metric == "tflops_per_gpu") {
    const std::string& notes = r.at("notes");
    const auto at = notes.find("step_time_s~");
    if (at == std::string::npos) {
      c.not_modelled = "TFLOP/s figure without a derived step time";
    } else {
      try {
        c.measured_s = std::stod(notes.substr(at + 12));
      } catch (const std::exception&) {
        throw BadInput(fmt::format("row {}: 'step_time_s~' in notes is not followed by a number",
                                   c.id));
      }
    }
  } else {
    throw BadInput(fmt::format("row {}: measured_metric '{}' must be step_time_s, "
                               "tokens_per_s_per_gpu or tflops_per_gpu", c.id, metric));
  }
  if (c.not_modelled.empty() && !(c.measured_s > 0)) {
    c.not_modelled = "no positive measured value";
  }
  if (c.not_modelled.empty() && c.catalog_gpu.empty()) {
    c.not_modelled = "GPU '" + c.gpu + "' is not in the catalog";
  }
  if (!c.node_types.empty()) {
    int nodes = 0;
    for (const auto& [gpu, n] : c.node_types) nodes += n;
    if (nodes * c.gpn != c.num_gpus) {
      throw BadInput(fmt::format("row {}: catalog_gpu's {} nodes of {} GPUs are not num_gpus {}",
                                 c.id, nodes, c.gpn, c.num_gpus));
    }
  }
  if (!c.partition.empty() && static_cast<int>(split(c.partition, ',').size()) != c.pp) {
    throw BadInput(fmt::format("row {}: partition '{}' must have pp = {} stages", c.id,
                               c.partition, c.pp));
  }
  if (c.not_modelled.empty() && c.num_gpus % c.gpn != 0) {
    c.not_modelled = fmt::format("{} GPUs are not whole nodes of {}", c.num_gpus, c.gpn);
  }
  if (c.mbs == 0 && c.not_modelled.empty()) {
    // Only torchtitan has a default micro-batch a row may leave unstated: as many micro-batches
    // as pipeline stages. Any other framework's micro-batch is a required setting, and a row
    // that does not state it is not modelled rather than given a guessed one.
    const int per_replica = std::max(1, c.dp) * std::max(1, c.pp);
    if (c.framework != "torchtitan") {
      c.not_modelled = "micro-batch size not stated (only torchtitan has a default)";
    } else if (c.gbs % per_replica != 0) {
      c.not_modelled = fmt::format("micro-batch not stated and gbs {} is not a multiple of dp pp {}",
                                   c.gbs, per_replica);
    } else {
      c.mbs = c.gbs / per_replica;
      add_assumption(c, "mbs from gbs / (dp pp), torchtitan's default");
    }
  }
  return c;
}

nlohmann::json model_file(const Case& c) {
  const bool gpt = c.arch == "gpt";
  nlohmann::json m;
  m["hidden_size"] = c.hidden;
  m["sequence_length"] = c.seq;
  m["num_layers"] = c.layers;
  m["num_layers_from_cli"] = false;
  m["vocab_size"] = c.vocab;
  m["num_attention_heads"] = c.heads;
  m["num_key_value_heads"] = c.kv_heads;
  m["head_dim"] = c.hidden / c.heads;
  m["ffn_hidden_size"] = c.ffn;
  m["architecture"] = gpt ? "gpt3" : "llama";
  m["memory_formula"] = gpt ? "gpt" : "llama";
  m["gated_mlp"] = !gpt;
  m["tied_embeddings"] = c.tied_embeddings.empty() ? gpt : c.tied_embeddings == "yes";
  m["norm"] = gpt ? "layernorm" : "rmsnorm";
  m["qkv_bias"] = gpt;
  m["attention_output_bias"] = gpt;
  m["mlp_bias"] = gpt;
  m["learned_position_embeddings"] = gpt;
  m["max_position_embeddings"] = std::max<long long>(c.seq, 2048);
  m["source"] = c.source;
  return m;
}

namespace {

/// A row's network (or intra-node link) figure is nominal (the line rate its source states,
/// as the catalog's inter_node_gbit_per_node is); --inter_node_gbps (--intra_node_gbps)
/// replaces the link set's figure, which is
/// an achieved one (the original's 'ib' set: 60 % of nominal). The row's figure goes through
/// the rule the catalog's own nominal figures go through (default_links), so that a row that
/// states its network and one that takes the catalog's get the same treatment.
std::string effective_Gbitps(long long nominal) {
  return fmt::format("{:.6g}", kDefaultLinkEfficiency * static_cast<double>(nominal));
}

} // namespace

std::vector<std::string> contract(const Case& c, const fs::path& exe, const fs::path& model,
                                  const std::vector<Flag>& extra) {
  std::vector<std::string> a = {exe.string(), "--exhaustive", "--estimator", "native",
                                "--type",
                                c.catalog_model.empty() ? model.string() : c.catalog_model,
                                "--seq_len", std::to_string(c.seq),
                                "--gpu_per_node", std::to_string(c.gpn),
                                "--dp_method", c.method, "--tp", std::to_string(c.tp),
                                "--pp", std::to_string(c.pp), "--dp", std::to_string(c.dp),
                                "--mbs", std::to_string(c.mbs),
                                "--custom_gbs", std::to_string(c.gbs),
                                "--recompute", c.recompute,
                                "--virtual_stages", std::to_string(c.v), "--dtype", c.dtype};
  if (c.node_types.empty()) {
    a.insert(a.end(), {"--node_type", c.catalog_gpu, "--num_node",
                       std::to_string(c.num_gpus / c.gpn)});
  } else {
    // A mixed cluster: its node types, their node counts, and the ranks on them in the order
    // the row gives (the frameworks' default rank order: the first type's nodes first).
    std::string placement;
    a.emplace_back("--node_type");
    for (const auto& [gpu, n] : c.node_types) a.push_back(gpu);
    a.emplace_back("--node_type_num_node");
    for (const auto& [gpu, n] : c.node_types) {
      a.push_back(std::to_string(n));
      for (int i = 0; i < n; ++i) placement += (placement.empty() ? "" : ",") + gpu;
    }
    a.insert(a.end(), {"--placement", placement});
  }
  if (!c.inter_node_busbw_Gbitps.empty()) {
    // A measured bus bandwidth is what the link sets hold (achieved): no 60 % rule. NCCL's ring
    // over nodes moves 2(n-1)/n of the bytes through each node's network, so its bus bandwidth
    // is the node's achieved network rate (nccl-tests' busBw, doc/PERFORMANCE.md).
    a.emplace_back("--inter_node_gbps");
    for (long long g : c.inter_node_busbw_Gbitps) a.push_back(std::to_string(g));
  } else if (!c.node_type_Gbitps.empty()) {
    a.emplace_back("--inter_node_gbps");
    for (long long g : c.node_type_Gbitps) a.push_back(effective_Gbitps(g));
  } else if (c.inter_node_Gbitps > 0) {
    a.insert(a.end(), {"--inter_node_gbps", effective_Gbitps(c.inter_node_Gbitps)});
  }
  if (!c.intra_node_Gbitps.empty()) {
    a.emplace_back("--intra_node_gbps");
    for (long long g : c.intra_node_Gbitps) a.push_back(effective_Gbitps(g));
  }
  if (c.cp > 1) {
    // Context parallelism as the row's framework runs it: Megatron-LM/NeMo (cp_comm_type p2p,
    // the default) pass keys and values round a ring; DeepSpeed has Ulysses; torchtitan runs
    // PyTorch's context_parallel with its default rotate method, "allgather" (its
    // config_manager.py at 9dec370, the commit of every torchtitan cp row: the 2024-12
    // benchmark), on keys and values its Llama repeats to every query head before
    // scaled_dot_product_attention (models/llama/model.py at 9dec370).
    const bool torchtitan = c.framework == "torchtitan";
    a.insert(a.end(), {"--cp", std::to_string(c.cp), "--cp_comm",
                       framework_family(c.framework) == "deepspeed" ? "a2a"
                       : torchtitan                                 ? "torch_allgather"
                                                                    : "ring"});
    if (torchtitan) a.insert(a.end(), {"--cp_kv_repeat", "on"});
  }
  if (c.ep > 1) a.insert(a.end(), {"--ep", std::to_string(c.ep)});
  if (c.etp > 0) a.insert(a.end(), {"--etp", std::to_string(c.etp)});
  // The rows' own settings, where they state one.
  for (const auto& [flag, value] : {std::pair{"--sequence_parallel", &c.sequence_parallel},
                                    std::pair{"--flash_attention", &c.flash_attention},
                                    std::pair{"--overlap_grad_reduce", &c.overlap_grad_reduce},
                                    std::pair{"--fused_loss", &c.fused_loss},
                                    std::pair{"--fused_layers", &c.fused_layers},
                                    std::pair{"--grad_reduce_fp32", &c.grad_reduce_fp32},
                                    std::pair{"--grad_accum_fp32", &c.grad_accum_fp32},
                                    std::pair{"--moe_a2a_overlap", &c.moe_a2a_overlap},
                                    std::pair{"--moe_dispatcher", &c.moe_dispatcher},
                                    std::pair{"--attention_kernel", &c.attention_kernel},
                                    std::pair{"--fp8_recipe", &c.fp8_recipe},
                                    std::pair{"--layer_impl", &c.layer_impl},
                                    std::pair{"--fused_softmax_check", &c.fused_softmax_check},
                                    std::pair{"--zero3_impl", &c.zero3_impl},
                                    std::pair{"--master_weights", &c.master_weights}}) {
    if (!value->empty()) a.insert(a.end(), {flag, *value});
  }
  // The partition the row states; else the runs split the layers evenly (Megatron-LM's and
  // torchtitan's default): the uniform partition is given when the layers divide, else the
  // native model's own.
  if (!c.recompute_modules.empty()) {
    a.insert(a.end(), {"--recompute_modules", c.recompute_modules});
  }
  if (!c.pipeline_layout.empty()) {
    // Megatron-Core's layout of the row's recipe: every chunk's layers as the run placed them.
    a.insert(a.end(), {"--pipeline_layout", c.pipeline_layout});
  } else if (!c.partition.empty() && c.pp > 1) {
    a.insert(a.end(), {"--partition", c.partition});
  } else if (c.pp > 1 && c.v == 1 && c.layers % c.pp == 0) {
    std::string part;
    for (int j = 0; j < c.pp; ++j) {
      const long long n = c.layers / c.pp + (j == 0 ? 1 : 0) + (j == c.pp - 1 ? 1 : 0);
      part += (j == 0 ? "" : ",") + std::to_string(n);
    }
    a.insert(a.end(), {"--partition", part});
  }
  for (const auto& [flag, value] : extra) a.insert(a.end(), {flag, value});
  a.insert(a.end(), {"--format", "json", "-q"});
  return a;
}

} // namespace zerosearch::validate
