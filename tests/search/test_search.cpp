#include <catch2/catch.hpp>

#include "fixtures.hpp"

#include <vector>

#include "zerosearch/search/pareto.hpp"
#include "zerosearch/search/partition_choice.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/search/ranking.hpp"
#include "zerosearch/search/search.hpp"

using namespace zerosearch;

namespace {
SearchPlan mixed_plan() { return test::llama_deepspeed_plan({{"A10", 3}, {"A6000", 5}}); }

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
  const auto one = run_search(plan.context, points, places, SearchOptions{1, {}, {}});
  REQUIRE(one.size() == points.size() * places.size());
  std::vector<SearchProgress> seen;
  SearchOptions with_progress{2, [&](const SearchProgress& p) { seen.push_back(p); }, {}};
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
  const auto rows = run_search(plan.context, points, places, SearchOptions{1, {}, {}});
  // Every 37th row, evaluated on its own, without the search's memo.
  for (std::size_t i = 0; i < rows.size(); i += 37) {
    const DesignPoint& p = rows[i].point;
    const auto e = choose_and_estimate(plan.context, p, layer_costs(plan.context, p),
                                       places[static_cast<std::size_t>(rows[i].placement)]);
    CHECK(e.step_s == rows[i].estimate.step_s);
    CHECK(e.partition == rows[i].estimate.partition);
    CHECK(e.gpumem_gib == rows[i].estimate.gpumem_gib);
  }
}

TEST_CASE("points that share a pipeline get what a search of each alone gives", "[search]") {
  // ZeRO 0 and 1 points are searched together (one partition and 1F1B simulation per
  // placement); a search of the ZeRO 1 points alone evaluates each on its own.
  const SearchPlan plan = mixed_plan();
  const auto points = plan.design_points();
  const auto places = placements(plan.context.cluster);
  std::vector<DesignPoint> zero1;
  for (const DesignPoint& p : points) {
    if (p.method == DpMethod::zero1) zero1.push_back(p);
  }
  REQUIRE_FALSE(zero1.empty());
  const auto all = run_search(plan.context, points, places, SearchOptions{2, {}, {}});
  std::vector<ResultRow> from_all;
  for (const ResultRow& r : all) {
    if (r.point.method == DpMethod::zero1) from_all.push_back(r);
  }
  const auto alone = run_search(plan.context, zero1, places, SearchOptions{1, {}, {}});
  CHECK(same_rows(from_all, alone));
  for (std::size_t i = 0; i < alone.size(); ++i) {
    CHECK(from_all[i].estimate.pipeline_s == alone[i].estimate.pipeline_s);
    CHECK(from_all[i].estimate.dp_sync_s == alone[i].estimate.dp_sync_s);
  }
}

namespace {

/// rank_results of one run.
std::vector<RankedRow> ranked_of(const std::vector<RunResult>& runs) { return rank_results(runs); }

/// The first `top` rows (0: all), OOM rows left out when `feasible`.
std::vector<RankedRow> take(const std::vector<RankedRow>& rows, bool feasible, std::size_t top) {
  std::vector<RankedRow> out;
  for (const RankedRow& r : rows) {
    if (top != 0 && out.size() == top) break;
    if (feasible && r.row->estimate.oom) continue;
    out.push_back(r);
  }
  return out;
}

} // namespace

