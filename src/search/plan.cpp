#include "zerosearch/search/plan.hpp"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/model/estimator.hpp"
#include "zerosearch/model/estimator_ops.hpp"
#include "zerosearch/model/moe.hpp"
#include "zerosearch/model/network.hpp"
#include "zerosearch/model/pipeline_layout.hpp"
#include "zerosearch/model/recompute_modules.hpp"
#include "zerosearch/model/zero_bubble.hpp"

namespace zerosearch {

namespace {
std::vector<std::size_t> present_types(const Cluster& c);
} // namespace

std::vector<DesignPoint> SearchPlan::design_points() const {
  std::vector<DesignPoint> out;
  const bool is_native = estimator_info(context.estimator).extended_points;
  // Context parallelism (native): tp x cp x dp x pp GPUs, so the original's enumeration over
  // world / cp GPUs for each cp degree, and each exchange for cp > 1.
  const std::vector<int> cps = is_native ? cp : std::vector<int>{1};
  StagesOf<NativeEstimator> all_types;
  for (const std::size_t g : present_types(context.cluster)) {
    all_types.stage_gpu.push_back(static_cast<int>(g));
  }
  for (std::size_t i = 0; i < methods.size(); ++i) {
    for (const int c : cps) {
      if (context.cluster.world_size() % c != 0) continue;
      EnumerateInput in;
      in.methods = {methods[i]};
      in.tp_degrees = tp_degrees[i];
      in.world_size = context.cluster.world_size() / c;
      in.global_batch = context.global_batch;
      in.num_layers = static_cast<int>(context.model.num_layers);
      in.estimator = context.estimator;
      const std::vector<DesignPoint> points = enumerate_design_points(in);
      if (!is_native) {
        out.insert(out.end(), points.begin(), points.end());
        continue;
      }
      const std::vector<CpComm> comms = c > 1 ? cp_comm : std::vector<CpComm>{CpComm::ring};
      for (const DesignPoint& base : points) {
        add_native_points(base, c, comms, all_types, out);
      }
    }
  }
  return out;
}

void SearchPlan::add_native_points(const DesignPoint& base, int cp_degree,
                                   const std::vector<CpComm>& comms,
                                   const StagesOf<NativeEstimator>& all_types,
                                   std::vector<DesignPoint>& out) const {
  // Expert layouts (MoE models): etp 0 stands for the point's tp; each distinct (ep, etp) once.
  std::vector<std::pair<int, int>> layouts;
  for (const int e : ep) {
    for (const int et : etp) {
      const std::pair<int, int> l{e, et == 0 ? base.tp : et};
      if (std::find(layouts.begin(), layouts.end(), l) == layouts.end()) {
        layouts.push_back(l);
      }
    }
  }
  // Every combination of the memory-saving settings, interleaving, element type, expert layout
  // and context-parallel exchange that the model accepts for the point (docs/native.md §5).
  for (const Dtype dtype : dtypes) {
    for (const Schedule schedule : schedules) {
      // A split schedule that cannot run this pp and micro-batches, whatever the layers,
      // rules out every point below (native_invalid_reason would give its reason): skipped
      // before the checks.
      if (is_split_schedule(schedule) &&
          !split_schedule_runs(schedule, base.pp, base.num_micro_batches,
                               std::numeric_limits<long long>::max())) {
        continue;
      }
      for (const int v : virtual_stages) {
        // 1F1B and TeraPipe do not interleave; interleaved needs v > 1.
        if (info(schedule).interleaves != (v > 1)) continue;
        for (const Offload o : offload) {
          for (const Recompute r : recompute) {
            for (const auto& [e, et] : layouts) {
              for (const CpComm comm : comms) {
                DesignPoint p = base;
                p.dtype = dtype;
                p.schedule = schedule;
                p.virtual_stages = static_cast<std::int16_t>(v);
                p.offload = o;
                p.recompute = r;
                p.ep = static_cast<std::int16_t>(e);
                p.etp = static_cast<std::int16_t>(et);
                p.cp = static_cast<std::int16_t>(cp_degree);
                p.cp_comm = comm;
                if (point_invalid_reason(NativeEstimator{}, context, p, all_types).empty()) {
                  out.push_back(p);
                }
              }
            }
          }
        }
      }
    }
  }
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

const char* to_string(ProfileSource s) noexcept {
  switch (s) {
  case ProfileSource::measured: return "measured";
  case ProfileSource::analytic: return "analytic";
  case ProfileSource::automatic: return "auto";
  }
  return "?";
}

ProfileSource parse_profile_source(const std::string& text) {
  if (text == "measured") return ProfileSource::measured;
  if (text == "analytic") return ProfileSource::analytic;
  if (text == "auto") return ProfileSource::automatic;
  throw InputError(fmt::format("unknown profile source '{}' (allowed: measured, analytic, auto)",
                               text));
}

AnalyticCalibration calibration_for(const Catalogs& catalogs, const GpuSpec& gpu) {
  if (const auto it = catalogs.calibrations.find(gpu.name); it != catalogs.calibrations.end()) {
    return it->second;
  }
  return prior_calibration(gpu);
}

std::string profile_source_text(const EstimateContext& ctx) {
  std::string first;
  bool same = true;
  std::string all;
  for (const std::size_t g : present_types(ctx.cluster)) {
    const std::string& s = ctx.profile_source[g];
    if (first.empty()) {
      first = s;
    }
    same = same && s == first;
    all += all.empty() ? "" : ", ";
    all += ctx.cluster.groups[g].gpu + " " + s;
  }
  return same ? first : "mixed: " + all;
}

namespace {

/// One override value for node type g: none, the single value, or the g-th.
std::optional<double> override_for(const std::vector<double>& v, std::size_t g) {
  if (v.empty()) return std::nullopt;
  return v.size() == 1 ? v[0] : v[g];
}

} // namespace

const ModelSpec& base_model(const PlanInput& in, const ModelCatalog& models) {
  if (!in.model_spec) {
    return models.find(in.model);
  }
  if (models.contains(in.model_spec->name)) {
    throw InputError(fmt::format("--type: the model file names its model '{}', like a "
                                 "built-in model; give it another name (its \"name\", or the "
                                 "name of the file or of its folder)",
                                 in.model_spec->name));
  }
  return *in.model_spec;
}

ModelSpec plan_model(const ModelSpec& base, const PlanInput& in,
                     std::vector<std::string>& warnings) {
  ModelSpec model = base;
  if (in.sequence_length > 0) {
    model.sequence_length = in.sequence_length;
  }
  if (model.sequence_length > model.max_position_embeddings) {
    warnings.push_back(fmt::format(
        "sequence length {} is above the {} positions {} accepts (max_position_embeddings)",
        model.sequence_length, model.max_position_embeddings, model.name));
  }
  if (model.num_layers_from_cli) {
    model.num_layers = in.custom_num_layers;
  }
  return model;
}

void check_link_overrides(const PlanInput& in) {
  const std::size_t types = in.cluster.groups.size();
  for (const auto* v : {&in.inter_node_Gbitps, &in.intra_node_Gbitps}) {
    if (v->size() > 1 && v->size() != types) {
      throw InputError(fmt::format("--{}_node_gbps has {} values but there are {} node types; "
                                   "give one value or one per --node_type",
                                   v == &in.inter_node_Gbitps ? "inter" : "intra", v->size(),
                                   types));
    }
  }
}

LinkF32 node_links(const PlanInput& in, const BandwidthSet& links, const GpuSpec& gpu,
                   std::size_t g) {
  const auto link = links.links.find(gpu.name);
  const std::optional<LinkBandwidth> fallback = default_links(gpu);
  const auto inter = override_for(in.inter_node_Gbitps, g);
  const auto intra = override_for(in.intra_node_Gbitps, g);
  if (link == links.links.end() && !fallback && !(inter && intra)) {
    throw InputError(fmt::format("comm type '{}' has no link bandwidth for node type '{}' in "
                                 "hardware.json",
                                 in.bandwidth_set, gpu.name));
  }
  const LinkBandwidth chosen = link != links.links.end() ? link->second
                               : fallback             ? *fallback
                                                      : LinkBandwidth{};
  return LinkF32{static_cast<float>(inter ? *inter * 1e9 : chosen.inter_node_bits_per_s),
                 static_cast<float>(intra ? *intra * 1e9 : chosen.intra_node_bits_per_s)};
}

void add_node_profiles(EstimateContext& ctx, std::size_t g, const GpuSpec& gpu,
                       const PlanInput& in, const Catalogs& catalogs,
                       std::vector<std::string>& notes) {
  const std::string& name = gpu.name;
  ctx.megatron_profiles[g] = catalogs.profiles.find(ctx.model.name, name, Flavour::megatron);
  ctx.deepspeed_profiles[g] = catalogs.profiles.find(ctx.model.name, name, Flavour::deepspeed);
  const bool measured = ctx.megatron_profiles[g] != nullptr || ctx.deepspeed_profiles[g] != nullptr;
  if (in.profile_source == ProfileSource::analytic ||
      (in.profile_source == ProfileSource::automatic && !measured && gpu.has_specs)) {
    if (!gpu.has_specs) {
      throw InputError(fmt::format("node type '{}' has no specifications (peak_tflops, "
                                   "memory_GBps, ...) in hardware.json for analytic profiles",
                                   name));
    }
    const AnalyticCalibration calibration = calibration_for(catalogs, gpu);
    const Dtype dtype = dtype_for_precision(gpu, in.precision_bits);
    for (const Flavour f : {Flavour::megatron, Flavour::deepspeed}) {
      auto profile = std::make_shared<GpuProfile>(analytic_profile(
          ctx.model, gpu, calibration, f, divisors(ctx.cluster.gpus_per_node), dtype));
      (f == Flavour::megatron ? ctx.megatron_profiles : ctx.deepspeed_profiles)[g] =
          profile.get();
      ctx.generated_profiles.push_back(std::move(profile));
    }
    ctx.profile_source[g] =
        calibration.calibrated ? "analytic (calibrated)" : "analytic (uncalibrated)";
    notes.push_back(fmt::format(
        "{}: analytic profile of {} ({}, {}; {}), {}", name, ctx.model.name,
        calibration.calibrated ? "calibrated" : "uncalibrated, expect +-30 %",
        calibration.source, to_string(dtype),
        measured ? "measured one ignored (--profile_source analytic)" : "no measured profile"));
  }
  // Slowness: the profiled transformer-layer time at the smallest tp (docs/model.md §6.3).
  for (const GpuProfile* p : {ctx.deepspeed_profiles[g], ctx.megatron_profiles[g]}) {
    if (p != nullptr && ctx.slowness[g] == 0.0) {
      ctx.slowness[g] = p->layer_times_s.begin()->second[1];
    }
  }
}

void check_profile_layers(const EstimateContext& ctx, std::size_t g) {
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
                                   p->origin, layers, ctx.model.name, ctx.model.pipeline_layers(),
                                   ctx.model.num_layers));
    }
  }
}

