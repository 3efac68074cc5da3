#pragma once
// Test fixture shared by the unit tests that need real estimates: the shipped profile database,
// loaded once, and the plan of llama2_13B with DeepSpeed's methods (-f d) on a cluster.
#include <cstdint>
#include <utility>
#include <vector>

#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/search/plan.hpp"

namespace zerosearch::testing {

/// The catalogs and profiles in the repository's profiledb/, loaded on first use.
inline const Catalogs& shipped_catalogs() {
  static const Catalogs catalogs = load_catalogs(ZEROSEARCH_TEST_PROFILEDB);
  return catalogs;
}

/// llama2_13B with DeepSpeed's methods (-f d) on `groups` of 4-GPU nodes, from the shipped data.
inline SearchPlan llama2_13b_plan(std::vector<NodeGroup> groups,
                                  PartitionMethod method = PartitionMethod::minmax,
                                  std::uint64_t seed = 0) {
  PlanInput in;
  in.model = "llama2_13B";
  in.cluster = Cluster{std::move(groups), 4, {}};
  in.framework = Framework::deepspeed;
  in.partition_method = method;
  in.seed = seed;
  return make_plan(in, shipped_catalogs());
}

} // namespace zerosearch::testing
