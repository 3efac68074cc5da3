#pragma once
// Shared test fixtures: the shipped profile database and the plans the tests search.
#include <cstdint>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/search/plan.hpp"

namespace zerosearch::test {

/// profiledb/ of the source tree, loaded once.
[[nodiscard]] const Catalogs& shipped_catalogs();

/// llama2_13B with the DeepSpeed methods (-f d) on `groups` (nodes of 4 GPUs), from the
/// shipped data.
[[nodiscard]] SearchPlan llama_deepspeed_plan(std::vector<NodeGroup> groups,
                                              PartitionMethod method = PartitionMethod::minmax,
                                              std::uint64_t seed = 0);

} // namespace zerosearch::test
