#pragma once
// Peak GPU memory per stage (docs/model.md §4), in float32 as the original computes it.
#include <vector>

#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/core/model.hpp"

namespace zerosearch {

struct MemoryEstimate {
  bool oom = false;
  /// The first stage over its limit when oom, else the largest stage figure; GiB.
  float gpumem_gib = 0.0F;
  /// Every stage's figure up to the first OOM stage (all stages when none), GiB.
  std::vector<float> stage_gib;
};

/// Memory of each stage of `partition` for design point `p`; `stage_limit_gib[s]` is the limit of
/// stage s's GPU type. Scans stages in order and stops at the first over its limit.
[[nodiscard]] MemoryEstimate estimate_memory(const ModelSpec& model, const DesignPoint& p,
                                             const std::vector<int>& partition,
                                             const std::vector<float>& stage_limit_gib,
                                             int gpus_per_node, int global_batch);

/// Every stage's figure in GiB (no early stop), for per-stage reports.
[[nodiscard]] std::vector<float> stage_memory_gib(const ModelSpec& model, const DesignPoint& p,
                                                  const std::vector<int>& partition,
                                                  int gpus_per_node, int global_batch);

/// The memory figure of every contiguous run of layers as a stage of design point `p`, computed
/// exactly as estimate_memory computes a stage (so the two agree to the bit). A stage's figure
/// depends only on its layers, not on its position. For the partitioners' memory checks.
class StageMemoryTable {
public:
  StageMemoryTable(const ModelSpec& model, const DesignPoint& p, int gpus_per_node,
                   int global_batch);

  /// GiB of a stage holding layers first .. first+count-1 (count >= 1, within the model).
  [[nodiscard]] float gib(int first, int count) const noexcept {
    const auto n = static_cast<std::size_t>(layers_);
    return gib_[static_cast<std::size_t>(first) * (n + 1) + static_cast<std::size_t>(first + count)];
  }
  /// The most layers a stage starting at layer `first` can hold within `limit_gib` (0: none).
  [[nodiscard]] int max_layers(int first, float limit_gib) const noexcept;
  [[nodiscard]] int layers() const noexcept { return layers_; }

private:
  int layers_;
  std::vector<float> gib_; // [first][end], end exclusive
};

} // namespace zerosearch
