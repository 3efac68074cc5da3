#pragma once
// The hardware catalog (profiledb/hardware.json): GPU memory, node prices, link bandwidths.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zerosearch {

struct GpuSpec {
  std::string name;
  /// Usable memory per GPU in GiB; empty when the catalog does not know it.
  std::optional<double> memory_gib;
  /// On-demand price of one node of this type, $ per hour.
  double price_per_node_hour_usd = 0.0;
};

/// Link bandwidths of one node type, in bit/s.
struct LinkBandwidth {
  double inter_node_bps = 0.0;
  double intra_node_bps = 0.0;
};

struct BandwidthSet {
  std::string name;
  std::string description;
  std::map<std::string, LinkBandwidth> links;
};

struct HardwareCatalog {
  std::map<std::string, GpuSpec> gpus;
  std::map<std::string, BandwidthSet> bandwidth_sets;

  /// Throws InputError listing the known GPU types.
  [[nodiscard]] const GpuSpec& gpu(const std::string& name) const;
  /// Throws InputError listing the known sets.
  [[nodiscard]] const BandwidthSet& bandwidth_set(const std::string& name) const;
  [[nodiscard]] std::string gpu_names() const;
  [[nodiscard]] std::string bandwidth_set_names() const;
};

} // namespace zerosearch
