#include <catch2/catch.hpp>

#include "fixtures.hpp"

#include "zerosearch/model/estimate.hpp"
#include "zerosearch/search/partition_choice.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/search/search.hpp"

using namespace zerosearch;

namespace {

/// llama2_13B with -f d on 3 A10 and 5 A6000 nodes; `seed` for the GA.
SearchPlan hetero_plan(PartitionMethod method, std::uint64_t seed = 0) {
  return test::llama_deepspeed_plan({{"A10", 3}, {"A6000", 5}}, method, seed);
}

} // namespace

TEST_CASE("minmax chooses the golden rows' partitions", "[partition_choice]") {
  {
    // tests/golden/homo_a10x8.csv
    const SearchPlan plan = test::llama_deepspeed_plan({{"A10", 8}});
    const DesignPoint p{DpMethod::zero1, 1, 4, 8, 1, 16};
    const auto costs = layer_costs(plan.context, p);
    const auto e = choose_and_estimate(plan.context, p, costs, placements(plan.context.cluster)[0]);
    CHECK(e.partition == std::vector<int>{6, 5, 5, 5, 5, 5, 5, 6});
    CHECK(e.step_s == 29.292451858520508);
    CHECK(e.gpumem_gib == 20.375137329101562);
  }
  {
    // tests/golden/hetero_a10x3_a6000x5.csv, dp 16
    const SearchPlan plan = hetero_plan(PartitionMethod::minmax);
    const DesignPoint p{DpMethod::zero0, 1, 16, 2, 2, 2};
    const Placement place{1, 1, 1, 1, 1, 0, 0, 0};
    const auto e = choose_and_estimate(plan.context, p, layer_costs(plan.context, p), place);
    CHECK(e.partition == std::vector<int>{25, 17});
    CHECK(e.pipeline_s == 23.493629602617496);
  }
  {
    // pp == 1: one stage of every layer, whatever the method.
    const SearchPlan plan = test::llama_deepspeed_plan({{"A10", 2}}, PartitionMethod::optimal);
    const DesignPoint p{DpMethod::zero2, 1, 8, 1, 1, 8};
    const auto e = choose_and_estimate(plan.context, p, layer_costs(plan.context, p),
                                       placements(plan.context.cluster)[0]);
    CHECK(e.partition == std::vector<int>{42});
  }
}

TEST_CASE("the chosen partition, estimated, is the estimate of that partition given",
          "[partition_choice]") {
  for (const PartitionMethod method :
       {PartitionMethod::minmax, PartitionMethod::ga, PartitionMethod::optimal}) {
    const SearchPlan plan = test::llama_deepspeed_plan({{"A10", 2}, {"A6000", 2}}, method, 3);
    const auto places = placements(plan.context.cluster);
    for (const DesignPoint& p : plan.design_points()) {
      if (p.pp < 4) {
        continue;
      }
      const LayerCosts costs = layer_costs(plan.context, p);
      const Placement& place = places[1];
      std::vector<int> stage_gpu;
      const StepModel m = step_model(plan.context, p, costs, place, &stage_gpu);
      const PartitionResult chosen = choose_partition(plan.context, p, stage_gpu, m);
      EstimateDetail da;
      EstimateDetail db;
      const Estimate a = choose_and_estimate(plan.context, p, costs, place, nullptr, &da);
      const Estimate b = estimate(plan.context, p, costs, place, chosen.partition, &db);
      INFO(to_string(method) << " " << to_string(p.method) << " tp " << p.tp << " pp " << p.pp
                             << " mbs " << p.mbs);
      CHECK(a.partition == chosen.partition);
      CHECK(same_estimate(a, b));
      CHECK(da.stage_mem_gib == db.stage_mem_gib);
      CHECK(da.stage_gpu == stage_gpu);
    }
  }
}

TEST_CASE("the GA never reports a slower step than minmax where minmax fits", "[partition_choice]") {
  const SearchPlan minmax = hetero_plan(PartitionMethod::minmax, 42);
  const SearchPlan ga = hetero_plan(PartitionMethod::ga, 42);
  const auto places = placements(minmax.context.cluster);
  int faster = 0;
  for (const DesignPoint& p : minmax.design_points()) {
    if (p.pp < 8) {
      continue;
    }
    const LayerCosts costs = layer_costs(minmax.context, p);
    for (const Placement& place : places.to_vector()) {
      const Estimate a = choose_and_estimate(minmax.context, p, costs, place);
      const StepModel m = step_model(minmax.context, p, costs, place);
      const Estimate b = choose_and_estimate(ga.context, p, costs, place);
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

TEST_CASE("the GA's results do not depend on the thread count", "[partition_choice]") {
  const SearchPlan plan = hetero_plan(PartitionMethod::ga, 42);
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

TEST_CASE("optimal is never slower than minmax, and fits wherever minmax fits",
          "[partition_choice]") {
  const std::vector<NodeGroup> cluster{{"A10", 2}, {"A6000", 2}};
  const SearchPlan minmax = test::llama_deepspeed_plan(cluster, PartitionMethod::minmax);
  const SearchPlan optimal = test::llama_deepspeed_plan(cluster, PartitionMethod::optimal);
  const auto places = placements(minmax.context.cluster);
  int faster = 0;
  int rescued = 0;
  for (const DesignPoint& p : minmax.design_points()) {
    const LayerCosts costs = layer_costs(minmax.context, p);
    for (const Placement& place : places.to_vector()) {
      const Estimate a = choose_and_estimate(minmax.context, p, costs, place);
      const Estimate b = choose_and_estimate(optimal.context, p, costs, place);
      CHECK(valid_partition(b.partition, p.pp, minmax.context.model.pipeline_layers()));
      if (!a.oom) {
        CHECK_FALSE(b.oom);
        CHECK(b.step_s <= a.step_s);
        faster += b.step_s < a.step_s ? 1 : 0;
      } else if (!b.oom) {
        ++rescued;
      } else {
        CHECK(b.partition == a.partition); // nothing fits: minmax's row, unchanged
        CHECK(b.step_s == a.step_s);
      }
    }
  }
  CHECK(faster > 0);
  CHECK(rescued > 0);
}

TEST_CASE("a search's memo changes nothing", "[partition_choice]") {
  for (const PartitionMethod method : {PartitionMethod::ga, PartitionMethod::optimal}) {
    const SearchPlan plan = hetero_plan(method);
    const auto places = placements(plan.context.cluster);
    std::vector<DesignPoint> points;
    for (const DesignPoint& p : plan.design_points()) {
      if (p.pp == 8 || p.pp == 16) {
        points.push_back(p);
      }
    }
    SearchOptions one;
    one.threads = 1;
    const auto rows = run_search(plan.context, points, places, one); // with a memo per point
    for (const ResultRow& r : rows) {
      const Estimate e = choose_and_estimate(plan.context, r.point,
                                             layer_costs(plan.context, r.point),
                                             places[static_cast<std::size_t>(r.placement)]);
      CHECK(e.partition == r.estimate.partition);
      CHECK(e.step_s == r.estimate.step_s);
    }
  }
}