TEST_CASE("a filtered search keeps the rows, ranks and counts of the full search's selection",
          "[search]") {
  // 8 + 8 nodes: rotations that give the same estimate, OOM rows faster than feasible ones.
  const SearchPlan plan = test::llama_deepspeed_plan({{"A10", 8}, {"A6000", 8}});
  const auto points = plan.design_points();
  std::vector<RunResult> full(1);
  full[0].cluster = plan.context.cluster;
  full[0].placements = placements(plan.context.cluster);
  full[0].rows = run_search(plan.context, points, full[0].placements, SearchOptions{1, {}, {}});
  const auto all = ranked_of(full);
  const auto all_distinct = distinct_rows(all);
  REQUIRE(all_distinct.size() < all.size());
  std::uint64_t oom = 0;
  for (const auto& r : all) oom += r.row->estimate.oom ? 1 : 0;
  REQUIRE(oom > 0);

  for (const bool distinct : {false, true}) {
    for (const bool feasible : {false, true}) {
      for (const std::size_t top : {std::size_t{0}, std::size_t{1}, std::size_t{7},
                                    std::size_t{100}}) {
        for (const unsigned threads : {1U, 2U}) {
          INFO("distinct " << distinct << " feasible " << feasible << " top " << top
                           << " threads " << threads);
          SearchOptions so{threads, {}, RowFilter{distinct, feasible, top, 5}};
          SearchResult found = search(plan.context, points, full[0].placements, so);
          CHECK(found.estimates == all.size());
          CHECK(found.oom == oom);
          // The 5 fastest OOM rows, apart, in rank order (none when every row is kept).
          std::vector<const RankedRow*> fastest_oom;
          for (const RankedRow& r : distinct ? all_distinct : all) {
            if (r.row->estimate.oom && fastest_oom.size() < 5) fastest_oom.push_back(&r);
          }
          const bool keep_all = !feasible && top == 0;
          REQUIRE(found.oom_rows.size() == (keep_all ? 0 : fastest_oom.size()));
          for (std::size_t i = 0; i < found.oom_rows.size(); ++i) {
            const ResultRow& e = *fastest_oom[i]->row;
            CHECK(found.oom_rows[i].placement == e.placement);
            CHECK(found.oom_rows[i].placements == fastest_oom[i]->placements);
            CHECK(found.oom_rows[i].point.method == e.point.method);
            CHECK(found.oom_rows[i].point.dp == e.point.dp);
            CHECK(same_estimate(found.oom_rows[i].estimate, e.estimate));
          }
          std::vector<RunResult> runs(1);
          runs[0].cluster = full[0].cluster;
          runs[0].placements = full[0].placements;
          runs[0].rows = std::move(found.rows);
          runs[0].left_out = std::move(found.left_out);
          const auto got = ranked_of(runs);
          const auto expected = take(distinct ? all_distinct : all, feasible, top);
          REQUIRE(got.size() == expected.size());
          for (std::size_t i = 0; i < got.size(); ++i) {
            const ResultRow& g = *got[i].row;
            const ResultRow& e = *expected[i].row;
            CHECK(got[i].rank == expected[i].rank);
            CHECK(got[i].real_rank == expected[i].real_rank);
            CHECK(got[i].placements == expected[i].placements);
            CHECK(g.placement == e.placement);
            CHECK(g.point.method == e.point.method);
            CHECK(g.point.tp == e.point.tp);
            CHECK(g.point.dp == e.point.dp);
            CHECK(g.point.mbs == e.point.mbs);
            CHECK(same_estimate(g.estimate, e.estimate));
          }
        }
      }
    }
  }
}

TEST_CASE("RowFilter::front keeps every row of the full search's front besides the top rows",
          "[search]") {
  // 8 + 8 nodes: OOM rows are faster than feasible ones, so the top row is not on the front.
  const SearchPlan plan = test::llama_deepspeed_plan({{"A10", 8}, {"A6000", 8}});
  const auto points = plan.design_points();
  std::vector<RunResult> full(1);
  full[0].cluster = plan.context.cluster;
  full[0].placements = placements(plan.context.cluster);
  full[0].rows = run_search(plan.context, points, full[0].placements, SearchOptions{1, {}, {}});
  const auto same_row = [](const ResultRow& a, const ResultRow& b) {
    return a.placement == b.placement && a.point.method == b.point.method &&
           a.point.tp == b.point.tp && a.point.pp == b.point.pp && a.point.dp == b.point.dp &&
           a.point.mbs == b.point.mbs && same_estimate(a.estimate, b.estimate);
  };
  for (const bool distinct : {false, true}) {
    auto all = distinct ? distinct_rows(ranked_of(full)) : ranked_of(full);
    mark_pareto_front(all);
    std::vector<const RankedRow*> on_front;
    for (const RankedRow& r : all) {
      if (r.on_front) on_front.push_back(&r);
    }
    REQUIRE_FALSE(on_front.empty());
    // The top row is OOM: the front adds rows that the top row does not cover.
    REQUIRE(all.front().row->estimate.oom);
    for (const unsigned threads : {1U, 2U}) {
      INFO("distinct " << distinct << " threads " << threads);
      RowFilter keep{distinct, false, 1, 0};
      keep.front = true;
      SearchResult found = search(plan.context, points, full[0].placements,
                                  SearchOptions{threads, {}, keep});
      std::vector<RunResult> runs(1);
      runs[0].cluster = full[0].cluster;
      runs[0].placements = full[0].placements;
      runs[0].rows = std::move(found.rows);
      runs[0].left_out = std::move(found.left_out);
      auto got = ranked_of(runs);
      mark_pareto_front(got);
      // The top row, then the front's rows, each once.
      REQUIRE(got.size() == 1 + on_front.size());
      CHECK(same_row(*got.front().row, *all.front().row));
      CHECK(got.front().rank == 1);
      for (const RankedRow* f : on_front) {
        const auto n = std::count_if(got.begin(), got.end(), [&](const RankedRow& g) {
          return g.on_front && g.placements == f->placements && same_row(*g.row, *f->row);
        });
        CHECK(n == 1);
      }
    }
  }
  // Without `front`, the same filter keeps the top row alone.
  const SearchResult top_only = search(plan.context, points, full[0].placements,
                                       SearchOptions{1, {}, RowFilter{false, false, 1, 0}});
  CHECK(top_only.rows.size() == 1);
}

