#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <tuple>

#include "../fixtures.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/search/search.hpp"

using namespace zerosearch;
using zerosearch::test::shipped_catalogs;

namespace {

PlanInput input(const std::string& model, std::vector<NodeGroup> groups, int gpus_per_node) {
  PlanInput in;
  in.model = model;
  in.cluster = Cluster{std::move(groups), gpus_per_node, {}};
  in.global_batch = 64;
  return in;
}

} // namespace

TEST_CASE("the estimator defaults to the original's where it could run", "[native][plan]") {
  // Every node type has a measured profile of the model: the original's formulas.
  CHECK(make_plan(input("llama2_13B", {{"A10", 8}}, 4), shipped_catalogs()).context.estimator ==
        Estimator::zerosearch);
  // Another GPU, or a mix with one: native.
  CHECK(make_plan(input("llama2_13B", {{"H100-SXM", 2}}, 8), shipped_catalogs())
            .context.estimator == Estimator::native);
  CHECK(make_plan(input("llama2_13B", {{"A10", 2}, {"H100-SXM", 1}}, 4), shipped_catalogs())
            .context.estimator == Estimator::native);
  // Asked for.
  PlanInput in = input("llama2_13B", {{"A10", 8}}, 4);
  in.estimator = Estimator::native;
  CHECK(make_plan(in, shipped_catalogs()).context.estimator == Estimator::native);
}

TEST_CASE("a user's intra-node figure sets the native estimator's collectives inside a node",
          "[native][plan]") {
  PlanInput in = input("gpt2XL", {{"T4", 2}, {"A10", 1}}, 4);
  in.estimator = Estimator::native;
  const auto bus = [](const SearchPlan& plan, std::size_t g, int n) {
    return plan.context.native->gpus[g].calibration.tp_allreduce.at(n).bus_bytes_per_s;
  };
  const SearchPlan catalog = make_plan(in, shipped_catalogs());
  CHECK(bus(catalog, 0, 4) == Approx(0.6 * 16e9)); // T4's prior: PCIe 3 with P2P
  // One figure for every node type, in Gbit/s (an achieved one, as the link sets' are).
  in.intra_node_Gbitps = {30};
  const SearchPlan one = make_plan(in, shipped_catalogs());
  CHECK(bus(one, 0, 4) == Approx(30e9 / 8));
  CHECK(bus(one, 1, 2) == Approx(30e9 / 8));
  // One per node type.
  in.intra_node_Gbitps = {30, 80};
  const SearchPlan each = make_plan(in, shipped_catalogs());
  CHECK(bus(each, 0, 2) == Approx(30e9 / 8));
  CHECK(bus(each, 1, 4) == Approx(80e9 / 8));
}

TEST_CASE("native design points cross the recompute, offload, interleaving and dtype lists",
          "[native][plan]") {
  PlanInput in = input("llama3_8B", {{"H100-SXM", 4}}, 8);
  in.estimator = Estimator::native;
  in.offload = {Offload::none, Offload::optimizer};
  const SearchPlan plan = make_plan(in, shipped_catalogs());
  const std::vector<DesignPoint> points = plan.design_points();
  std::set<Recompute> recompute;
  std::set<int> virtual_stages;
  bool offload_seen = false;
  for (const DesignPoint& p : points) {
    recompute.insert(p.recompute);
    virtual_stages.insert(p.virtual_stages);
    // Offload only where DeepSpeed allows it; interleaving only on a pipeline it divides.
    if (p.offload != Offload::none) {
      offload_seen = true;
      CHECK(offload_unsupported(p.method, p.offload) == nullptr);
    }
    if (p.virtual_stages > 1) {
      CHECK(p.pp > 1);
      CHECK(32 % (p.pp * p.virtual_stages) == 0);
    }
    CHECK(p.dtype == Dtype::bf16);
  }
  CHECK(recompute.size() == 3);
  CHECK(virtual_stages == std::set<int>{1, 2});
  CHECK(offload_seen);
}

