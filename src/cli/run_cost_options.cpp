#include "run_cost_options.hpp"
#include "option_table.hpp"
#include "options.hpp"

#include <cmath>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/model/estimator_ops.hpp"

namespace zerosearch::cli {

namespace {

using Option = TextOption<RunCostRaw>;

/// The whole run's flags, in --help's order.
const std::vector<Option>& run_cost_flags() {
  static const std::vector<Option> flags{
      {"--tokens", &RunCostRaw::tokens, "N",
       "Train on N tokens: wall-clock days, GPU-hours, dollars and MWh of the whole run per "
       "plan (with failures, checkpoints and restarts); e.g. 15e12"},
      {"--steps", &RunCostRaw::steps, "N", "The same for N optimizer steps (not with --tokens)"},
      {"--storage_gbps_per_node", &RunCostRaw::storage_GBps_per_node, "GBPS",
       "Checkpoint write bandwidth per node, GB/s (default 1: Llama 3's 2 TB/s over 2,048 "
       "nodes)"},
      {"--restart_min", &RunCostRaw::restart_min, "MIN",
       "Minutes from a failure to training again (default 10)"},
      {"--failures_per_gpu_hour", &RunCostRaw::failures_per_gpu_hour, "RATE",
       "Unexpected interruptions per GPU-hour (default: the catalog's rate of each GPU's "
       "class, Llama 3's 1.97e-5 for hbm-nvlink)"},
      {"--pricing", &RunCostRaw::pricing, "P",
       "Catalog price per GPU-hour: on_demand (default), reserved or spot"},
      {"--spot_preemptions_per_node_hour", &RunCostRaw::spot_preemptions_per_node_hour, "RATE",
       "--pricing spot: preemptions per node-hour, added to the failures (default 2.74e-4: "
       "20 % of nodes a month)"},
      {"--power_cap_w", &RunCostRaw::power_cap_w, "W",
       "Per-GPU power cap, W: a GPU that would draw more runs slower (docs/run_cost.md)"},
      {"--node_overhead_w", &RunCostRaw::node_overhead_w, "W",
       "Power of a node besides its GPUs (CPUs, NICs, fans), W (default 0)"},
      {"--pue", &RunCostRaw::pue, "X", "Facility power usage effectiveness, >= 1 (default 1)"},
      {"--usd_per_kwh", &RunCostRaw::usd_per_kwh, "USD",
       "Electricity price, $ per kWh: adds the run's energy cost"},
      {"--front", &RunCostRaw::front, "F",
       "--pareto: the front of step-usd (price per step vs step time, default), days-usd or "
       "days-mwh (the whole run's, with --tokens or --steps)"},
      {"--budget_usd", &RunCostRaw::budget_usd, "USD",
       "Keep only plans whose whole run costs at most USD (GPU rental)"},
      {"--deadline_days", &RunCostRaw::deadline_days, "D",
       "Keep only plans whose whole run takes at most D days"},
  };
  return flags;
}

} // namespace

void add_run_cost_options(CLI::App& app, RunCostRaw& raw) {
  add_text_options<RunCostRaw>(app, raw, "Whole run (docs/run_cost.md)", run_cost_flags());
}

namespace {

double nonnegative_real(const std::string& flag, const std::string& text) {
  if (text == "0") {
    return 0.0;
  }
  try {
    return parse_positive_real(flag, text);
  } catch (const InputError&) {
    throw InputError(fmt::format("{} '{}' is not a number >= 0", flag, text));
  }
}

} // namespace

RunCostOptions check_run_cost(const RunCostRaw& raw, bool pareto) {
  RunCostOptions o;
  if (!raw.tokens.empty() && !raw.steps.empty()) {
    throw InputError(fmt::format("--tokens '{}' and --steps '{}' both give the run's length; "
                                 "give one",
                                 raw.tokens, raw.steps));
  }
  o.enabled = !raw.tokens.empty() || !raw.steps.empty();
  RunCostFlags& f = o.flags;
  if (!raw.tokens.empty()) {
    f.tokens = parse_positive_real("--tokens", raw.tokens);
    if (*f.tokens > 1e18) {
      throw InputError(fmt::format("--tokens '{}' is not a number from 1 to 1e18", raw.tokens));
    }
  }
  if (!raw.steps.empty()) {
    f.steps = parse_int("--steps", raw.steps, 1, 1'000'000'000'000LL);
  }
  // Every flag but the length itself and --front (checked below) needs the run's length.
  for (const Option& flag : run_cost_flags()) {
    const std::string& text = raw.*flag.value;
    if (!text.empty() && !o.enabled && flag.value != &RunCostRaw::tokens &&
        flag.value != &RunCostRaw::steps && flag.value != &RunCostRaw::front) {
      throw InputError(
          fmt::format("{} needs --tokens N or --steps N (the whole run)", flag.flag));
    }
  }
  RunCostSettings& s = f.settings;
  s.storage_GBps_per_node = raw.storage_GBps_per_node.empty()
                                ? kDefaultStorageGBpsPerNode
                                : parse_positive_real("--storage_gbps_per_node",
                                                      raw.storage_GBps_per_node);
  s.restart_s = 60.0 * (raw.restart_min.empty() ? kDefaultRestartMin
                                                : nonnegative_real("--restart_min",
                                                                   raw.restart_min));
  if (!raw.failures_per_gpu_hour.empty()) {
    f.failures_per_gpu_hour =
        nonnegative_real("--failures_per_gpu_hour", raw.failures_per_gpu_hour);
  }
  if (!raw.pricing.empty()) {
    const std::optional<Pricing> p = parse_pricing(raw.pricing);
    if (!p) {
      throw InputError(fmt::format("--pricing '{}' is not one of on_demand, reserved, spot",
                                   raw.pricing));
    }
    f.pricing = *p;
  }
  if (!raw.spot_preemptions_per_node_hour.empty() && f.pricing != Pricing::spot) {
    throw InputError("--spot_preemptions_per_node_hour needs --pricing spot");
  }
  s.preemptions_per_node_hour =
      f.pricing != Pricing::spot ? 0.0
      : raw.spot_preemptions_per_node_hour.empty()
          ? kDefaultSpotPreemptionsPerNodeHour
          : nonnegative_real("--spot_preemptions_per_node_hour",
                             raw.spot_preemptions_per_node_hour);
  if (!raw.power_cap_w.empty()) {
    s.power_cap_w = parse_positive_real("--power_cap_w", raw.power_cap_w);
  }
  if (!raw.node_overhead_w.empty()) {
    s.node_overhead_w = nonnegative_real("--node_overhead_w", raw.node_overhead_w);
  }
  if (!raw.pue.empty()) {
    s.pue = parse_positive_real("--pue", raw.pue);
    if (s.pue < 1.0 || s.pue > 5.0) {
      throw InputError(fmt::format("--pue '{}' is not a number from 1 to 5", raw.pue));
    }
  }
  if (!raw.usd_per_kwh.empty()) {
    s.usd_per_kwh = nonnegative_real("--usd_per_kwh", raw.usd_per_kwh);
  }
  if (!raw.budget_usd.empty()) {
    o.budget_usd = parse_positive_real("--budget_usd", raw.budget_usd);
  }
  if (!raw.deadline_days.empty()) {
    o.deadline_days = parse_positive_real("--deadline_days", raw.deadline_days);
  }
  if (!raw.front.empty()) {
    if (!pareto) {
      throw InputError("--front needs --pareto");
    }
    if (raw.front == "step-usd") {
      o.front = RunFront::step;
    } else if (raw.front == "days-usd" || raw.front == "days-mwh") {
      if (!o.enabled) {
        throw InputError(fmt::format("--front {} needs --tokens N or --steps N", raw.front));
      }
      o.front = raw.front == "days-usd" ? RunFront::days_usd : RunFront::days_mwh;
    } else {
      throw InputError(fmt::format("--front '{}' is not one of step-usd, days-usd, days-mwh",
                                   raw.front));
    }
  }
  return o;
}

std::optional<RunCostSpec> run_cost_spec(const RunCostOptions& o, const EstimateContext& ctx,
                                         const RunThroughput& throughput,
                                         const HardwareCatalog& hardware) {
  if (!o.enabled) {
    return std::nullopt;
  }
  // A native plan in pure 16-bit training (--master_weights off) saves no fp32 master copy.
  const NativeSettings* st = plan_settings(ctx);
  return make_run_cost_spec(o.flags, ctx.cluster, ctx.model, throughput.tokens_per_step, hardware,
                            checkpoint_bytes_per_param(st == nullptr || st->master_weights));
}

void print_run_cost_summary(std::ostream& out, const RunCostOptions& o,
                            const std::vector<RankedRow>& rows) {
  if (!o.enabled) {
    return;
  }
  const RankedRow* best = nullptr;
  for (const RankedRow& r : rows) {
    if (!r.row->estimate.oom && r.run->run_cost) {
      best = &r;
      break;
    }
  }
  if (best == nullptr) {
    if (o.budget_usd || o.deadline_days) {
      out << "whole run: no plan fits within --budget_usd / --deadline_days\n";
    }
    return;
  }
  const RunCost c = *run_cost_of(*best);
  const RunCostSpec& spec = *best->run->run_cost;
  out << fmt::format("whole run of the best plan ({} steps{}, {} pricing): {:.1f} days, {:.0f} "
                     "GPU-hours, ${:.0f}, {} ({}); {:.1f} % effective training time (MTBF {:.2f} "
                     "h, checkpoint {:.1f} s every {:.0f} s, restart {:.0f} min)\n",
                     spec.settings.steps,
                     o.flags.tokens ? fmt::format(" = {:.3g} tokens", *o.flags.tokens)
                                    : std::string(),
                     to_string(o.flags.pricing), c.days(), c.gpu_hours, c.usd,
                     std::isfinite(c.energy_mwh) ? fmt::format("{:.1f} MWh", c.energy_mwh)
                                                 : std::string("energy unknown"),
                     std::isfinite(c.energy_usd) ? fmt::format("${:.0f} of electricity",
                                                               c.energy_usd)
                                                 : std::string("no --usd_per_kwh"),
                     100.0 * c.effective_fraction, c.mtbf_s / 3600.0, c.checkpoint_s,
                     c.interval_s, spec.settings.restart_s / 60.0);
  if (c.cap_throughput < 1.0) {
    out << fmt::format("  --power_cap_w {:g}: the step takes {:.1f} % longer ({:.3f} s)\n",
                       *spec.settings.power_cap_w, 100.0 * (1.0 / c.cap_throughput - 1.0),
                       c.step_s);
  }
  const std::string note = rank_change_note(rows);
  if (!note.empty()) {
    out << note << '\n';
  }
}

} // namespace zerosearch::cli
