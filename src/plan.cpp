#include "zerosearch/plan.hpp"

#include <algorithm>
#include <initializer_list>

#include <fmt/format.h>

#include "zerosearch/error.hpp"

namespace zerosearch {

Catalogs load_catalogs(const std::filesystem::path& profiledb) {
  std::error_code ec;
  if (!std::filesystem::is_directory(profiledb, ec)) {
    throw InputError(fmt::format("profiledb folder '{}' does not exist or is not a folder",
                                 profiledb.string()));
  }
  return Catalogs{load_model_catalog(profiledb / "models.json"),
                  load_hardware_catalog(profiledb / "hardware.json"),
                  load_profile_db(profiledb / "profiles")};
}

std::vector<DesignPoint> SearchPlan::design_points() const {
  std::vector<DesignPoint> out;
  for (std::size_t i = 0; i < methods.size(); ++i) {
    EnumerateInput in;
    in.methods = {methods[i]};
    in.tp_degrees = tp_degrees[i];
    in.world_size = context.cluster.world_size();
    in.global_batch = context.global_batch;
    in.num_layers = static_cast<int>(context.model.num_layers);
    auto points = enumerate_design_points(in);
    out.insert(out.end(), points.begin(), points.end());
  }
  return out;
}

namespace {

/// Present node types (count > 0) by index.
std::vector<std::size_t> present_types(const Cluster& c) {
  std::vector<std::size_t> out;
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    if (c.groups[g].count > 0) {
      out.push_back(g);
    }
  }
  return out;
}

/// True when every present type has a profile of `flavour`.
bool flavour_available(const EstimateContext& ctx, Flavour flavour) {
  const auto& v = flavour == Flavour::megatron ? ctx.megatron_profiles : ctx.deepspeed_profiles;
  for (const std::size_t g : present_types(ctx.cluster)) {
    if (v[g] == nullptr) {
      return false;
    }
  }
  return true;
}

std::string missing_profiles(const EstimateContext& ctx, Flavour flavour) {
  const auto& v = flavour == Flavour::megatron ? ctx.megatron_profiles : ctx.deepspeed_profiles;
  std::string out;
  for (const std::size_t g : present_types(ctx.cluster)) {
    if (v[g] == nullptr) {
      out += out.empty() ? "" : ", ";
      out += ctx.cluster.groups[g].gpu;
    }
  }
  return out;
}

/// The conventional files of the missing profiles: "profiles/llama2_13B_A10_megatron.json".
std::string missing_profile_files(const EstimateContext& ctx, std::initializer_list<Flavour> flavours) {
  std::string out;
  for (const std::size_t g : present_types(ctx.cluster)) {
    for (const Flavour f : flavours) {
      const auto& v = f == Flavour::megatron ? ctx.megatron_profiles : ctx.deepspeed_profiles;
      if (v[g] == nullptr) {
        out += out.empty() ? "" : " or ";
        out += fmt::format("profiles/{}_{}_{}.json", ctx.model.name, ctx.cluster.groups[g].gpu,
                           to_string(f));
      }
    }
  }
  return out;
}

} // namespace

