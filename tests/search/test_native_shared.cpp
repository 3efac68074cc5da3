// The split schedules of one configuration estimated together (native_estimates, and the
// search's units of them): every estimate is native_estimate's, bit for bit, on every point
// and placement, pruned or not; the search's full ranked output is the per-point estimates'.
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "../fixtures.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/search/search.hpp"
#include "zerosearch/search/search_steps.hpp"

using namespace zerosearch;
using zerosearch::test::native_all_schedules_plan;
using zerosearch::test::shipped_catalogs;

namespace {


bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

/// Every figure of two native estimates equal to the bit, stage by stage.
void require_same(const NativeEstimate& a, const NativeEstimate& b) {
  REQUIRE(a.partition == b.partition);
  REQUIRE(a.stages.size() == b.stages.size());
  for (std::size_t j = 0; j < a.stages.size(); ++j) {
    INFO("stage " << j);
    const NativeStage& x = a.stages[j];
    const NativeStage& y = b.stages[j];
    CHECK(x.gpu == y.gpu);
    CHECK(x.layers == y.layers);
    CHECK(x.moe_layers == y.moe_layers);
    const double xs[] = {x.forward_s, x.backward_s, x.recompute_s, x.weight_s, x.sharded_comm_s,
                         x.grad_accumulation_s, x.moe_comm_s, x.moe_comm_forward_s,
                         x.expert_dp_sync_s, x.cp_comm_s, x.cp_comm_forward_s, x.send_s,
                         x.dp_sync_s, x.optimizer_s, x.offload_s, x.in_flight,
                         x.memory.weights, x.memory.gradients, x.memory.optimizer,
                         x.memory.activations, x.memory.buffers, x.memory.overhead,
                         x.memory_limit_gib, x.host_gib};
    const double ys[] = {y.forward_s, y.backward_s, y.recompute_s, y.weight_s, y.sharded_comm_s,
                         y.grad_accumulation_s, y.moe_comm_s, y.moe_comm_forward_s,
                         y.expert_dp_sync_s, y.cp_comm_s, y.cp_comm_forward_s, y.send_s,
                         y.dp_sync_s, y.optimizer_s, y.offload_s, y.in_flight,
                         y.memory.weights, y.memory.gradients, y.memory.optimizer,
                         y.memory.activations, y.memory.buffers, y.memory.overhead,
                         y.memory_limit_gib, y.host_gib};
    for (std::size_t f = 0; f < std::size(xs); ++f) {
      INFO("field " << f << ": " << xs[f] << " against " << ys[f]);
      CHECK(same_bits(xs[f], ys[f]));
    }
  }
  const double xs[] = {a.step_s,      a.pipeline_s, a.dp_sync_s,       a.embedding_sync_s,
                       a.optimizer_s, a.offload_s,  a.peak_memory_gib, a.host_gib_per_node};
  const double ys[] = {b.step_s,      b.pipeline_s, b.dp_sync_s,       b.embedding_sync_s,
                       b.optimizer_s, b.offload_s,  b.peak_memory_gib, b.host_gib_per_node};
  for (std::size_t f = 0; f < std::size(xs); ++f) {
    INFO("total " << f << ": " << xs[f] << " against " << ys[f]);
    CHECK(same_bits(xs[f], ys[f]));
  }
  CHECK(a.peak_stage == b.peak_stage);
  CHECK(a.oom == b.oom);
  CHECK(a.host_oom == b.host_oom);
  CHECK(a.pruned == b.pruned);
}

/// The plan's design points grouped by configuration (same_configuration), in order.
std::vector<std::vector<const DesignPoint*>> configurations(const std::vector<DesignPoint>& points) {
  std::vector<std::vector<const DesignPoint*>> out;
  for (const DesignPoint& p : points) {
    auto it = out.begin();
    while (it != out.end() && !same_configuration(*it->front(), p)) ++it;
    if (it == out.end()) {
      out.push_back({&p});
    } else {
      it->push_back(&p);
    }
  }
  return out;
}

/// A model on a cluster with a global batch: the tests below each walk their own list.
struct Case {
  const char* model;
  std::vector<NodeGroup> groups;
  int batch;
};

} // namespace

