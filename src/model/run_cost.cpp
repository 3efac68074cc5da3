#include "zerosearch/model/run_cost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace zerosearch {

const char* to_string(Pricing p) noexcept {
  switch (p) {
  case Pricing::on_demand: return "on_demand";
  case Pricing::reserved: return "reserved";
  case Pricing::spot: return "spot";
  }
  return "?";
}

std::optional<Pricing> parse_pricing(std::string_view text) noexcept {
  for (const Pricing p : {Pricing::on_demand, Pricing::reserved, Pricing::spot}) {
    if (text == to_string(p)) {
      return p;
    }
  }
  return std::nullopt;
}

double young_interval_s(double checkpoint_s, double mtbf_s) noexcept {
  return std::sqrt(2.0 * checkpoint_s * mtbf_s);
}

double daly_interval_s(double checkpoint_s, double mtbf_s) noexcept {
  if (checkpoint_s >= 2.0 * mtbf_s) {
    return mtbf_s;
  }
  const double x = checkpoint_s / (2.0 * mtbf_s);
  return young_interval_s(checkpoint_s, mtbf_s) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) -
         checkpoint_s;
}

double expected_wall_s(double solve_s, double interval_s, double checkpoint_s, double restart_s,
                       double mtbf_s) noexcept {
  if (!std::isfinite(mtbf_s)) {
    // No interruptions: checkpoints only.
    return solve_s * (1.0 + checkpoint_s / interval_s);
  }
  // expm1 keeps the small exponent exact: e^((tau+C)/M) - 1 for tau + C << M.
  return mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1((interval_s + checkpoint_s) / mtbf_s) *
         solve_s / interval_s;
}

double gpu_power_w(double tdp_w, double idle_w, double utilisation) noexcept {
  return idle_w + (tdp_w - idle_w) * std::clamp(utilisation, 0.0, 1.0);
}

double cap_throughput(double cap_w, double draw_w, double idle_w) noexcept {
  if (cap_w >= draw_w) {
    return 1.0;
  }
  return (cap_w - idle_w) / (draw_w - idle_w);
}

int checkpoint_writer_nodes(int shard_level, int tp, int pp, int gpus_per_node,
                            int nodes) noexcept {
  if (shard_level >= 1 || gpus_per_node <= 0) {
    return nodes;
  }
  const int replica_gpus = std::max(1, tp) * std::max(1, pp);
  return std::clamp((replica_gpus + gpus_per_node - 1) / gpus_per_node, 1, std::max(1, nodes));
}

RunCost run_cost(const std::vector<RunCostGroup>& groups, const RunCostSettings& s, double step_s,
                 double mfu, int writer_nodes) noexcept {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  RunCost c;
  int nodes = 0, gpus = 0;
  double usd_per_hour = 0.0, failures_per_hour = 0.0;
  bool power_known = std::isfinite(mfu);
  for (const RunCostGroup& g : groups) {
    nodes += g.nodes;
    gpus += g.gpus;
    usd_per_hour += g.gpus * g.usd_per_gpu_hour;
    failures_per_hour += g.gpus * g.failures_per_gpu_hour;
    power_known = power_known && g.tdp_w > 0.0;
  }
  failures_per_hour += nodes * s.preemptions_per_node_hour;
  // Power: each GPU between idle and TDP at the plan's MFU; a cap slows the whole synchronous
  // step to the most throttled group's pace.
  double facility_w = 0.0;
  for (const RunCostGroup& g : groups) {
    if (!power_known) {
      c.gpu_power_w.push_back(nan);
      continue;
    }
    double draw = gpu_power_w(g.tdp_w, g.idle_w, mfu);
    if (s.power_cap_w) {
      c.cap_throughput = std::min(c.cap_throughput, cap_throughput(*s.power_cap_w, draw, g.idle_w));
      draw = std::min(draw, *s.power_cap_w);
    }
    c.gpu_power_w.push_back(draw);
    facility_w += g.gpus * draw + g.nodes * s.node_overhead_w;
  }
  c.step_s = step_s / c.cap_throughput;
  c.solve_s = static_cast<double>(s.steps) * c.step_s;
  c.mtbf_s = failures_per_hour > 0.0 ? 3600.0 / failures_per_hour
                                     : std::numeric_limits<double>::infinity();
  const int writers = writer_nodes > 0 ? std::min(writer_nodes, nodes) : nodes;
  c.checkpoint_s =
      writers > 0 ? s.checkpoint_bytes / (writers * s.storage_GBps_per_node * 1e9) : 0.0;
  if (c.checkpoint_s <= 0.0) {
    // A free checkpoint taken continuously: Daly's wall time as tau -> 0, a failure costs only
    // its restart.
    c.interval_s = 0.0;
    c.wall_s = std::isfinite(c.mtbf_s) ? c.solve_s * std::exp(s.restart_s / c.mtbf_s) : c.solve_s;
  } else if (!std::isfinite(c.mtbf_s)) {
    // No interruptions: one checkpoint at the end suffices.
    c.interval_s = c.solve_s;
    c.wall_s = c.solve_s + c.checkpoint_s;
  } else {
    c.interval_s = daly_interval_s(c.checkpoint_s, c.mtbf_s);
    c.wall_s = expected_wall_s(c.solve_s, c.interval_s, c.checkpoint_s, s.restart_s, c.mtbf_s);
  }
  c.effective_fraction = c.wall_s > 0.0 ? c.solve_s / c.wall_s : 1.0;
  const double hours = c.wall_s / 3600.0;
  c.gpu_hours = gpus * hours;
  c.usd = usd_per_hour * hours;
  c.facility_power_w = power_known ? facility_w * s.pue : nan;
  c.energy_mwh = c.facility_power_w * c.wall_s / 3.6e9;
  c.energy_usd = s.usd_per_kwh ? c.energy_mwh * 1000.0 * *s.usd_per_kwh : nan;
  return c;
}

} // namespace zerosearch
