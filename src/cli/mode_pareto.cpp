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

void print_summary(std::ostream& out, const ParetoSweep& sweep, const SessionResult& result,
                   const ParetoLimits& limits, const std::vector<std::string>& type_names) {
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
                     "price/step-time front\n",
                     estimates, result.seconds, feasible, oom, on_front);
  if (feasible == 0) {
    out << "no design point fits in GPU memory; try a larger --num_node or a smaller "
           "--custom_gbs\n";
    return;
  }
  out << "\nfront (no other feasible plan is both faster and cheaper per step):\n";
  print_front(out, ranked, type_names);
  out << '\n';
  for (const std::string& line : limit_answers(ranked, limits)) {
    out << line << '\n';
  }
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
  SessionResult result = session.search(std::move(plans), /*front=*/true);
  mark_pareto_front(result.ranked);

  std::string chart;
  if (!o.plot.empty() || !o.html.empty()) {
    std::ostringstream svg;
    // Distinct rows: placements with the same estimate are one mark (the same point).
    write_price_time_svg(svg, plot_points(distinct_rows(result.ranked)),
                         fmt::format("{}: price per step vs step time, {} and {} nodes (0..{} "
                                     "each)",
                                     sweep.model, sweep.first, sweep.second, sweep.bound));
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
                [&](std::ostream& out) { print_summary(out, sweep, result, limits, type_names); },
                chart);
  return 0;
}

} // namespace zerosearch::cli
