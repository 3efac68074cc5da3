#include "zerosearch/core/hardware.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"

namespace zerosearch {

namespace {
template <typename Map> std::string key_list(const Map& m) {
  std::string out;
  for (const auto& [k, v] : m) {
    out += out.empty() ? "" : ", ";
    out += k;
  }
  return out;
}

bool same_name(const std::string& a, const std::string& b) noexcept {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}
} // namespace

const char* to_string(Dtype d) noexcept {
  switch (d) {
  case Dtype::fp32: return "fp32";
  case Dtype::tf32: return "tf32";
  case Dtype::fp16: return "fp16";
  case Dtype::bf16: return "bf16";
  case Dtype::fp8: return "fp8";
  }
  return "?";
}

std::optional<double> PeakTflops::of(Dtype d) const noexcept {
  switch (d) {
  case Dtype::fp32: return fp32;
  case Dtype::tf32: return tf32;
  case Dtype::fp16: return fp16;
  case Dtype::bf16: return bf16;
  case Dtype::fp8: return fp8;
  }
  return std::nullopt;
}

double GpuSpec::node_price_per_hour_usd(int gpus_per_node) const noexcept {
  return price_per_gpu_hour_usd * static_cast<double>(gpus_per_node);
}

const GpuSpec* HardwareCatalog::find_gpu(const std::string& name) const noexcept {
  if (const auto it = gpus.find(name); it != gpus.end()) {
    return &it->second;
  }
  for (const auto& [k, v] : gpus) {
    if (same_name(k, name)) {
      return &v;
    }
  }
  return nullptr;
}

const GpuSpec& HardwareCatalog::gpu(const std::string& name) const {
  const GpuSpec* g = find_gpu(name);
  if (g == nullptr) {
    throw InputError(fmt::format("unknown node type '{}' (known: {})", name, gpu_names()));
  }
  return *g;
}

const BandwidthSet& HardwareCatalog::bandwidth_set(const std::string& name) const {
  const auto it = bandwidth_sets.find(name);
  if (it == bandwidth_sets.end()) {
    throw InputError(
        fmt::format("unknown comm type '{}' (allowed: {})", name, bandwidth_set_names()));
  }
  return it->second;
}

std::string HardwareCatalog::gpu_names() const { return key_list(gpus); }
std::string HardwareCatalog::bandwidth_set_names() const { return key_list(bandwidth_sets); }

std::optional<LinkBandwidth> default_links(const GpuSpec& gpu) noexcept {
  if (!gpu.has_specs || gpu.inter_node_gbit_per_node <= 0.0 || gpu.intra_node.GBps_per_dir <= 0.0) {
    return std::nullopt;
  }
  return LinkBandwidth{kDefaultLinkEfficiency * gpu.inter_node_gbit_per_node * 1e9,
                       kDefaultLinkEfficiency * gpu.intra_node.GBps_per_dir * 8e9};
}

HardwareCatalog merge_catalogs(HardwareCatalog base, const HardwareCatalog& over) {
  for (const auto& [name, spec] : over.gpus) {
    for (auto it = base.gpus.begin(); it != base.gpus.end(); ++it) {
      if (same_name(it->first, name)) {
        base.gpus.erase(it);
        break;
      }
    }
    base.gpus[name] = spec;
  }
  for (const auto& [name, set] : over.bandwidth_sets) {
    auto& target = base.bandwidth_sets[name];
    target.name = name;
    if (!set.description.empty()) {
      target.description = set.description;
    }
    for (const auto& [gpu, link] : set.links) {
      target.links[gpu] = link;
    }
  }
  for (const auto& [gpu_class, rate] : over.failure_rates) {
    base.failure_rates[gpu_class] = rate;
  }
  return base;
}

} // namespace zerosearch
