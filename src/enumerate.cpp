#include "zerosearch/enumerate.hpp"

#include <fmt/format.h>

#include "zerosearch/error.hpp"

namespace zerosearch {

const char* to_string(DpMethod m) noexcept {
  switch (m) {
  case DpMethod::dp: return "dp";
  case DpMethod::fsdp: return "fsdp";
  case DpMethod::zero0: return "zero0";
  case DpMethod::zero1: return "zero1";
  case DpMethod::zero2: return "zero2";
  case DpMethod::zero3: return "zero3";
  }
  return "?";
}

DpMethod parse_dp_method(const std::string& text) {
  for (const DpMethod m : kAllDpMethods) {
    if (text == to_string(m)) {
      return m;
    }
  }
  throw InputError(fmt::format(
      "unknown data-parallel method '{}' (allowed: dp, fsdp, zero0, zero1, zero2, zero3)", text));
}

Flavour flavour_of(DpMethod m) noexcept {
  return (m == DpMethod::dp || m == DpMethod::fsdp) ? Flavour::megatron : Flavour::deepspeed;
}

const char* to_string(Framework f) noexcept {
  switch (f) {
  case Framework::megatron: return "m";
  case Framework::deepspeed: return "d";
  case Framework::both: return "both";
  case Framework::automatic: return "default";
  }
  return "?";
}

Framework parse_framework(const std::string& text) {
  if (text == "m") return Framework::megatron;
  if (text == "d") return Framework::deepspeed;
  if (text == "both") return Framework::both;
  if (text == "default") return Framework::automatic;
  throw InputError(fmt::format(
      "unknown framework '{}' (allowed: m = Megatron-LM, d = DeepSpeed, both, default)", text));
}

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
      if (method == DpMethod::zero3 && tp > 1) {
        continue;
      }
      for (const int dp : divisors(in.world_size / tp)) {
        const int pp = in.world_size / (tp * dp);
        if ((method == DpMethod::zero2 || method == DpMethod::zero3) && pp > 1) {
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
                                          int num_layers, int gpus_per_node) {
  if (p.tp <= 0 || p.dp <= 0 || p.pp <= 0 || p.mbs <= 0) {
    return "tp, dp, pp and mbs must be positive";
  }
  if (gpus_per_node % p.tp != 0) {
    return fmt::format("tp {} does not divide the {} GPUs per node", p.tp, gpus_per_node);
  }
  if (static_cast<long long>(p.tp) * p.dp * p.pp != world_size) {
    return fmt::format("tp*dp*pp = {}*{}*{} = {} is not the {} GPUs of the cluster", p.tp, p.dp,
                       p.pp, static_cast<long long>(p.tp) * p.dp * p.pp, world_size);
  }
  if (p.method == DpMethod::zero3 && p.tp > 1) {
    return "zero3 needs tp 1";
  }
  if ((p.method == DpMethod::zero2 || p.method == DpMethod::zero3) && p.pp > 1) {
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
