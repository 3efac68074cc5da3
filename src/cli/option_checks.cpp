// validate_options: every check of the command line that needs no file, in one place, in the
// order a reader meets the flags: modes, cluster, plan inputs, search, outputs, mode flags.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "options.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/model/deepspeed_zero3.hpp"
#include "zerosearch/model/estimator.hpp"
#include "zerosearch/model/pipeline_layout.hpp"
#include "zerosearch/model/recompute_modules.hpp"

namespace zerosearch::cli {

long long parse_int(const std::string& flag, const std::string& text, long long min, long long max) {
  long long v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) {
    if (max == std::numeric_limits<long long>::max()) {
      throw InputError(fmt::format("{} '{}' is not a whole number >= {}", flag, text, min));
    }
    throw InputError(fmt::format("{} '{}' is not a whole number from {} to {}", flag, text, min, max));
  }
  return v;
}

double parse_positive_real(const std::string& flag, const std::string& text) {
  double v = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v) || v <= 0.0) {
    throw InputError(fmt::format("{} '{}' is not a number > 0", flag, text));
  }
  return v;
}

Cluster cluster_of(const Options& o) {
  Cluster c;
  c.gpus_per_node = o.gpu_per_node;
  for (std::size_t i = 0; i < o.node_counts.size(); ++i) {
    c.groups.push_back({o.node_types[i], o.node_counts[i]});
  }
  return c;
}

