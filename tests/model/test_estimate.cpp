#include <catch2/catch.hpp>

#include "fixtures.hpp"

#include "zerosearch/core/error.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/search/plan.hpp"

using namespace zerosearch;

namespace {
/// llama2_13B with DeepSpeed methods on `nodes` A10 nodes of 4 GPUs, from the shipped data.
SearchPlan a10_deepspeed_plan(int nodes) { return test::llama_deepspeed_plan({{"A10", nodes}}); }
} // namespace

TEST_CASE("a golden row: 8 A10 nodes, zero1 tp 1 pp 8 dp 4 mbs 1", "[estimate]") {
  const SearchPlan plan = a10_deepspeed_plan(8);
  const DesignPoint p{DpMethod::zero1, 1, 4, 8, 1, 16};
  const auto costs = layer_costs(plan.context, p);
  // The reference CSV (tests/golden/homo_a10x8.csv) has this partition and these figures.
  const auto e = estimate(plan.context, p, costs, placements(plan.context.cluster)[0],
                          {6, 5, 5, 5, 5, 5, 5, 6});
  CHECK(e.step_s == 29.292451858520508);
  CHECK(e.pipeline_s == 28.93369487285406);
  CHECK(e.gpumem_gib == 20.375137329101562);
  CHECK_FALSE(e.oom);
}

TEST_CASE("a golden row at dp 16: torch.mean's column order decides the last digit", "[estimate]") {
  // llama2_13B has 42 cost columns: 0-31 are summed over the 16 rows in ATen's 16-column
  // chunks, 32-41 in its other order (core/parity.hpp). Summing all 42 the first way gives
  // 23.4936296026175 here, one ulp off tests/golden/hetero_a10x3_a6000x5.csv.
  const SearchPlan plan = test::llama_deepspeed_plan({{"A10", 3}, {"A6000", 5}});
  const DesignPoint p{DpMethod::zero0, 1, 16, 2, 2, 2};
  const Placement place{1, 1, 1, 1, 1, 0, 0, 0}; // five A6000 nodes, then three A10
  const auto e = estimate(plan.context, p, layer_costs(plan.context, p), place, {25, 17});
  CHECK(e.pipeline_s == 23.493629602617496);
}

TEST_CASE("pp == 1 has no pipeline communication and no embedding sync", "[estimate]") {
  const SearchPlan plan = a10_deepspeed_plan(2);
  const DesignPoint p{DpMethod::zero2, 1, 8, 1, 1, 8};
  const auto e = estimate(plan.context, p, layer_costs(plan.context, p),
                          placements(plan.context.cluster)[0], {42});
  CHECK(e.embedding_sync_s == 0.0);
  CHECK(e.step_s == Approx(e.pipeline_s + e.dp_sync_s).epsilon(1e-6));
}

TEST_CASE("a given partition is used as given and an invalid one is refused", "[estimate]") {
  const SearchPlan plan = a10_deepspeed_plan(8);
  const DesignPoint p{DpMethod::zero1, 1, 4, 8, 1, 16};
  const auto costs = layer_costs(plan.context, p);
  const Placement place = placements(plan.context.cluster)[0];
  // The golden row's partition, given: the golden figure again.
  CHECK(estimate(plan.context, p, costs, place, {6, 5, 5, 5, 5, 5, 5, 6}).step_s ==
        29.292451858520508);
  EstimateDetail d;
  const auto e = estimate(plan.context, p, costs, place, {10, 2, 5, 5, 5, 5, 5, 5}, &d);
  CHECK(e.partition == std::vector<int>{10, 2, 5, 5, 5, 5, 5, 5});
  CHECK(e.oom); // 10 layers do not fit an A10
  CHECK(d.stage_mem_gib.size() == 8);
  CHECK(d.stage_mem_gib[0] > d.stage_limit_gib[0]);
  CHECK(d.stage_mem_gib[1] < d.stage_mem_gib[2]);
  CHECK(e.step_s == step_model(plan.context, p, costs, place).step_s(e.partition));
  CHECK_THROWS_AS(estimate(plan.context, p, costs, place, {6, 5, 5}), InputError);
  CHECK_THROWS_AS(estimate(plan.context, p, costs, place, {7, 5, 5, 5, 5, 5, 5, 5, 0}), InputError);
}

TEST_CASE("ZeRO 0 and 1 share a pipeline: same partition and stage ends, their own sync and "
          "memory",
          "[estimate]") {
  const SearchPlan plan = test::llama_deepspeed_plan({{"A10", 3}, {"A6000", 5}});
  const DesignPoint zero0{DpMethod::zero0, 1, 16, 2, 2, 2};
  DesignPoint zero1 = zero0;
  zero1.method = DpMethod::zero1;
  DesignPoint zero2 = zero0;
  zero2.method = DpMethod::zero2;
  CHECK(same_pipeline(zero0, zero1));
  CHECK_FALSE(same_pipeline(zero1, zero2)); // forward share: a quarter against a third
  DesignPoint other_mbs = zero1;
  other_mbs.mbs = 1;
  CHECK_FALSE(same_pipeline(zero0, other_mbs));

  const Placement place{1, 1, 1, 1, 1, 0, 0, 0};
  const std::vector<int> partition{25, 17};
  // zero1's estimate from zero0's pipeline equals its own evaluation, bit for bit.
  const auto costs0 = layer_costs(plan.context, zero0);
  const PlacementFeatures f = placement_features(plan.context, zero0, place);
  const StepModel model0 = step_model(plan.context, zero0, costs0, f);
  const StageTimes times = stage_times(model0.problem, partition);
  const std::vector<double> ends = model0.pipeline_ends(times);
  const StepModel model1 = step_model(plan.context, zero1, costs0, f);
  const Estimate shared =
      evaluate_pipeline(plan.context, zero1, model1, f.stage_gpu, {partition, times}, ends);
  const Estimate own = estimate(plan.context, zero1, layer_costs(plan.context, zero1), place,
                                partition);
  CHECK(shared.step_s == own.step_s);
  CHECK(shared.pipeline_s == own.pipeline_s);
  CHECK(shared.dp_sync_s == own.dp_sync_s);
  CHECK(shared.gpumem_gib == own.gpumem_gib);
  CHECK(shared.oom == own.oom);
  // The two methods differ in their sync and memory only.
  const Estimate e0 = estimate(plan.context, zero0, costs0, place, partition);
  CHECK(e0.pipeline_s == own.pipeline_s);
  CHECK(e0.gpumem_gib != own.gpumem_gib);
}
