#include "zerosearch/core/hardware.hpp"

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
} // namespace

const GpuSpec& HardwareCatalog::gpu(const std::string& name) const {
  const auto it = gpus.find(name);
  if (it == gpus.end()) {
    throw InputError(fmt::format("unknown node type '{}' (known: {})", name, gpu_names()));
  }
  return it->second;
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

} // namespace zerosearch
