#include "zerosearch/search/enumerate.hpp"

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"

namespace zerosearch {

std::vector<int> divisors(int n) {
  // Trial division up to sqrt(n), so that a --custom_gbs of a billion enumerates in
  // microseconds rather than seconds.
  std::vector<int> small;
  std::vector<int> large;
  for (int i = 1; i <= n / i; ++i) {
    if (n % i == 0) {
      small.push_back(i);
      if (i != n / i) {
        large.push_back(n / i);
      }
    }
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

std::vector<DesignPoint> enumerate_design_points(const EnumerateInput& in) {
  std::vector<DesignPoint> out;
  for (const DpMethod method : in.methods) {
    for (const int tp : in.tp_degrees) {
      if (in.world_size % tp != 0) {
        continue;
      }
      if (!allows_tensor_parallel(method, in.estimator) && tp > 1) {
        continue;
      }
      for (const int dp : divisors(in.world_size / tp)) {
        const int pp = in.world_size / (tp * dp);
        if (!info(method).allows_pipeline_parallel && pp > 1) {
          continue;
        }
        if (in.global_batch % dp != 0 || pp > in.num_layers) {
          continue;
        }
        for (const int mbs : divisors(in.global_batch / dp)) {
          out.push_back(DesignPoint{method, tp, dp, pp, mbs, in.global_batch / (dp * mbs)});
        }
      }
    }
  }
  return out;
}

std::optional<std::string> invalid_reason(const DesignPoint& p, int world_size, int global_batch,
                                          int num_layers, int gpus_per_node,
                                          int tp_domain_gpus, Estimator estimator) {
  if (p.tp <= 0 || p.dp <= 0 || p.pp <= 0 || p.mbs <= 0) {
    return "tp, dp, pp and mbs must be positive";
  }
  if (gpus_per_node % p.tp != 0) {
    if (tp_domain_gpus <= gpus_per_node) {
      return fmt::format("tp {} does not divide the {} GPUs per node", p.tp, gpus_per_node);
    }
    if (p.tp % gpus_per_node != 0 || tp_domain_gpus % p.tp != 0) {
      return fmt::format("tp {} neither divides the {} GPUs per node nor is whole nodes dividing "
                         "the {}-GPU NVLink domain",
                         p.tp, gpus_per_node, tp_domain_gpus);
    }
  }
  if (p.cp > 1 && static_cast<long long>(p.tp) * p.cp * p.dp * p.pp != world_size) {
    return fmt::format("tp*cp*dp*pp = {}*{}*{}*{} = {} is not the {} GPUs of the cluster", p.tp,
                       p.cp, p.dp, p.pp, static_cast<long long>(p.tp) * p.cp * p.dp * p.pp,
                       world_size);
  }
  if (p.cp <= 1 && static_cast<long long>(p.tp) * p.dp * p.pp != world_size) {
    return fmt::format("tp*dp*pp = {}*{}*{} = {} is not the {} GPUs of the cluster", p.tp, p.dp,
                       p.pp, static_cast<long long>(p.tp) * p.dp * p.pp, world_size);
  }
  if (!allows_tensor_parallel(p.method, estimator) && p.tp > 1) {
    if (info(p.method).native_allows_tensor_parallel) {
      return fmt::format("{} needs tp 1 with the zerosearch estimator (the original's rule; "
                         "--estimator native takes tp > 1)",
                         to_string(p.method));
    }
    return fmt::format("{} needs tp 1", to_string(p.method));
  }
  if (!info(p.method).allows_pipeline_parallel && p.pp > 1) {
    return fmt::format("{} needs pp 1", to_string(p.method));
  }
  if (p.pp > num_layers) {
    return fmt::format("pp {} exceeds the {} transformer layers", p.pp, num_layers);
  }
  if (global_batch % (p.dp * p.mbs) != 0) {
    return fmt::format("dp*mbs = {} does not divide the global batch {}", p.dp * p.mbs,
                       global_batch);
  }
  return std::nullopt;
}

} // namespace zerosearch
