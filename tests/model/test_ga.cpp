#include <catch2/catch.hpp>

#include "fixtures.hpp"

#include "zerosearch/model/estimate.hpp"
#include "zerosearch/model/ga.hpp"
#include "zerosearch/search/plan.hpp"

using namespace zerosearch;

namespace {

SearchPlan hetero_plan(PartitionMethod method) {
  return test::llama_deepspeed_plan({{"A10", 3}, {"A6000", 5}}, method, 42);
}

} // namespace

TEST_CASE("the GA: same seed, same partition, and always a valid partition", "[ga]") {
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

TEST_CASE("the GA's seed mixes --seed with the design point", "[ga]") {
  const DesignPoint a{DpMethod::zero1, 1, 4, 8, 1, 16};
  DesignPoint b = a;
  b.mbs = 2;
  CHECK(ga_point_seed(0, a) == ga_point_seed(0, a));
  CHECK(ga_point_seed(0, a) != ga_point_seed(1, a));
  CHECK(ga_point_seed(0, a) != ga_point_seed(0, b));
}
