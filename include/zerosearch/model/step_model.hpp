#pragma once
// The simulated step time of one design point on one placement as a function of its layer
// partition (docs/model.md §4): what estimate() reports and what the searching partitioners
// minimise.
#include <vector>

#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/model/memory.hpp"
#include "zerosearch/model/partition.hpp"
#include "zerosearch/model/pipeline.hpp"

namespace zerosearch {

struct StepModel {
  /// Per-stage layer costs (of each stage's GPU type) and boundary link times.
  PartitionProblem problem;
  int micro_batches = 1;
  /// gbs / (dp * mbs) as the original's float32 tensor (pp == 1 pipeline, ZeRO 2/3 sync).
  float micro_batches_f32 = 1.0F;
  ForwardShare share = ForwardShare::third;

  // Data-parallel sync inputs: its time depends on the layers of stage 0.
  DpMethod method = DpMethod::dp;
  int dp = 1;
  float tp = 1.0F;
  float hidden = 0.0F;
  float vocab = 0.0F;
  int precision_bits = 16;
  /// Stage 0's data-parallel ring bandwidth, bit/s.
  float ring_bits_per_s = 0.0F;
  float embedding_sync_s = 0.0F;

  /// Memory limit (GiB) of each stage's GPU type.
  std::vector<float> stage_limit_gib;

  [[nodiscard]] int stages() const noexcept { return problem.stages(); }
  [[nodiscard]] int layers() const noexcept { return problem.layers(); }

  /// Data-parallel sync time (float32 seconds) when stage 0 holds `first_stage_layers` layers.
  [[nodiscard]] float dp_sync_s(int first_stage_layers) const noexcept;

  /// Each stage's end of the pipeline when the stages take `times`: the 1F1B schedule (pp > 1,
  /// float64) or m * compute (pp == 1, float32). It does not depend on the data-parallel sync.
  [[nodiscard]] std::vector<double> pipeline_ends(const StageTimes& times) const;
  /// The step time (a float32 value) from the pipeline's stage ends when stage 0 holds
  /// `first_stage_layers` layers: each end plus the data-parallel sync, the slowest (the first
  /// maximum), plus the embedding sync.
  [[nodiscard]] double step_from_ends(int first_stage_layers,
                                      const std::vector<double>& ends) const noexcept;
  /// The step time (a float32 value) of a partition whose stage 0 holds `first_stage_layers`
  /// layers and whose stages take `times`: the 1F1B schedule (pp > 1) or m * compute (pp == 1),
  /// each stage's end plus the data-parallel sync, the slowest, plus the embedding sync
  /// (pipeline_ends, then step_from_ends). `stage_end_s`, when given, receives each stage's
  /// end of the pipeline.
  [[nodiscard]] double step_from_times(int first_stage_layers, const StageTimes& times,
                                       std::vector<double>* stage_end_s = nullptr) const;

  /// The step time of `partition` with its own stage times.
  [[nodiscard]] double step_s(const std::vector<int>& partition) const {
    return step_from_times(partition[0], stage_times(problem, partition));
  }

  /// True when every stage of `partition` fits its GPU's memory; `memory` holds the figures of
  /// every run of layers of this design point.
  [[nodiscard]] bool fits(const std::vector<int>& partition,
                          const StageMemoryTable& memory) const noexcept;
};

/// True when `partition` has problem.stages() entries, each >= 1, summing to problem.layers().
[[nodiscard]] bool valid_partition(const std::vector<int>& partition, int stages,
                                   int layers) noexcept;

} // namespace zerosearch