SearchPlan make_plan(const PlanInput& in, const Catalogs& catalogs) {
  SearchPlan plan;
  EstimateContext& ctx = plan.context;
  if (in.model_spec) {
    if (catalogs.models.contains(in.model_spec->name)) {
      throw InputError(fmt::format("--type: the model file names its model '{}', like a "
                                   "built-in model; give it another name (its \"name\", or the "
                                   "name of the file or of its folder)",
                                   in.model_spec->name));
    }
    ctx.model = *in.model_spec;
  } else {
    ctx.model = catalogs.models.find(in.model);
  }
  const std::int64_t model_sequence_length = ctx.model.sequence_length;
  if (in.sequence_length > 0) {
    ctx.model.sequence_length = in.sequence_length;
  }
  if (ctx.model.sequence_length > ctx.model.max_position_embeddings) {
    plan.warnings.push_back(fmt::format(
        "sequence length {} is above the {} positions {} accepts (max_position_embeddings)",
        ctx.model.sequence_length, ctx.model.max_position_embeddings, ctx.model.name));
  }
  if (ctx.model.num_layers_from_cli) {
    ctx.model.num_layers = in.custom_num_layers;
  }
  ctx.cluster = in.cluster;
  ctx.global_batch = in.global_batch;
  ctx.precision_bits = in.precision_bits;
  ctx.iterations = in.iterations;
  ctx.partition_method = in.partition_method;
  ctx.seed = in.seed;

  const BandwidthSet& links = catalogs.hardware.bandwidth_set(in.bandwidth_set);
  const std::size_t types = ctx.cluster.groups.size();
  ctx.links.resize(types);
  ctx.memory_limit_gib.resize(types);
  ctx.megatron_profiles.assign(types, nullptr);
  ctx.deepspeed_profiles.assign(types, nullptr);
  ctx.slowness.assign(types, 0.0);
  for (std::size_t g = 0; g < types; ++g) {
    const std::string& name = ctx.cluster.groups[g].gpu;
    const GpuSpec& gpu = catalogs.hardware.gpu(name);
    if (!gpu.memory_gib) {
      throw InputError(fmt::format("node type '{}' has no memory_gib in hardware.json; add it "
                                   "to search with it",
                                   name));
    }
    ctx.memory_limit_gib[g] = static_cast<float>(*gpu.memory_gib);
    const auto link = links.links.find(name);
    if (link == links.links.end()) {
      throw InputError(fmt::format("comm type '{}' has no link bandwidth for node type '{}' in "
                                   "hardware.json",
                                   in.bandwidth_set, name));
    }
    ctx.links[g] = LinkF32{static_cast<float>(link->second.inter_node_bps),
                           static_cast<float>(link->second.intra_node_bps)};
    ctx.price_per_s_usd = ctx.price_per_s_usd +
                          (gpu.price_per_node_hour_usd / 3600.0) * ctx.cluster.groups[g].count;
    ctx.megatron_profiles[g] = catalogs.profiles.find(ctx.model.name, name, Flavour::megatron);
    ctx.deepspeed_profiles[g] = catalogs.profiles.find(ctx.model.name, name, Flavour::deepspeed);
    // Slowness: the profiled transformer-layer time at the smallest tp (SPEC deviation 3).
    for (const GpuProfile* p : {ctx.deepspeed_profiles[g], ctx.megatron_profiles[g]}) {
      if (p != nullptr && ctx.slowness[g] == 0.0) {
        ctx.slowness[g] = p->layer_times_s.begin()->second[1];
      }
    }
    for (const GpuProfile* p : {ctx.megatron_profiles[g], ctx.deepspeed_profiles[g]}) {
      if (p == nullptr) {
        continue;
      }
      const auto layers = p->layer_times_s.begin()->second.size();
      if (layers != static_cast<std::size_t>(ctx.model.pipeline_layers())) {
        if (ctx.model.num_layers_from_cli) {
          throw InputError(fmt::format(
              "--custom_num_layer {} does not match the profile {}, which has {} transformer "
              "layers",
              ctx.model.num_layers, p->origin, layers - 2));
        }
        throw InputError(fmt::format("profile {} has {} layer times but model {} needs {} "
                                     "(embedding, {} transformer layers, post_process)",
                                     p->origin, layers, ctx.model.name,
                                     ctx.model.pipeline_layers(), ctx.model.num_layers));
      }
    }
  }
  if (ctx.cluster.num_nodes() <= 0) {
    throw InputError("the cluster has no nodes");
  }
  if (ctx.model.sequence_length != model_sequence_length) {
    for (std::size_t g = 0; g < types; ++g) {
      if (ctx.megatron_profiles[g] != nullptr || ctx.deepspeed_profiles[g] != nullptr) {
        plan.warnings.push_back(fmt::format(
            "the measured profiles of {} were taken at sequence length {}; at {} their layer "
            "times are used as they are",
            ctx.model.name, model_sequence_length, ctx.model.sequence_length));
        break;
      }
    }
  }

  // Methods (SPEC 2 and deviation 1).
  const bool has_megatron = flavour_available(ctx, Flavour::megatron);
  const bool has_deepspeed = flavour_available(ctx, Flavour::deepspeed);
  std::vector<DpMethod> wanted;
  switch (in.framework) {
  case Framework::megatron: wanted = {DpMethod::dp, DpMethod::fsdp}; break;
  case Framework::deepspeed:
    wanted = {DpMethod::zero0, DpMethod::zero1, DpMethod::zero2, DpMethod::zero3};
    break;
  case Framework::both:
    wanted = {DpMethod::dp, DpMethod::fsdp, DpMethod::zero0, DpMethod::zero1, DpMethod::zero2,
              DpMethod::zero3};
    break;
  case Framework::automatic:
    if (has_megatron) {
      wanted = {DpMethod::dp, DpMethod::fsdp};
    } else if (has_deepspeed) {
      wanted = {DpMethod::zero0, DpMethod::zero1};
    } else {
      plan.notes.push_back(
          fmt::format("dp/zero0 and fsdp/zero1 left out: no profile of {} for {}",
                      ctx.model.name, missing_profiles(ctx, Flavour::deepspeed)));
    }
    if (has_deepspeed) {
      wanted.push_back(DpMethod::zero2);
      wanted.push_back(DpMethod::zero3);
    } else {
      plan.notes.push_back(fmt::format("zero2 and zero3 left out: no DeepSpeed profile of {} for {}",
                                       ctx.model.name, missing_profiles(ctx, Flavour::deepspeed)));
    }
    if (wanted.empty()) {
      throw InputError(fmt::format("no profile of {} on {} ({})", ctx.model.name,
                                   missing_profiles(ctx, Flavour::deepspeed),
                                   missing_profile_files(ctx, {Flavour::deepspeed,
                                                               Flavour::megatron})));
    }
    break;
  }
  for (const Flavour f : {Flavour::megatron, Flavour::deepspeed}) {
    std::vector<std::string> needing;
    for (const DpMethod m : wanted) {
      if (flavour_of(m) == f) {
        needing.emplace_back(to_string(m));
      }
    }
    if (needing.empty() || flavour_available(ctx, f)) {
      continue;
    }
    const char* hint = f == Flavour::megatron ? (has_deepspeed ? "; try -f d" : "")
                                              : (has_megatron ? "; try -f m" : "");
    throw InputError(fmt::format("no {} profile of {} on {} ({}), which -f {} needs for {}{}",
                                 f == Flavour::megatron ? "Megatron-LM" : "DeepSpeed",
                                 ctx.model.name, missing_profiles(ctx, f),
                                 missing_profile_files(ctx, {f}), to_string(in.framework),
                                 fmt::join(needing, ", "), hint));
  }

  // Tensor-parallel degrees: divisors of the GPUs per node that every present type profiles.
  const std::vector<std::size_t> present = present_types(ctx.cluster);
  for (const DpMethod m : wanted) {
    std::vector<int> tps;
    for (const int tp : divisors(ctx.cluster.gpus_per_node)) {
      std::string missing;
      for (const std::size_t g : present) {
        const GpuProfile* p = profile_for(ctx, static_cast<int>(g), m);
        if (p->layer_times_s.find(tp) == p->layer_times_s.end()) {
          missing += missing.empty() ? "" : ", ";
          missing += ctx.cluster.groups[g].gpu;
        }
      }
      if (missing.empty()) {
        tps.push_back(tp);
      } else {
        const std::string note = fmt::format("tp {} left out: no {} profile of {} at tp {} for {}", tp,
                                             to_string(flavour_of(m)), ctx.model.name, tp, missing);
        if (std::find(plan.notes.begin(), plan.notes.end(), note) == plan.notes.end()) {
          plan.notes.push_back(note);
        }
      }
    }
    if (!tps.empty()) {
      plan.methods.push_back(m);
      plan.tp_degrees.push_back(std::move(tps));
    }
  }
  if (plan.methods.empty()) {
    throw InputError(fmt::format("no tensor-parallel degree dividing --gpu_per_node {} has a "
                                 "profile for {}",
                                 ctx.cluster.gpus_per_node, ctx.model.name));
  }
  return plan;
}

} // namespace zerosearch
