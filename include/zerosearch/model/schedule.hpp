#pragma once
// The event times of the 1F1B schedule that simulate_1f1b (pipeline.hpp) reduces to stage end
// times: every forward and backward pass and every link transfer, for timeline pictures.
#include <vector>

#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/model/partition.hpp"

namespace zerosearch {

/// backward: a full backward, or only its input-gradient part where the schedule runs the
/// weight gradient apart (weight); overlapped: a DualPipe F&B pair.
enum class ScheduleEventKind { forward, backward, send_forward, send_backward, weight, overlapped };

/// One box of the schedule: stage `stage` computes (or sends) micro-batch `micro_batch` from
/// `start_s` to `end_s`, seconds from the start of the step. A send belongs to its sender.
struct ScheduleEvent {
  ScheduleEventKind kind = ScheduleEventKind::forward;
  int stage = 0;
  int micro_batch = 0;
  double start_s = 0.0;
  double end_s = 0.0;
  /// The stage's model chunk (zbv, dualpipe, dualpipev: 0 or 1), -1 when the stage has one.
  int chunk = -1;
  /// overlapped: the backward's micro-batch and chunk.
  int back_micro_batch = 0;
  int back_chunk = -1;
};

struct PipelineSchedule {
  std::vector<ScheduleEvent> events;
  /// Per stage, the end of its last backward pass: equal to simulate_1f1b's result (pp > 1).
  std::vector<double> stage_end_s;
};

/// The schedule of one step with `micro_batches` micro-batches over the stages of `times`,
/// computed by the same rules as simulate_1f1b. With one stage the passes run back to back.
/// Precondition: at least one stage and one micro-batch.
[[nodiscard]] PipelineSchedule pipeline_schedule(int micro_batches, const StageTimes& times,
                                                 ForwardShare share);

} // namespace zerosearch
