#include <cmath>
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "modes.hpp"
#include "output.hpp"
#include "pareto_report.hpp"
#include "session.hpp"
#include "zerosearch/io/plot.hpp"
#include "zerosearch/search/pareto.hpp"

namespace zerosearch::cli {

namespace {

/// Every composition's plan, made before the sweep so that bad input fails before it starts.
std::vector<SearchPlan> plan_compositions(const Session& session) {
  const Options& o = session.options;
  std::vector<SearchPlan> plans;
  for (const Cluster& c :
       pareto_compositions(o.node_types[0], o.node_types[1], o.num_node, o.gpu_per_node)) {
    plans.push_back(session.plan(c));
  }
  return plans;
}

/// "A10 measured, A6000 measured": each type's profile source, from a composition that has it.
std::string profile_sources(const std::vector<SearchPlan>& plans) {
  std::vector<std::string> sources;
  for (std::size_t g = 0; g < 2; ++g) {
    for (const auto& plan : plans) {
      const EstimateContext& c = plan.context;
      if (g < c.cluster.groups.size() && c.cluster.groups[g].count > 0) {
        sources.push_back(c.cluster.groups[g].gpu + " " + c.profile_source[g]);
        break;
      }
    }
  }
  return fmt::format("{}", fmt::join(sources, ", "));
}

std::uint64_t total_estimates(const SessionResult& result) {
  std::uint64_t n = 0;
  for (const RunResult& run : result.runs) {
    n += run.estimates;
  }
  return n;
}

/// The front of the whole run's days against dollars or MWh (--front days-usd, days-mwh).
void print_run_front(std::ostream& out, const std::vector<RankedRow>& ranked, bool energy) {
  out << fmt::format("\nfront (no other feasible plan trains both sooner and with fewer {}):\n",
                     energy ? "MWh" : "dollars");
  for (const RankedRow& r : ranked) {
    if (!r.on_front) {
      continue;
    }
    const RunCost c = *run_cost_of(r);
    const DesignPoint& p = r.row->point;
    out << fmt::format("  {}, {} tp {} pp {} dp {} mbs {}: {:.2f} days, ${:.0f}, {}, {:.1f} % "
                       "effective, {:.4f} s/step\n",
                       composition_text(r.run->cluster), to_string(p.method), p.tp, p.pp, p.dp,
                       p.mbs, c.days(), c.usd,
                       std::isfinite(c.energy_mwh) ? fmt::format("{:.1f} MWh", c.energy_mwh)
                                                   : std::string("energy unknown"),
                       100.0 * c.effective_fraction, r.row->estimate.step_s);
  }
}

void print_summary(std::ostream& out, const ParetoSweep& sweep, const SessionResult& result,
                   const ParetoLimits& limits, const std::vector<std::string>& type_names,
                   const RunCostOptions& run_cost) {
  const auto& ranked = result.ranked;
  // The counts of every estimate: the sweep may have kept only the rows that fit.
  std::uint64_t estimates = 0, oom = 0;
  for (const RunResult& run : result.runs) {
    estimates += run.estimates;
    oom += run.oom;
  }
  const std::uint64_t feasible = estimates - oom;
  std::size_t on_front = 0;
  for (const auto& r : ranked) {
    on_front += r.on_front ? 1 : 0;
  }
  out << fmt::format("zerosearch: {} ({} compositions, {} GPUs per node, 'pareto' links), global "
                     "batch {}\n",
                     sweep_text(sweep), sweep.compositions, sweep.gpus_per_node,
                     sweep.global_batch);
  out << fmt::format("profiles: {}\n", profile_sources(result.plans));
  out << fmt::format("searched {} estimates in {:.3f} s: {} fit in memory, {} OOM; {} on the "
                     "{} front\n",
                     estimates, result.seconds, feasible, oom, on_front,
                     run_cost.front == RunFront::days_usd   ? "days/dollars"
                     : run_cost.front == RunFront::days_mwh ? "days/MWh"
                                                       : "price/step-time");
  if (feasible == 0) {
    out << "no design point fits in GPU memory; try a larger --num_node or a smaller "
           "--custom_gbs\n";
    return;
  }
  if (run_cost.front == RunFront::step) {
    out << "\nfront (no other feasible plan is both faster and cheaper per step):\n";
    print_front(out, ranked, type_names);
  } else {
    print_run_front(out, ranked, run_cost.front == RunFront::days_mwh);
  }
  out << '\n';
  for (const std::string& line : limit_answers(ranked, limits)) {
    out << line << '\n';
  }
  print_run_cost_summary(out, run_cost, ranked);
}

/// The chart's points of a days front: every feasible row with its days and dollars or MWh.
std::vector<PlotPoint> run_plot_points(const std::vector<RankedRow>& ranked, bool energy) {
  std::vector<PlotPoint> points;
  for (const RankedRow& r : ranked) {
    const std::optional<RunCost> c = run_cost_of(r);
    if (r.row->estimate.oom || !c) {
      continue;
    }
    const double y = energy ? c->energy_mwh : c->usd;
    if (std::isfinite(y) && y > 0.0) {
      points.push_back(PlotPoint{c->days(), y, r.on_front, r.on_front ? plan_text(r) : ""});
    }
  }
  return points;
}

} // namespace

int run_pareto_mode(const Options& o, const char* argv0) {
  Session session(o, argv0);
  session.output.csv.pareto_column = true;
  std::optional<OutputTarget> plot_target;
  if (!o.plot.empty()) {
    plot_target = check_extra_output(o, session.output, o.plot, "--plot");
  }
  std::vector<SearchPlan> plans = plan_compositions(session);
  ParetoSweep sweep{o.node_types[0], o.node_types[1], o.num_node, o.gpu_per_node,
                    plans.front().context.model.name, plans.front().context.global_batch,
                    plans.size()};
  session.announce(plans, fmt::format("Pareto sweep: 0..{} {} and 0..{} {} nodes", o.num_node,
                                      o.node_types[0], o.num_node, o.node_types[1]));
  const bool run_front = o.run_cost.front != RunFront::step;
  // The step-time/price front lets the search keep each composition's front and the rows
  // shown; a front of the whole run's days and the whole run's lines (--tokens, --steps: the
  // ranking by days) need every row.
  SessionResult result =
      session.search(std::move(plans), /*front=*/!run_front && !o.run_cost.enabled);
  mark_pareto_front(result.ranked);
  const bool energy_front = o.run_cost.front == RunFront::days_mwh;
  if (run_front) {
    mark_run_cost_front(result.ranked, energy_front);
  }

  std::string chart;
  if (!o.plot.empty() || !o.html.empty()) {
    std::ostringstream svg;
    if (run_front) {
      write_scatter_svg(svg, run_plot_points(result.ranked, energy_front),
                        fmt::format("{}: the whole run's {} vs days, {} and {} nodes (0..{} each)",
                                    sweep.model, energy_front ? "MWh" : "dollars", sweep.first,
                                    sweep.second, sweep.bound),
                        "wall-clock days", energy_front ? "energy (MWh)" : "cost ($)");
    } else {
      // Distinct rows: placements with the same estimate are one mark (the same point).
      write_price_time_svg(svg,
                           result.points ? plot_points(result.runs, result.ranked)
                                         : plot_points(distinct_rows(result.ranked)),
                           fmt::format("{}: price per step vs step time, {} and {} nodes (0..{} "
                                       "each)",
                                       sweep.model, sweep.first, sweep.second, sweep.bound));
    }
    chart = svg.str();
  }
  if (plot_target) {
    write_extra_output(session.output, *plot_target, [&](std::ostream& out) { out << chart; });
  }
  const ParetoLimits limits{o.max_step_time, o.max_price_per_step, o.budget};
  const std::vector<std::string> type_names = session.type_names();
  session.write(result, "--pareto",
                {fmt::format("{}: {} compositions, {} estimates in {:.1f} s", sweep_text(sweep),
                             sweep.compositions, total_estimates(result), result.seconds)},
                [&](std::ostream& out) {
                  print_summary(out, sweep, result, limits, type_names, o.run_cost);
                },
                chart);
  return 0;
}

} // namespace zerosearch::cli