std::vector<DpMethod> methods_for_framework(const EstimateContext& ctx, Framework framework,
                                            std::vector<std::string>& notes) {
  const bool has_megatron = flavour_available(ctx, Flavour::megatron);
  const bool has_deepspeed = flavour_available(ctx, Flavour::deepspeed);
  std::vector<DpMethod> wanted;
  // The original's methods only (DpMethodInfo::original): its goldens hold them.
  const auto methods_of = [](auto keep) {
    std::vector<DpMethod> out;
    for (const DpMethodInfo& m : dp_methods()) {
      if (m.original && keep(m)) {
        out.push_back(m.id);
      }
    }
    return out;
  };
  switch (framework) {
  case Framework::megatron:
    wanted = methods_of([](const DpMethodInfo& m) { return m.flavour == Flavour::megatron; });
    break;
  case Framework::deepspeed:
    wanted = methods_of([](const DpMethodInfo& m) { return m.flavour == Flavour::deepspeed; });
    break;
  case Framework::both: wanted = methods_of([](const DpMethodInfo&) { return true; }); break;
  case Framework::automatic:
    // Each method once (deviation 1): Megatron-LM's where it has profiles, else the DeepSpeed
    // equivalent; DeepSpeed-only methods when DeepSpeed has profiles.
    wanted = methods_of([&](const DpMethodInfo& m) {
      if (m.flavour == Flavour::megatron) {
        return has_megatron;
      }
      return has_deepspeed && (!m.has_megatron_equivalent || !has_megatron);
    });
    // The notes name the methods from the table.
    if (!has_megatron && !has_deepspeed) {
      notes.push_back(fmt::format(
          "{} and their DeepSpeed equivalents {} left out: no profile of {} for {}",
          dp_method_names(Flavour::megatron),
          dp_method_names_where([](const DpMethodInfo& m) { return m.has_megatron_equivalent; }),
          ctx.model.name, missing_profiles(ctx, Flavour::deepspeed)));
    }
    if (!has_deepspeed) {
      notes.push_back(fmt::format(
          "{} left out: no DeepSpeed profile of {} for {}",
          dp_method_names_where([](const DpMethodInfo& m) {
            return m.flavour == Flavour::deepspeed && !m.has_megatron_equivalent;
          }),
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
                                 missing_profile_files(ctx, {f}), to_string(framework),
                                 fmt::join(needing, ", "), hint));
  }
  return wanted;
}

void add_tp_degrees(SearchPlan& plan, const std::vector<DpMethod>& wanted) {
  const EstimateContext& ctx = plan.context;
  // Divisors of the GPUs per node that every present type profiles.
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
}

namespace {

/// The rest of a plan for the native estimator: methods by --framework (every one by
/// default), tensor-parallel degrees that divide the attention heads, the dimensions.
/// `gpus`: each node type's specifications (by node-type index), whose data
/// set_estimator_data has set in the plan's context.
void make_native_plan(const PlanInput& in, SearchPlan& plan, const std::vector<GpuSpec>& gpus) {
  EstimateContext& ctx = plan.context;
  std::vector<int> tps;
  // tp over whole nodes of a scale-up domain (GB200 NVL72: tp 8 on two trays of 4) is searched
  // where it divides the heads, in one note (docs/native.md §2.5).
  std::vector<int> across, tp_left_out;
  const int node = ctx.cluster.gpus_per_node;
  for (const int tp : nvlink_tp_degrees(node, tp_domain_gpus(NativeEstimator{}, ctx))) {
    if (ctx.model.num_attention_heads % tp == 0) {
      tps.push_back(tp);
      if (tp > node) across.push_back(tp);
    } else if (tp > node) {
      tp_left_out.push_back(tp);
    } else {
      plan.notes.push_back(fmt::format("tp {} left out: it does not divide the {} attention "
                                       "heads of {}",
                                       tp, ctx.model.num_attention_heads, ctx.model.name));
    }
  }
  if (!across.empty() || !tp_left_out.empty()) {
    const std::string searched =
        across.empty() ? std::string("none searched")
                       : fmt::format("{} searched", fmt::join(across, ", "));
    const std::string why =
        tp_left_out.empty()
            ? std::string()
            : fmt::format(" ({} left out: they do not divide the {} attention heads of {})",
                          fmt::join(tp_left_out, ", "), ctx.model.num_attention_heads,
                          ctx.model.name);
    plan.notes.push_back("tp across the nodes of an NVLink domain: " + searched + why);
  }
  for (const DpMethodInfo& m : dp_methods()) {
    const bool wanted = in.framework == Framework::megatron    ? m.flavour == Flavour::megatron
                        : in.framework == Framework::deepspeed ? m.flavour == Flavour::deepspeed
                                                               : true;
    if (wanted && !tps.empty()) {
      plan.methods.push_back(m.id);
      plan.tp_degrees.push_back(tps);
    }
  }
  if (plan.methods.empty()) {
    throw InputError(fmt::format("no tensor-parallel degree dividing --gpu_per_node {} divides "
                                 "the {} attention heads of {}",
                                 ctx.cluster.gpus_per_node, ctx.model.num_attention_heads,
                                 ctx.model.name));
  }
  // Defaults (docs/native.md §5): every recompute mode (the fastest plan that fits), no
  // offload (slow; the summary says when it would make a plan fit), interleaving of 2 where
  // the layers allow it, the training dtype of --precision.
  plan.recompute = in.recompute.empty()
                       ? std::vector<Recompute>{Recompute::none, Recompute::selective,
                                                Recompute::full}
                       : in.recompute;
  plan.offload = in.offload.empty() ? std::vector<Offload>{Offload::none} : in.offload;
  if (!in.schedules.empty()) plan.schedules = in.schedules;
  plan.virtual_stages = in.virtual_stages.empty() ? std::vector<int>{1, 2} : in.virtual_stages;
  // Context parallelism (docs/native.md §5): the degrees that split this sequence and divide
  // the GPUs. A degree given that cannot split the sequence is an error; one that does not
  // divide these GPUs is left out (a --pareto composition may have fewer), unless none is left.
  plan.cp_comm = in.cp_comm.empty() ? std::vector<CpComm>{CpComm::ring, CpComm::a2a} : in.cp_comm;
  plan.cp.clear();
  const int world = ctx.cluster.world_size();
  const long long seq = ctx.model.sequence_length;
  std::string left_out;
  for (const int c : in.cp.empty() ? default_cp_degrees(seq) : in.cp) {
    std::string why = c > 1 && seq % (2LL * c) != 0
                          ? cp_invalid_reason(c, CpComm::ring, seq, 1, 1, 1)
                          : std::string{};
    if (why.empty() && c > 1 && !in.native.flash_attention) {
      why = fmt::format("--cp {} needs fused attention (--flash_attention on)", c);
    }
    if (!why.empty() && !in.cp.empty()) {
      throw InputError(why);
    }
    if (why.empty() && world % c != 0) {
      left_out = fmt::format("--cp {} does not divide the {} GPUs (tp x cp x dp x pp must be them)",
                             c, world);
      continue;
    }
    if (why.empty()) {
      plan.cp.push_back(c);
    }
  }
  if (plan.cp.empty()) {
    throw InputError(left_out);
  }
  if (in.dtypes.empty()) {
    // The dtype --precision asks for on every present GPU: the least capable one decides.
    const auto rank = [](Dtype d) {
      return d == Dtype::fp8 ? 3 : d == Dtype::bf16 ? 2 : d == Dtype::fp16 ? 1 : 0;
    };
    Dtype d = Dtype::fp8;
    for (const std::size_t g : present_types(ctx.cluster)) {
      const Dtype x = dtype_for_precision(gpus[g], in.precision_bits);
      if (rank(x) < rank(d)) d = x;
    }
    plan.dtypes = {d == Dtype::fp8 ? Dtype::fp8 : d};
  } else {
    for (const Dtype d : in.dtypes) {
      for (const std::size_t g : present_types(ctx.cluster)) {
        if (!gpus[g].peak_tflops.of(d)) {
          throw InputError(fmt::format("--dtype {}: {} has no {} tensor cores", to_string(d),
                                       gpus[g].name, to_string(d)));
        }
      }
    }
    plan.dtypes = in.dtypes;
  }
  for (const Offload o : plan.offload) {
    const bool usable = std::any_of(plan.methods.begin(), plan.methods.end(),
                                    [o](DpMethod m) { return offload_unsupported(m, o) == nullptr; });
    if (!usable) {
      throw InputError(fmt::format("--offload {}: {}", to_string(o),
                                   offload_unsupported(plan.methods.front(), o)));
    }
  }
  if (in.native.fused_layers &&
      std::none_of(plan.methods.begin(), plan.methods.end(),
                   [](DpMethod m) { return framework_params(m).torch_loss; })) {
    throw InputError("--fused_layers on: only torchtitan (fsdp) runs eager layers, and this "
                     "search has no fsdp (-f m or -f both includes it)");
  }
  if (in.native.layer_impl != LayerImpl::framework && !ctx.model.is_gpt_family()) {
    throw InputError(fmt::format(
        "--layer_impl {} needs a GPT-2-style model (LayerNorm, learned positions, GELU MLP); "
        "{} is not",
        kLayerImplNames[static_cast<std::size_t>(in.native.layer_impl)], ctx.model.name));
  }
  // Expert parallelism (docs/moe.md): for an MoE model every power of two dividing the
  // experts up to the cluster's GPUs, and etp 1 (fine-grained experts whole on a GPU, as
  // Megatron-LM's DeepSeek-V3 and Qwen3 recipes run them) and tp (Megatron-LM's default,
  // --expert-tensor-parallel-size unset); points whose GPUs cannot hold them are left out.
  const ModelSpec& m = ctx.model;
  if (m.is_moe() && !plan.schedules.empty() &&
      std::all_of(plan.schedules.begin(), plan.schedules.end(),
                  [](Schedule s) { return s == Schedule::terapipe; })) {
    throw InputError(fmt::format("--schedule terapipe with {}, a mixture-of-experts model: its "
                                 "token slices do not model the experts' all-to-all (use 1f1b, "
                                 "interleaved or a split schedule)",
                                 m.name));
  }
  if (m.is_moe()) {
    if (in.ep.empty()) {
      plan.ep.clear();
      for (std::int64_t e = 1; e <= m.num_experts && e <= ctx.cluster.world_size(); e *= 2) {
        if (m.num_experts % e == 0) plan.ep.push_back(static_cast<int>(e));
      }
    } else {
      plan.ep = in.ep;
    }
    // The flex dispatcher (DeepEP, HybridEP) is estimated over the ep ranks of etp 1: with
    // etp > 1 Megatron-Core dispatches over the etp x ep group with tp x top-k routes
    // (MoEFlexTokenDispatcher at NVIDIA/Megatron-LM@d98e8a64), which the model does not price.
    const bool flex = flex_dispatcher(in.native.moe_dispatcher);
    plan.etp = !in.etp.empty() ? in.etp : flex ? std::vector<int>{1} : std::vector<int>{1, 0};
    for (const int e : in.etp) {
      if (flex && e != 1) {
        throw InputError(fmt::format("--etp {} with --moe_dispatcher {}: the flex dispatcher is "
                                     "estimated with etp 1 only (use --etp 1 or --moe_dispatcher "
                                     "alltoall)",
                                     e, moe_dispatcher_name(in.native.moe_dispatcher)));
      }
    }
    // A value no point can take is an error, not an empty search.
    for (const int e : plan.ep) {
      if (m.num_experts % e != 0) {
        throw InputError(fmt::format("--ep {} does not divide the {} experts of {}", e,
                                     m.num_experts, m.name));
      }
    }
    for (const int e : plan.etp) {
      if (e > 0 && m.moe_ffn_hidden_size % e != 0) {
        throw InputError(fmt::format("--etp {} does not divide the expert FFN width {} of {}", e,
                                     m.moe_ffn_hidden_size, m.name));
      }
    }
  } else {
    if (flex_dispatcher(in.native.moe_dispatcher)) {
      throw InputError(fmt::format("--moe_dispatcher {}: {} is a dense model (the token "
                                   "dispatcher needs an MoE model: num_experts > 0)",
                                   moe_dispatcher_name(in.native.moe_dispatcher), m.name));
    }
    for (const auto& [flag, values] : {std::pair{"--ep", &in.ep}, std::pair{"--etp", &in.etp}}) {
      for (const int x : *values) {
        if (x > 1) {
          throw InputError(fmt::format("{} {}: {} is a dense model (expert parallelism needs an "
                                       "MoE model: num_experts > 0)",
                                       flag, x, m.name));
        }
      }
    }
  }
  // Megatron-LM's refusals that depend on the model (docs/native.md §2.6, §2.7).
  for (const std::string& why :
       {recompute_modules_model_reason(in.native.recompute_modules, m),
        in.native.pipeline_layout != nullptr
            ? pipeline_layout_model_reason(*in.native.pipeline_layout, m)
            : std::string()}) {
    if (!why.empty()) throw InputError(why);
  }
}

/// The original's data (plan_setup): each node type's measured (or analytic) profiles; then the
/// methods and tensor-parallel degrees those profiles serve.
struct OriginalSetup {
  void node_type(SearchPlan& plan, std::size_t g, const GpuSpec& gpu, const PlanInput& in,
                 const Catalogs& catalogs) {
    add_node_profiles(plan.context, g, gpu, in, catalogs, plan.notes);
    check_profile_layers(plan.context, g);
  }
  void finish(SearchPlan& plan, const PlanInput& in, std::int64_t model_sequence_length) {
    const EstimateContext& ctx = plan.context;
    if (ctx.model.sequence_length != model_sequence_length) {
      for (std::size_t g = 0; g < ctx.cluster.groups.size(); ++g) {
        if (ctx.megatron_profiles[g] != nullptr || ctx.deepspeed_profiles[g] != nullptr) {
          plan.warnings.push_back(fmt::format(
              "the measured profiles of {} were taken at sequence length {}; at {} their layer "
              "times are used as they are",
              ctx.model.name, model_sequence_length, ctx.model.sequence_length));
          break;
        }
      }
    }
    // Methods (docs/model.md §2 and §6.1), then their tensor-parallel degrees.
    add_tp_degrees(plan, methods_for_framework(plan.context, in.framework, plan.notes));
  }
};

/// The native estimator's data: each node type's specifications and calibration
/// (set_estimator_data), then its plan dimensions (make_native_plan).
struct NativeSetup {
  std::vector<GpuSpec> gpus;
  std::vector<AnalyticCalibration> calibrations;

  void node_type(SearchPlan& plan, std::size_t g, const GpuSpec& gpu, const PlanInput& in,
                 const Catalogs& catalogs) {
    EstimateContext& ctx = plan.context;
    if (!gpu.has_specs && ctx.cluster.groups[g].count > 0) {
      throw InputError(fmt::format("node type '{}' has no specifications (peak_tflops, "
                                   "memory_GBps, ...) in hardware.json, which --estimator "
                                   "native needs",
                                   gpu.name));
    }
    gpus.push_back(gpu);
    AnalyticCalibration calibration =
        gpu.has_specs ? calibration_for(catalogs, gpu) : AnalyticCalibration{};
    if (const auto intra = override_for(in.intra_node_Gbitps, g)) {
      // --intra_node_gbps replaces the intra-node figure for this estimator too: the bus of
      // every collective inside a node (tp, the embedding's, a data-parallel group's part in
      // the node), an achieved figure as the link sets' are (docs/hardware.md, Links).
      with_intra_node_bus(calibration, *intra * 1e9 / 8.0);
    }
    calibrations.push_back(std::move(calibration));
    if (std::string note = network_note(gpu, ctx.cluster.gpus_per_node);
        !note.empty() && ctx.cluster.groups[g].count > 0) {
      plan.notes.push_back(std::move(note));
    }
    ctx.profile_source[g] = gpu.has_specs && calibration_for(catalogs, gpu).calibrated
                                ? "native (calibrated)"
                                : "native (class prior)";
  }
  void finish(SearchPlan& plan, const PlanInput& in, std::int64_t /*model_sequence_length*/) {
    set_estimator_data(NativeEstimator{}, plan.context, gpus, calibrations, in.native);
    make_native_plan(in, plan, gpus);
  }
};

OriginalSetup plan_setup(OriginalEstimator) { return {}; }
NativeSetup plan_setup(NativeEstimator) { return {}; }

} // namespace

SearchPlan make_plan(const PlanInput& in, const Catalogs& catalogs) {
  SearchPlan plan;
  EstimateContext& ctx = plan.context;
  const ModelSpec& model = base_model(in, catalogs.models);
  ctx.model = plan_model(model, in, plan.warnings);
  const std::int64_t model_sequence_length = model.sequence_length;
  ctx.cluster = in.cluster;
  ctx.global_batch = in.global_batch;
  ctx.precision_bits = in.precision_bits;
  ctx.iterations = in.iterations;
  ctx.partition_method = in.partition_method;
  ctx.seed = in.seed;

  // Per node type: its memory, links, price and profiles.
  const BandwidthSet& links = catalogs.hardware.bandwidth_set(in.bandwidth_set);
  check_link_overrides(in);
  const std::size_t types = ctx.cluster.groups.size();
  // The estimator (docs/native.md §1): the original's formulas where the original could run,
  // that is where every node type has a measured profile of the model.
  bool all_measured = true;
  for (std::size_t g = 0; g < types; ++g) {
    if (ctx.cluster.groups[g].count == 0) continue;
    const GpuSpec* gpu = catalogs.hardware.find_gpu(ctx.cluster.groups[g].gpu);
    const std::string name = gpu != nullptr ? gpu->name : ctx.cluster.groups[g].gpu;
    all_measured = all_measured &&
                   (catalogs.profiles.find(ctx.model.name, name, Flavour::megatron) != nullptr ||
                    catalogs.profiles.find(ctx.model.name, name, Flavour::deepspeed) != nullptr);
  }
  ctx.estimator =
      choose_estimator(in.estimator, all_measured || in.profile_source != ProfileSource::automatic);
  ctx.profile_source.assign(types, "measured");
  ctx.links.resize(types);
  ctx.memory_limit_gib.resize(types);
  ctx.megatron_profiles.assign(types, nullptr);
  ctx.deepspeed_profiles.assign(types, nullptr);
  ctx.slowness.assign(types, 0.0);
  // The node types' common facts, then the estimator's own data for each (plan_setup).
  visit_estimator(ctx.estimator, [&](auto estimator) {
    auto setup = plan_setup(estimator);
    for (std::size_t g = 0; g < types; ++g) {
      const GpuSpec& gpu = catalogs.hardware.gpu(ctx.cluster.groups[g].gpu);
      ctx.cluster.groups[g].gpu = gpu.name; // the catalog's spelling
      if (!gpu.memory_gib) {
        throw InputError(fmt::format("node type '{}' has no memory_gib in hardware.json; add it "
                                     "to search with it",
                                     gpu.name));
      }
      ctx.memory_limit_gib[g] = static_cast<float>(*gpu.memory_gib);
      ctx.links[g] = node_links(in, links, gpu, g);
      ctx.price_per_s_usd =
          ctx.price_per_s_usd +
          (gpu.node_price_per_hour_usd(ctx.cluster.gpus_per_node) / 3600.0) *
              ctx.cluster.groups[g].count;
      setup.node_type(plan, g, gpu, in, catalogs);
    }
    if (ctx.cluster.num_nodes() <= 0) {
      throw InputError("the cluster has no nodes");
    }
    setup.finish(plan, in, model_sequence_length);
  });
  return plan;
}

} // namespace zerosearch
