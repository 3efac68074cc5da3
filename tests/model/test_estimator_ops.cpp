#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "../fixtures.hpp"
#include "zerosearch/model/estimator_ops.hpp"
#include "zerosearch/model/moe.hpp"
#include "zerosearch/search/plan.hpp"

using namespace zerosearch;
using zerosearch::test::shipped_catalogs;

namespace {

PlanInput input(const std::string& model, std::vector<NodeGroup> groups, int gpus_per_node,
                std::optional<Estimator> estimator) {
  PlanInput in;
  in.model = model;
  in.cluster = Cluster{std::move(groups), gpus_per_node, {}};
  in.global_batch = 64;
  in.estimator = estimator;
  return in;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A valid 1F1B point of `plan` with a pipeline (pp > 1), the first in enumeration order.
DesignPoint pipelined_point(const SearchPlan& plan) {
  const std::vector<DesignPoint> points = plan.design_points();
  const auto it = std::find_if(points.begin(), points.end(), [](const DesignPoint& p) {
    return p.pp > 1 && p.schedule == Schedule::one_f_one_b && p.virtual_stages == 1;
  });
  REQUIRE(it != points.end());
  return *it;
}

} // namespace

TEST_CASE("point_invalid_reason: what each estimator can evaluate", "[estimator][ops]") {
  // llama2_13B on 8 A10 nodes of 4: both estimators can run it.
  const SearchPlan original =
      make_plan(input("llama2_13B", {{"A10", 8}}, 4, Estimator::zerosearch), shipped_catalogs());
  const SearchPlan native =
      make_plan(input("llama2_13B", {{"A10", 8}}, 4, Estimator::native), shipped_catalogs());
  const EstimateContext& oc = original.context;
  const EstimateContext& nc = native.context;
  const Placement placement = base_placement(oc.cluster);
  const OriginalEstimator o;
  const NativeEstimator n;
  const auto original_says = [&](const DesignPoint& p) {
    return point_invalid_reason(o, oc, p, stages_of(o, oc, p, placement));
  };
  const auto native_says = [&](const DesignPoint& p) {
    return point_invalid_reason(n, nc, p, stages_of(n, nc, p, placement));
  };

  // Every point the original's plan yields is one it can evaluate (its tp degrees are those
  // with profiles), and the native estimator takes it too.
  for (const DesignPoint& p : original.design_points()) {
    INFO(to_string(p.method) << " tp " << p.tp << " pp " << p.pp << " dp " << p.dp);
    REQUIRE(original_says(p).empty());
    REQUIRE(native_says(p).empty());
  }
  const DesignPoint base = pipelined_point(original);

  // A setting only the native estimator models: the original names it, the native one
  // evaluates the point.
  DesignPoint recompute = base;
  recompute.recompute = Recompute::selective;
  CHECK(contains(original_says(recompute), "--recompute needs --estimator native"));
  CHECK(native_says(recompute).empty());

  // Interleaving without a pipeline: invalid for both, each in its own words.
  DesignPoint flat = base;
  flat.pp = 1;
  flat.virtual_stages = 2;
  flat.schedule = Schedule::interleaved;
  CHECK(contains(original_says(flat), "--schedule needs --estimator native"));
  CHECK(contains(native_says(flat), "--virtual_stages 2 needs a pipeline (pp > 1)"));

  // A tp the A10's measured profiles do not have: the original cannot time its layers; the
  // native estimator models any tp (the plan's enumeration keeps tp to the node's divisors).
  // (On the stages of `base`: a placement of tp 3 on nodes of 4 is no placement.)
  DesignPoint odd_tp = base;
  odd_tp.tp = 3;
  CHECK(point_invalid_reason(o, oc, odd_tp, stages_of(o, oc, base, placement)) ==
        "no " + std::string(to_string(flavour_of(odd_tp.method))) +
            " profile for llama2_13B on A10 at tp 3");
  CHECK(point_invalid_reason(n, nc, odd_tp, stages_of(n, nc, base, placement)).empty());
}

TEST_CASE("estimate_at is the native estimate of the point at those stages", "[estimator][ops]") {
  const SearchPlan plan = make_plan(input("llama3_8B", {{"H100-SXM", 4}}, 8, Estimator::native),
                                    shipped_catalogs());
  const EstimateContext& ctx = plan.context;
  const Placement placement = base_placement(ctx.cluster);
  const NativeEstimator n;
  const DesignPoint p = pipelined_point(plan);
  bool pruned = true;
  const Estimate at = estimate_at(n, ctx, p, stages_of(n, ctx, p, placement), {}, pruned);
  const Estimate whole = estimate_native(ctx, p, placement);
  CHECK_FALSE(pruned);
  CHECK(at.step_s > 0.0);
  CHECK(at.step_s == whole.step_s);
  CHECK(at.gpumem_gib == whole.gpumem_gib);
  CHECK(at.partition == whole.partition);
  // A limit below every step time skips the split schedule's simulation: a lower bound, marked.
  DesignPoint zb = p;
  zb.schedule = Schedule::zb_h1;
  REQUIRE(point_invalid_reason(n, ctx, zb, stages_of(n, ctx, zb, placement)).empty());
  NativePruning prune;
  prune.fits_above = 0.0;
  prune.oom_above = 0.0;
  const Estimate bound = estimate_at(n, ctx, zb, stages_of(n, ctx, zb, placement), prune, pruned);
  CHECK(pruned);
  CHECK(bound.step_s <= estimate_native(ctx, zb, placement).step_s);
  // Split schedules of one configuration together (the search's work units where the
  // estimator shares configurations): each as estimate_at gives it alone.
  REQUIRE(estimator_info(ctx.estimator).shares_configurations);
  DesignPoint zb2 = zb;
  zb2.schedule = Schedule::zb_h2;
  REQUIRE(point_invalid_reason(n, ctx, zb2, stages_of(n, ctx, zb2, placement)).empty());
  const std::vector<const DesignPoint*> unit{&zb, &zb2};
  std::vector<NativeEstimate> together;
  estimates_at(n, ctx, unit, stages_of(n, ctx, zb, placement), {}, together);
  REQUIRE(together.size() == 2);
  for (std::size_t i = 0; i < unit.size(); ++i) {
    const Estimate alone =
        estimate_at(n, ctx, *unit[i], stages_of(n, ctx, *unit[i], placement), {}, pruned);
    CHECK(together[i].step_s == alone.step_s);
    CHECK(together[i].peak_memory_gib == alone.gpumem_gib);
  }
  CHECK_FALSE(estimator_info(Estimator::zerosearch).shares_configurations);
}

TEST_CASE("tp_domain_gpus: a node for the original, the NVLink domain for the native",
          "[estimator][ops]") {
  // GB200: trays of 4 in NVLink domains of 72 (docs/native.md §2.5).
  const SearchPlan gb200 = make_plan(input("llama3_70B", {{"GB200", 36}}, 4, Estimator::native),
                                     shipped_catalogs());
  CHECK(tp_domain_gpus(gb200.context) == 72);
  CHECK(tp_domain_gpus(NativeEstimator{}, gb200.context) == 72);
  CHECK(tp_domain_gpus(OriginalEstimator{}, gb200.context) == 4);
  const SearchPlan a10 =
      make_plan(input("llama2_13B", {{"A10", 8}}, 4, Estimator::zerosearch), shipped_catalogs());
  CHECK(tp_domain_gpus(a10.context) == 4);
}

TEST_CASE("the settings a report prints: the native estimator's, none from the original",
          "[estimator][ops]") {
  PlanInput in = input("mixtral_8x7B", {{"H100-SXM", 8}}, 8, Estimator::native);
  in.native.moe_imbalance = 1.5;
  in.native.overlap_grad_reduce = true;
  const SearchPlan native = make_plan(in, shipped_catalogs());
  const EstimateContext& ctx = native.context;
  REQUIRE(plan_settings(ctx) != nullptr);
  CHECK(plan_settings(ctx)->moe_imbalance == 1.5);
  REQUIRE(moe_imbalance(ctx).has_value());
  CHECK(*moe_imbalance(ctx) == effective_moe_imbalance(ctx.model, 1.5));
  CHECK(*moe_imbalance(ctx) > 1.0);
  CHECK(overlap_grad_reduce(ctx) == std::optional<bool>(true));
  // Unset: the frameworks' defaults, still a native setting (not "not modelled").
  PlanInput unset = in;
  unset.native.overlap_grad_reduce.reset();
  const SearchPlan defaults = make_plan(unset, shipped_catalogs());
  CHECK(plan_settings(defaults.context) != nullptr);
  CHECK_FALSE(overlap_grad_reduce(defaults.context).has_value());

  const SearchPlan original =
      make_plan(input("llama2_13B", {{"A10", 8}}, 4, Estimator::zerosearch), shipped_catalogs());
  CHECK(plan_settings(original.context) == nullptr);
  CHECK_FALSE(moe_imbalance(original.context).has_value());
  CHECK_FALSE(overlap_grad_reduce(original.context).has_value());
}

TEST_CASE("set_estimator_data: each node type's GPU from its specifications and links",
          "[estimator][ops]") {
  const SearchPlan plan = make_plan(
      input("llama3_8B", {{"H100-SXM", 2}, {"A100-80GB", 2}}, 8, Estimator::native),
      shipped_catalogs());
  EstimateContext ctx = plan.context;
  const GpuSpec& h100 = shipped_catalogs().hardware.gpu("H100-SXM");
  const GpuSpec& a100 = shipped_catalogs().hardware.gpu("A100-80GB");
  NativeSettings settings;
  settings.flash_attention = false;
  set_estimator_data(NativeEstimator{}, ctx, {h100, a100},
                     {calibration_for(shipped_catalogs(), h100),
                      calibration_for(shipped_catalogs(), a100)},
                     settings);
  REQUIRE(plan_settings(ctx) != nullptr);
  CHECK_FALSE(plan_settings(ctx)->flash_attention);
  // The data make_plan set, rebuilt the same way: the same estimate of a point on each GPU.
  const Placement placement = base_placement(ctx.cluster);
  DesignPoint p = pipelined_point(plan);
  EstimateContext same = plan.context;
  set_estimator_data(NativeEstimator{}, same, {h100, a100},
                     {calibration_for(shipped_catalogs(), h100),
                      calibration_for(shipped_catalogs(), a100)},
                     *plan_settings(plan.context));
  CHECK(estimate_native(same, p, placement).step_s ==
        estimate_native(plan.context, p, placement).step_s);
  // Without fused attention the same point is slower (s^2 attention tensors, all of them).
  CHECK(estimate_native(ctx, p, placement).step_s >
        estimate_native(plan.context, p, placement).step_s);
}

TEST_CASE("token_pipeline and pipe_run: the pipelines behind a native estimate",
          "[estimator][ops]") {
  const SearchPlan plan = make_plan(input("llama3_8B", {{"H100-SXM", 4}}, 8, Estimator::native),
                                    shipped_catalogs());
  const EstimateContext& ctx = plan.context;
  const Placement placement = base_placement(ctx.cluster);
  DesignPoint p = pipelined_point(plan);
  p.schedule = Schedule::terapipe;
  NativeEstimate est;
  static_cast<void>(estimate_native(ctx, p, placement, {}, &est));
  REQUIRE(!est.slices.empty());
  const TokenPipeline pipe = token_pipeline(NativeEstimator{}, ctx, p, est);
  CHECK(pipe.stages.size() == est.stages.size());
  CHECK(pipe.micro_batches == p.num_micro_batches);
  // Its simulation over the estimate's slices is the estimate's pipeline time.
  CHECK(simulate_token_pipeline(pipe, est.slices) == Approx(est.pipeline_s).epsilon(1e-9));

  p.schedule = Schedule::zb_h1;
  static_cast<void>(estimate_native(ctx, p, placement, {}, &est));
  const PipeRun run = pipe_run(NativeEstimator{}, ctx, p, est);
  CHECK(run.rank_end_s.size() == static_cast<std::size_t>(p.pp));
  CHECK_FALSE(run.events.empty());
  // The simulation that gave the estimate's pipeline time (pipe_makespan, its fast path).
  CHECK(run.makespan_s == Approx(est.pipeline_s).epsilon(1e-9));
}
