#pragma once
// Shared test fixtures: the shipped profile database and the plans the tests search.
#include <cstdint>
#include <string>
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

/// Every pipeline schedule, in the enum's order.
inline const std::vector<Schedule> kAllSchedules = {
    Schedule::one_f_one_b, Schedule::interleaved, Schedule::zb_h1,    Schedule::zb_h2,
    Schedule::zbv,         Schedule::dualpipe,    Schedule::dualpipev};

/// A native search plan of `model` (a catalog name) on `groups` (8 GPUs per node) at
/// `global_batch`, searching every schedule.
[[nodiscard]] SearchPlan native_all_schedules_plan(const std::string& model,
                                                   std::vector<NodeGroup> groups,
                                                   int global_batch);

} // namespace zerosearch::test
