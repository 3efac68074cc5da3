#pragma once
// Per-layer profiles: the forward time of every pipeline layer for one (model, GPU type,
// framework flavour), per tensor-parallel degree. Loaded by io/profiledb.hpp.
#include <map>
#include <string>
#include <vector>

#include "zerosearch/core/dp_method.hpp"

namespace zerosearch {


struct GpuProfile {
  std::string model;
  std::string gpu;
  Flavour flavour = Flavour::deepspeed;
  /// True when the embedding and post_process times were measured per micro-batch already
  /// (the original's A100 profiles), so they are not multiplied by the micro-batch size.
  bool ends_per_micro_batch = false;
  /// Forward time in seconds of each pipeline layer [embedding, transformers..., post_process],
  /// keyed by tensor-parallel degree.
  std::map<int, std::vector<double>> layer_times_s;
  std::string origin;
};

class ProfileDb {
public:
  void add(GpuProfile profile);
  /// nullptr when no profile exists for that triple.
  [[nodiscard]] const GpuProfile* find(const std::string& model, const std::string& gpu,
                                       Flavour flavour) const noexcept;
  [[nodiscard]] const std::vector<GpuProfile>& all() const noexcept { return profiles_; }

private:
  std::vector<GpuProfile> profiles_;
};

} // namespace zerosearch