TEST_CASE("same_configuration ignores the schedule and the virtual stages only",
          "[search][native_shared]") {
  DesignPoint a;
  a.pp = 4;
  a.num_micro_batches = 16;
  DesignPoint b = a;
  b.schedule = Schedule::zbv;
  b.virtual_stages = 2;
  CHECK(same_configuration(a, b));
  b.mbs = 2;
  CHECK_FALSE(same_configuration(a, b));
  b = a;
  b.recompute = Recompute::full;
  CHECK_FALSE(same_configuration(a, b));
  b = a;
  b.cp = 2;
  CHECK_FALSE(same_configuration(a, b));
}

TEST_CASE("native_estimates equals native_estimate on every point and placement, bit for bit",
          "[search][native_shared]") {
  // Dense and MoE models, one and two node types (heterogeneous stages, min-max partitions),
  // every schedule; with and without pruning limits (a pruned plan's figures too).
  const Case cases[] = {
      {"llama3_8B", {{"H100-SXM", 2}}, 64},
      {"llama2_13B", {{"A100-80GB", 1}, {"H100-SXM", 1}}, 32},
      {"qwen3_30B_A3B", {{"H100-SXM", 2}}, 64},
      {"mistral_7B", {{"A100-40GB", 2}, {"A100-80GB", 1}}, 128},
  };
  std::size_t compared = 0, shared = 0, pruned = 0;
  for (const Case& c : cases) {
    INFO(c.model << ", batch " << c.batch);
    const SearchPlan plan = native_all_schedules_plan(c.model, c.groups, c.batch);
    const NativeContext& n = *plan.context.native;
    const PlacementSet where = placements(plan.context.cluster);
    const std::vector<DesignPoint> points = plan.design_points();
    for (const auto& config : configurations(points)) {
      shared += config.size() > 1 ? config.size() : 0;
      for (std::size_t k = 0; k < where.size(); k += 1 + where.size() / 3) {
        Placement placement;
        where.get(k, placement);
        const NativePlacement at = native_placement(n, *config.front(), placement);
        for (const NativePruning& prune : {NativePruning{}, NativePruning{1.0, 2.0}}) {
          std::vector<NativeEstimate> together;
          native_estimates(n, config, at, prune, together);
          REQUIRE(together.size() == config.size());
          for (std::size_t i = 0; i < config.size(); ++i) {
            const DesignPoint& p = *config[i];
            INFO("tp " << p.tp << " pp " << p.pp << " dp " << p.dp << " mbs " << p.mbs
                       << " schedule " << to_string(p.schedule) << " v " << p.virtual_stages
                       << " method " << to_string(p.method) << " placement " << k);
            require_same(together[i], native_estimate(n, p, at, {}, prune));
            ++compared;
            pruned += together[i].pruned ? 1U : 0U;
          }
        }
      }
    }
  }
  // Configurations with several schedules were compared, pruned plans among them.
  CHECK(shared > 100);
  CHECK(pruned > 0);
  CHECK(compared > 1000);
}

