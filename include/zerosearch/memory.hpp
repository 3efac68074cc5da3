#pragma once
// Peak GPU memory per stage (SPEC 4), in float32 as the original computes it.
#include <vector>

#include "zerosearch/enumerate.hpp"
#include "zerosearch/model.hpp"

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

} // namespace zerosearch
