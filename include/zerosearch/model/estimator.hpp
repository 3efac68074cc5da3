#pragma once
// The estimator seam (docs/ARCHITECTURE.md, "Estimators"): the one place that knows which
// estimators exist. Two implement it:
//   OriginalEstimator (Estimator::zerosearch): the original ZeROSearch's formulas, bit for bit,
//     on measured (or analytic) layer profiles (model/estimate.hpp, src/model/original/);
//   NativeEstimator (Estimator::native): zerosearch's own analytic model (model/native.hpp,
//     docs/native.md, src/model/native/).
// Callers in search/, io/ and cli/ never compare the Estimator enum nor read an estimator's own
// data: they ask what the running estimator offers (estimator_info: its name, which plan
// dimensions and output columns it has, what it models), ask it questions through
// model/estimator_ops.hpp (its data, a point's stages and validity, the tp domain, the
// settings a report prints, the pipelines behind a native estimate: one overload per
// estimator type), and where the work itself differs by estimator (the search's evaluation of
// a work unit, the plan's data, the per-stage breakdown of a timeline or an --exhaustive
// report, the summary's estimator line) they provide one overload per estimator type and pick
// it once with visit_estimator. A new estimator is a new type below, a row of estimator_info,
// its overloads in model/estimator_ops.hpp, and one overload at each such place: the compiler
// names every place that lacks one (docs/ARCHITECTURE.md, "Estimators": 14 files besides its
// own model and tests).
#include <optional>

#include "zerosearch/core/dp_method.hpp"

namespace zerosearch {

/// What an estimator offers, for the callers that shape plans and outputs around it.
struct EstimatorInfo {
  Estimator id = Estimator::zerosearch;
  /// Its name on the command line and in outputs ("zerosearch", "native").
  const char* name = "";
  /// Its design points vary beyond the original's (method, tp, pp, dp, mbs): pipeline schedule,
  /// virtual stages, activation recomputation, offload, element type, context parallelism and
  /// expert layout (SearchPlan::add_native_points); the outputs then carry those columns
  /// (io/columns.hpp's native columns), its settings apply (plan_settings), and
  /// its summary names the settings that would make the fastest OOM rows fit.
  bool extended_points = false;
  /// Its estimates come from each GPU's specifications in hardware.json (peak FLOP/s, memory
  /// bandwidth, ...); the summary names the catalog entries it used.
  bool uses_gpu_specs = false;
  /// Its step time models recomputation (a point's `recompute`); otherwise none is modelled
  /// and launch files say so.
  bool models_recompute = false;
  /// It models data-parallel communication overlapping compute (--overlap_grad_reduce, the
  /// method's overlap), so its outputs say when communication is hidden.
  bool models_comm_overlap = false;
  /// Its layer times are measured profiles, valid only at the sequence length they were taken
  /// at (the original); otherwise any --seq_len is modelled.
  bool fixed_sequence_length = false;
  /// Its step times have calibrated uncertainty intervals (profiledb/uncertainty.json).
  bool step_intervals = false;
  /// Design points that differ only in a data-parallel method with the same pipeline
  /// (same_pipeline) share the partition and the pipeline simulation on every placement: the
  /// search evaluates them as one work unit.
  bool shares_pipelines = false;
  /// It can evaluate a TeraPipe schedule, whose best plan the summary compares with the best
  /// other plan (so the search keeps every row).
  bool terapipe = false;
  /// Its split-schedule points (pp > 1) that differ only in the schedule (same_configuration)
  /// share layer times, partitions and stage costs: the search evaluates them as one work unit
  /// (estimates_at, model/estimator_ops.hpp).
  bool shares_configurations = false;
};

/// The row of estimator `e` (a table: every Estimator has one).
[[nodiscard]] const EstimatorInfo& estimator_info(Estimator e) noexcept;

/// The estimator a run uses: `asked` (--estimator) when given; otherwise the original's where
/// it can run (`original_can_run`: every node type has a measured profile of the model, or
/// --profile_source asks for profiles) and the native one elsewhere (docs/native.md §1).
[[nodiscard]] Estimator choose_estimator(std::optional<Estimator> asked,
                                         bool original_can_run) noexcept;

/// The estimator that models any plan from the hardware's specifications: the one a run gets
/// when it asks, without --estimator, for what the original cannot model (a plan setting it has
/// not, such as --recompute or --cp, or a sequence length away from its measured profiles).
[[nodiscard]] Estimator analytic_estimator() noexcept;

/// The type of the original's estimator, for overloads that differ by estimator.
struct OriginalEstimator {
  static constexpr Estimator id = Estimator::zerosearch;
};
/// The type of the native estimator, for overloads that differ by estimator.
struct NativeEstimator {
  static constexpr Estimator id = Estimator::native;
};

/// Calls `f` with the type of estimator `e` (OriginalEstimator{} or NativeEstimator{}): once per
/// search or report, so that the work inside `f` is compiled for one estimator and makes no
/// per-point dispatch. `f` must return the same type for every estimator.
template <class F>
decltype(auto) visit_estimator(Estimator e, F&& f) {
  switch (e) {
  case Estimator::zerosearch: return f(OriginalEstimator{});
  case Estimator::native: return f(NativeEstimator{});
  }
  return f(OriginalEstimator{});
}

} // namespace zerosearch
