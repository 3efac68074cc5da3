#include <catch2/catch.hpp>

#include <cmath>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/search/search.hpp"

using namespace zerosearch;

namespace {

const Catalogs& catalogs() {
  static const Catalogs c = load_catalogs(ZEROSEARCH_TEST_PROFILEDB);
  return c;
}

PlanInput input(const std::string& model, std::vector<NodeGroup> groups, int gpus_per_node) {
  PlanInput in;
  in.model = model;
  in.cluster = Cluster{std::move(groups), gpus_per_node, {}};
  in.global_batch = 16;
  // These tests cover the analytic profiles under the original's formulas; the native
  // estimator has its own tests (tests/model/test_native.cpp, tests/search/test_native_plan.cpp).
  in.estimator = Estimator::zerosearch;
  return in;
}

} // namespace

TEST_CASE("every catalog GPU searches every built-in model with analytic profiles",
          "[analytic][plan]") {
  for (const auto& [name, gpu] : catalogs().hardware.gpus) {
    if (!gpu.has_specs) continue;
    for (const ModelSpec& spec : catalogs().models.models) {
      const std::string& model = spec.name;
      INFO(name << " " << model);
      PlanInput in = input(model, {{name, 2}}, 4);
      in.profile_source = ProfileSource::analytic;
      const SearchPlan plan = make_plan(in, catalogs());
      REQUIRE(plan.context.profile_source.size() == 1);
      CHECK(plan.context.profile_source[0].rfind("analytic", 0) == 0);
      CHECK(profile_source_text(plan.context) == plan.context.profile_source[0]);
      const auto points = plan.design_points();
      REQUIRE_FALSE(points.empty());
      const auto places = placements(plan.context.cluster);
      const auto rows = run_search(plan.context, points, places, SearchOptions{});
      REQUIRE(rows.size() == points.size() * places.size());
      for (const auto& r : rows) {
        CHECK(std::isfinite(r.estimate.step_s));
        CHECK(r.estimate.step_s > 0.0);
        CHECK(r.estimate.price_per_step_usd > 0.0);
      }
    }
  }
}

TEST_CASE("auto uses measured profiles where they exist and analytic ones elsewhere",
          "[analytic][plan]") {
  PlanInput in = input("llama2_13B", {{"a10", 1}, {"A100-80GB", 1}}, 4);
  const SearchPlan plan = make_plan(in, catalogs());
  CHECK(plan.context.cluster.groups[0].gpu == "A10"); // the catalog's spelling
  CHECK(plan.context.profile_source[0] == "measured");
  CHECK(plan.context.profile_source[1] == "analytic (uncalibrated)");
  CHECK(plan.context.deepspeed_profiles[0]->origin.find("llama2_13B_A10_deepspeed.json") !=
        std::string::npos);
  CHECK(profile_source_text(plan.context) ==
        "mixed: A10 measured, A100-80GB analytic (uncalibrated)");
  // DeepSpeed is measured on A10 and generated on A100-80GB; Megatron-LM is not on A10.
  CHECK(plan.context.megatron_profiles[0] == nullptr);
  CHECK(plan.context.megatron_profiles[1] != nullptr);

  in.profile_source = ProfileSource::measured;
  CHECK_THROWS_AS(make_plan(in, catalogs()), InputError);
  in.profile_source = ProfileSource::analytic;
  const SearchPlan all = make_plan(in, catalogs());
  CHECK(all.context.profile_source[0].rfind("analytic", 0) == 0);
}

TEST_CASE("link overrides replace the set's figures", "[analytic][plan]") {
  PlanInput in = input("llama2_13B", {{"A10", 1}, {"A6000", 1}}, 4);
  in.inter_node_Gbitps = {10.0, 20.0};
  in.intra_node_Gbitps = {50.0};
  const SearchPlan plan = make_plan(in, catalogs());
  CHECK(plan.context.links[0].inter_node_bits_per_s == 10e9F);
  CHECK(plan.context.links[1].inter_node_bits_per_s == 20e9F);
  CHECK(plan.context.links[0].intra_node_bits_per_s == 50e9F);
  CHECK(plan.context.links[1].intra_node_bits_per_s == 50e9F);
  // Without overrides, a GPU missing from the set uses 60 % of its node's figures.
  const SearchPlan h = make_plan(input("gpt2XL", {{"H100-SXM", 1}}, 8), catalogs());
  CHECK(h.context.links[0].inter_node_bits_per_s == static_cast<float>(0.6 * 3200e9));
  CHECK(h.context.links[0].intra_node_bits_per_s == static_cast<float>(0.6 * 450 * 8e9));
  // Per-GPU price times the GPUs of a node.
  CHECK(h.context.price_per_s_usd == Approx(3.78 * 8 / 3600.0));
}
