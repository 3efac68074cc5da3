#pragma once
// 1F1B pipeline schedule simulation (the original's PPGroup in src/stage.py).
#include <vector>

#include "zerosearch/partition.hpp"

namespace zerosearch {

/// Whether the forward pass is 1/4 of a stage's compute (ZeRO 0 and 1) or 1/3 (the rest).
enum class ForwardShare { quarter, third };

/// Simulates one step of a 1F1B schedule with `micro_batches` micro-batches over the stages of
/// `times`. Returns, per stage, the end time (seconds) of its last backward pass.
/// Precondition: at least two stages and one micro-batch.
[[nodiscard]] std::vector<double> simulate_1f1b(int micro_batches, const StageTimes& times,
                                                ForwardShare share);

} // namespace zerosearch
