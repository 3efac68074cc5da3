#pragma once
// The parts of --pareto that are its own (docs/usage.md): the sweep's compositions and their
// plans, the chart's points, the front table, and the answers to the limits (--max_step_time,
// --max_price_per_step, --budget). The session runs the rest.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/io/plot.hpp"
#include "zerosearch/search/ranking.hpp"

namespace zerosearch::cli {

/// What a sweep covers, for its titles and summary.
struct ParetoSweep {
  std::string first;              // T0, the first --node_type
  std::string second;             // T1
  int bound = 0;                  // --num_node: 0..bound nodes of each type
  int gpus_per_node = 0;
  std::string model;
  int global_batch = 0;
  std::size_t compositions = 0;
};

/// "Pareto sweep of MODEL over 0..N T0 and 0..N T1 nodes".
[[nodiscard]] std::string sweep_text(const ParetoSweep& s);

/// The limits a sweep answers; each empty when not asked.
struct ParetoLimits {
  std::optional<double> max_step_s;
  std::optional<double> max_price_usd;
  std::optional<double> budget_usd;
};

/// "2 A10 + 1 A6000": the counts of a composition's node types.
[[nodiscard]] std::string composition_text(const Cluster& c);

/// One line naming a row's plan and figures: composition, placement, design point, step time,
/// price per step, train cost, memory, partition.
[[nodiscard]] std::string plan_text(const RankedRow& r);

/// The chart's points: every feasible row, front rows labelled with plan_text.
[[nodiscard]] std::vector<PlotPoint> plot_points(const std::vector<RankedRow>& ranked);

/// The same chart from a sweep that kept its rows' figures (RunResult::points) rather than its
/// rows: the marks off the front from the runs' points, in rank order (step time, then run and
/// row order); the front's from `ranked`'s distinct rows, labelled.
[[nodiscard]] std::vector<PlotPoint> plot_points(const std::vector<RunResult>& runs,
                                                 const std::vector<RankedRow>& ranked);

/// The front rows as a table, one column of node counts per type in `type_names`.
void print_front(std::ostream& out, const std::vector<RankedRow>& ranked,
                 const std::vector<std::string>& type_names);

/// The answers of the summary, one line each: the fastest feasible plan, then one line per
/// limit asked ("none (...)" when no plan meets it). Empty when no row is feasible.
[[nodiscard]] std::vector<std::string> limit_answers(const std::vector<RankedRow>& ranked,
                                                     const ParetoLimits& limits);

} // namespace zerosearch::cli
