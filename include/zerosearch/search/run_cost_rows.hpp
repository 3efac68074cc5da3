#pragma once
// The whole run of a ranked row (--tokens / --steps, docs/run_cost.md): its run's cluster and
// settings (RunResult::run_cost) with the row's step time and MFU; the filters --budget_usd and
// --deadline_days; the rank of each row by time-to-train.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "zerosearch/core/hardware.hpp"
#include "zerosearch/core/model.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/model/run_cost.hpp"
#include "zerosearch/search/ranking.hpp"

namespace zerosearch {

/// Checkpoint bytes per parameter: 16-bit weights (2) + fp32 master weights (4) + Adam's two
/// fp32 moments (8); fp32 training keeps no 16-bit copy (12). Gradients are not saved.
inline constexpr double kCheckpointBytesPerParam16 = 14.0;
inline constexpr double kCheckpointBytesPerParam32 = 12.0;
/// Pure 16-bit training (--master_weights off): 16-bit weights (2) + Adam's two 16-bit moments
/// (4). DeepSpeed's 16-bit master partition (bf16_master_weights_and_grads) would add 2; the
/// run's checkpoint is sized once, before its rows' methods are known.
inline constexpr double kCheckpointBytesPerParamPure16 = 6.0;
/// The checkpoint bytes per parameter of a run with or without fp32 master weights.
[[nodiscard]] constexpr double checkpoint_bytes_per_param(bool master_weights) noexcept {
  return master_weights ? kCheckpointBytesPerParam16 : kCheckpointBytesPerParamPure16;
}

/// What the settings of a run need besides the flags: checked names, per node type.
struct RunCostFlags {
  /// --steps, or --tokens (whole tokens, rounded up to whole steps).
  std::optional<std::int64_t> steps;
  std::optional<double> tokens;
  Pricing pricing = Pricing::on_demand;
  /// --failures_per_gpu_hour; empty: the catalog's rate of each GPU's class.
  std::optional<double> failures_per_gpu_hour;
  RunCostSettings settings;
};

/// The node types of `cluster` with their catalog figures at `flags.pricing`, and the run's
/// settings (steps from the tokens and `tokens_per_step`; checkpoint bytes from the model's
/// parameters at `bytes_per_param`). Throws InputError when a GPU of the cluster has no price of
/// that pricing, no failure rate for its class (and no --failures_per_gpu_hour), or a power cap
/// at or below its idle power.
[[nodiscard]] RunCostSpec make_run_cost_spec(const RunCostFlags& flags, const Cluster& cluster,
                                             const ModelSpec& model, std::int64_t tokens_per_step,
                                             const HardwareCatalog& hardware,
                                             double bytes_per_param = kCheckpointBytesPerParam16);

/// The whole run of a row whose run has a RunCostSpec; empty otherwise.
[[nodiscard]] std::optional<RunCost> run_cost_of(const RankedRow& r);

/// Keeps the rows whose run fits `budget_usd` and `deadline_days` (each when given), in order;
/// ranks are kept.
void filter_run_cost(std::vector<RankedRow>& rows, std::optional<double> budget_usd,
                     std::optional<double> deadline_days);

/// Which of `rows` are on the front of the whole run's days against its dollars (`energy`:
/// its MWh): feasible rows with a run cost that no other such row beats on both, ties kept.
[[nodiscard]] std::vector<bool> run_cost_front(const std::vector<RankedRow>& rows, bool energy);

/// Sets RankedRow::on_front to run_cost_front (--front days-usd, days-mwh).
void mark_run_cost_front(std::vector<RankedRow>& rows, bool energy);

/// One line when ranking `rows` (feasible, in step-time order) by wall-clock days gives another
/// first plan than step time: "ranking by time-to-train differs from step time: #1 by step time
/// is #3 by days (...); #1 by days is #2 by step time (...)"; empty when the order agrees.
[[nodiscard]] std::string rank_change_note(const std::vector<RankedRow>& rows);

} // namespace zerosearch
