#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "modes.hpp"
#include "session.hpp"
#include "zerosearch/search/pareto.hpp"

namespace zerosearch::cli {

namespace {

/// Design points sharing (method, tp, pp, dp, cp): they differ in the micro-batch size (and,
/// for the native estimator, in recompute, offload, virtual stages, dtype, schedule and the
/// context-parallel exchange).
struct Group {
  DesignPoint point;
  /// Every point's micro-batch size, one entry per point.
  std::vector<int> mbs;
  /// The distinct micro-batch sizes, ascending: what the table lists.
  [[nodiscard]] std::vector<int> sizes() const {
    std::vector<int> v = mbs;
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  }
};

std::vector<Group> group_points(const std::vector<DesignPoint>& points) {
  std::vector<Group> out;
  for (const auto& p : points) {
    if (out.empty() || out.back().point.method != p.method || out.back().point.tp != p.tp ||
        out.back().point.pp != p.pp || out.back().point.dp != p.dp ||
        out.back().point.cp != p.cp) {
      out.push_back(Group{p, {}});
    }
    out.back().mbs.push_back(p.mbs);
  }
  return out;
}

std::string joined(const std::vector<int>& v, const char* sep) {
  std::string out;
  for (const int x : v) {
    out += out.empty() ? std::to_string(x) : sep + std::to_string(x);
  }
  return out;
}

int print_one_cluster(Session& session, bool csv) {
  std::vector<SearchPlan> plans;
  plans.push_back(session.plan(cluster_of(session.options)));
  session.announce(plans);
  const SearchPlan& plan = plans.front();
  const auto groups = group_points(plan.design_points());
  const std::size_t places = placements(plan.context.cluster).size();
  std::size_t points = 0;
  for (const auto& g : groups) {
    points += g.mbs.size();
  }
  // A cp column only when the plan splits sequences (the original's layout otherwise).
  const bool cp = std::any_of(groups.begin(), groups.end(),
                              [](const Group& g) { return g.point.cp > 1; });
  const auto cp_cell = [&](const Group& g, const char* sep) {
    return cp ? fmt::format("{}{}", sep, g.point.cp) : std::string{};
  };
  if (csv) {
    std::cout << fmt::format("method,tp,pp,dp{},micro_batch_sizes,design_points,placements,"
                             "estimates\n",
                             cp ? ",cp" : "");
    for (const auto& g : groups) {
      std::cout << fmt::format("{},{},{},{}{},{},{},{},{}\n", to_string(g.point.method),
                               g.point.tp, g.point.pp, g.point.dp, cp_cell(g, ","),
                               joined(g.sizes(), " "), g.mbs.size(), places,
                               g.mbs.size() * places);
    }
    std::cout << fmt::format("total,,,,{},{},{},{}\n", cp ? "," : "", points, places,
                             points * places);
    return 0;
  }
  std::cout << fmt::format("{:<6} {:>3} {:>3} {:>4}{}  {:<22} {:>13} {:>10}\n", "method", "tp",
                           "pp", "dp", cp ? fmt::format(" {:>3}", "cp") : std::string{},
                           "micro-batch sizes", "design points", "estimates");
  for (const auto& g : groups) {
    std::cout << fmt::format("{:<6} {:>3} {:>3} {:>4}{}  {:<22} {:>13} {:>10}\n",
                             to_string(g.point.method), g.point.tp, g.point.pp, g.point.dp,
                             cp ? fmt::format(" {:>3}", g.point.cp) : std::string{},
                             joined(g.sizes(), ","), g.mbs.size(), g.mbs.size() * places);
  }
  std::cout << fmt::format("total: {} design points x {} placement{} = {} estimates\n", points,
                           places, places == 1 ? "" : "s", points * places);
  return 0;
}

int print_pareto(const Session& session, bool csv) {
  const Options& o = session.options;
  const auto clusters =
      pareto_compositions(o.node_types[0], o.node_types[1], o.num_node, o.gpu_per_node);
  if (csv) {
    std::cout << fmt::format("{},{},design_points,placements,estimates\n", o.node_types[0],
                             o.node_types[1]);
  } else {
    std::cout << fmt::format("{:>6} {:>6} {:>13} {:>10} {:>10}\n", o.node_types[0],
                             o.node_types[1], "design points", "placements", "estimates");
  }
  std::size_t points = 0, estimates = 0;
  for (const auto& c : clusters) {
    const SearchPlan plan = session.plan(c);
    const std::size_t n = plan.design_points().size();
    const std::size_t places = placements(c).size();
    points += n;
    estimates += n * places;
    if (csv) {
      std::cout << fmt::format("{},{},{},{},{}\n", c.groups[0].count, c.groups[1].count, n,
                               places, n * places);
    } else {
      std::cout << fmt::format("{:>6} {:>6} {:>13} {:>10} {:>10}\n", c.groups[0].count,
                               c.groups[1].count, n, places, n * places);
    }
  }
  if (csv) {
    std::cout << fmt::format("total,,{},,{}\n", points, estimates);
  } else {
    std::cout << fmt::format("total: {} compositions, {} design points, {} estimates\n",
                             clusters.size(), points, estimates);
  }
  return 0;
}

} // namespace

int run_search_space_mode(const Options& o, const char* argv0) {
  Session session(o, argv0);
  const bool csv = o.format == Format::csv;
  return o.pareto ? print_pareto(session, csv) : print_one_cluster(session, csv);
}

} // namespace zerosearch::cli