namespace {

constexpr long long kNoMax = std::numeric_limits<long long>::max();

int parse_int32(const std::string& flag, const std::string& text, long long min, long long max) {
  return static_cast<int>(parse_int(flag, text, min, max));
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : text) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

/// Flags that do not apply to the chosen mode: an error where zerosearch added the flag, a note
/// (returned) where the original accepted it and ignored it. Also --add_exp_name, a part of a
/// file name.
std::vector<std::string> check_mode_flags(const RawOptions& o) {
  std::vector<std::string> notes;
  const char* mode = o.search_space ? "--search_space"
                     : o.exhaustive ? "--exhaustive"
                     : o.pareto     ? "--pareto"
                     : !o.write_profile.empty() ? "--write_profile"
                                                : "the default search";
  if (o.add_exp_name.find('/') != std::string::npos ||
      o.add_exp_name.find('\\') != std::string::npos ||
      o.add_exp_name.find("..") != std::string::npos) {
    throw InputError(fmt::format("--add_exp_name '{}' is a part of a file name: no '/', '\\' "
                                 "or '..'",
                                 o.add_exp_name));
  }
  // Flags zerosearch added: an error where they do not apply.
  if (o.search_space || !o.write_profile.empty()) {
    // --no_clobber applies to --write_profile's file; --search_space writes none.
    const std::pair<const char*, bool> outputs[] = {
        {"-o", o.output_given}, {"--record", o.record}, {"--top", !o.top.empty()},
        {"--feasible", o.feasible}, {"--include_oom", o.include_oom},
        {"--distinct", o.distinct},
        {"--no_clobber", o.no_clobber && o.search_space}};
    for (const auto& [flag, given] : outputs) {
      if (given) {
        throw InputError(fmt::format("{} does not apply to {}: it writes no ranked rows{}", flag,
                                     mode,
                                     o.search_space ? " (its table goes to standard output; "
                                                      "--format csv > FILE saves it)"
                                                    : ""));
      }
    }
  }
  if (o.seed_given && o.search_method != "ga") {
    throw InputError(fmt::format("--seed applies to --search_method ga only, not '{}'",
                                 o.search_method));
  }
  // Flags the original accepted and ignored: a note.
  if (o.pareto && o.comm_type_given) {
    notes.push_back(fmt::format("--comm_type {} does not apply to --pareto, which uses the "
                                "'pareto' link set",
                                o.comm_type));
  }
  if (!o.add_exp_name.empty() && !o.record) {
    notes.emplace_back("--add_exp_name names the --record file; without --record it changes "
                       "nothing");
  }
  if (o.num_node_given && o.node_type_counts_given && !o.pareto) {
    notes.emplace_back("--num_node does not apply beside --node_type_num_node, which gives "
                       "the node counts");
  }
  if (o.pareto && o.exhaustive) {
    throw InputError("--pareto and --exhaustive cannot be combined; choose one mode");
  }
  if (o.search_space && o.exhaustive) {
    throw InputError("--search_space and --exhaustive cannot be combined; choose one mode");
  }
  if (!o.exhaustive) {
    const std::pair<const char*, const std::string*> point_flags[] = {
        {"--dp_method", &o.dp_method}, {"--tp", &o.tp},
        {"--pp", &o.pp},               {"--dp", &o.dp},
        {"--mbs", &o.mbs},             {"--partition", &o.partition},
        {"--placement", &o.placement}};
    for (const auto& [flag, value] : point_flags) {
      if (!value->empty()) {
        throw InputError(fmt::format("{} describes one design point and needs --exhaustive", flag));
      }
    }
  }
  const std::pair<const char*, const std::string*> plan_flags[] = {
      {"--emit", &o.emit}, {"--rank", &o.rank}, {"--timeline", &o.timeline}, {"--html", &o.html}};
  for (const auto& [flag, value] : plan_flags) {
    if (value->empty()) {
      continue;
    }
    if (o.search_space) {
      throw InputError(fmt::format("{} cannot be combined with --search_space", flag));
    }
    if (o.pareto && std::string(flag) != "--html") {
      throw InputError(fmt::format("{} cannot be combined with --pareto (use it with a search "
                                   "or --exhaustive)",
                                   flag));
    }
  }
  if (!o.rank.empty() && o.exhaustive) {
    throw InputError("--rank picks a row of a search; --exhaustive has one plan");
  }
  if (!o.rank.empty() && o.emit.empty() && o.timeline.empty()) {
    throw InputError("--rank needs --emit or --timeline");
  }
  if (!o.pareto || o.search_space) {
    const std::pair<const char*, const std::string*> sweep_flags[] = {
        {"--max_step_time", &o.max_step_time},
        {"--max_price_per_step", &o.max_price_per_step},
        {"--budget", &o.budget},
        {"--plot", &o.plot}};
    for (const auto& [flag, value] : sweep_flags) {
      if (!value->empty()) {
        throw InputError(o.pareto ? fmt::format("{} cannot be combined with --search_space", flag)
                                  : fmt::format("{} needs --pareto", flag));
      }
    }
  }
  return notes;
}

/// Node types and counts for the mode: two types for --pareto (their counts are swept), the
/// first type for --write_profile, otherwise one count per type. Then the cluster's size.
void check_cluster(const RawOptions& raw, Options& o) {
  o.gpu_per_node = parse_int32("--gpu_per_node", raw.gpu_per_node, 1, kMaxGpusPerNode);
  o.gpu_per_node_given = raw.gpu_per_node_given;
  o.num_node = parse_int32("--num_node", raw.num_node, 1, kMaxNodes);
  std::vector<int> counts;
  for (const std::string& text : raw.node_type_counts) {
    counts.push_back(parse_int32("--node_type_num_node", text, 1, kMaxNodes));
  }
  o.node_types = raw.node_types.empty() ? std::vector<std::string>{"A10"} : raw.node_types;
  if (!raw.write_profile.empty()) {
    // The analytic profile of the first type; a cluster of --num_node of it.
    o.node_types.resize(1);
    o.node_counts = {o.num_node};
  } else if (raw.pareto) {
    if (o.node_types.size() != 2) {
      throw InputError(fmt::format("--pareto needs exactly two --node_type values, got {}",
                                   o.node_types.size()));
    }
    if (!counts.empty()) {
      throw InputError("--node_type_num_node is not used with --pareto; it sweeps 0..--num_node "
                       "nodes of each type");
    }
    if (o.node_types[0] == o.node_types[1]) {
      throw InputError(fmt::format("--pareto needs two different node types, got '{}' twice",
                                   o.node_types[0]));
    }
    if (o.num_node > kMaxParetoNodesPerType) {
      throw InputError(fmt::format("--pareto --num_node {}: a sweep plans every composition of "
                                   "up to N nodes of each type, (N+1)^2 - 1 of them, before it "
                                   "runs; N is at most {}",
                                   o.num_node, kMaxParetoNodesPerType));
    }
    return;
  } else if (counts.empty()) {
    if (o.node_types.size() != 1) {
      throw InputError(fmt::format("--node_type has {} types; give their node counts with "
                                   "--node_type_num_node",
                                   o.node_types.size()));
    }
    o.node_counts = {o.num_node};
  } else {
    if (o.node_types.size() != counts.size()) {
      throw InputError(fmt::format("--node_type has {} values but --node_type_num_node has {}; "
                                   "give one count per node type",
                                   o.node_types.size(), counts.size()));
    }
    for (std::size_t i = 0; i < o.node_types.size(); ++i) {
      for (std::size_t k = 0; k < i; ++k) {
        if (o.node_types[k] == o.node_types[i]) {
          throw InputError(fmt::format("--node_type lists '{}' twice", o.node_types[i]));
        }
      }
    }
    o.node_counts = std::move(counts);
  }
  // Node and GPU counts in 64 bits, before anything multiplies them in int.
  long long nodes = 0;
  for (const int n : o.node_counts) {
    nodes += n;
  }
  const long long gpus = nodes * o.gpu_per_node;
  if (gpus > kMaxClusterGpus) {
    throw InputError(fmt::format("the cluster has {} GPUs ({} nodes x {} per node); the limit is "
                                 "{} GPUs",
                                 gpus, nodes, o.gpu_per_node, kMaxClusterGpus));
  }
}

/// The inputs of the plan: model, batch, precision, methods, links.
void check_plan_inputs(const RawOptions& raw, Options& o) {
  o.model = raw.model;
  if (!raw.seq_len.empty()) {
    o.seq_len = parse_int("--seq_len", raw.seq_len, 1, kMaxSequenceLength);
  }
  o.custom_num_layer = parse_int32("--custom_num_layer", raw.custom_num_layer, 1, kMaxCustomLayers);
  o.custom_num_layer_given = raw.custom_num_layer_given;
  o.framework = parse_framework(raw.framework);
  o.custom_gbs = parse_int32("--custom_gbs", raw.custom_gbs, 1, kMaxGlobalBatch);
  o.precision = parse_int32("--precision", raw.precision, 1, kMaxPrecisionBits);
  o.iter = parse_int("--iter", raw.iter, 0, kNoMax);
  o.search_method = parse_partition_method(raw.search_method);
  o.profile_source = parse_profile_source(raw.profile_source);
  for (const auto& [flag, texts, out] :
       {std::tuple{"--inter_node_gbps", &raw.inter_node_Gbitps, &o.inter_node_Gbitps},
        std::tuple{"--intra_node_gbps", &raw.intra_node_Gbitps, &o.intra_node_Gbitps}}) {
    for (const std::string& t : *texts) {
      out->push_back(parse_positive_real(flag, t));
    }
  }
  o.seed = static_cast<std::uint64_t>(parse_int("--seed", raw.seed, 0, kNoMax));
  o.comm_type = raw.comm_type;
  o.comm_type_given = raw.comm_type_given;
  o.profiledb_path = raw.profiledb_path;
  o.hardware = raw.hardware;
  o.calibration = raw.calibration;
}

/// --memory_margin: "N%" (0 to 90) of each GPU's memory, or N GiB (0 or more).
MemoryMargin parse_memory_margin(const std::string& text) {
  MemoryMargin m;
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  double v = -1.0;
  const char* end = number.data() + number.size();
  const auto [ptr, ec] = std::from_chars(number.data(), end, v);
  if (number.empty() || ec != std::errc() || ptr != end || !std::isfinite(v) || v < 0.0 ||
      (percent && v > 90.0)) {
    throw InputError(fmt::format("--memory_margin '{}' is neither a percentage of GPU memory "
                                 "from 0% to 90% nor a number of GiB >= 0 (e.g. 10% or 4)",
                                 text));
  }
  m.percent = percent ? v : 0.0;
  m.gib = percent ? 0.0 : v;
  return m;
}

/// What goes where: --format, --top, -o, and the files' flags.
void check_outputs(const RawOptions& raw, Options& o) {
  if (!raw.top.empty()) {
    o.top = static_cast<std::size_t>(parse_int("--top", raw.top, 1, kNoMax));
  }
  if (raw.output_given && raw.output.empty()) {
    throw InputError("-o '': the file name is empty (use -o - for standard output)");
  }
  if (raw.search_space) {
    // Its own table: table or csv.
    if (raw.format == "csv") {
      o.format = Format::csv;
    } else if (!raw.format.empty() && raw.format != "table") {
      throw InputError(fmt::format("--format '{}' is not available with --search_space "
                                   "(allowed: table, csv)",
                                   raw.format));
    }
  } else if (!raw.format.empty()) {
    o.format = parse_report_format(raw.format);
    if (raw.output == "-") {
      throw InputError("-o - and --format both write to standard output; use one of them");
    }
  }
  o.output = raw.output;
  o.feasible = raw.feasible;
  if (raw.include_oom && raw.feasible) {
    throw InputError("--include_oom and --feasible contradict each other: one keeps the OOM "
                     "rows, the other leaves them out; give one");
  }
  o.include_oom = raw.include_oom;
  if (!raw.memory_margin.empty()) {
    o.memory_margin = parse_memory_margin(raw.memory_margin);
  }
  o.distinct = raw.distinct;
  o.pretty = raw.pretty;
  o.quiet = raw.quiet;
  o.record = raw.record;
  o.add_exp_name = raw.add_exp_name;
  o.no_clobber = raw.no_clobber;
  if (!raw.rank.empty()) {
    o.rank = static_cast<std::size_t>(parse_int("--rank", raw.rank, 1, kMaxRank));
  }
  o.emit = raw.emit;
  o.timeline = raw.timeline;
  o.html = raw.html;
}

/// --pareto's limits and chart.
void check_sweep(const RawOptions& raw, Options& o) {
  for (const auto& [flag, text, out] :
       {std::tuple{"--max_step_time", &raw.max_step_time, &o.max_step_time},
        std::tuple{"--max_price_per_step", &raw.max_price_per_step, &o.max_price_per_step},
        std::tuple{"--budget", &raw.budget, &o.budget}}) {
    if (!text->empty()) {
      *out = parse_positive_real(flag, *text);
    }
  }
  if (!raw.plot.empty() && std::filesystem::path(raw.plot).extension() != ".svg") {
    throw InputError(fmt::format("--plot '{}' must name an .svg file", raw.plot));
  }
  o.plot = raw.plot;
}

/// --partition "5,4,6,..." for `pp` stages: pp entries, each a whole number >= 1. Whether they
/// sum to the model's layers is checked once the model is known (check_partition_layers).
std::vector<int> parse_partition(const std::string& text, int pp) {
  const auto parts = split(text, ',');
  if (static_cast<int>(parts.size()) != pp) {
    throw InputError(fmt::format("--partition '{}' has {} entries but pp is {}; give one layer "
                                 "count per stage",
                                 text, parts.size(), pp));
  }
  std::vector<int> out;
  for (const auto& part : parts) {
    int v = 0;
    const char* end = part.data() + part.size();
    const auto [ptr, ec] = std::from_chars(part.data(), end, v);
    if (part.empty() || ec != std::errc() || ptr != end || v < 1) {
      throw InputError(fmt::format("--partition '{}': '{}' is not a whole number >= 1 (every "
                                   "stage holds at least one layer)",
                                   text, part));
    }
    out.push_back(v);
  }
  return out;
}

/// --placement "A10,A10,A6000,..." on `cluster`: one node type per node, using exactly the
/// cluster's node counts.
Placement parse_placement(const std::string& text, const Cluster& cluster) {
  const auto names = split(text, ',');
  if (static_cast<int>(names.size()) != cluster.num_nodes()) {
    throw InputError(fmt::format("--placement '{}' names {} nodes but the cluster has {}", text,
                                 names.size(), cluster.num_nodes()));
  }
  Placement out;
  std::vector<int> counts(cluster.groups.size(), 0);
  for (const auto& name : names) {
    int found = -1;
    for (std::size_t g = 0; g < cluster.groups.size(); ++g) {
      if (cluster.groups[g].gpu == name) {
        found = static_cast<int>(g);
      }
    }
    if (found < 0) {
      std::string allowed;
      for (const auto& g : cluster.groups) {
        allowed += allowed.empty() ? g.gpu : ", " + g.gpu;
      }
      throw InputError(fmt::format("--placement '{}': '{}' is not a node type of the cluster "
                                   "(allowed: {})",
                                   text, name, allowed));
    }
    ++counts[static_cast<std::size_t>(found)];
    out.push_back(found);
  }
  for (std::size_t g = 0; g < cluster.groups.size(); ++g) {
    if (counts[g] != cluster.groups[g].count) {
      throw InputError(fmt::format("--placement '{}' has {} {} nodes but the cluster has {}", text,
                                   counts[g], cluster.groups[g].gpu, cluster.groups[g].count));
    }
  }
  return out;
}

/// --exhaustive's design point: every flag given, each value in range; its partition and
/// placement. Whether the point is valid for the model is checked once the model is known.
void check_design_point(const RawOptions& raw, Options& o) {
  const std::pair<const char*, const std::string*> required[] = {
      {"--dp_method", &raw.dp_method}, {"--tp", &raw.tp}, {"--pp", &raw.pp},
      {"--dp", &raw.dp},               {"--mbs", &raw.mbs}};
  for (const auto& [flag, value] : required) {
    if (value->empty()) {
      throw InputError(fmt::format("--exhaustive needs {} (give --dp_method, --tp, --pp, --dp "
                                   "and --mbs)",
                                   flag));
    }
  }
  DesignPoint& p = o.point;
  p.method = parse_dp_method(raw.dp_method);
  p.tp = parse_int32("--tp", raw.tp, 1, kMaxDegree);
  p.pp = parse_int32("--pp", raw.pp, 1, kMaxDegree);
  p.dp = parse_int32("--dp", raw.dp, 1, kMaxDegree);
  p.mbs = parse_int32("--mbs", raw.mbs, 1, kMaxDegree);
  p.num_micro_batches = static_cast<int>(static_cast<long long>(o.custom_gbs) /
                                         (static_cast<long long>(p.dp) * p.mbs));
  if (!raw.partition.empty()) {
    o.partition = parse_partition(raw.partition, p.pp);
    o.partition_text = raw.partition;
  }
  if (!raw.placement.empty()) {
    o.placement = parse_placement(raw.placement, cluster_of(o));
  }
}

/// The comma-separated values of a list flag, each parsed by `parse`, without repeats.
template <typename T, typename Parse>
std::vector<T> parse_list(const std::string& flag, const std::string& text, Parse parse) {
  std::vector<T> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    if (item.empty()) {
      throw InputError(fmt::format("{} '{}' has an empty value; give values separated by commas",
                                   flag, text));
    }
    T v = parse(item);
    if (std::find(out.begin(), out.end(), v) == out.end()) {
      out.push_back(v);
    }
    pos = end + 1;
  }
  return out;
}

