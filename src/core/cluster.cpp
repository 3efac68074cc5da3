#include "zerosearch/core/cluster.hpp"

#include <cmath>

namespace zerosearch {

int Cluster::num_nodes() const noexcept {
  int n = 0;
  for (const auto& g : groups) {
    n += g.count;
  }
  return n;
}

int Cluster::types_present() const noexcept {
  int n = 0;
  for (const auto& g : groups) {
    n += g.count > 0 ? 1 : 0;
  }
  return n;
}

Placement base_placement(const Cluster& cluster) {
  Placement base;
  const auto add = [&](std::size_t g) {
    base.insert(base.end(), static_cast<std::size_t>(cluster.groups[g].count), static_cast<int>(g));
  };
  if (cluster.node_order.empty()) {
    for (std::size_t g = 0; g < cluster.groups.size(); ++g) {
      add(g);
    }
  } else {
    for (const int g : cluster.node_order) {
      add(static_cast<std::size_t>(g));
    }
  }
  return base;
}

PlacementSet PlacementSet::rotations(Placement base) {
  PlacementSet set(std::move(base));
  set.rotated_ = true;
  return set;
}

std::size_t PlacementSet::size() const noexcept {
  return rotated_ ? base_.size() : (base_.empty() ? 0 : 1);
}

void PlacementSet::get(std::size_t k, Placement& out) const {
  const auto at = base_.begin() + static_cast<std::ptrdiff_t>(k);
  out.assign(at, base_.end());
  out.insert(out.end(), base_.begin(), at);
}

Placement PlacementSet::operator[](std::size_t k) const {
  Placement p;
  get(k, p);
  return p;
}

std::vector<Placement> PlacementSet::to_vector() const {
  std::vector<Placement> out(size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    get(k, out[k]);
  }
  return out;
}

PlacementSet placements(const Cluster& cluster) {
  Placement base = base_placement(cluster);
  if (cluster.types_present() <= 1) {
    return PlacementSet(std::move(base));
  }
  return PlacementSet::rotations(std::move(base));
}

std::string placement_to_python(const Cluster& cluster, const Placement& p) {
  std::string out = "[";
  for (std::size_t i = 0; i < p.size(); ++i) {
    out += i == 0 ? "'" : ", '";
    out += cluster.groups[static_cast<std::size_t>(p[i])].gpu;
    out += "'";
  }
  out += "]";
  return out;
}

double python_floordiv(double a, double b) noexcept {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0) {
    if ((b < 0.0) != (mod < 0.0)) {
      mod += b;
      div -= 1.0;
    }
  }
  if (div != 0.0) {
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) {
      floordiv += 1.0;
    }
    return floordiv;
  }
  return std::copysign(0.0, a / b);
}

namespace {
/// The slowest node type among placement[first, last).
int slowest_of(const Placement& placement, int first, int last,
               const std::vector<double>& slowness) {
  int best = placement[static_cast<std::size_t>(first)];
  for (int i = first + 1; i < last; ++i) {
    const int g = placement[static_cast<std::size_t>(i)];
    if (slowness[static_cast<std::size_t>(g)] > slowness[static_cast<std::size_t>(best)]) {
      best = g;
    }
  }
  return best;
}
} // namespace

std::vector<int> stage_gpu_types(int pp, const Placement& placement,
                                 const std::vector<double>& slowness) {
  const int n = static_cast<int>(placement.size());
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(pp));
  if (pp == 1) {
    out.push_back(slowest_of(placement, 0, n, slowness));
    return out;
  }
  for (int s = 0; s < pp; ++s) {
    if (pp < n) {
      // The original's int(N/pp*s) .. int(N/pp*(s+1)) in float64.
      const double per_stage = static_cast<double>(n) / static_cast<double>(pp);
      const int first = static_cast<int>(per_stage * s);
      const int last = static_cast<int>(per_stage * (s + 1));
      out.push_back(slowest_of(placement, first, std::max(last, first + 1), slowness));
    } else if (pp > n) {
      const double stages_per_node = static_cast<double>(pp) / static_cast<double>(n);
      const int node = static_cast<int>(python_floordiv(static_cast<double>(s), stages_per_node));
      out.push_back(placement[static_cast<std::size_t>(node)]);
    } else {
      out.push_back(placement[static_cast<std::size_t>(s)]);
    }
  }
  return out;
}

} // namespace zerosearch
