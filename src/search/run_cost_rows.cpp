#include "zerosearch/search/run_cost_rows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/model/model_stats.hpp"

namespace zerosearch {

RunCostSpec make_run_cost_spec(const RunCostFlags& flags, const Cluster& cluster,
                               const ModelSpec& model, std::int64_t tokens_per_step,
                               const HardwareCatalog& hardware, double bytes_per_param) {
  RunCostSpec spec;
  spec.settings = flags.settings;
  if (flags.steps) {
    spec.settings.steps = *flags.steps;
  } else if (flags.tokens) {
    spec.settings.steps = static_cast<std::int64_t>(
        std::ceil(*flags.tokens / static_cast<double>(std::max<std::int64_t>(tokens_per_step, 1))));
  }
  spec.settings.checkpoint_bytes = static_cast<double>(total_parameters(model)) * bytes_per_param;
  if (flags.pricing != Pricing::spot) {
    spec.settings.preemptions_per_node_hour = 0.0;
  }
  for (const NodeGroup& g : cluster.groups) {
    if (g.count == 0) {
      continue;
    }
    const GpuSpec& gpu = hardware.gpu(g.gpu);
    RunCostGroup out;
    out.nodes = g.count;
    out.gpus = g.count * cluster.gpus_per_node;
    switch (flags.pricing) {
    case Pricing::on_demand: out.usd_per_gpu_hour = gpu.price_per_gpu_hour_usd; break;
    case Pricing::reserved:
    case Pricing::spot: {
      const std::optional<PriceQuote>& q =
          flags.pricing == Pricing::spot ? gpu.spot_price : gpu.reserved_price;
      if (!q) {
        std::string with;
        for (const auto& [name, other] : hardware.gpus) {
          if (flags.pricing == Pricing::spot ? other.spot_price.has_value()
                                             : other.reserved_price.has_value()) {
            with += with.empty() ? name : ", " + name;
          }
        }
        throw InputError(fmt::format("--pricing {}: GPU '{}' has no {} price in the hardware "
                                     "catalog (GPUs with one: {}); add '{}_price' to its entry "
                                     "(docs/hardware.md) or use --pricing on_demand",
                                     to_string(flags.pricing), gpu.name, to_string(flags.pricing),
                                     with.empty() ? "none" : with, to_string(flags.pricing)));
      }
      out.usd_per_gpu_hour = q->usd_per_gpu_hour;
      break;
    }
    }
    if (gpu.power) {
      out.tdp_w = gpu.power->tdp_w;
      out.idle_w = gpu.power->idle_w;
      if (spec.settings.power_cap_w && *spec.settings.power_cap_w <= out.idle_w) {
        throw InputError(fmt::format("--power_cap_w {:g} is at or below the idle power of {} "
                                     "({:g} W); give a cap between {:g} and {:g} W",
                                     *spec.settings.power_cap_w, gpu.name, out.idle_w,
                                     out.idle_w, out.tdp_w));
      }
    }
    if (flags.failures_per_gpu_hour) {
      out.failures_per_gpu_hour = *flags.failures_per_gpu_hour;
    } else {
      const auto rate = hardware.failure_rates.find(gpu.gpu_class);
      if (rate == hardware.failure_rates.end()) {
        throw InputError(fmt::format("GPU '{}' (class '{}') has no failure rate in the hardware "
                                     "catalog's 'reliability'; give --failures_per_gpu_hour",
                                     gpu.name, gpu.gpu_class.empty() ? "none" : gpu.gpu_class));
      }
      out.failures_per_gpu_hour = rate->second.per_gpu_hour;
    }
    spec.groups.push_back(out);
  }
  return spec;
}

std::optional<RunCost> run_cost_of(const RankedRow& r) {
  if (!r.run->run_cost) {
    return std::nullopt;
  }
  const double step_s = r.row->estimate.step_s;
  return run_cost(r.run->run_cost->groups, r.run->run_cost->settings, step_s,
                  r.run->throughput.mfu_percent(step_s) / 100.0);
}

void filter_run_cost(std::vector<RankedRow>& rows, std::optional<double> budget_usd,
                     std::optional<double> deadline_days) {
  if (!budget_usd && !deadline_days) {
    return;
  }
  std::erase_if(rows, [&](const RankedRow& r) {
    const std::optional<RunCost> c = run_cost_of(r);
    if (!c) {
      return false;
    }
    // NaN (a step time that is not finite) never fits.
    return (budget_usd && !(c->usd <= *budget_usd)) ||
           (deadline_days && !(c->days() <= *deadline_days));
  });
}

std::vector<bool> run_cost_front(const std::vector<RankedRow>& rows, bool energy) {
  struct Point {
    double days, cost;
    std::size_t i;
  };
  std::vector<Point> points;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::optional<RunCost> c = run_cost_of(rows[i]);
    if (!c || rows[i].row->estimate.oom) {
      continue;
    }
    const double cost = energy ? c->energy_mwh : c->usd;
    if (std::isfinite(c->days()) && std::isfinite(cost)) {
      points.push_back({c->days(), cost, i});
    }
  }
  std::stable_sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
    return a.days != b.days ? a.days < b.days : a.cost < b.cost;
  });
  // Sweep by days: a row is on the front when it is cheaper than every sooner row (rows of
  // equal days and cost all on it).
  std::vector<bool> on(rows.size(), false);
  double cheapest = std::numeric_limits<double>::infinity();
  double last_days = -1.0, last_cost = -1.0; // the last row put on the front
  for (const Point& p : points) {
    if (p.cost < cheapest || (p.days == last_days && p.cost == last_cost)) {
      on[p.i] = true;
      cheapest = std::min(cheapest, p.cost);
      last_days = p.days;
      last_cost = p.cost;
    }
  }
  return on;
}

void mark_run_cost_front(std::vector<RankedRow>& rows, bool energy) {
  const std::vector<bool> on = run_cost_front(rows, energy);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].on_front = on[i];
  }
}

std::string rank_change_note(const std::vector<RankedRow>& rows) {
  std::vector<std::size_t> feasible;
  std::vector<double> days;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::optional<RunCost> c = run_cost_of(rows[i]);
    if (!rows[i].row->estimate.oom && c) {
      feasible.push_back(i);
      days.push_back(c->days());
    }
  }
  if (feasible.size() < 2) {
    return {};
  }
  // Positions by days (stable: step-time order breaks ties).
  std::vector<std::size_t> by_days(feasible.size());
  for (std::size_t i = 0; i < by_days.size(); ++i) {
    by_days[i] = i;
  }
  std::stable_sort(by_days.begin(), by_days.end(),
                   [&](std::size_t a, std::size_t b) { return days[a] < days[b]; });
  if (by_days.front() == 0) {
    return {};
  }
  const auto pos_of_first =
      static_cast<std::size_t>(std::find(by_days.begin(), by_days.end(), 0) - by_days.begin());
  const auto desc = [&](std::size_t k) {
    const RankedRow& r = rows[feasible[k]];
    const DesignPoint& p = r.row->point;
    return fmt::format("{} tp {} pp {} dp {} on {} GPUs, {:.3f} s/step, {:.1f} days",
                       to_string(p.method), p.tp, p.pp, p.dp, r.run->cluster.world_size(),
                       r.row->estimate.step_s, days[k]);
  };
  return fmt::format("ranking by time-to-train differs from step time: #1 by step time is #{} by "
                     "days ({}); #1 by days is #{} by step time ({})",
                     pos_of_first + 1, desc(0), by_days.front() + 1, desc(by_days.front()));
}

} // namespace zerosearch
