#include "fixtures.hpp"

#include <utility>

#include "zerosearch/io/catalogs.hpp"

namespace zerosearch::test {

const Catalogs& shipped_catalogs() {
  static const Catalogs catalogs = load_catalogs(ZEROSEARCH_TEST_PROFILEDB);
  return catalogs;
}

SearchPlan llama_deepspeed_plan(std::vector<NodeGroup> groups, PartitionMethod method,
                                std::uint64_t seed) {
  PlanInput in;
  in.model = "llama2_13B";
  in.cluster = Cluster{std::move(groups), 4, {}};
  in.framework = Framework::deepspeed;
  in.partition_method = method;
  in.seed = seed;
  return make_plan(in, shipped_catalogs());
}

SearchPlan native_all_schedules_plan(const std::string& model, std::vector<NodeGroup> groups,
                                     int global_batch) {
  PlanInput in;
  in.model = model;
  in.cluster = Cluster{std::move(groups), 8, {}};
  in.global_batch = global_batch;
  in.framework = Framework::automatic;
  in.estimator = Estimator::native;
  in.schedules = kAllSchedules;
  return make_plan(in, shipped_catalogs());
}

} // namespace zerosearch::test
