#include "zerosearch/model/network.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <numeric>

#include <fmt/format.h>

namespace zerosearch {

NetworkTiers network_tiers(const GpuSpec& gpu, int gpus_per_node) noexcept {
  NetworkTiers t;
  t.node_gpus = std::max(1, gpus_per_node);
  t.domain_gpus = std::max(t.node_gpus, gpu.scale_up_domain_gpus / t.node_gpus * t.node_gpus);
  t.oversubscription = gpu.scale_out_oversubscription;
  return t;
}

std::string network_note(const GpuSpec& gpu, int gpus_per_node) {
  const NetworkTiers t = network_tiers(gpu, gpus_per_node);
  const std::string over =
      t.oversubscription == 1.0
          ? std::string()
          : fmt::format("oversubscribed {}:1 (what crosses it gets 1/{} of a GPU's share)",
                        t.oversubscription, t.oversubscription);
  if (t.multi_node_domain()) {
    const std::string whole =
        t.domain_gpus == gpu.scale_up_domain_gpus
            ? std::string()
            : fmt::format("; the catalog's {} in whole nodes", gpu.scale_up_domain_gpus);
    return fmt::format("{}: NVLink domains of {} GPUs ({} nodes of {}{}): groups of ranks inside "
                       "one talk over NVLink across nodes; the network between domains {} "
                       "(docs/native.md §2.5)",
                       gpu.name, t.domain_gpus, t.domain_gpus / t.node_gpus, t.node_gpus, whole,
                       over.empty() ? "has full bisection" : "is " + over);
  }
  if (!over.empty()) {
    return fmt::format("{}: the network between nodes is {} (docs/native.md §2.5)", gpu.name, over);
  }
  return {};
}

std::vector<int> nvlink_tp_degrees(int gpus_per_node, int domain_gpus) {
  const int node = std::max(1, gpus_per_node);
  std::vector<int> out;
  for (int d = 1; d <= node; ++d) {
    if (node % d == 0) out.push_back(d);
  }
  if (domain_gpus > node && domain_gpus % node == 0) {
    for (int k = 2; k <= domain_gpus / node; ++k) {
      if ((domain_gpus / node) % k == 0) out.push_back(k * node);
    }
  }
  return out;
}

int shared_domain_gpus(const std::vector<const GpuSpec*>& gpus, int gpus_per_node) noexcept {
  const int node = std::max(1, gpus_per_node);
  int shared = 0;
  for (const GpuSpec* g : gpus) {
    shared = std::gcd(shared, network_tiers(*g, node).domain_gpus);
  }
  return std::max(node, shared);
}

namespace {

/// Members of the instance whose first rank is x (n ranks, `stride` apart) in each domain it
/// touches: the fewest and how many domains.
DomainSplit instance_split(long long x, long long n, long long stride, long long domain) {
  // f(y): members below rank y.
  const auto below = [&](long long y) {
    if (y <= x) return 0LL;
    return std::min(n, (y - x + stride - 1) / stride);
  };
  const long long last = x + (n - 1) * stride;
  const long long d0 = x / domain, d1 = last / domain;
  DomainSplit s;
  s.domains = static_cast<int>(d1 - d0 + 1);
  long long fewest = n;
  for (long long d = d0; d <= d1; ++d) {
    fewest = std::min(fewest, below((d + 1) * domain) - below(d * domain));
  }
  s.members = static_cast<int>(std::max(1LL, fewest));
  return s;
}

} // namespace

namespace {

DomainSplit compute_split(int n, int stride, int domain_gpus, long long world) noexcept {
  DomainSplit out;
  const long long N = n, s = std::max(1, stride), D = std::max(1, domain_gpus);
  const long long span = N * s;
  out.members = n;
  if (span <= D && D % span == 0) return out; // every instance inside one domain
  if (D % s == 0 && span % D == 0) {           // whole domains, D / s members in each
    out.members = static_cast<int>(D / s);
    out.domains = static_cast<int>(span / D);
    return out;
  }
  // The instances' layout repeats every lcm(span, D) ranks; look at those of the ranks the
  // design point uses (at least one instance). When D is a multiple of the stride, every offset
  // o < stride meets the domain boundaries alike.
  const long long period = std::lcm(span, D);
  const long long blocks = std::max(1LL, std::min(period, std::max(world, span)) / span);
  const long long offsets = D % s == 0 ? 1 : s;
  out.domains = 1;
  for (long long b = 0; b < blocks; ++b) {
    for (long long o = 0; o < offsets; ++o) {
      const DomainSplit one = instance_split(b * span + o, N, s, D);
      out.members = std::min(out.members, one.members);
      out.domains = std::max(out.domains, one.domains);
    }
  }
  return out;
}

/// The last splits asked for, per thread: a search asks for the same few groups for every
/// stage of every design point.
struct SplitCache {
  struct Entry {
    int n = 0, stride = 0, domain = 0;
    long long world = -1;
    DomainSplit split;
  };
  std::array<Entry, 64> entries{};
};

} // namespace

DomainSplit group_domain_split(int n, int stride, int domain_gpus, long long world) noexcept {
  if (n <= 1) return {};
  thread_local SplitCache cache;
  const auto key = static_cast<std::size_t>(n) * 31U + static_cast<std::size_t>(stride) * 7U +
                   static_cast<std::size_t>(world);
  SplitCache::Entry& e = cache.entries[key % cache.entries.size()];
  if (e.n != n || e.stride != stride || e.domain != domain_gpus || e.world != world) {
    e = {n, stride, domain_gpus, world, compute_split(n, stride, domain_gpus, world)};
  }
  return e.split;
}

} // namespace zerosearch
