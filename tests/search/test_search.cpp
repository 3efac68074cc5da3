#include <catch2/catch.hpp>

#include <vector>

#include "fixtures.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/search/search.hpp"

using namespace zerosearch;

namespace {
SearchPlan mixed_plan() {
  return testing::llama2_13b_plan({{"A10", 3}, {"A6000", 5}});
}

bool same_rows(const std::vector<ResultRow>& a, const std::vector<ResultRow>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& x = a[i];
    const auto& y = b[i];
    if (x.placement != y.placement || x.point.method != y.point.method || x.point.tp != y.point.tp ||
        x.point.dp != y.point.dp || x.point.mbs != y.point.mbs ||
        x.estimate.step_s != y.estimate.step_s || x.estimate.partition != y.estimate.partition ||
        x.estimate.gpumem_gib != y.estimate.gpumem_gib || x.estimate.oom != y.estimate.oom) {
      return false;
    }
  }
  return true;
}
} // namespace

TEST_CASE("results do not depend on threads or on a progress callback", "[search]") {
  const SearchPlan plan = mixed_plan();
  const auto points = plan.design_points();
  const auto places = placements(plan.context.cluster);
  const auto one = run_search(plan.context, points, places, SearchOptions{1, {}});
  REQUIRE(one.size() == points.size() * places.size());
  std::vector<SearchProgress> seen;
  SearchOptions with_progress{2, [&](const SearchProgress& p) { seen.push_back(p); }};
  const auto two = run_search(plan.context, points, places, with_progress);
  CHECK(same_rows(one, two));
  // Rows come in enumeration order: point-major, then placement.
  CHECK(two[1].placement == 1);
  CHECK(two[places.size()].placement == 0);
  // Progress never goes back and ends at the total.
  REQUIRE_FALSE(seen.empty());
  for (std::size_t i = 1; i < seen.size(); ++i) {
    CHECK(seen[i].done >= seen[i - 1].done);
  }
  CHECK(seen.back().done == seen.back().total);
  CHECK(seen.back().total == one.size());
}

TEST_CASE("memoized placements get the estimate a direct evaluation gives", "[search]") {
  const SearchPlan plan = mixed_plan();
  const auto points = plan.design_points();
  const auto places = placements(plan.context.cluster);
  const auto rows = run_search(plan.context, points, places, SearchOptions{1, {}});
  // Every 37th row, evaluated on its own, without the search's memo.
  for (std::size_t i = 0; i < rows.size(); i += 37) {
    const DesignPoint& p = rows[i].point;
    const auto e = estimate(plan.context, p, layer_costs(plan.context, p),
                            places[static_cast<std::size_t>(rows[i].placement)]);
    CHECK(e.step_s == rows[i].estimate.step_s);
    CHECK(e.partition == rows[i].estimate.partition);
    CHECK(e.gpumem_gib == rows[i].estimate.gpumem_gib);
  }
}
