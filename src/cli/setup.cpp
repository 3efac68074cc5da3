#include "setup.hpp"

#include <algorithm>
#include <iostream>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "mode_options.hpp"
#include "options.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/io/hf_config.hpp"
#include "describe.hpp"

#ifndef ZEROSEARCH_SOURCE_PROFILEDB
#define ZEROSEARCH_SOURCE_PROFILEDB ""
#endif

namespace zerosearch::cli {

namespace fs = std::filesystem;

/// --profiledb_path, else next to an installed binary (../share/zerosearch/profiledb), else
/// a profiledb/ beside the binary, else the source tree the binary was built from.
fs::path find_profiledb(const Options& o, const char* argv0) {
  if (!o.profiledb_path.empty()) {
    return o.profiledb_path;
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    exe = fs::absolute(argv0, ec);
  }
  const fs::path dir = exe.parent_path();
  for (const fs::path& candidate :
       {dir / ".." / "share" / "zerosearch" / "profiledb", dir / "profiledb",
        fs::path(ZEROSEARCH_SOURCE_PROFILEDB)}) {
    if (!candidate.empty() && fs::is_regular_file(candidate / "models.json", ec)) {
      return candidate;
    }
  }
  throw InputError("cannot find the profile database (models.json, hardware.json, profiles/); "
                   "pass --profiledb_path DIR");
}

namespace {

/// Node and GPU counts in 64 bits, before anything multiplies them in int.
void check_cluster_size(const Cluster& c) {
  long long nodes = 0;
  for (const auto& g : c.groups) {
    nodes += g.count;
  }
  const long long gpus = nodes * c.gpus_per_node;
  if (gpus > kMaxClusterGpus) {
    throw InputError(fmt::format("the cluster has {} GPUs ({} nodes x {} per node); the limit is "
                                 "{} GPUs",
                                 gpus, nodes, c.gpus_per_node, kMaxClusterGpus));
  }
}

} // namespace

Cluster make_cluster(const Options& o) {
  Cluster c;
  c.gpus_per_node = static_cast<int>(parse_int("--gpu_per_node", o.gpu_per_node, 1, 1024));
  if (o.pareto) {
    if (o.node_types.size() != 2) {
      throw InputError(fmt::format("--pareto needs exactly two --node_type values, got {}",
                                   o.node_types.size()));
    }
    return c;
  }
  if (o.node_type_counts.empty()) {
    if (o.node_types.size() != 1) {
      throw InputError(fmt::format("--node_type has {} types; give their node counts with "
                                   "--node_type_num_node",
                                   o.node_types.size()));
    }
    c.groups.push_back(
        {o.node_types[0], static_cast<int>(parse_int("--num_node", o.num_node, 1, 1'000'000))});
    check_cluster_size(c);
    return c;
  }
  if (o.node_types.size() != o.node_type_counts.size()) {
    throw InputError(fmt::format("--node_type has {} values but --node_type_num_node has {}; "
                                 "give one count per node type",
                                 o.node_types.size(), o.node_type_counts.size()));
  }
  for (std::size_t i = 0; i < o.node_types.size(); ++i) {
    for (std::size_t k = 0; k < i; ++k) {
      if (o.node_types[k] == o.node_types[i]) {
        throw InputError(fmt::format("--node_type lists '{}' twice", o.node_types[i]));
      }
    }
    c.groups.push_back({o.node_types[i], static_cast<int>(parse_int(
                                              "--node_type_num_node", o.node_type_counts[i], 1,
                                              1'000'000))});
  }
  check_cluster_size(c);
  return c;
}

std::optional<ModelSpec> model_from_file(const Options& o) {
  if (!names_model_file(o.model)) {
    return std::nullopt;
  }
  return load_model_file(o.model);
}

namespace {

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

} // namespace

void read_native_options(const Options& o, PlanInput& in) {
  const bool any = !o.recompute.empty() || !o.offload.empty() || !o.virtual_stages.empty() ||
                   !o.schedule.empty() ||
                   !o.dtype.empty() || !o.host_memory_gib.empty() ||
                   !o.framework_overhead_gib.empty();
  if (!o.estimator.empty()) {
    in.estimator = parse_estimator(o.estimator);
  } else if (any) {
    in.estimator = Estimator::native; // these flags only exist in the native model
  }
  if (any && in.estimator == Estimator::zerosearch) {
    const char* flag = !o.recompute.empty()        ? "--recompute"
                       : !o.offload.empty()        ? "--offload"
                       : !o.virtual_stages.empty() ? "--virtual_stages"
                       : !o.dtype.empty()          ? "--dtype"
                       : !o.schedule.empty()       ? "--schedule"
                       : !o.host_memory_gib.empty() ? "--host_memory_gib"
                                                    : "--framework_overhead_gib";
    throw InputError(fmt::format("{} needs --estimator native (the zerosearch estimator "
                                 "reproduces the original, which has no such setting)",
                                 flag));
  }
  if (!o.recompute.empty()) {
    in.recompute = parse_list<Recompute>("--recompute", o.recompute, parse_recompute);
  }
  if (!o.offload.empty()) {
    in.offload = parse_list<Offload>("--offload", o.offload, parse_offload);
  }
  if (!o.virtual_stages.empty()) {
    in.virtual_stages = parse_list<int>("--virtual_stages", o.virtual_stages, [](const std::string& t) {
      return static_cast<int>(parse_int("--virtual_stages", t, 1, 1024));
    });
  }
  if (!o.dtype.empty()) {
    in.dtypes = parse_list<Dtype>("--dtype", o.dtype, parse_dtype);
  }
  if (!o.schedule.empty()) {
    in.schedules = parse_list<Schedule>("--schedule", o.schedule, parse_schedule);
  }
  if (!o.host_memory_gib.empty()) {
    in.native.host_memory_gib = parse_positive_real("--host_memory_gib", o.host_memory_gib);
  }
  if (!o.framework_overhead_gib.empty()) {
    const double v = parse_positive_real("--framework_overhead_gib", o.framework_overhead_gib);
    in.native.framework_overhead_gib = v;
  }
}

PlanInput make_plan_input(const Options& o, const Cluster& cluster) {
  PlanInput in;
  in.model_spec = model_from_file(o);
  in.model = in.model_spec ? in.model_spec->name : o.model;
  if (!o.seq_len.empty()) {
    in.sequence_length = parse_int("--seq_len", o.seq_len, 1, 16'777'216);
  }
  in.custom_num_layers =
      static_cast<int>(parse_int("--custom_num_layer", o.custom_num_layer, 1, 100'000));
  in.cluster = cluster;
  in.bandwidth_set = o.pareto ? "pareto" : o.comm_type;
  in.framework = parse_framework(o.framework);
  in.global_batch = static_cast<int>(parse_int("--custom_gbs", o.custom_gbs, 1, 1'000'000'000));
  in.precision_bits = static_cast<int>(parse_int("--precision", o.precision, 1, 64));
  in.iterations = parse_int("--iter", o.iter, 0, std::numeric_limits<long long>::max());
  in.partition_method = parse_partition_method(o.search_method);
  in.profile_source = parse_profile_source(o.profile_source);
  for (const auto& [flag, texts, out] :
       {std::tuple{"--inter_node_gbps", &o.inter_node_gbps, &in.inter_node_gbps},
        std::tuple{"--intra_node_gbps", &o.intra_node_gbps, &in.intra_node_gbps}}) {
    for (const std::string& t : *texts) {
      out->push_back(parse_positive_real(flag, t));
    }
  }
  in.seed = static_cast<std::uint64_t>(
      parse_int("--seed", o.seed, 0, std::numeric_limits<long long>::max()));
  read_native_options(o, in);
  return in;
}

void check_plan(const Options& o, const SearchPlan& plan) {
  const ModelSpec& model = plan.context.model;
  if (o.custom_num_layer_given && !model.num_layers_from_cli &&
      parse_int("--custom_num_layer", o.custom_num_layer, 1, 100'000) != model.num_layers) {
    throw InputError(fmt::format("--custom_num_layer {} does not apply to {}, which has {} "
                                 "transformer layers; leave it out",
                                 o.custom_num_layer, model.name, model.num_layers));
  }
}

void print_warnings(const Options& o, const std::vector<std::string>& warnings) {
  if (o.quiet) {
    return;
  }
  for (const auto& w : warnings) {
    std::cerr << "zerosearch: warning: " << w << '\n';
  }
}

std::string no_design_point_message(const SearchPlan& plan) {
  const EstimateContext& ctx = plan.context;
  std::vector<int> tps;
  for (const auto& degrees : plan.tp_degrees) {
    for (const int tp : degrees) {
      if (std::find(tps.begin(), tps.end(), tp) == tps.end()) {
        tps.push_back(tp);
      }
    }
  }
  std::sort(tps.begin(), tps.end());
  return fmt::format("no design point for {} GPUs ({} nodes x {}) and global batch {}: tp x dp x "
                     "pp must be {} with tp in {{{}}}, dp dividing {} and pp at most the {} "
                     "layers of {}; use fewer nodes or a larger --custom_gbs",
                     ctx.cluster.world_size(), ctx.cluster.num_nodes(), ctx.cluster.gpus_per_node,
                     ctx.global_batch, ctx.cluster.world_size(), fmt::join(tps, ", "),
                     ctx.global_batch, ctx.model.num_layers, ctx.model.name);
}

/// The original's record file name (docs/model.md §5).
std::string record_name(const Options& o, const Cluster& cluster) {
  const long long n = o.pareto ? parse_int("--num_node", o.num_node, 1, 1'000'000)
                               : cluster.num_nodes();
  const std::optional<ModelSpec> file_model = model_from_file(o);
  const std::string model = file_model ? file_model->name : o.model;
  return fmt::format("N{}_M{}_model_{}_comm_{}{}_{}.csv", n, cluster.gpus_per_node, model,
                     o.comm_type, o.add_exp_name, o.node_types.size() > 1 ? "hetero" : "homo");
}

nlohmann::ordered_json run_inputs(const Options& o, const SearchPlan& plan,
                                  const std::filesystem::path& profiledb) {
  const EstimateContext& ctx = plan.context;
  nlohmann::ordered_json j;
  j["model"] = ctx.model.name;
  j["sequence_length"] = ctx.model.sequence_length;
  j["cluster"] = cluster_text(ctx.cluster);
  j["gpus_per_node"] = ctx.cluster.gpus_per_node;
  j["global_batch"] = ctx.global_batch;
  j["framework"] = o.framework;
  j["search_method"] = o.search_method;
  j["precision_bits"] = ctx.precision_bits;
  j["comm_type"] = o.pareto ? "pareto" : o.comm_type;
  j["iterations"] = ctx.iterations;
  j["profiledb"] = profiledb.string();
  j["profile_source"] = profile_source_text(ctx);
  return j;
}

} // namespace zerosearch::cli
