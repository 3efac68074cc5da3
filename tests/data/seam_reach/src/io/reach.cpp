// A writer above the model layer that reads the native estimator's own data instead of asking
// model/estimator_ops.hpp (plan_settings): tests/check_layers.cmake must reject it.
#include "zerosearch/model/estimate.hpp"

namespace zerosearch {

double router_imbalance(const EstimateContext& ctx) {
  return ctx.native->settings.moe_imbalance;
}

} // namespace zerosearch
