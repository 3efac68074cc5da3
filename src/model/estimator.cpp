#include "zerosearch/model/estimator.hpp"

namespace zerosearch {

namespace {
// One row per estimator (model/estimator.hpp); the switch below names every Estimator, so a
// new one fails to compile (-Wswitch) until it has a row.
constexpr EstimatorInfo original_info{
    .id = Estimator::zerosearch,
    .name = "zerosearch",
    .extended_points = false,
    .uses_gpu_specs = false,
    .models_recompute = false,
    .models_comm_overlap = false,
    .fixed_sequence_length = true,
    .step_intervals = false,
    .shares_pipelines = true,
    .terapipe = false,
    .shares_configurations = false,
};
constexpr EstimatorInfo native_info{
    .id = Estimator::native,
    .name = "native",
    .extended_points = true,
    .uses_gpu_specs = true,
    .models_recompute = true,
    .models_comm_overlap = true,
    .fixed_sequence_length = false,
    .step_intervals = true,
    .shares_pipelines = false,
    .terapipe = true,
    .shares_configurations = true,
};
} // namespace

const EstimatorInfo& estimator_info(Estimator e) noexcept {
  switch (e) {
  case Estimator::zerosearch: return original_info;
  case Estimator::native: return native_info;
  }
  return original_info;
}

Estimator choose_estimator(std::optional<Estimator> asked, bool original_can_run) noexcept {
  if (asked) {
    return *asked;
  }
  return original_can_run ? Estimator::zerosearch : Estimator::native;
}

Estimator analytic_estimator() noexcept { return Estimator::native; }

} // namespace zerosearch
