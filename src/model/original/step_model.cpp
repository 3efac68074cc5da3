#include "zerosearch/model/step_model.hpp"

#include "zerosearch/model/comm.hpp"

namespace zerosearch {

float StepModel::dp_sync_s(int first_stage_layers) const noexcept {
  const float params = stage0_param_count(first_stage_layers, layers(), hidden, vocab, tp);
  return dp_sync_time_s(method, dp, params, precision_bits, ring_bits_per_s, micro_batches_f32);
}

std::vector<double> StepModel::pipeline_ends(const StageTimes& times) const {
  // Pipeline: pp == 1 is m * compute in float32 (the original's micro-batch count is a float32
  // tensor); otherwise the 1F1B simulation in float64.
  if (stages() == 1) {
    return {static_cast<double>(micro_batches_f32 * static_cast<float>(times.comp_s[0]))};
  }
  return simulate_1f1b(micro_batches, times, share);
}

double StepModel::step_from_ends(int first_stage_layers,
                                 const std::vector<double>& ends) const noexcept {
  const float dp_s = dp_sync_s(first_stage_layers);
  // Each stage's end plus the data-parallel time, in float32; the first maximum wins.
  float slowest = 0.0F;
  for (std::size_t s = 0; s < ends.size(); ++s) {
    const float t = static_cast<float>(ends[s]) + dp_s;
    if (s == 0 || t > slowest) {
      slowest = t;
    }
  }
  return static_cast<double>(slowest + embedding_sync_s);
}

double StepModel::step_from_times(int first_stage_layers, const StageTimes& times,
                                  std::vector<double>* stage_end_s) const {
  std::vector<double> ends = pipeline_ends(times);
  const double step = step_from_ends(first_stage_layers, ends);
  if (stage_end_s != nullptr) {
    *stage_end_s = std::move(ends);
  }
  return step;
}

bool StepModel::fits(const std::vector<int>& partition,
                     const StageMemoryTable& memory) const noexcept {
  int first = 0;
  for (std::size_t s = 0; s < partition.size(); ++s) {
    if (memory.gib(first, partition[s]) > stage_limit_gib[s]) {
      return false;
    }
    first += partition[s];
  }
  return true;
}

bool valid_partition(const std::vector<int>& partition, int stages, int layers) noexcept {
  if (static_cast<int>(partition.size()) != stages) {
    return false;
  }
  int sum = 0;
  for (const int c : partition) {
    if (c < 1) {
      return false;
    }
    sum += c;
  }
  return sum == layers;
}

} // namespace zerosearch
