// The parts of --pareto that are its own: the chart's points and the limits' answers.
#include <catch2/catch.hpp>

#include <sstream>

#include "cli/pareto_report.hpp"
#include "zerosearch/search/pareto.hpp"

using namespace zerosearch;
using namespace zerosearch::cli;

namespace {

/// Three rows on one 1-node cluster: fast and dear, slow and cheap, and one OOM.
RunResult three_rows() {
  RunResult run;
  run.cluster.groups = {{"A10", 1}, {"A6000", 0}};
  run.cluster.gpus_per_node = 4;
  run.placements = PlacementSet(Placement{0});
  const auto row = [](double step_s, double price, bool oom) {
    ResultRow r;
    r.point.method = DpMethod::zero1;
    r.point.pp = 1;
    r.point.dp = 4;
    r.estimate.step_s = step_s;
    r.estimate.price_per_step_usd = price;
    r.estimate.train_cost_usd = price * 1000;
    r.estimate.oom = oom;
    r.estimate.partition = {42};
    return r;
  };
  run.rows = {row(10.0, 0.5, false), row(20.0, 0.2, false), row(5.0, 0.1, true)};
  return run;
}

} // namespace

TEST_CASE("composition_text and sweep_text name what a sweep covers", "[pareto_report]") {
  const RunResult run = three_rows();
  CHECK(composition_text(run.cluster) == "1 A10 + 0 A6000");
  ParetoSweep s;
  s.first = "A10";
  s.second = "A6000";
  s.bound = 2;
  s.model = "llama2_13B";
  CHECK(sweep_text(s) == "Pareto sweep of llama2_13B over 0..2 A10 and 0..2 A6000 nodes");
}

TEST_CASE("plot_points keeps the feasible rows and labels them", "[pareto_report]") {
  const std::vector<RunResult> runs{three_rows()};
  std::vector<RankedRow> ranked = rank_results(runs);
  mark_pareto_front(ranked);
  const std::vector<PlotPoint> points = plot_points(ranked);
  REQUIRE(points.size() == 2); // the OOM row is left out
  CHECK(points[0].step_s == 10.0);
  CHECK(points[0].on_front);
  CHECK(points[1].step_s == 20.0);
  CHECK(points[1].on_front); // cheaper than the faster row
  CHECK(points[0].label.rfind("1 A10 + 0 A6000 (A10x1), zero1 tp 1 pp 1 dp 4 mbs 1: 10.0000 "
                              "s/step",
                              0) == 0);
  // A mark off the front carries no tooltip, so no label is made for it.
  for (RankedRow& r : ranked) {
    r.on_front = r.row->estimate.step_s != 20.0;
  }
  const std::vector<PlotPoint> marked = plot_points(ranked);
  REQUIRE(marked.size() == 2);
  CHECK_FALSE(marked[0].label.empty());
  CHECK_FALSE(marked[1].on_front);
  CHECK(marked[1].label.empty());
}

TEST_CASE("limit_answers: the fastest plan, then one line per limit", "[pareto_report]") {
  const std::vector<RunResult> runs{three_rows()};
  std::vector<RankedRow> ranked = rank_results(runs);
  CHECK(limit_answers(ranked, {}).size() == 1);
  CHECK(limit_answers(ranked, {})[0].rfind("fastest: 1 A10 + 0 A6000", 0) == 0);
  CHECK(limit_answers(ranked, {})[0].find("10.0000 s/step") != std::string::npos);

  ParetoLimits limits;
  limits.max_step_s = 25.0;  // both fit: the cheaper, slower one
  limits.max_price_usd = 0.1; // none fits: the cheapest feasible costs 0.2
  limits.budget_usd = 600.0;  // train cost 500 fits, 200 fits: the faster
  const auto lines = limit_answers(ranked, limits);
  REQUIRE(lines.size() == 4);
  CHECK(lines[1].rfind("cheapest within 25 s/step: ", 0) == 0);
  CHECK(lines[1].find("20.0000 s/step") != std::string::npos);
  CHECK(lines[2] == "fastest within $0.1/step: none (the cheapest feasible plan costs "
                    "$0.20000/step)");
  CHECK(lines[3].rfind("fastest within a $600 training budget: ", 0) == 0);
  CHECK(lines[3].find("10.0000 s/step") != std::string::npos);
}

TEST_CASE("limit_answers is empty when nothing fits", "[pareto_report]") {
  RunResult run = three_rows();
  for (auto& r : run.rows) {
    r.estimate.oom = true;
  }
  const std::vector<RunResult> runs{run};
  CHECK(limit_answers(rank_results(runs), ParetoLimits{30.0, 1.0, 1e6}).empty());
}

TEST_CASE("print_front lists only front rows with node counts", "[pareto_report]") {
  const std::vector<RunResult> runs{three_rows()};
  std::vector<RankedRow> ranked = rank_results(runs);
  mark_pareto_front(ranked);
  std::ostringstream out;
  print_front(out, ranked, {"A10", "A6000"});
  const std::string text = out.str();
  CHECK(text.rfind("   A10  A6000 method", 0) == 0);
  CHECK(std::count(text.begin(), text.end(), '\n') == 3); // header and two front rows
}