/// A switch given as on or off.
bool parse_on_off(const char* flag, const std::string& text) {
  if (text != "on" && text != "off") {
    throw InputError(fmt::format("{} '{}' must be on or off", flag, text));
  }
  return text == "on";
}

/// The native estimator's flags (docs/native.md): --estimator, and the flags only it has,
/// which select it and are an error beside --estimator zerosearch.
void check_native(const RawOptions& raw, Options& o) {
  const std::pair<const char*, const std::string*> only_native[] = {
      {"--recompute", &raw.recompute},       {"--offload", &raw.offload},
      {"--virtual_stages", &raw.virtual_stages}, {"--dtype", &raw.dtype},
      {"--schedule", &raw.schedule},         {"--host_memory_gib", &raw.host_memory_gib},
      {"--framework_overhead_gib", &raw.framework_overhead_gib},
      {"--sequence_parallel", &raw.sequence_parallel},
      {"--flash_attention", &raw.flash_attention},
      {"--attention_kernel", &raw.attention_kernel}, {"--fp8_recipe", &raw.fp8_recipe},
      {"--overlap_grad_reduce", &raw.overlap_grad_reduce},
      {"--fused_loss", &raw.fused_loss}, {"--cp_kv_repeat", &raw.cp_kv_repeat},
      {"--fused_layers", &raw.fused_layers},
      {"--layer_impl", &raw.layer_impl},
      {"--fused_softmax_check", &raw.fused_softmax_check},
      {"--zero3_impl", &raw.zero3_impl},
      {"--grad_reduce_fp32", &raw.grad_reduce_fp32},
      {"--grad_accum_fp32", &raw.grad_accum_fp32},
      {"--tp_comm_overlap", &raw.tp_comm_overlap},
      {"--ep", &raw.ep}, {"--etp", &raw.etp}, {"--moe_imbalance", &raw.moe_imbalance},
      {"--moe_a2a_overlap", &raw.moe_a2a_overlap}, {"--moe_dispatcher", &raw.moe_dispatcher},
      {"--cp_comm", &raw.cp_comm}, {"--master_weights", &raw.master_weights},
      {"--pipeline_layout", &raw.pipeline_layout},
      {"--recompute_modules", &raw.recompute_modules}};
  const char* given = nullptr;
  for (const auto& [flag, value] : only_native) {
    if (!value->empty() && given == nullptr) given = flag;
  }
  // --cp 1 is what the zerosearch estimator runs; a degree above 1 is native only.
  if (!raw.cp.empty()) {
    o.cp = parse_list<int>("--cp", raw.cp, [](const std::string& t) {
      return static_cast<int>(parse_int("--cp", t, 1, kMaxDegree));
    });
    if (given == nullptr && std::any_of(o.cp.begin(), o.cp.end(), [](int c) { return c > 1; })) {
      given = "--cp > 1";
    }
  }
  if (!raw.cp_comm.empty()) {
    o.cp_comm = parse_list<CpComm>("--cp_comm", raw.cp_comm, parse_cp_comm);
  }
  if (!raw.estimator.empty()) {
    o.estimator = parse_estimator(raw.estimator);
  } else if (given != nullptr) {
    o.estimator = analytic_estimator();
  }
  if (given != nullptr && !estimator_info(*o.estimator).extended_points) {
    throw InputError(fmt::format("{} needs --estimator {} (the {} estimator "
                                 "reproduces the original, which has no such setting)",
                                 given, estimator_info(analytic_estimator()).name,
                                 estimator_info(*o.estimator).name));
  }
  if (!raw.recompute.empty()) {
    o.recompute = parse_list<Recompute>("--recompute", raw.recompute, parse_recompute);
  }
  if (!raw.offload.empty()) {
    o.offload = parse_list<Offload>("--offload", raw.offload, parse_offload);
  }
  if (!raw.virtual_stages.empty()) {
    o.virtual_stages = parse_list<int>("--virtual_stages", raw.virtual_stages, [](const std::string& t) {
      return static_cast<int>(parse_int("--virtual_stages", t, 1, kMaxVirtualStages));
    });
  }
  if (!raw.dtype.empty()) {
    o.dtypes = parse_list<Dtype>("--dtype", raw.dtype, parse_dtype);
  }
  if (!raw.schedule.empty()) {
    o.schedules = parse_list<Schedule>("--schedule", raw.schedule, parse_schedule);
  }
  if (!raw.host_memory_gib.empty()) {
    o.native.host_memory_gib = parse_positive_real("--host_memory_gib", raw.host_memory_gib);
  }
  if (!raw.framework_overhead_gib.empty()) {
    o.native.framework_overhead_gib =
        parse_positive_real("--framework_overhead_gib", raw.framework_overhead_gib);
  }
  if (!raw.sequence_parallel.empty()) {
    o.native.sequence_parallel = parse_on_off("--sequence_parallel", raw.sequence_parallel);
  }
  if (!raw.flash_attention.empty()) {
    o.native.flash_attention = parse_on_off("--flash_attention", raw.flash_attention);
  }
  if (!raw.attention_kernel.empty()) {
    const std::optional<AttentionKernel> kernel = attention_kernel_named(raw.attention_kernel);
    if (!kernel) {
      throw InputError(fmt::format("--attention_kernel '{}' must be auto, fa2 or triton",
                                   raw.attention_kernel));
    }
    o.native.attention_kernel = *kernel;
    if (o.native.attention_kernel != AttentionKernel::automatic && !o.native.flash_attention) {
      throw InputError(fmt::format("--attention_kernel {} needs fused attention "
                                   "(--flash_attention on)", raw.attention_kernel));
    }
  }
  if (!raw.fp8_recipe.empty()) {
    const std::optional<Fp8Recipe> recipe = fp8_recipe_named(raw.fp8_recipe);
    if (!recipe) {
      throw InputError(fmt::format("--fp8_recipe '{}' must be tensorwise or rowwise",
                                   raw.fp8_recipe));
    }
    o.native.fp8_recipe = *recipe;
    if (*recipe != Fp8Recipe::tensorwise &&
        std::find(o.dtypes.begin(), o.dtypes.end(), Dtype::fp8) == o.dtypes.end()) {
      throw InputError(fmt::format("--fp8_recipe {} needs --dtype fp8", raw.fp8_recipe));
    }
  }
  if (!raw.overlap_grad_reduce.empty()) {
    o.native.overlap_grad_reduce = parse_on_off("--overlap_grad_reduce", raw.overlap_grad_reduce);
  }
  if (!raw.fused_loss.empty()) {
    o.native.fused_loss = parse_on_off("--fused_loss", raw.fused_loss);
  }
  if (!raw.cp_kv_repeat.empty()) {
    o.native.cp_kv_repeat = parse_on_off("--cp_kv_repeat", raw.cp_kv_repeat);
  }
  if (!raw.fused_layers.empty()) {
    o.native.fused_layers = parse_on_off("--fused_layers", raw.fused_layers);
  }
  if (!raw.layer_impl.empty()) {
    const std::optional<LayerImpl> impl = layer_impl_named(raw.layer_impl);
    if (!impl) {
      throw InputError(fmt::format("--layer_impl '{}' must be framework, hf_gpt2, hf_gpt2_amp, "
                                   "megatron_v1 or megatron_unfused",
                                   raw.layer_impl));
    }
    o.native.layer_impl = *impl;
    if (is_eager_gpt2_layer(*impl)) {
      // Hugging Face's GPT-2 of 2021-22 has only its eager attention (modeling_gpt2.py _attn),
      // Megatron-LM v1's likewise (mpu/transformer.py GPT2ParallelSelfAttention).
      if (!raw.flash_attention.empty() && o.native.flash_attention) {
        throw InputError(fmt::format("--layer_impl {} runs {} eager attention: "
                                     "--flash_attention on does not go with it",
                                     raw.layer_impl, layer_impl_owner(*impl)));
      }
      if (o.native.fused_layers) {
        throw InputError(fmt::format("--layer_impl {} runs eager op by op: --fused_layers on "
                                     "does not go with it",
                                     raw.layer_impl));
      }
      o.native.flash_attention = false;
    }
  }
  if (!raw.fused_softmax_check.empty()) {
    const std::optional<SoftmaxCheck> check = softmax_check_named(raw.fused_softmax_check);
    if (!check) {
      throw InputError(fmt::format("--fused_softmax_check '{}' must be megatron or "
                                   "bigscience_pre260",
                                   raw.fused_softmax_check));
    }
    o.native.softmax_check = *check;
  }
  if (!raw.zero3_impl.empty()) {
    const std::optional<Zero3Impl> impl = zero3_impl_named(raw.zero3_impl);
    if (!impl) {
      throw InputError(fmt::format("--zero3_impl '{}' must be coalesced or per_param",
                                   raw.zero3_impl));
    }
    o.native.zero3_impl = *impl;
  }
  if (!raw.grad_reduce_fp32.empty()) {
    o.native.grad_reduce_fp32 = parse_on_off("--grad_reduce_fp32", raw.grad_reduce_fp32);
  }
  if (!raw.grad_accum_fp32.empty()) {
    o.native.grad_accum_fp32 = parse_on_off("--grad_accum_fp32", raw.grad_accum_fp32);
  }
  if (!raw.tp_comm_overlap.empty()) {
    o.native.tp_comm_overlap = parse_on_off("--tp_comm_overlap", raw.tp_comm_overlap);
  }
  if (!raw.master_weights.empty()) {
    o.native.master_weights = parse_on_off("--master_weights", raw.master_weights);
  }
  for (const auto& [flag, text, out] :
       {std::tuple{"--ep", &raw.ep, &o.ep}, std::tuple{"--etp", &raw.etp, &o.etp}}) {
    if (!text->empty()) {
      *out = parse_list<int>(flag, *text, [flag = flag](const std::string& t) {
        return static_cast<int>(parse_int(flag, t, 1, kMaxExpertDegree));
      });
    }
  }
  if (!raw.pipeline_layout.empty()) {
    o.native.pipeline_layout =
        std::make_shared<const PipelineLayout>(parse_pipeline_layout(raw.pipeline_layout));
  }
  if (!raw.moe_a2a_overlap.empty()) {
    o.native.moe_a2a_overlap = parse_on_off("--moe_a2a_overlap", raw.moe_a2a_overlap);
  }
  if (!raw.moe_dispatcher.empty()) {
    const std::optional<MoeDispatcher> d = moe_dispatcher_named(raw.moe_dispatcher);
    if (!d) {
      throw InputError(fmt::format("--moe_dispatcher '{}' must be alltoall, deepep or hybridep",
                                   raw.moe_dispatcher));
    }
    o.native.moe_dispatcher = *d;
  }
  if (!raw.recompute_modules.empty()) {
    // Megatron's modules apply to its selective recompute only (docs/native.md §2.7).
    if (o.recompute != std::vector<Recompute>{Recompute::selective}) {
      throw InputError(fmt::format("--recompute_modules '{}' needs --recompute selective ({})",
                                   raw.recompute_modules,
                                   raw.recompute.empty()
                                       ? "--recompute not given: none, selective and full are searched"
                                       : "got --recompute '" + raw.recompute + "'"));
    }
    o.native.recompute_modules = parse_recompute_modules(raw.recompute_modules);
  }
  if (o.native.moe_a2a_overlap) {
    // Megatron-Core's checks of overlap_moe_expert_parallel_comm (transformer_config.py at
    // d98e8a64): no "moe" in recompute_modules, at most one MTP layer.
    if (o.native.recompute_modules.has(RecomputeModule::moe)) {
      throw InputError(fmt::format("--moe_a2a_overlap on with --recompute_modules '{}': "
                                   "Megatron-LM refuses the EP all-to-all overlap beside the "
                                   "whole MoE block's recompute (drop moe, or --moe_a2a_overlap "
                                   "off)",
                                   raw.recompute_modules));
    }
    if (o.native.pipeline_layout != nullptr && o.native.pipeline_layout->mtp_layers() > 1) {
      throw InputError(fmt::format("--moe_a2a_overlap on with --pipeline_layout '{}': {} MTP "
                                   "layers (m); Megatron-LM's EP all-to-all overlap takes at most "
                                   "one",
                                   raw.pipeline_layout, o.native.pipeline_layout->mtp_layers()));
    }
  }
  if (!raw.moe_imbalance.empty()) {
    o.native.moe_imbalance = parse_positive_real("--moe_imbalance", raw.moe_imbalance);
    if (o.native.moe_imbalance < 1.0) {
      throw InputError(fmt::format("--moe_imbalance {} must be at least 1 (the busiest expert "
                                   "rank's tokens over the average)",
                                   raw.moe_imbalance));
    }
  }
}

} // namespace