TEST_CASE("a native search ranks plans that fit on any catalog GPU", "[native][search]") {
  for (const char* gpu : {"H100-SXM", "A100-80GB", "L40S", "MI300X", "V100-32GB"}) {
    PlanInput in = input("llama3_8B", {{gpu, 2}}, 8);
    in.estimator = Estimator::native;
    const SearchPlan plan = make_plan(in, shipped_catalogs());
    const auto rows = run_search(plan.context, plan.design_points(), placements(in.cluster));
    REQUIRE(!rows.empty());
    const bool fits = std::any_of(rows.begin(), rows.end(), [](const ResultRow& r) {
      return !r.estimate.oom && r.estimate.step_s > 0.0;
    });
    CHECK(fits);
  }
}

TEST_CASE("terapipe plans for every dense catalog model on unlike GPUs", "[native][terapipe][plan]") {
  for (const auto& model : shipped_catalogs().models.models) {
    PlanInput in = input(model.name, {{"A10", 2}, {"H100-SXM", 2}}, 4);
    in.estimator = Estimator::native;
    in.schedules = {Schedule::terapipe};
    in.recompute = {Recompute::full};
    if (model.is_moe()) {
      // Its token slices leave out the experts' all-to-all: refused, not under-estimated.
      CHECK_THROWS_AS(make_plan(in, shipped_catalogs()), InputError);
      continue;
    }
    const SearchPlan plan = make_plan(in, shipped_catalogs());
    const auto rows = run_search(plan.context, plan.design_points(), placements(in.cluster));
    REQUIRE(!rows.empty());
    for (const ResultRow& r : rows) {
      REQUIRE(r.point.schedule == Schedule::terapipe);
      std::int64_t tokens = 0;
      for (const auto l : r.estimate.native.slices) tokens += l;
      CHECK(tokens == plan.context.model.sequence_length);
      CHECK(r.estimate.step_s > 0.0);
    }
  }
}

TEST_CASE("tp reaches across the trays of an NVL72 rack, not across plain nodes",
          "[native][plan][network]") {
  // GB200: trays of 4 in NVLink domains of 72. Llama-3 70B has 64 heads: tp 8 (two trays) is
  // searched; 12, 24, 36 and 72 divide the domain but not the heads.
  PlanInput in = input("llama3_70B", {{"GB200", 36}}, 4);
  in.estimator = Estimator::native;
  const SearchPlan plan = make_plan(in, shipped_catalogs());
  CHECK(tp_domain_gpus(plan.context) == 72);
  REQUIRE(!plan.tp_degrees.empty());
  CHECK(plan.tp_degrees.front() == std::vector<int>{1, 2, 4, 8});
  CHECK(std::find(plan.notes.begin(), plan.notes.end(),
                  "tp across the nodes of an NVLink domain: 8 searched (12, 24, 36, 72 left out: "
                  "they do not divide the 64 attention heads of llama3_70B)") != plan.notes.end());
  const auto points = plan.design_points();
  CHECK(std::any_of(points.begin(), points.end(), [](const DesignPoint& p) { return p.tp == 8; }));
  const auto rows = run_search(plan.context, points, placements(in.cluster));
  CHECK(std::any_of(rows.begin(), rows.end(), [](const ResultRow& r) {
    return r.point.tp == 8 && !r.estimate.oom && r.estimate.step_s > 0.0;
  }));
  // Trays of 4 without a domain (B200 nodes cut to 4 GPUs) and 8-GPU H100 nodes: the node's
  // divisors, as before, and no note.
  for (const auto& [gpu, gpn, tps] : {std::tuple{"B200", 4, std::vector<int>{1, 2, 4}},
                                      std::tuple{"H100-SXM", 8, std::vector<int>{1, 2, 4, 8}}}) {
    PlanInput plain = input("llama3_70B", {{gpu, 8}}, gpn);
    plain.estimator = Estimator::native;
    const SearchPlan p = make_plan(plain, shipped_catalogs());
    CHECK(tp_domain_gpus(p.context) == gpn);
    CHECK(p.tp_degrees.front() == tps);
    CHECK(std::none_of(p.notes.begin(), p.notes.end(), [](const std::string& n) {
      return n.rfind("tp across", 0) == 0;
    }));
  }
}