TEST_CASE("RowFilter::points gives the figures of every row that fits, in row order",
          "[search]") {
  const SearchPlan plan = test::llama_deepspeed_plan({{"A10", 8}, {"A6000", 8}});
  const auto points = plan.design_points();
  const PlacementSet places = placements(plan.context.cluster);
  for (const bool distinct : {false, true}) {
    // Every row (or distinct row), for the expected figures.
    const SearchResult all = search(plan.context, points, places,
                                    SearchOptions{1, {}, RowFilter{distinct, false, 0, 0}});
    std::vector<std::pair<double, double>> expected;
    for (const ResultRow& r : all.rows) {
      if (!r.estimate.oom) expected.emplace_back(r.estimate.step_s, r.estimate.price_per_step_usd);
    }
    REQUIRE(expected.size() < all.rows.size());
    for (const std::size_t top : {std::size_t{0}, std::size_t{3}}) {
      for (const unsigned threads : {1U, 2U}) {
        INFO("distinct " << distinct << " top " << top << " threads " << threads);
        RowFilter keep{distinct, true, top, 0};
        keep.points = true;
        const SearchResult found =
            search(plan.context, points, places, SearchOptions{threads, {}, keep});
        REQUIRE(found.points.size() == expected.size());
        for (std::size_t i = 0; i < expected.size(); ++i) {
          CHECK(found.points[i].step_s == expected[i].first);
          CHECK(found.points[i].price_usd == expected[i].second);
          if (i > 0) CHECK(found.points[i - 1].key < found.points[i].key);
        }
        if (top != 0) CHECK(found.rows.size() == top);
      }
    }
    // Every row kept: the points come from the rows.
    RowFilter every{distinct, false, 0, 0};
    every.points = true;
    const SearchResult kept = search(plan.context, points, places, SearchOptions{2, {}, every});
    CHECK(kept.points.size() == expected.size());
  }
}

TEST_CASE("distinct rows: one per design point and estimate, counts add up to every placement",
          "[search]") {
  const SearchPlan plan = test::llama_deepspeed_plan({{"A10", 8}, {"A6000", 8}});
  const auto points = plan.design_points();
  const PlacementSet places = placements(plan.context.cluster);
  const SearchResult d = search(plan.context, points, places, SearchOptions{2, {}, {true, false, 0}});
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < d.rows.size(); ++i) {
    total += d.rows[i].placements;
    // The representative is the first placement that gives the estimate.
    const DesignPoint& p = d.rows[i].point;
    const auto costs = layer_costs(plan.context, p);
    for (int k = 0; k < d.rows[i].placement; ++k) {
      const auto e = choose_and_estimate(plan.context, p, costs, places[static_cast<std::size_t>(k)]);
      CHECK_FALSE(same_estimate(e, d.rows[i].estimate));
    }
    if (i > 0 && d.rows[i - 1].point.method == p.method && d.rows[i - 1].point.tp == p.tp &&
        d.rows[i - 1].point.dp == p.dp && d.rows[i - 1].point.mbs == p.mbs) {
      CHECK_FALSE(same_estimate(d.rows[i - 1].estimate, d.rows[i].estimate));
    }
  }
  CHECK(total == points.size() * places.size());
  CHECK(d.estimates == total);
}

TEST_CASE("placements are made on demand: rotations of one base list", "[search]") {
  const Cluster c{{{"A10", 2}, {"A6000", 1}}, 4, {}};
  const PlacementSet set = placements(c);
  REQUIRE(set.size() == 3);
  CHECK(set.base() == Placement{0, 0, 1});
  CHECK(set[1] == Placement{0, 1, 0});
  CHECK(set[2] == Placement{1, 0, 0});
  Placement reused{9, 9, 9, 9, 9};
  set.get(2, reused);
  CHECK(reused == Placement{1, 0, 0});
  CHECK(PlacementSet(Placement{1, 0}).size() == 1);
  CHECK(PlacementSet().empty());
}
