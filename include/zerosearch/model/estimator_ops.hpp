#pragma once
// What callers ask of the estimator a context runs (docs/ARCHITECTURE.md, "Estimators"): its
// data, whether a design point is one it can evaluate, where a placement puts a point's stages,
// the scale-up domain tensor parallelism may span, the settings a report prints, and the
// native estimator's pipelines for the reports that draw them. Each question has one overload
// per estimator type (model/estimator.hpp: OriginalEstimator, NativeEstimator), picked with
// visit_estimator; where a caller is not itself written per estimator, an overload without the
// type visits once. Only src/model/ reads an estimator's own data in EstimateContext
// (EstimateContext::native); search/, io/ and cli/ ask here (tests/check_layers.cmake fails
// when they reach past this header: NativeContext, ctx.native, the native_* functions).
// The per-point questions (stages_of, point_invalid_reason, estimate_at) are inline: the
// search's inner loops compile them to the calls they wrap.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/core/hardware.hpp"
#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/model/estimator.hpp"
#include "zerosearch/model/native.hpp"

namespace zerosearch {

// ---- The estimator's data

/// Sets the native estimator's data in `ctx`, whose model, cluster, links and global batch are
/// set: each node type's GPU (by node-type index: `gpus[g]`, the specifications in
/// hardware.json, and `calibrations[g]`; its memory, network from ctx.links[g] and host link),
/// and `settings` (the flags of docs/native.md §5). The original's data, its profiles, are the
/// plan's (search/plan.hpp, add_node_profiles).
void set_estimator_data(NativeEstimator, EstimateContext& ctx, const std::vector<GpuSpec>& gpus,
                        const std::vector<AnalyticCalibration>& calibrations,
                        const NativeSettings& settings);

// ---- Where a placement puts a design point's stages

/// What of a placement estimator E's estimate of a point depends on: two placements with equal
/// ones get the same estimate, so the search evaluates each once. Its `stage_gpu` is the node
/// type of each pipeline stage.
template <class E>
struct EstimatorStages;
template <>
struct EstimatorStages<OriginalEstimator> {
  /// Stage GPUs, link times, ring bandwidth and embedding sync (float32, as the original).
  using type = PlacementFeatures;
};
template <>
struct EstimatorStages<NativeEstimator> {
  /// Stage GPUs and which stage boundaries cross nodes.
  using type = NativePlacement;
};
template <class E>
using StagesOf = typename EstimatorStages<E>::type;

/// Where `placement` (node type of each node) puts the stages of `p`, as estimator E sees it.
[[nodiscard]] inline PlacementFeatures stages_of(OriginalEstimator, const EstimateContext& ctx,
                                                 const DesignPoint& p,
                                                 const Placement& placement) {
  return placement_features(ctx, p, placement);
}
[[nodiscard]] inline NativePlacement stages_of(NativeEstimator, const EstimateContext& ctx,
                                               const DesignPoint& p, const Placement& placement) {
  return native_placement(*ctx.native, p, placement);
}
/// stages_of into `out`, reusing its buffers (the search's scratch).
inline void stages_of_into(NativeEstimator, const EstimateContext& ctx, const DesignPoint& p,
                           const Placement& placement, NativePlacement& out) {
  native_placement_into(*ctx.native, p, placement, out);
}

// ---- Validity

/// Why estimator E cannot evaluate `p` with its stages on `where.stage_gpu` (other fields of
/// `where` are not read, so a plan may pass every present node type as the stages), or an
/// empty string. The original: a setting it has not (a schedule other than 1F1B, virtual
/// stages, recompute, offload, cp or expert parallelism: DesignPoint's defaults are what it
/// runs; the element type follows --precision and is not a point's), or a stage GPU with no
/// profile of the method's flavour at the point's tp. The native one: its rules
/// (native_invalid_reason: interleaving, split schedules, cp, MoE layout, framework flags,
/// offload, the element type on each stage GPU).
[[nodiscard]] std::string point_invalid_reason(OriginalEstimator, const EstimateContext& ctx,
                                               const DesignPoint& p,
                                               const PlacementFeatures& where);
[[nodiscard]] inline std::string point_invalid_reason(NativeEstimator, const EstimateContext& ctx,
                                                      const DesignPoint& p,
                                                      const NativePlacement& where) {
  return native_invalid_reason(*ctx.native, p, where);
}

// ---- Estimates

/// The native estimate of `p` on `where` with its own partition (native_partition), in the
/// Estimate shape; `pruned` tells whether `prune` skipped its pipeline simulation (its step
/// time is then a lower bound, NativeEstimate::pruned). Call point_invalid_reason first.
[[nodiscard]] inline Estimate estimate_at(NativeEstimator, const EstimateContext& ctx,
                                          const DesignPoint& p, const NativePlacement& where,
                                          const NativePruning& prune, bool& pruned) {
  const NativeEstimate est = native_estimate(*ctx.native, p, where, {}, prune);
  pruned = est.pruned;
  return to_estimate(ctx, est);
}

/// estimate_at, bit for bit, with what the estimate computed that its configuration's split
/// schedules compute again kept into `keep` (native_estimate_keeping): for a 1F1B point (one
/// chunk per rank) whose split schedules run later on the same placement.
[[nodiscard]] inline Estimate estimate_at_keeping(NativeEstimator, const EstimateContext& ctx,
                                                  const DesignPoint& p, const NativePlacement& where,
                                                  const NativePruning& prune, bool& pruned,
                                                  NativeConfigSharePtr& keep) {
  // One per thread: its buffers are reused from one estimate to the next.
  thread_local NativeEstimate est;
  native_estimate_keeping(*ctx.native, p, where, prune, keep, est);
  pruned = est.pruned;
  return to_estimate(ctx, est);
}

/// estimates_at (below), bit for bit, starting from what the configuration's 1F1B estimate kept
/// on the same placement (`seed`, estimate_at_keeping).
inline void estimates_at(NativeEstimator, const EstimateContext& ctx,
                         std::span<const DesignPoint* const> points, const NativePlacement& where,
                         const NativePruning& prune, std::vector<NativeEstimate>& out,
                         const NativeConfigShare* seed) {
  native_estimates(*ctx.native, points, where, prune, out, seed);
}

/// The native estimates of points of one configuration (same_configuration) at `where`, into
/// out[i]: native_estimates, bit for bit estimate_at's with what they share computed once.
inline void estimates_at(NativeEstimator, const EstimateContext& ctx,
                         std::span<const DesignPoint* const> points, const NativePlacement& where,
                         const NativePruning& prune, std::vector<NativeEstimate>& out) {
  native_estimates(*ctx.native, points, where, prune, out);
}

// ---- The scale-up domain

/// GPUs a tensor-parallel group may span: the original's, the GPUs of a node; the native
/// estimator's, the scale-up domain the present node types share (docs/native.md §2.5: GB200
/// NVL72 trays of 4, 72), whole nodes of it, or the GPUs of a node for types without one.
[[nodiscard]] int tp_domain_gpus(OriginalEstimator, const EstimateContext& ctx) noexcept;
[[nodiscard]] int tp_domain_gpus(NativeEstimator, const EstimateContext& ctx);
/// The same, for the estimator `ctx` runs.
[[nodiscard]] int tp_domain_gpus(const EstimateContext& ctx);

// ---- Settings the reports print

/// The settings beyond a design point that the estimate followed (--overlap_grad_reduce,
/// --moe_imbalance, --attention_kernel, ...; the launch files follow them), or nullptr: the
/// original has none.
[[nodiscard]] const NativeSettings* plan_settings(OriginalEstimator,
                                                  const EstimateContext& ctx) noexcept;
[[nodiscard]] const NativeSettings* plan_settings(NativeEstimator,
                                                  const EstimateContext& ctx) noexcept;
[[nodiscard]] const NativeSettings* plan_settings(const EstimateContext& ctx) noexcept;

/// The router imbalance the estimate charged the MoE layers (docs/moe.md; effective_moe_imbalance
/// of --moe_imbalance), or nothing: the original does not model it.
[[nodiscard]] std::optional<double> moe_imbalance(const EstimateContext& ctx) noexcept;

/// --overlap_grad_reduce as given (unset: each framework's default), or nothing where the
/// estimator does not model communication overlap (the original).
[[nodiscard]] std::optional<bool> overlap_grad_reduce(const EstimateContext& ctx) noexcept;

// ---- The native estimator's pipelines, for the timeline and the --exhaustive report

/// The token-level pipeline of a TeraPipe estimate `est` of `p` (native_token_pipeline).
[[nodiscard]] TokenPipeline token_pipeline(NativeEstimator, const EstimateContext& ctx,
                                           const DesignPoint& p, const NativeEstimate& est);
/// The pass-by-pass run of a split-schedule estimate `est` of `p` (native_pipe_run).
[[nodiscard]] PipeRun pipe_run(NativeEstimator, const EstimateContext& ctx, const DesignPoint& p,
                               const NativeEstimate& est);
/// The pass-by-pass run of a --pipeline_layout's interleaved estimate `est` of `p` on
/// `placement` (native_interleaved_run).
[[nodiscard]] InterleavedRun interleaved_run(NativeEstimator, const EstimateContext& ctx,
                                             const DesignPoint& p, const Placement& placement,
                                             const NativeEstimate& est);

} // namespace zerosearch
