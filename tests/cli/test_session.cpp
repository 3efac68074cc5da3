// The session sequence the modes share: plan, search, rank.
#include <catch2/catch.hpp>

#include <algorithm>

#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cli/pareto_report.hpp"
#include "cli/session.hpp"
#include "zerosearch/io/plot.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/search/pareto.hpp"

using namespace zerosearch;
using namespace zerosearch::cli;

namespace {

Options options(std::vector<const char*> extra) {
  std::vector<const char*> argv{"zerosearch", "-q", "--profiledb_path", ZEROSEARCH_TEST_PROFILEDB};
  for (const char* a : extra) {
    argv.push_back(a);
  }
  return *parse_options(static_cast<int>(argv.size()), argv.data()).options;
}

} // namespace

TEST_CASE("a session searches one plan and ranks every row", "[session]") {
  // CSV on standard output shows every row, so the search keeps every row.
  const Options o = options({"--node_type", "A10", "A6000", "--node_type_num_node", "1", "1",
                             "--format", "csv"});
  Session session(o, "zerosearch");
  std::vector<SearchPlan> plans;
  plans.push_back(session.plan(cluster_of(o)));
  const std::size_t points = plans.front().design_points().size();
  const std::size_t places = placements(plans.front().context.cluster).size();
  const SessionResult r = session.search(std::move(plans));
  REQUIRE(r.runs.size() == 1);
  CHECK(r.ranked.size() == points * places);
  for (std::size_t i = 1; i < r.ranked.size(); ++i) {
    CHECK(r.ranked[i - 1].row->estimate.step_s <= r.ranked[i].row->estimate.step_s);
  }
  CHECK(&r.context_of(r.ranked.front()) == &r.plans.front().context);
  CHECK(session.type_names() == std::vector<std::string>{"A10", "A6000"});
}

TEST_CASE("a session ranks the runs of a sweep together", "[session]") {
  // The summary alone (its front, its limits, the counts) keeps each run's front and the 10
  // best rows that fit: the front is the one a search of every row gives.
  const auto sweep = [](std::vector<const char*> extra, bool front) {
    std::vector<const char*> args{"--pareto", "--node_type", "A10", "A6000", "--num_node", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Options o = options(args);
    Session session(o, "zerosearch");
    std::vector<SearchPlan> plans;
    for (const Cluster& c : pareto_compositions("A10", "A6000", 2, o.gpu_per_node)) {
      plans.push_back(session.plan(c));
    }
    REQUIRE(plans.size() == 8);
    SessionResult r = session.search(std::move(plans), front);
    mark_pareto_front(r.ranked);
    return r;
  };
  const SessionResult summary = sweep({}, true);
  const SessionResult every = sweep({"--format", "csv"}, true);
  std::uint64_t estimates = 0, oom = 0, all_estimates = 0;
  for (const RunResult& run : summary.runs) {
    estimates += run.estimates;
    oom += run.oom;
  }
  for (const RunResult& run : every.runs) {
    all_estimates += run.estimates;
  }
  // Every estimate counts in the runs' totals; the CSV keeps every row, the summary few.
  CHECK(estimates == all_estimates);
  CHECK(every.ranked.size() == all_estimates);
  CHECK(oom > 0);
  CHECK(summary.ranked.size() < all_estimates - oom);
  for (const RankedRow& row : summary.ranked) {
    CHECK_FALSE(row.row->estimate.oom);
  }
  const auto front_of = [](const SessionResult& r) {
    std::vector<std::tuple<int, double, double>> out;
    for (const RankedRow& row : r.ranked) {
      if (row.on_front) {
        out.emplace_back(row.run->cluster.num_nodes(), row.row->estimate.step_s,
                         row.row->estimate.price_per_step_usd);
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  REQUIRE_FALSE(front_of(every).empty());
  CHECK(front_of(summary) == front_of(every));
}

TEST_CASE("a sweep with a CSV output keeps every row, each with its own context",
          "[session]") {
  const Options o = options({"--pareto", "--node_type", "A10", "A6000", "--num_node", "2",
                             "--format", "csv"});
  Session session(o, "zerosearch");
  std::vector<SearchPlan> plans;
  for (const Cluster& c : pareto_compositions("A10", "A6000", 2, o.gpu_per_node)) {
    plans.push_back(session.plan(c));
  }
  std::size_t rows = 0;
  for (const SearchPlan& p : plans) {
    rows += p.design_points().size() * placements(p.context.cluster).size();
  }
  const SessionResult r = session.search(std::move(plans));
  CHECK(r.ranked.size() == rows);
  CHECK(std::any_of(r.ranked.begin(), r.ranked.end(),
                    [](const RankedRow& x) { return x.row->estimate.oom; }));
  // Every row's context is its own composition's.
  for (const RankedRow& row : r.ranked) {
    CHECK(r.context_of(row).cluster.num_nodes() == row.run->cluster.num_nodes());
  }
}

TEST_CASE("a session refuses a single plan without design points", "[session]") {
  const Options o = options({"--num_node", "1000"});
  Session session(o, "zerosearch");
  std::vector<SearchPlan> plans;
  plans.push_back(session.plan(cluster_of(o)));
  CHECK_THROWS_WITH(session.search(std::move(plans)),
                    Catch::Matchers::StartsWith("no design point for 4000 GPUs"));
}

TEST_CASE("search_threads: -j, or one per core, at least one", "[session]") {
  SearchSize small;
  small.estimates = 10;
  CHECK(search_threads(3, small) == 3);
  CHECK(search_threads(0, small) >= 1);
}

TEST_CASE("a sweep's chart from its rows' figures is the chart from its rows", "[session]") {
  // --plot alone: the search keeps the figures of the rows that fit (RowFilter::points), and
  // the front and the 10 best rows; --html as well: every row.
  const auto chart = [](std::vector<const char*> extra) {
    std::vector<const char*> args{"--pareto", "--node_type", "A10", "A6000", "--num_node", "2",
                                  "--plot", "front.svg"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Options o = options(args);
    Session session(o, "zerosearch");
    std::vector<SearchPlan> plans;
    for (const Cluster& c : pareto_compositions("A10", "A6000", 2, o.gpu_per_node)) {
      plans.push_back(session.plan(c));
    }
    SessionResult r = session.search(std::move(plans), true);
    mark_pareto_front(r.ranked);
    std::ostringstream svg;
    write_price_time_svg(svg,
                         r.points ? plot_points(r.runs, r.ranked)
                                  : plot_points(distinct_rows(r.ranked)),
                         "t");
    return std::tuple{r.points, r.ranked.size(), svg.str()};
  };
  const auto [figures, few_rows, from_figures] = chart({});
  const auto [rows_only, every_row, from_rows] = chart({"--html", "r.html"});
  CHECK(figures);
  CHECK_FALSE(rows_only);
  CHECK(few_rows < every_row);
  CHECK(from_figures.find("<circle") != std::string::npos);
  CHECK(from_figures == from_rows);
}
