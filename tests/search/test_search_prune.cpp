// Exact pruning of the split schedules' simulations (SearchOptions::prune): a search that skips
// the simulations its lower bound rules out returns what the search that simulates every plan
// returns, row for row and count for count.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "../fixtures.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/search/search.hpp"

using namespace zerosearch;
using zerosearch::test::native_all_schedules_plan;
using zerosearch::test::shipped_catalogs;

namespace {


SearchResult run(const SearchPlan& plan, const PlacementSet& where, const RowFilter& keep,
                 bool prune, unsigned threads) {
  SearchOptions so;
  so.keep = keep;
  so.prune = prune;
  so.threads = threads;
  return search(plan.context, plan.design_points(), where, so);
}

/// The two results are the same: kept rows (points, placements, estimates to the bit), the
/// totals, the left-out times and the OOM rows.
void require_same(const SearchResult& pruned, const SearchResult& full) {
  REQUIRE(pruned.estimates == full.estimates);
  REQUIRE(pruned.oom == full.oom);
  REQUIRE(pruned.rows.size() == full.rows.size());
  for (std::size_t i = 0; i < full.rows.size(); ++i) {
    INFO("row " << i);
    CHECK(pruned.rows[i].point == full.rows[i].point);
    CHECK(pruned.rows[i].placement == full.rows[i].placement);
    CHECK(pruned.rows[i].placements == full.rows[i].placements);
    CHECK(same_estimate(pruned.rows[i].estimate, full.rows[i].estimate));
  }
  REQUIRE(pruned.left_out.size() == full.left_out.size());
  for (std::size_t i = 0; i < full.left_out.size(); ++i) {
    CHECK(pruned.left_out[i].step_s == full.left_out[i].step_s);
    CHECK(pruned.left_out[i].rows == full.left_out[i].rows);
  }
  REQUIRE(pruned.oom_rows.size() == full.oom_rows.size());
  for (std::size_t i = 0; i < full.oom_rows.size(); ++i) {
    CHECK(pruned.oom_rows[i].point == full.oom_rows[i].point);
    CHECK(same_estimate(pruned.oom_rows[i].estimate, full.oom_rows[i].estimate));
  }
}

} // namespace

TEST_CASE("pruning the split schedules' simulations changes no row, count or rank",
          "[search][prune]") {
  const SearchPlan plan = native_all_schedules_plan("llama3_8B", {{"H100-SXM", 4}}, 256);
  const PlacementSet where = placements(plan.context.cluster);
  // The plain run's policy (the summary's 10 best distinct rows that fit, its 256 fastest OOM
  // rows), fewer rows, every row per placement, OOM rows ranked among the others.
  const RowFilter filters[] = {RowFilter{true, true, 10, 256}, RowFilter{true, true, 3, 0},
                               RowFilter{false, false, 5, 0}, RowFilter{true, false, 10, 16}};
  std::uint64_t pruned = 0;
  for (const RowFilter& keep : filters) {
    for (const unsigned threads : {1U, 2U}) {
      INFO("top " << keep.top << ", oom_top " << keep.oom_top << ", threads " << threads);
      const SearchResult full = run(plan, where, keep, false, threads);
      const SearchResult fast = run(plan, where, keep, true, threads);
      CHECK(full.pruned == 0);
      require_same(fast, full);
      pruned += fast.pruned;
    }
  }
  // The bound does rule out simulations (else this test compares a search with itself).
  CHECK(pruned > 0);
}

TEST_CASE("pruning is exact on random clusters, models and batches", "[search][prune]") {
  std::mt19937 rng(28);
  const char* models[] = {"llama3_8B", "llama2_13B", "mistral_7B"};
  const char* gpus[] = {"H100-SXM", "A100-80GB", "A100-40GB"};
  const int batches[] = {32, 64, 128, 512};
  std::uint64_t pruned = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const std::string model = models[rng() % 3];
    std::vector<NodeGroup> groups{{gpus[rng() % 3], 1 + static_cast<int>(rng() % 3)}};
    if (rng() % 2 == 0) {
      // Stages on two node types: heterogeneous stage times.
      groups.push_back({gpus[rng() % 3], 1});
      if (groups[1].gpu == groups[0].gpu) groups.pop_back();
    }
    const int batch = batches[rng() % 4];
    const std::size_t top = 1 + rng() % 12;
    INFO("trial " << trial << ": " << model << " on " << groups.size() << " node types, batch "
                  << batch << ", top " << top);
    const SearchPlan plan = native_all_schedules_plan(model, groups, batch);
    const PlacementSet where = placements(plan.context.cluster);
    const RowFilter keep{rng() % 2 == 0, rng() % 2 == 0, top, rng() % 2 == 0 ? 0U : 8U};
    const SearchResult full = run(plan, where, keep, false, 1);
    const SearchResult fast = run(plan, where, keep, true, 1);
    require_same(fast, full);
    pruned += fast.pruned;
  }
  CHECK(pruned > 0);
}

TEST_CASE("nothing is pruned when every row is kept (--exhaustive) or the front is asked",
          "[search][prune]") {
  const SearchPlan plan = native_all_schedules_plan("llama3_8B", {{"H100-SXM", 2}}, 64);
  const PlacementSet where = placements(plan.context.cluster);
  const SearchResult all = run(plan, where, RowFilter{}, true, 1);
  CHECK(all.pruned == 0);
  CHECK(all.rows.size() == all.estimates);
  RowFilter front{true, true, 1, 0};
  front.front = true;
  CHECK(run(plan, where, front, true, 1).pruned == 0);
  // The same policy without the front does prune: the check above is not vacuous.
  CHECK(run(plan, where, RowFilter{true, true, 1, 0}, true, 1).pruned > 0);
}