TEST_CASE("split schedules seeded by their 1F1B estimate's share equal native_estimate, bit for bit",
          "[search][native_shared]") {
  // native_estimate_keeping (the search's first phase, a configuration's 1F1B point) equals
  // native_estimate, and native_estimates of the configuration's split schedules started from
  // what it kept (layer times, min-max partition, constants but the weight pass, stage cores)
  // equal native_estimate of each: with and without pruning limits, dense and MoE, one and two
  // node types. A seed whose weight pass were not the split schedule's, or whose partition
  // served the V's, fails here.
  const Case cases[] = {
      {"llama3_8B", {{"H100-SXM", 2}}, 64},
      {"llama2_13B", {{"A100-80GB", 1}, {"H100-SXM", 1}}, 32},
      {"qwen3_30B_A3B", {{"H100-SXM", 2}}, 64},
  };
  std::size_t seeded = 0, pruned = 0;
  for (const Case& c : cases) {
    INFO(c.model << ", batch " << c.batch);
    const SearchPlan plan = native_all_schedules_plan(c.model, c.groups, c.batch);
    const NativeContext& n = *plan.context.native;
    const PlacementSet where = placements(plan.context.cluster);
    const std::vector<DesignPoint> points = plan.design_points();
    for (const auto& config : configurations(points)) {
      const DesignPoint* one = nullptr;
      std::vector<const DesignPoint*> split;
      for (const DesignPoint* p : config) {
        if (p->schedule == Schedule::one_f_one_b && p->virtual_stages == 1) one = p;
        if (is_split_schedule(p->schedule) && p->pp > 1) split.push_back(p);
      }
      if (one == nullptr || split.empty()) continue;
      Placement placement;
      where.get(seeded % where.size(), placement);
      const NativePlacement at = native_placement(n, *one, placement);
      for (const NativePruning& prune : {NativePruning{}, NativePruning{1.0, 2.0}}) {
        NativeConfigSharePtr share;
        INFO("tp " << one->tp << " pp " << one->pp << " dp " << one->dp << " mbs " << one->mbs
                   << " method " << to_string(one->method));
        require_same(native_estimate_keeping(n, *one, at, prune, share), native_estimate(n, *one, at, {}, prune));
        REQUIRE(share != nullptr);
        std::vector<NativeEstimate> together;
        native_estimates(n, split, at, prune, together, share.get());
        REQUIRE(together.size() == split.size());
        for (std::size_t i = 0; i < split.size(); ++i) {
          INFO("schedule " << to_string(split[i]->schedule));
          require_same(together[i], native_estimate(n, *split[i], at, {}, prune));
          ++seeded;
          pruned += together[i].pruned ? 1U : 0U;
        }
      }
    }
  }
  CHECK(seeded > 200);
  CHECK(pruned > 0);
}

TEST_CASE("the stage-level bound of a split plan is never above its simulated makespan",
          "[search][native_shared][prune]") {
  // native_split_stage_bound (what the pruning search tries before the chunk times and
  // pipe_fill_bound) against the simulation, on every split plan of dense and MoE models (F&B
  // pairs hiding the all-to-all), heterogeneous stages, every method and recompute.
  const Case cases[] = {
      {"llama3_8B", {{"H100-SXM", 2}}, 64},
      {"llama2_13B", {{"A100-80GB", 1}, {"H100-SXM", 1}}, 128},
      {"qwen3_30B_A3B", {{"H100-SXM", 2}}, 64},
      {"mixtral_8x7B", {{"H100-SXM", 4}}, 256},
  };
  std::size_t compared = 0, tight = 0, stopped_early = 0;
  for (const Case& c : cases) {
    INFO(c.model << ", batch " << c.batch);
    const SearchPlan plan = native_all_schedules_plan(c.model, c.groups, c.batch);
    const NativeContext& n = *plan.context.native;
    const PlacementSet where = placements(plan.context.cluster);
    for (const DesignPoint& p : plan.design_points()) {
      if (!is_split_schedule(p.schedule) || p.pp < 2) continue;
      Placement placement;
      where.get(compared % where.size(), placement);
      const NativePlacement at = native_placement(n, p, placement);
      const NativeEstimate est = native_estimate(n, p, at);
      const double bound = native_split_stage_bound(n, p, est);
      INFO("tp " << p.tp << " pp " << p.pp << " dp " << p.dp << " mbs " << p.mbs << " schedule "
                 << to_string(p.schedule) << " method " << to_string(p.method));
      CHECK(bound <= est.pipeline_s);
      CHECK(bound > 0.0);
      tight += bound > 0.9 * est.pipeline_s ? 1U : 0U;
      ++compared;
      // Stopped at limits around the plan's step time (BoundStop): never above the whole
      // bound, and past a limit exactly when the whole bound is (the same pruning).
      const double rest = est.dp_sync_s + est.embedding_sync_s + est.optimizer_s + est.offload_s;
      for (const double f : {0.0, 0.3, 0.6, 0.9, 0.99, 1.0, 1.5}) {
        const double limit = f * (bound + rest);
        const double stopped = native_split_stage_bound(n, p, est, limit);
        INFO("limit " << limit);
        CHECK(stopped <= bound);
        const auto past = [&](double x) {
          return x + est.dp_sync_s + est.embedding_sync_s + est.optimizer_s + est.offload_s > limit;
        };
        CHECK(past(stopped) == past(bound));
        if (!past(bound)) CHECK(stopped == bound);
        stopped_early += stopped < bound ? 1U : 0U;
      }
    }
  }
  CHECK(compared > 1000);
  // A bound, not a zero: most plans within 10 % of their makespan.
  CHECK(tight > compared / 2);
  // Low limits stop the bound before its last rank on many plans.
  CHECK(stopped_early > compared / 2);
}

