#include <catch2/catch.hpp>

#include "fixtures.hpp"

#include "zerosearch/model/estimate.hpp"
#include "zerosearch/model/ga.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/search/search.hpp"

using namespace zerosearch;

namespace {

SearchPlan hetero_plan(PartitionMethod method) {
  return test::llama_deepspeed_plan({{"A10", 3}, {"A6000", 5}}, method, 42);
}

} // namespace

TEST_CASE("the GA: same seed, same partition; always a valid partition", "[ga]") {
  const SearchPlan plan = hetero_plan(PartitionMethod::ga);
  const auto places = placements(plan.context.cluster);
  int differs = 0;
  for (const DesignPoint& p : plan.design_points()) {
    if (p.pp == 1) {
      continue;
    }
    const LayerCosts costs = layer_costs(plan.context, p);
    const StageMemoryTable table(plan.context.model, p, 4, 64);
    const StepModel m = step_model(plan.context, p, costs, places[1]);
    const auto mm = minmax_partition(m.problem).partition;
    for (const std::uint64_t seed : {0ULL, 1ULL, 12345ULL}) {
      const auto a = ga_partition(m, table, seed, {mm});
      const auto b = ga_partition(m, table, seed, {mm});
      CHECK(a == b);
      CHECK(valid_partition(a, p.pp, m.layers()));
      // Its population starts with minmax's partition and keeps the best: never worse.
      if (m.fits(mm, table)) {
        CHECK(m.fits(a, table));
        CHECK(m.step_s(a) <= m.step_s(mm));
      }
      differs += a != ga_partition(m, table, seed + 1, {mm}) ? 1 : 0;
    }
  }
  CHECK(differs > 0); // the seed matters
}

TEST_CASE("the GA's results do not depend on the thread count", "[ga]") {
  const SearchPlan plan = hetero_plan(PartitionMethod::ga);
  const auto points = plan.design_points();
  const auto places = placements(plan.context.cluster);
  SearchOptions one;
  one.threads = 1;
  SearchOptions two;
  two.threads = 2;
  const auto a = run_search(plan.context, points, places, one);
  const auto b = run_search(plan.context, points, places, two);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].estimate.partition == b[i].estimate.partition);
    CHECK(a[i].estimate.step_s == b[i].estimate.step_s);
  }
}

TEST_CASE("the GA's seed mixes --seed with the design point", "[ga]") {
  const DesignPoint a{DpMethod::zero1, 1, 4, 8, 1, 16};
  DesignPoint b = a;
  b.mbs = 2;
  CHECK(ga_point_seed(0, a) == ga_point_seed(0, a));
  CHECK(ga_point_seed(0, a) != ga_point_seed(1, a));
  CHECK(ga_point_seed(0, a) != ga_point_seed(0, b));
}

TEST_CASE("the GA never reports a slower step than minmax where minmax fits", "[ga]") {
  const SearchPlan minmax = hetero_plan(PartitionMethod::minmax);
  const SearchPlan ga = hetero_plan(PartitionMethod::ga);
  const auto places = placements(minmax.context.cluster);
  int faster = 0;
  for (const DesignPoint& p : minmax.design_points()) {
    if (p.pp < 8) {
      continue;
    }
    const LayerCosts costs = layer_costs(minmax.context, p);
    for (const Placement& place : places.to_vector()) {
      const Estimate a = estimate(minmax.context, p, costs, place);
      const StepModel m = step_model(minmax.context, p, costs, place);
      const Estimate b = estimate(ga.context, p, costs, place);
      if (!a.oom) {
        // Against minmax's partition with its own stage times.
        CHECK_FALSE(b.oom);
        CHECK(b.step_s <= m.step_s(a.partition));
        faster += b.step_s < a.step_s ? 1 : 0;
      }
    }
  }
  CHECK(faster > 0);
}
