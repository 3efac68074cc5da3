#include <catch2/catch.hpp>

#include "zerosearch/search/pareto.hpp"

using namespace zerosearch;

TEST_CASE("Pareto compositions: T1 nodes first, counts in command-line order", "[pareto]") {
  const auto cs = pareto_compositions("A10", "A6000", 2, 4);
  REQUIRE(cs.size() == 8);
  // a (A6000 count) outer, b (A10 count) inner, skipping 0 + 0.
  CHECK(cs[0].groups[0].count == 1);
  CHECK(cs[0].groups[1].count == 0);
  CHECK(cs[3].groups[0].count == 1);
  CHECK(cs[3].groups[1].count == 1);
  CHECK(cs[7].groups[0].count == 2);
  CHECK(cs[7].groups[1].count == 2);
  CHECK(cs[7].groups[0].gpu == "A10");
  CHECK(cs[7].gpus_per_node == 4);
  // 2 A6000 then 2 A10, and its rotations.
  CHECK(base_placement(cs[7]) == Placement{1, 1, 0, 0});
  CHECK(placements(cs[7]).size() == 4);
  CHECK(placements(cs[7])[1] == Placement{1, 0, 0, 1});
  CHECK(placements(cs[1]).size() == 1); // one type only: no rotations
}

namespace {
struct Rows {
  RunResult run;
  std::vector<RankedRow> ranked;
  void add(double step, double price, bool oom, double train_cost = 0.0) {
    ResultRow r;
    r.estimate.step_s = step;
    r.estimate.price_per_step_usd = price;
    r.estimate.train_cost_usd = train_cost;
    r.estimate.oom = oom;
    run.rows.push_back(r);
  }
  void rank() {
    ranked.clear();
    for (const auto& r : run.rows) {
      ranked.push_back(RankedRow{&run, &r, 0, 0, false});
    }
  }
};
} // namespace

TEST_CASE("the front: feasible rows no other feasible row beats on both", "[pareto]") {
  Rows t;
  t.add(10, 5, false);  // 0 front: fastest
  t.add(12, 3, false);  // 1 front
  t.add(12, 4, false);  // 2 dominated by 1 (same time, dearer)
  t.add(15, 3, false);  // 3 dominated by 1 (slower, same price)
  t.add(20, 1, false);  // 4 front: cheapest
  t.add(5, 0.5, true);  // 5 OOM: never on the front, dominates nothing
  t.add(20, 1, false);  // 6 equal to 4: on the front too
  t.add(25, 2, false);  // 7 dominated
  t.rank();
  mark_pareto_front(t.ranked);
  std::vector<bool> front;
  for (const auto& r : t.ranked) {
    front.push_back(r.on_front);
  }
  CHECK(front == std::vector<bool>{true, true, false, false, true, false, true, false});
}

TEST_CASE("plans within a limit", "[pareto]") {
  Rows t;
  t.add(10, 5, false, 500);
  t.add(12, 3, false, 300);
  t.add(20, 1, false, 100);
  t.add(8, 0.1, true, 10); // OOM: never chosen
  t.rank();
  CHECK(cheapest_within_time(t.ranked, 12.0) == std::optional<std::size_t>(1));
  CHECK(cheapest_within_time(t.ranked, 100.0) == std::optional<std::size_t>(2));
  CHECK_FALSE(cheapest_within_time(t.ranked, 9.0));
  CHECK(fastest_within_price(t.ranked, 3.0) == std::optional<std::size_t>(1));
  CHECK(fastest_within_price(t.ranked, 100.0) == std::optional<std::size_t>(0));
  CHECK_FALSE(fastest_within_price(t.ranked, 0.5));
  CHECK(fastest_within_budget(t.ranked, 100.0) == std::optional<std::size_t>(2));
  CHECK_FALSE(fastest_within_budget(t.ranked, 50.0));
}
