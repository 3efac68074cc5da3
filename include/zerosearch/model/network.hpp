#pragma once
// The network beyond two tiers (docs/native.md §2.5): a node type's scale-up domain (GPUs on one
// NVLink fabric, possibly many nodes: a GB200 NVL72 rack is 18 trays of 4) and the scale-out
// network's oversubscription, and where the groups of a design point's ranks fall in them.
#include <string>
#include <vector>

#include "zerosearch/core/hardware.hpp"

namespace zerosearch {

/// The tiers a node type's GPUs talk over at `node_gpus` GPUs per node.
struct NetworkTiers {
  /// GPUs of one node.
  int node_gpus = 1;
  /// GPUs of one scale-up domain: a multiple of node_gpus; node_gpus when the node is the domain.
  int domain_gpus = 1;
  /// Scale-out bandwidth over what crosses the fabric's top: traffic between domains gets
  /// 1 / oversubscription of a GPU's network share (1: full bisection).
  double oversubscription = 1.0;
  /// True when a domain holds more than one node (the scale-up tier reaches across nodes).
  [[nodiscard]] bool multi_node_domain() const noexcept { return domain_gpus > node_gpus; }
};

/// The tiers of `gpu` at `gpus_per_node` GPUs per node: the catalog's domain rounded down to
/// whole nodes (at least one node: 72 at 16 per node is 64), its oversubscription.
[[nodiscard]] NetworkTiers network_tiers(const GpuSpec& gpu, int gpus_per_node) noexcept;

/// A line for the run's notes when `gpu` at `gpus_per_node` has a domain of several nodes or an
/// oversubscribed network; empty otherwise.
[[nodiscard]] std::string network_note(const GpuSpec& gpu, int gpus_per_node);

/// Tensor-parallel degrees on NVLink at `gpus_per_node` GPUs per node in scale-up domains of
/// `domain_gpus` (a multiple of the node; the node itself when it is the domain): the divisors
/// of the node, then the multiples of the node that divide the domain, ascending (GB200 NVL72
/// trays of 4: 1, 2, 4, 8, 12, 24, 36, 72; an 8-GPU node without a domain: 1, 2, 4, 8). A tp
/// group of such a degree never straddles a domain: ranks are numbered tp innermost.
[[nodiscard]] std::vector<int> nvlink_tp_degrees(int gpus_per_node, int domain_gpus);

/// The scale-up domain all of `gpus` share at `gpus_per_node` GPUs per node: the greatest common
/// divisor of their domains (each whole nodes), so that a group inside one of its blocks is
/// inside a domain whichever type holds it; the node when one type's node is its domain.
[[nodiscard]] int shared_domain_gpus(const std::vector<const GpuSpec*>& gpus, int gpus_per_node) noexcept;

/// How a group of n ranks spaced `stride` apart (tp: 1; cp: tp; dp x cp: tp; ep: etp; edp:
/// ep x etp) falls into scale-up domains of `domain_gpus` GPUs, ranks numbered from 0 to
/// `world` - 1 with the group's instances tiling them (instance b holds the ranks b x n x stride
/// + o + k x stride, o < stride, k < n).
struct DomainSplit {
  /// The fewest members of one instance inside one domain (n: every instance is inside one).
  int members = 1;
  /// The most domains one instance touches (1: none crosses a domain).
  int domains = 1;
};
[[nodiscard]] DomainSplit group_domain_split(int n, int stride, int domain_gpus,
                                             long long world) noexcept;

/// Whether ranks a and b (0 <= a <= b) lie in different scale-up domains.
[[nodiscard]] inline bool crosses_domain(long long a, long long b, int domain_gpus) noexcept {
  return a / domain_gpus != b / domain_gpus;
}

} // namespace zerosearch
