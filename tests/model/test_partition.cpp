#include <catch2/catch.hpp>

#include "zerosearch/model/partition.hpp"

using namespace zerosearch;

TEST_CASE("the initial partition adds the remainder last stage first", "[partition]") {
  CHECK(initial_partition(42, 8) == std::vector<int>{6, 5, 5, 5, 5, 5, 5, 6});
  CHECK(initial_partition(42, 4) == std::vector<int>{11, 10, 10, 11});
  CHECK(initial_partition(50, 3) == std::vector<int>{17, 16, 17});
  CHECK(initial_partition(42, 1) == std::vector<int>{42});
}

TEST_CASE("stage times sum layer costs and place the link times", "[partition]") {
  const std::vector<double> costs{1, 2, 3, 4, 5, 6};
  PartitionProblem p{{&costs, &costs, &costs}, {0.5, 0.25}};
  const auto t = stage_times(p, {2, 2, 2});
  CHECK(t.comp_s == std::vector<double>{3, 7, 11});
  CHECK(t.for_send_s == std::vector<double>{0.5, 0, 0});
  CHECK(t.comm_s == std::vector<double>{0, 0.5, 0});
  CHECK(t.back_send_s == std::vector<double>{0, 0, 0.25});
  CHECK(t.stage_time(1) == 7.5);
}

TEST_CASE("minmax on a tiny profile, worked by hand", "[partition]") {
  // Layers cost 1 each except a heavy last one (4); 2 stages, no link time.
  const std::vector<double> costs{1, 1, 1, 1, 1, 4};
  PartitionProblem p{{&costs, &costs}, {0.0}};
  // Trace: [3,3] t=[3,6] max 6 -> imax 1 has 3 layers, move: [4,2], moved.
  //        [4,2] t=[4,5] max 5 < 6; imax 1 with part 2 at the last stage -> undo: [3,3], stop.
  // The returned times are the stale ones of [4,2] (the original's behaviour).
  const auto r = minmax_partition(p);
  CHECK(r.partition == std::vector<int>{3, 3});
  CHECK(r.times.comp_s == std::vector<double>{4, 5});
}

TEST_CASE("minmax balances uniform layers", "[partition]") {
  const std::vector<double> costs(12, 1.0);
  PartitionProblem p{{&costs, &costs, &costs}, {0.0, 0.0}};
  const auto r = minmax_partition(p);
  CHECK(r.partition == std::vector<int>{4, 4, 4});
}

TEST_CASE("minmax moves layers off a slow GPU's stage", "[partition]") {
  const std::vector<double> slow(10, 2.0);
  const std::vector<double> fast(10, 1.0);
  PartitionProblem p{{&slow, &fast}, {0.0}};
  const auto r = minmax_partition(p);
  CHECK(r.partition[0] < r.partition[1]);
  CHECK(r.partition[0] + r.partition[1] == 10);
}
