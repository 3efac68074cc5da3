#pragma once
// 1F1B pipeline schedule simulation (the original's PPGroup in src/stage.py).
#include <vector>

#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/model/partition.hpp"

namespace zerosearch {

/// Simulates one step of a 1F1B schedule with `micro_batches` micro-batches over the stages of
/// `times`. Returns, per stage, the end time (seconds) of its last backward pass.
/// Precondition: at least two stages and one micro-batch.
[[nodiscard]] std::vector<double> simulate_1f1b(int micro_batches, const StageTimes& times,
                                                ForwardShare share);

} // namespace zerosearch
