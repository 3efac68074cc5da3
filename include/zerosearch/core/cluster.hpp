#pragma once
// The cluster: node types in command-line order, node counts, GPUs per node, and the node
// placements (orders of nodes) the search tries.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace zerosearch {

struct NodeGroup {
  std::string gpu;
  int count = 0;
};

struct Cluster {
  /// Node types in command-line order; counts may be zero in Pareto compositions.
  std::vector<NodeGroup> groups;
  int gpus_per_node = 4;
  /// The order in which the groups' nodes are laid out in the base node list, as indices into
  /// `groups` (each once). Empty: command-line order. A Pareto composition lists its second
  /// type's nodes first, as the original does, while `groups` keeps command-line order for the
  /// node-count columns.
  std::vector<int> node_order;

  [[nodiscard]] int num_nodes() const noexcept;
  [[nodiscard]] int world_size() const noexcept { return num_nodes() * gpus_per_node; }
  /// Number of node types with at least one node.
  [[nodiscard]] int types_present() const noexcept;
};


/// A placement: the node-type index (into Cluster::groups) of each node, in rank order.
/// GPU rank r lives on node r / gpus_per_node.
using Placement = std::vector<int>;

/// The base node list: each group's nodes together, groups in `node_order` (default: type order).
[[nodiscard]] Placement base_placement(const Cluster& cluster);

/// The placements a search tries, made on demand: one base node list and, when `rotated`, its
/// rotations l[k:] + l[:k] for k = 0..N-1. Holds N node indices, not N lists of N.
class PlacementSet {
public:
  PlacementSet() = default;
  /// The one placement `one` (--exhaustive --placement).
  explicit PlacementSet(Placement one) : base_(std::move(one)) {}
  /// `base` and all its rotations.
  [[nodiscard]] static PlacementSet rotations(Placement base);

  [[nodiscard]] std::size_t size() const noexcept;
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  /// Placement k: base[k:] + base[:k]. k < size().
  [[nodiscard]] Placement operator[](std::size_t k) const;
  /// The same into `out`, reusing its memory.
  void get(std::size_t k, Placement& out) const;
  [[nodiscard]] Placement front() const { return (*this)[0]; }
  /// Every placement as its own list: N lists of N nodes, for tests and small clusters.
  [[nodiscard]] std::vector<Placement> to_vector() const;
  /// Placement 0; placement k is its rotation by k.
  [[nodiscard]] const Placement& base() const noexcept { return base_; }

private:
  Placement base_;
  bool rotated_ = false;
};

/// The base node list, and for a cluster of more than one present type all its rotations
/// l[i:] + l[:i] for i = 0..N-1 (the original's cyclic placements).
[[nodiscard]] PlacementSet placements(const Cluster& cluster);

/// Placement written as the original's Python list: ['A10', 'A10', 'A6000'].
[[nodiscard]] std::string placement_to_python(const Cluster& cluster, const Placement& p);

/// The GPU-type index each pipeline stage runs on (docs/model.md §3). `slowness[g]` orders types:
/// the larger, the slower; a group of nodes is bound by its slowest present type.
[[nodiscard]] std::vector<int> stage_gpu_types(int pp, const Placement& placement,
                                               const std::vector<double>& slowness);

/// Python's float floor division `a // b` (fmod based), bit-exact, for the pp > N rule.
[[nodiscard]] double python_floordiv(double a, double b) noexcept;

} // namespace zerosearch