TEST_CASE("a split plan pruned on its stage bound keeps its exact OOM flag",
          "[search][native_shared][prune]") {
  // With limits at 0 every split plan is pruned at its stage bound whether it fits or not
  // (bounded_split_stages), where its memory is computed only for the stages whose in-flight
  // figure exceeds that of an earlier stage of the same core: its OOM flag must be the full
  // estimate's, on every split plan of dense and MoE models, one and two node types.
  const Case cases[] = {
      {"llama3_8B", {{"H100-SXM", 2}}, 64},
      {"llama2_13B", {{"A100-80GB", 1}, {"H100-SXM", 1}}, 128},
      {"qwen3_30B_A3B", {{"H100-SXM", 2}}, 64},
      {"mistral_7B", {{"A100-40GB", 2}, {"A100-80GB", 1}}, 128},
  };
  std::size_t fit = 0, oom = 0;
  for (const Case& c : cases) {
    INFO(c.model << ", batch " << c.batch);
    const SearchPlan plan = native_all_schedules_plan(c.model, c.groups, c.batch);
    const NativeContext& n = *plan.context.native;
    const PlacementSet where = placements(plan.context.cluster);
    std::size_t k = 0;
    for (const DesignPoint& p : plan.design_points()) {
      if (!is_split_schedule(p.schedule) || p.pp < 2) continue;
      Placement placement;
      where.get(k++ % where.size(), placement);
      const NativePlacement at = native_placement(n, p, placement);
      const NativeEstimate full = native_estimate(n, p, at);
      const NativeEstimate pruned = native_estimate(n, p, at, {}, NativePruning{0.0, 0.0});
      INFO("tp " << p.tp << " pp " << p.pp << " dp " << p.dp << " mbs " << p.mbs << " schedule "
                 << to_string(p.schedule) << " method " << to_string(p.method));
      CHECK(pruned.pruned);
      CHECK(pruned.oom == full.oom);
      // A lower bound of the step time (the stage bound with the stages' terms read).
      CHECK(pruned.step_s <= full.step_s);
      (full.oom ? oom : fit) += 1;
    }
  }
  // Both kinds, many of each.
  CHECK(fit > 200);
  CHECK(oom > 200);
}

TEST_CASE("the search's units of split schedules give every row its own estimate",
          "[search][native_shared]") {
  const SearchPlan plan =
      native_all_schedules_plan("llama3_8B", {{"A100-80GB", 1}, {"H100-SXM", 2}}, 128);
  const PlacementSet where = placements(plan.context.cluster);
  const std::vector<DesignPoint> points = plan.design_points();
  // Units of several points: the split schedules of one configuration.
  std::size_t multi = 0;
  for (const auto& unit : search_steps::work_units(plan.context, points)) {
    if (unit.size() > 1) {
      ++multi;
      for (const std::size_t i : unit) {
        CHECK(is_split_schedule(points[i].schedule));
        CHECK(same_configuration(points[i], points[unit.front()]));
      }
    }
  }
  CHECK(multi > 10);
  // Every row, in enumeration order (point by point, placement by placement), against the
  // point's own estimate on that placement.
  for (const unsigned threads : {1U, 2U}) {
    SearchOptions so;
    so.threads = threads;
    const SearchResult all = search(plan.context, points, where, so);
    REQUIRE(all.rows.size() == points.size() * where.size());
    const NativeContext& n = *plan.context.native;
    Placement placement;
    for (std::size_t r = 0; r < all.rows.size(); ++r) {
      const ResultRow& row = all.rows[r];
      REQUIRE(row.point == points[r / where.size()]);
      REQUIRE(row.placement == static_cast<int>(r % where.size()));
      where.get(r % where.size(), placement);
      const Estimate direct = to_estimate(
          plan.context, native_estimate(n, row.point, native_placement(n, row.point, placement)));
      INFO("row " << r << " schedule " << to_string(row.point.schedule));
      CHECK(same_estimate(row.estimate, direct));
    }
  }
}
