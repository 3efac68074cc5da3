#include "setup.hpp"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

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

std::optional<ModelSpec> model_from_file(const Options& o) {
  if (!names_model_file(o.model)) {
    return std::nullopt;
  }
  return load_model_file(o.model);
}

PlanInput make_plan_input(const Options& o, const Cluster& cluster) {
  PlanInput in;
  in.model_spec = model_from_file(o);
  in.model = in.model_spec ? in.model_spec->name : o.model;
  in.sequence_length = o.seq_len;
  in.custom_num_layers = o.custom_num_layer;
  in.cluster = cluster;
  in.bandwidth_set = o.pareto ? "pareto" : o.comm_type;
  in.framework = o.framework;
  in.global_batch = o.custom_gbs;
  in.precision_bits = o.precision;
  in.iterations = o.iter;
  in.partition_method = o.search_method;
  in.profile_source = o.profile_source;
  in.inter_node_gbps = o.inter_node_gbps;
  in.intra_node_gbps = o.intra_node_gbps;
  in.seed = o.seed;
  in.estimator = o.estimator;
  in.recompute = o.recompute;
  in.offload = o.offload;
  in.virtual_stages = o.virtual_stages;
  in.dtypes = o.dtypes;
  in.schedules = o.schedules;
  in.native = o.native;
  return in;
}

void check_plan(const Options& o, const SearchPlan& plan) {
  const ModelSpec& model = plan.context.model;
  if (o.custom_num_layer_given && !model.num_layers_from_cli &&
      o.custom_num_layer != model.num_layers) {
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
  const long long n = o.pareto ? o.num_node : cluster.num_nodes();
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
  j["framework"] = to_string(o.framework);
  j["search_method"] = to_string(o.search_method);
  j["precision_bits"] = ctx.precision_bits;
  j["comm_type"] = o.pareto ? "pareto" : o.comm_type;
  j["iterations"] = ctx.iterations;
  j["profiledb"] = profiledb.string();
  j["profile_source"] = profile_source_text(ctx);
  return j;
}

} // namespace zerosearch::cli
