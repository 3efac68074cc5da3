#include "setup.hpp"

#include <algorithm>
#include <iostream>
#include <memory>
#include <numeric>

#include <fmt/format.h>

#include "options.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/io/catalogs.hpp"
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
  in.inter_node_Gbitps = o.inter_node_Gbitps;
  in.intra_node_Gbitps = o.intra_node_Gbitps;
  in.seed = o.seed;
  in.estimator = o.estimator;
  in.recompute = o.recompute;
  in.offload = o.offload;
  in.virtual_stages = o.virtual_stages;
  in.dtypes = o.dtypes;
  in.schedules = o.schedules;
  in.ep = o.ep;
  in.etp = o.etp;
  in.cp = o.cp;
  in.cp_comm = o.cp_comm;
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
  // The data-parallel degrees the cluster allows (enumerate.cpp's rules, any global batch):
  // the nearest batches below and above that one of them divides.
  const int world = ctx.cluster.world_size();
  std::vector<int> dps;
  for (std::size_t i = 0; i < plan.methods.size() && i < plan.tp_degrees.size(); ++i) {
    const DpMethodInfo& m = info(plan.methods[i]);
    for (const int tp : plan.tp_degrees[i]) {
      if (tp <= 0 || world % tp != 0 || (!allows_tensor_parallel(m.id, ctx.estimator) && tp > 1)) {
        continue;
      }
      for (int dp = 1; dp <= world / tp; ++dp) {
        if ((world / tp) % dp != 0) continue;
        const int pp = world / (tp * dp);
        if (pp <= ctx.model.num_layers && (m.allows_pipeline_parallel || pp == 1)) {
          dps.push_back(dp);
        }
      }
    }
  }
  const auto works = [&](long long b) {
    return std::any_of(dps.begin(), dps.end(), [&](int dp) { return b % dp == 0; });
  };
  std::vector<std::string> nearest;
  if (!dps.empty()) {
    for (long long b = ctx.global_batch - 1; b >= 1; --b) {
      if (works(b)) {
        nearest.push_back(fmt::format("{}", b));
        break;
      }
    }
    for (long long b = ctx.global_batch + 1; b <= kMaxGlobalBatch; ++b) {
      if (works(b)) {
        nearest.push_back(fmt::format("{}", b));
        break;
      }
    }
  }
  return fmt::format("no design point for {} GPUs ({} nodes x {}) and global batch {}: tp x dp x "
                     "pp must be {} with tp in {{{}}}, dp dividing {} and pp at most the {} "
                     "layers of {}; use fewer nodes or another --custom_gbs{}",
                     ctx.cluster.world_size(), ctx.cluster.num_nodes(), ctx.cluster.gpus_per_node,
                     ctx.global_batch, ctx.cluster.world_size(), fmt::join(tps, ", "),
                     ctx.global_batch, ctx.model.num_layers, ctx.model.name,
                     nearest.empty() ? std::string()
                                     : fmt::format(" (the nearest with a design point: {})",
                                                   fmt::join(nearest, " and ")));
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

bool original_entry(const GpuSpec& gpu) noexcept {
  return gpu.price_source.rfind("the original ZeROSearch", 0) == 0;
}

void apply_gpu_per_node_default(Options& o, const char* argv0) {
  if (o.gpu_per_node_given) {
    return;
  }
  try {
    o.loaded_hardware =
        std::make_shared<const HardwareCatalog>(load_hardware(find_profiledb(o, argv0), o.hardware));
  } catch (const InputError&) {
    return; // the run says what is wrong with the catalog
  }
  const HardwareCatalog& hardware = *o.loaded_hardware;
  int size = 0;
  bool differ = false;
  for (const std::string& name : o.node_types) {
    const GpuSpec* gpu = hardware.find_gpu(name);
    if (gpu == nullptr) {
      return; // an unknown name: the run refuses it
    }
    const int n = original_entry(*gpu) || gpu->default_gpus_per_node <= 0
                      ? 4
                      : gpu->default_gpus_per_node;
    differ = differ || (size != 0 && n != size);
    size = size == 0 ? n : std::min(size, n);
  }
  if (size == 0 || size == o.gpu_per_node) {
    return;
  }
  const long long gpus = static_cast<long long>(size) *
                         std::max<long long>(1, o.node_counts.empty()
                                                    ? o.num_node
                                                    : std::accumulate(o.node_counts.begin(),
                                                                      o.node_counts.end(), 0LL));
  if (gpus > kMaxClusterGpus) {
    return;
  }
  o.gpu_per_node = size;
  o.gpu_per_node_note = fmt::format("GPUs per node: {}, {} (--gpu_per_node changes it)", size,
                                    differ ? "the smallest catalog node of these GPU types"
                                           : "the catalog's node of this GPU type");
}

std::vector<std::string> gpu_entry_lines(const EstimateContext& ctx,
                                         const HardwareCatalog& hardware) {
  std::vector<std::string> lines;
  for (const NodeGroup& g : ctx.cluster.groups) {
    const GpuSpec* gpu = g.count > 0 ? hardware.find_gpu(g.gpu) : nullptr;
    if (gpu == nullptr) {
      continue;
    }
    std::string line = fmt::format(
        "GPU {}: catalog entry {}, {:.1f} GiB, ${:.2f} per GPU-hour ({}, {})", g.gpu, gpu->name,
        gpu->memory_gib.value_or(0.0), gpu->price_per_gpu_hour_usd, gpu->price_source,
        gpu->price_date);
    if (original_entry(*gpu)) {
      // The parts an original's entry stands for: the catalog's entries named NAME-...
      std::vector<std::string> parts;
      for (const auto& [name, spec] : hardware.gpus) {
        if (name.size() > gpu->name.size() + 1 && name.rfind(gpu->name + "-", 0) == 0) {
          parts.push_back(fmt::format("{} (${:.2f}, {:.1f} GiB)", name,
                                      spec.price_per_gpu_hour_usd,
                                      spec.memory_gib.value_or(0.0)));
        }
      }
      line += "; this is the original's entry, kept for parity";
      if (!parts.empty()) {
        line += fmt::format(": for a real part use --node_type {}", fmt::join(parts, " or "));
      }
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

} // namespace zerosearch::cli
