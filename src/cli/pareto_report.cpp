#include "pareto_report.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "zerosearch/io/columns.hpp"
#include "zerosearch/io/report.hpp"
#include "zerosearch/search/pareto.hpp"

namespace zerosearch::cli {

std::string sweep_text(const ParetoSweep& s) {
  return fmt::format("Pareto sweep of {} over 0..{} {} and 0..{} {} nodes", s.model, s.bound,
                     s.first, s.bound, s.second);
}

std::string composition_text(const Cluster& c) {
  std::string out;
  for (const auto& g : c.groups) {
    out += out.empty() ? "" : " + ";
    out += fmt::format("{} {}", g.count, g.gpu);
  }
  return out;
}

namespace {

Placement placement_of(const RankedRow& r) {
  return r.run->placements[static_cast<std::size_t>(r.row->placement)];
}

} // namespace

std::string plan_text(const RankedRow& r) {
  const auto& p = r.row->point;
  const auto& e = r.row->estimate;
  return fmt::format("{} ({}), {} tp {} pp {} dp {} mbs {}: {:.4f} s/step, ${:.5f}/step, "
                     "train cost ${:.0f}, {:.2f} GiB, partition {}",
                     composition_text(r.run->cluster),
                     compress_placement(r.run->cluster, placement_of(r)), to_string(p.method),
                     p.tp, p.pp, p.dp, p.mbs, e.step_s, e.price_per_step_usd, e.train_cost_usd,
                     e.gpumem_gib, python_int_list(e.partition));
}

std::vector<PlotPoint> plot_points(const std::vector<RankedRow>& ranked) {
  std::vector<PlotPoint> points;
  for (const auto& r : ranked) {
    if (!r.row->estimate.oom) {
      // Only front marks carry a tooltip: no label text for the (many) other rows.
      points.push_back(PlotPoint{r.row->estimate.step_s, r.row->estimate.price_per_step_usd,
                                 r.on_front, r.on_front ? plan_text(r) : std::string()});
    }
  }
  return points;
}

std::vector<PlotPoint> plot_points(const std::vector<RunResult>& runs,
                                   const std::vector<RankedRow>& ranked) {
  // Rows equal on both figures are all on the front or all off it (mark_pareto_front).
  std::set<std::pair<double, double>> on_front;
  for (const RankedRow& r : ranked) {
    if (r.on_front) {
      on_front.emplace(r.row->estimate.step_s, r.row->estimate.price_per_step_usd);
    }
  }
  std::vector<PlotPoint> points;
  for (const RunResult& run : runs) {
    for (const RowPoint& p : run.points) {
      if (!on_front.contains({p.step_s, p.price_usd})) {
        points.push_back(PlotPoint{p.step_s, p.price_usd, false, {}});
      }
    }
  }
  // Run order, then row order: a stable sort by step time is rank order.
  std::stable_sort(points.begin(), points.end(), [](const PlotPoint& a, const PlotPoint& b) {
    return a.step_s < b.step_s;
  });
  for (PlotPoint& p : plot_points(distinct_rows(ranked))) {
    if (p.on_front) {
      points.push_back(std::move(p));
    }
  }
  return points;
}

void print_front(std::ostream& out, const std::vector<RankedRow>& ranked,
                 const std::vector<std::string>& type_names) {
  std::string head;
  for (const auto& t : type_names) {
    head += fmt::format("{:>6} ", t);
  }
  out << fmt::format("{}{:<6} {:>3} {:>3} {:>3} {:>4} {:>4} {:>10} {:>10} {:>8}  {}\n", head,
                     "method", "tp", "pp", "dp", "mbs", "m", "s/step", "$/step", "mem GiB",
                     "placement");
  for (const auto& r : ranked) {
    if (!r.on_front) {
      continue;
    }
    const auto& p = r.row->point;
    const auto& e = r.row->estimate;
    std::string counts;
    for (const auto& g : r.run->cluster.groups) {
      counts += fmt::format("{:>6} ", g.count);
    }
    out << fmt::format(
        "{}{:<6} {:>3} {:>3} {:>3} {:>4} {:>4} {:>10.4f} {:>10.5f} {:>8.2f}  {}\n", counts,
        to_string(p.method), p.tp, p.pp, p.dp, p.mbs, p.num_micro_batches, e.step_s,
        e.price_per_step_usd, e.gpumem_gib, compress_placement(r.run->cluster, placement_of(r)));
  }
}

std::vector<std::string> limit_answers(const std::vector<RankedRow>& ranked,
                                       const ParetoLimits& limits) {
  const RankedRow* fastest = nullptr;
  const RankedRow* cheapest = nullptr;
  for (const auto& r : ranked) {
    if (r.row->estimate.oom) {
      continue;
    }
    if (fastest == nullptr) {
      fastest = &r; // rows are ranked by step time
    }
    if (cheapest == nullptr ||
        r.row->estimate.price_per_step_usd < cheapest->row->estimate.price_per_step_usd) {
      cheapest = &r;
    }
  }
  if (fastest == nullptr) {
    return {};
  }
  std::vector<std::string> lines{"fastest: " + plan_text(*fastest)};
  if (limits.max_step_s) {
    const auto i = cheapest_within_time(ranked, *limits.max_step_s);
    lines.push_back(fmt::format(
        "cheapest within {} s/step: {}", *limits.max_step_s,
        i ? plan_text(ranked[*i])
          : fmt::format("none (the fastest feasible plan takes {:.4f} s/step)",
                        fastest->row->estimate.step_s)));
  }
  if (limits.max_price_usd) {
    const auto i = fastest_within_price(ranked, *limits.max_price_usd);
    lines.push_back(fmt::format(
        "fastest within ${}/step: {}", *limits.max_price_usd,
        i ? plan_text(ranked[*i])
          : fmt::format("none (the cheapest feasible plan costs ${:.5f}/step)",
                        cheapest->row->estimate.price_per_step_usd)));
  }
  if (limits.budget_usd) {
    const auto i = fastest_within_budget(ranked, *limits.budget_usd);
    lines.push_back(fmt::format(
        "fastest within a ${} training budget: {}", *limits.budget_usd,
        i ? plan_text(ranked[*i])
          : fmt::format("none (the cheapest feasible plan costs ${:.0f} to train)",
                        cheapest->row->estimate.train_cost_usd)));
  }
  return lines;
}

} // namespace zerosearch::cli