Options validate_options(const RawOptions& raw) {
  Options o;
  o.notes = check_mode_flags(raw);
  o.pareto = raw.pareto;
  o.exhaustive = raw.exhaustive;
  o.search_space = raw.search_space;
  o.write_profile = raw.write_profile;
  o.list = raw.list;
  o.num_node_given = raw.num_node_given;
  check_cluster(raw, o);
  check_plan_inputs(raw, o);
  check_native(raw, o);
  o.threads = static_cast<unsigned>(parse_int("--threads", raw.threads, 0, kMaxThreads));
  check_outputs(raw, o);
  check_sweep(raw, o);
  o.run_cost = check_run_cost(raw.run_cost, raw.pareto);
  if (o.run_cost.enabled && (o.search_space || !o.write_profile.empty())) {
    throw InputError(fmt::format("{} cannot be combined with {} (use it with a search, "
                                 "--pareto or --exhaustive)",
                                 raw.run_cost.tokens.empty() ? "--steps" : "--tokens",
                                 o.search_space ? "--search_space" : "--write_profile"));
  }
  if (!raw.write_profile.empty() && o.framework == Framework::both) {
    throw InputError(fmt::format("--write_profile takes -f m or -f d, not '{}'", raw.framework));
  }
  if (raw.exhaustive) {
    check_design_point(raw, o);
    if (o.cp.size() > 1 || o.cp_comm.size() > 1) {
      throw InputError("--exhaustive takes one --cp and one --cp_comm value, not a list");
    }
    o.point.cp = static_cast<std::int16_t>(o.cp.empty() ? 1 : o.cp.front());
    o.point.cp_comm = o.cp_comm.empty() ? CpComm::ring : o.cp_comm.front();
  }
  o.command_line = raw.command_line;
  return o;
}

} // namespace zerosearch::cli
