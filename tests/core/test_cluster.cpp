#include <catch2/catch.hpp>

#include "zerosearch/core/cluster.hpp"

using namespace zerosearch;

TEST_CASE("placements: one for a single type, all rotations for a mix", "[cluster]") {
  Cluster homo{{{"A10", 3}}, 4, {}};
  CHECK(placements(homo).to_vector() == std::vector<Placement>{{0, 0, 0}});
  Cluster mix{{{"A10", 1}, {"A6000", 2}}, 4, {}};
  CHECK(placements(mix).to_vector() == std::vector<Placement>{{0, 1, 1}, {1, 1, 0}, {1, 0, 1}});
  // A type with zero nodes (a Pareto composition) does not make the cluster mixed.
  Cluster one{{{"A10", 0}, {"A6000", 2}}, 4, {}};
  CHECK(placements(one).size() == 1);
  CHECK(placement_to_python(mix, {0, 1, 1}) == "['A10', 'A6000', 'A6000']");
}

TEST_CASE("stage GPU types follow the original's rules", "[cluster]") {
  const std::vector<double> slowness{2.0, 1.0}; // type 0 (A10) is slower than type 1
  const Placement p{1, 0, 1, 1};                // A6000 A10 A6000 A6000
  // pp == 1: the slowest type present.
  CHECK(stage_gpu_types(1, p, slowness) == std::vector<int>{0});
  CHECK(stage_gpu_types(1, {1, 1}, slowness) == std::vector<int>{1});
  // pp < N: each stage spans N/pp nodes and takes the slowest of them.
  CHECK(stage_gpu_types(2, p, slowness) == std::vector<int>{0, 1});
  // pp == N: one node each.
  CHECK(stage_gpu_types(4, p, slowness) == std::vector<int>{1, 0, 1, 1});
  // pp > N: stage s on node floor(s / (pp/N)).
  CHECK(stage_gpu_types(8, p, slowness) == std::vector<int>{1, 1, 0, 0, 1, 1, 1, 1});
  // pp < N with a fractional share: 8 nodes, 3 stages -> nodes 0-1, 2-4, 5-7.
  const Placement q{1, 1, 1, 1, 1, 0, 1, 1};
  CHECK(stage_gpu_types(3, q, slowness) == std::vector<int>{1, 1, 0});
}

TEST_CASE("Python float floor division, bit for bit", "[cluster]") {
  CHECK(python_floordiv(3.0, 4.0 / 3.0) == 2.0);
  CHECK(python_floordiv(1.0, 4.0 / 3.0) == 0.0);
  CHECK(python_floordiv(7.0, 2.0) == 3.0);
  // Where floor(a / b) and Python's a // b differ: 3 // 0.1 == 29.0 (3 / 0.1 rounds to 30).
  CHECK(python_floordiv(3.0, 0.1) == 29.0);
}

TEST_CASE("a cluster can carry its node order", "[cluster]") {
  Cluster c{{{"A10", 1}, {"A6000", 2}}, 4, {1, 0}};
  CHECK(base_placement(c) == Placement{1, 1, 0});
  CHECK(placements(c).to_vector() == std::vector<Placement>{{1, 1, 0}, {1, 0, 1}, {0, 1, 1}});
  c.node_order.clear();
  CHECK(base_placement(c) == Placement{0, 1, 1});
}
