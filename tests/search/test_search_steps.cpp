#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../fixtures.hpp"
#include "zerosearch/search/partition_choice.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/search/search.hpp"
#include "zerosearch/search/search_steps.hpp"

using namespace zerosearch;
using namespace zerosearch::search_steps;

namespace {

SearchPlan original_plan() { return test::llama_deepspeed_plan({{"A10", 3}, {"A6000", 5}}); }

SearchPlan native_plan() {
  PlanInput in;
  in.model = "llama2_13B";
  in.cluster = Cluster{{{"A10", 2}, {"H100-SXM", 1}}, 4, {}};
  in.global_batch = 64;
  return make_plan(in, test::shipped_catalogs());
}

/// An estimate with only the fields the row policy reads.
PlacementGroup group(double step_s, bool oom, int first, std::uint32_t count) {
  PlacementGroup g;
  g.estimate.step_s = step_s;
  g.estimate.oom = oom;
  g.estimate.price_per_step_usd = step_s;
  g.first = first;
  g.count = count;
  return g;
}

} // namespace

TEST_CASE("work_units: every point once, the original's same-pipeline points together",
          "[search][steps]") {
  const SearchPlan plan = original_plan();
  REQUIRE(plan.context.estimator == Estimator::zerosearch);
  const std::vector<DesignPoint> points = plan.design_points();
  const auto units = work_units(plan.context, points);
  std::vector<int> seen(points.size(), 0);
  bool some_shared = false;
  for (const auto& unit : units) {
    REQUIRE_FALSE(unit.empty());
    some_shared = some_shared || unit.size() > 1;
    for (const std::size_t i : unit) {
      ++seen[i];
      CHECK(same_pipeline(points[unit.front()], points[i]));
    }
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  // ZeRO 0 and ZeRO 1 of one (tp, dp, pp, mbs) share a pipeline under minmax.
  CHECK(some_shared);
  // Longest first: pp x (micro-batches + pp) never rises.
  const auto cost = [&](const std::vector<std::size_t>& u) {
    const DesignPoint& p = points[u.front()];
    return p.pp * (p.num_micro_batches + p.pp);
  };
  for (std::size_t u = 1; u < units.size(); ++u) {
    CHECK(cost(units[u - 1]) >= cost(units[u]));
  }
}

TEST_CASE("work_units: an estimator that does not share pipelines gets one point per unit",
          "[search][steps]") {
  const SearchPlan plan = native_plan();
  REQUIRE_FALSE(estimator_info(plan.context.estimator).shares_pipelines);
  const std::vector<DesignPoint> points = plan.design_points();
  const auto units = work_units(plan.context, points);
  CHECK(units.size() == points.size());
  for (const auto& unit : units) {
    CHECK(unit.size() == 1);
  }
}

TEST_CASE("estimate_unit (original): groups cover every placement with its own estimate",
          "[search][steps]") {
  const SearchPlan plan = original_plan();
  const std::vector<DesignPoint> points = plan.design_points();
  const PlacementSet places = placements(plan.context.cluster);
  const auto units = work_units(plan.context, points);
  // A shared unit, so that every point of it is checked against its own evaluation.
  const auto shared = std::find_if(units.begin(), units.end(),
                                   [](const auto& u) { return u.size() > 1; });
  REQUIRE(shared != units.end());
  UnitEstimates out;
  estimate_unit(OriginalEstimator{}, plan.context, points, *shared, places, nullptr, out);
  REQUIRE(out.group_of.size() == places.size());
  for (std::size_t j = 0; j < shared->size(); ++j) {
    const DesignPoint& p = points[(*shared)[j]];
    std::uint32_t covered = 0;
    for (const PlacementGroup& g : out.groups[j]) covered += g.count;
    CHECK(covered == places.size());
    const LayerCosts costs = layer_costs(plan.context, p);
    for (std::size_t k = 0; k < places.size(); k += 7) {
      const Estimate direct = choose_and_estimate(plan.context, p, costs, places[k]);
      const Estimate& got = out.groups[j][out.group_of[k]].estimate;
      CHECK(got.step_s == direct.step_s);
      CHECK(got.partition == direct.partition);
      CHECK(got.gpumem_gib == direct.gpumem_gib);
    }
  }
}

TEST_CASE("estimate_unit (native): each placement's group has its native estimate",
          "[search][steps]") {
  const SearchPlan plan = native_plan();
  REQUIRE(plan.context.estimator == Estimator::native);
  const std::vector<DesignPoint> points = plan.design_points();
  const PlacementSet places = placements(plan.context.cluster);
  REQUIRE(places.size() > 1);
  UnitEstimates out;
  for (const std::size_t i : {std::size_t{0}, points.size() / 2, points.size() - 1}) {
    estimate_unit(NativeEstimator{}, plan.context, points, {i}, places, nullptr, out);
    std::uint32_t covered = 0;
    for (const PlacementGroup& g : out.groups[0]) covered += g.count;
    CHECK(covered == places.size());
    for (std::size_t k = 0; k < places.size(); ++k) {
      const Estimate direct = estimate_native(plan.context, points[i], places[k]);
      const Estimate& got = out.groups[0][out.group_of[k]].estimate;
      CHECK(got.step_s == direct.step_s);
      CHECK(got.gpumem_gib == direct.gpumem_gib);
      CHECK(got.oom == direct.oom);
    }
  }
}

TEST_CASE("run_parallel: every unit once, on the workers, a worker's exception comes back",
          "[search][steps]") {
  for (const unsigned threads : {1U, 3U}) {
    std::vector<std::atomic<int>> calls(100);
    std::mutex m;
    std::set<std::thread::id> ids;
    std::vector<SearchProgress> progress;
    unsigned max_worker = 0;
    run_parallel(calls.size(), threads, calls.size() * 2,
                 [&](const SearchProgress& p) {
                   const std::lock_guard lock(m);
                   progress.push_back(p);
                 },
                 [&](std::size_t u, unsigned w) -> std::size_t {
                   // Catch2's assertions are not thread-safe: record, check afterwards.
                   ++calls[u];
                   const std::lock_guard lock(m);
                   ids.insert(std::this_thread::get_id());
                   max_worker = std::max(max_worker, w);
                   return 2;
                 });
    for (const auto& c : calls) CHECK(c.load() == 1);
    CHECK(max_worker < threads);
    if (threads == 1) {
      // Inline, on the caller's thread, with progress every 16 units.
      CHECK(ids == std::set<std::thread::id>{std::this_thread::get_id()});
      REQUIRE_FALSE(progress.empty());
      for (std::size_t i = 1; i < progress.size(); ++i) {
        CHECK(progress[i].done > progress[i - 1].done);
      }
      CHECK(progress.back().total == 200);
    } else {
      CHECK(ids.count(std::this_thread::get_id()) == 0);
    }
  }
  CHECK_THROWS_AS(run_parallel(50, 2, 50, {},
                               [](std::size_t u, unsigned) -> std::size_t {
                                 if (u == 7) throw std::runtime_error("unit 7");
                                 return 1;
                               }),
                  std::runtime_error);
}

TEST_CASE("search_threads: at most one per unit, one for a small search", "[search][steps]") {
  CHECK(search_threads(8, 3, 10'000) == 3);
  CHECK(search_threads(2, 100, 10'000) == 2);
  CHECK(search_threads(8, 100, 255) == 1);
  CHECK(search_threads(0, 100, 10'000) >= 1);
}

TEST_CASE("merge_same_estimates: equal estimates become one group of the first placement",
          "[search][steps]") {
  std::vector<PlacementGroup> groups = {group(2.0, false, 0, 2), group(1.0, false, 1, 1),
                                        group(2.0, false, 3, 4)};
  std::vector<PlacementGroup> distinct;
  merge_same_estimates(groups, distinct);
  REQUIRE(distinct.size() == 2);
  CHECK(distinct[0].first == 0);
  CHECK(distinct[0].count == 6);
  CHECK(distinct[1].first == 1);
  CHECK(distinct[1].count == 1);
}

TEST_CASE("RowKeeper: every row in enumeration order whichever point comes first",
          "[search][steps]") {
  RowKeeper keeper(RowFilter{}, 2, 3, 2);
  DesignPoint a;
  a.tp = 1;
  DesignPoint b;
  b.tp = 2;
  std::vector<PlacementGroup> gb = {group(3.0, true, 0, 3)};
  std::vector<PlacementGroup> ga = {group(1.0, false, 0, 2), group(2.0, false, 1, 1)};
  keeper.take(1, 1, b, gb, {0, 0, 0});
  keeper.take(0, 0, a, ga, {0, 1, 0});
  const SearchResult r = keeper.finish();
  REQUIRE(r.rows.size() == 6);
  CHECK(r.estimates == 6);
  CHECK(r.oom == 3);
  const std::vector<double> steps = {1.0, 2.0, 1.0, 3.0, 3.0, 3.0};
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(r.rows[i].estimate.step_s == steps[i]);
    CHECK(r.rows[i].placement == static_cast<int>(i % 3));
    CHECK(r.rows[i].point.tp == (i < 3 ? 1 : 2));
  }
}

TEST_CASE("RowKeeper: --top and --feasible keep the fastest rows that fit, merged over workers",
          "[search][steps]") {
  RowFilter keep;
  keep.top = 2;
  keep.feasible_only = true;
  RowKeeper keeper(keep, 3, 2, 2);
  DesignPoint p;
  std::vector<PlacementGroup> g0 = {group(5.0, false, 0, 1), group(1.0, true, 1, 1)};
  std::vector<PlacementGroup> g1 = {group(4.0, false, 0, 2)};
  std::vector<PlacementGroup> g2 = {group(3.0, false, 0, 1), group(6.0, false, 1, 1)};
  keeper.take(0, 0, p, g0, {0, 1});
  keeper.take(1, 1, p, g1, {0, 0});
  keeper.take(0, 2, p, g2, {0, 1});
  const SearchResult r = keeper.finish();
  CHECK(r.estimates == 6);
  CHECK(r.oom == 1);
  // The two fastest that fit: point 1's first placement (4 s) and point 2's first (3 s), in
  // enumeration order.
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0].estimate.step_s == 4.0);
  CHECK(r.rows[0].placement == 0);
  CHECK(r.rows[1].estimate.step_s == 3.0);
  // The OOM row left out is faster than the last kept row: counted for the ranks.
  REQUIRE(r.left_out.size() == 1);
  CHECK(r.left_out[0].step_s == 1.0);
  CHECK(r.left_out[0].rows == 1);
}
