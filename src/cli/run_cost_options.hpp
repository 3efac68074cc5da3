#pragma once
// The flags of a whole run's time, money and energy (--tokens, --steps, --pricing, ...;
// docs/run_cost.md): their text, their checks, what a search run gets from them, and the
// summary's lines about them.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "zerosearch/core/hardware.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/search/ranking.hpp"
#include "zerosearch/search/run_cost_rows.hpp"

namespace CLI {
class App;
}

namespace zerosearch::cli {

/// The flags as given.
struct RunCostRaw {
  std::string tokens, steps;
  std::string storage_GBps_per_node, restart_min, failures_per_gpu_hour;
  std::string pricing, spot_preemptions_per_node_hour;
  std::string power_cap_w, node_overhead_w, pue, usd_per_kwh;
  std::string front, budget_usd, deadline_days;
};

/// --pareto's front: price per step against step time (the original's), or the whole run's
/// dollars or MWh against its days.
enum class RunFront { step, days_usd, days_mwh };

struct RunCostOptions {
  /// --tokens or --steps was given: the run columns and lines are on.
  bool enabled = false;
  RunCostFlags flags;
  RunFront front = RunFront::step;
  std::optional<double> budget_usd;
  std::optional<double> deadline_days;
};

/// Default of --storage_gbps_per_node: Llama 3's Tectonic storage, 2 TB/s sustained, over its
/// 2,048 training nodes (docs/run_cost.md).
inline constexpr double kDefaultStorageGBpsPerNode = 1.0;
/// Default of --restart_min (an assumption: Llama 3 gives none).
inline constexpr double kDefaultRestartMin = 10.0;
/// Default of --spot_preemptions_per_node_hour: 20 % of instances a month (the lower edge of
/// the top bucket of AWS's Spot Instance Advisor) / 730 hours.
inline constexpr double kDefaultSpotPreemptionsPerNodeHour = 0.2 / 730.0;

/// Registers the flags on `app` (group "Whole run").
void add_run_cost_options(CLI::App& app, RunCostRaw& raw);

/// Checks the flags: numbers and ranges, --tokens xor --steps, the others need one of them,
/// --spot_preemptions_per_node_hour needs --pricing spot, --front needs --pareto. Throws
/// InputError naming the flag, the value and what is allowed.
[[nodiscard]] RunCostOptions check_run_cost(const RunCostRaw& raw, bool pareto);

/// The run's RunCostSpec for a search of `ctx`, or empty when the flags are off.
[[nodiscard]] std::optional<RunCostSpec> run_cost_spec(const RunCostOptions& o,
                                                       const EstimateContext& ctx,
                                                       const RunThroughput& throughput,
                                                       const HardwareCatalog& hardware);

/// The summary's lines on the whole run of `rows` (best first): the best plan's days, GPU-hours,
/// dollars, energy, goodput and checkpoint interval, the assumptions, and rank_change_note.
void print_run_cost_summary(std::ostream& out, const RunCostOptions& o,
                            const std::vector<RankedRow>& rows);

} // namespace zerosearch::cli
