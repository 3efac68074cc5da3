#include "zerosearch/model/estimator_ops.hpp"

#include <fmt/format.h>

#include "zerosearch/model/moe.hpp"
#include "zerosearch/model/network.hpp"

namespace zerosearch {

void set_estimator_data(NativeEstimator, EstimateContext& ctx, const std::vector<GpuSpec>& gpus,
                        const std::vector<AnalyticCalibration>& calibrations,
                        const NativeSettings& settings) {
  auto native = std::make_shared<NativeContext>();
  native->model = ctx.model;
  native->gpus_per_node = ctx.cluster.gpus_per_node;
  native->global_batch = ctx.global_batch;
  native->settings = settings;
  native->gpus.reserve(gpus.size());
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const GpuSpec& gpu = gpus[g];
    NativeGpu ng;
    ng.spec = gpu;
    ng.calibration = g < calibrations.size() ? calibrations[g] : AnalyticCalibration{};
    ng.memory_gib = gpu.memory_gib.value_or(0.0);
    ng.inter_node_bytes_per_s =
        g < ctx.links.size() ? static_cast<double>(ctx.links[g].inter_node_bits_per_s) / 8.0 : 0.0;
    ng.host_link_bytes_per_s = host_link_bytes_per_s(gpu);
    native->gpus.push_back(std::move(ng));
  }
  ctx.native = std::move(native);
}

std::string point_invalid_reason(OriginalEstimator, const EstimateContext& ctx,
                                 const DesignPoint& p, const PlacementFeatures& where) {
  // The settings the original has not (DesignPoint's defaults are the original's).
  const DesignPoint original;
  const char* setting = p.schedule != original.schedule               ? "--schedule"
                        : p.virtual_stages != original.virtual_stages ? "--virtual_stages"
                        : p.recompute != original.recompute           ? "--recompute"
                        : p.offload != original.offload               ? "--offload"
                        : p.cp != original.cp                         ? "--cp"
                        : p.ep != original.ep || p.etp != original.etp ? "--ep/--etp"
                                                                      : nullptr;
  if (setting != nullptr) {
    return fmt::format("{} needs --estimator {} (the {} estimator reproduces the original, "
                       "which has no such setting)",
                       setting, estimator_info(analytic_estimator()).name,
                       estimator_info(OriginalEstimator::id).name);
  }
  // Its layer times: the stage GPU's profile of the method's flavour at the point's tp (the
  // words of layer_costs, which checks every present node type).
  for (const int g : where.stage_gpu) {
    const GpuProfile* prof = profile_for(ctx, g, p.method);
    if (prof == nullptr || !prof->layer_times_s.contains(p.tp)) {
      return fmt::format("no {} profile for {} on {} at tp {}", to_string(flavour_of(p.method)),
                         ctx.model.name, ctx.cluster.groups[static_cast<std::size_t>(g)].gpu,
                         p.tp);
    }
  }
  return {};
}

int tp_domain_gpus(OriginalEstimator, const EstimateContext& ctx) noexcept {
  return ctx.cluster.gpus_per_node;
}

int tp_domain_gpus(NativeEstimator, const EstimateContext& ctx) {
  if (ctx.native == nullptr) return ctx.cluster.gpus_per_node;
  std::vector<const GpuSpec*> present;
  for (std::size_t g = 0; g < ctx.cluster.groups.size() && g < ctx.native->gpus.size(); ++g) {
    if (ctx.cluster.groups[g].count > 0) present.push_back(&ctx.native->gpus[g].spec);
  }
  return shared_domain_gpus(present, ctx.cluster.gpus_per_node);
}

int tp_domain_gpus(const EstimateContext& ctx) {
  return visit_estimator(ctx.estimator, [&](auto e) { return tp_domain_gpus(e, ctx); });
}

const NativeSettings* plan_settings(OriginalEstimator, const EstimateContext& /*ctx*/) noexcept {
  return nullptr;
}

const NativeSettings* plan_settings(NativeEstimator, const EstimateContext& ctx) noexcept {
  return ctx.native != nullptr ? &ctx.native->settings : nullptr;
}

const NativeSettings* plan_settings(const EstimateContext& ctx) noexcept {
  return visit_estimator(ctx.estimator, [&](auto e) { return plan_settings(e, ctx); });
}

std::optional<double> moe_imbalance(const EstimateContext& ctx) noexcept {
  const NativeSettings* st = plan_settings(ctx);
  if (st == nullptr) return std::nullopt;
  return effective_moe_imbalance(ctx.model, st->moe_imbalance);
}

std::optional<bool> overlap_grad_reduce(const EstimateContext& ctx) noexcept {
  const NativeSettings* st = plan_settings(ctx);
  if (st == nullptr || !estimator_info(ctx.estimator).models_comm_overlap) return std::nullopt;
  return st->overlap_grad_reduce;
}

TokenPipeline token_pipeline(NativeEstimator, const EstimateContext& ctx, const DesignPoint& p,
                             const NativeEstimate& est) {
  return native_token_pipeline(*ctx.native, p, est);
}

PipeRun pipe_run(NativeEstimator, const EstimateContext& ctx, const DesignPoint& p,
                 const NativeEstimate& est) {
  return native_pipe_run(*ctx.native, p, est);
}

InterleavedRun interleaved_run(NativeEstimator, const EstimateContext& ctx, const DesignPoint& p,
                               const Placement& placement, const NativeEstimate& est) {
  return native_interleaved_run(*ctx.native, p, native_placement(*ctx.native, p, placement), est);
}

} // namespace zerosearch
