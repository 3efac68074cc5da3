#pragma once
// A standalone SVG timeline of one plan's step (no scripts, no external fonts): one lane per
// pipeline stage with its forward and backward passes per micro-batch, the link transfers, the
// data-parallel and embedding syncs at the end, idle time (the bubble) left blank; beside it each
// stage's memory against its GPU's limit.
#include <ostream>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/model/pipeline_layout.hpp"
#include "zerosearch/model/schedule.hpp"
#include "zerosearch/model/terapipe.hpp"

namespace zerosearch {

struct TimelineInput {
  std::string title;
  std::string subtitle;
  /// Per stage: GPU type name and pipeline layers.
  std::vector<std::string> stage_gpu;
  std::vector<int> stage_layers;
  PipelineSchedule schedule;
  double dp_sync_s = 0.0;
  double embedding_sync_s = 0.0;
  double step_s = 0.0;
  /// Per stage, GiB.
  std::vector<double> stage_mem_gib;
  std::vector<double> stage_limit_gib;
  /// Native estimates, per stage: one micro-batch's MoE token dispatch and combine (all-to-all
  /// over ep, gather and scatter over etp: NativeStage::moe_comm_s) and its exposed
  /// context-parallel exchange (NativeStage::cp_comm_s) inside the forward and inside the
  /// backward (recompute's rerun included), all the stage's model chunks together, seconds.
  /// Empty where the plan has none; the SVG draws them inside the passes (timeline_comm).
  std::vector<double> a2a_forward_s, a2a_backward_s, cp_forward_s, cp_backward_s;
  /// Model chunks a stage holds (interleaved: the virtual stages; zbv, dualpipe, dualpipev: 2):
  /// each chunk pass draws 1/chunks of the stage's parts above.
  int chunks = 1;
  /// A --pipeline_layout's interleaved plan: the same parts per chunk, [stage x chunks +
  /// chunk] (each chunk's own layers: InterleavedTimes), drawn inside the passes of that chunk
  /// in place of 1/chunks of the stage's. Empty otherwise.
  std::vector<double> chunk_a2a_forward_s, chunk_a2a_backward_s, chunk_cp_forward_s,
      chunk_cp_backward_s;
  /// The cp exchange is ring attention, partly hidden behind attention (the exposed part is
  /// drawn), or all-to-all (Ulysses: nothing hidden).
  bool cp_ring = true;
};

/// What the SVG draws inside one pass `ev` of `in`: the MoE all-to-all and the context-parallel
/// exchange, seconds (forward passes their forward part, input-gradient and full backward passes
/// the backward part, F&B both, weight-gradient passes and sends none), before fitting them into
/// the pass's box (timeline_svg shrinks both alike where they would not fit).
struct PassComm {
  double a2a_s = 0.0;
  double cp_s = 0.0;
};
[[nodiscard]] PassComm timeline_comm(const TimelineInput& in, const ScheduleEvent& ev);

/// The timeline of design point `p` on `placement` with the partition of `e` (re-estimated with
/// detail). The zerosearch estimator: pipeline_schedule on its stage times (its forward share).
/// The native one: 1F1B and interleaved plans simulated on the stages' own forward and backward
/// times (even_chunk_times; a layout's interleaved plan on its chunk times), F, B and W boxes;
/// the split schedules as simulated; TeraPipe as its token slices.
[[nodiscard]] TimelineInput timeline_input(const EstimateContext& ctx, const DesignPoint& p,
                                           const Placement& placement, const Estimate& e);

/// A native 1F1B or interleaved plan's stages as the chunk times simulate_interleaved runs for
/// its timeline: each stage's forward and backward split evenly over its v chunks (as
/// one_f_one_b_s takes them), links the stages' sends (the last rank's back to the first: the
/// slowest), a steady pair hiding 1/v of the stage's MoE all-to-all overlap.
[[nodiscard]] InterleavedTimes even_chunk_times(const NativeEstimate& n, int v);

/// The weight-gradient part (W) of chunk `chunk` of rank `rank`'s backward in `t`: the stage's
/// weight_s in the proportion of the chunk's backward to the stage's, at most the chunk's
/// backward.
[[nodiscard]] double chunk_weight_s(const NativeEstimate& n, const InterleavedTimes& t, int rank,
                                    int chunk);

/// The SVG document.
[[nodiscard]] std::string timeline_svg(const TimelineInput& in);

/// The events of TeraPipe's token-level pipeline (simulate_token_pipeline's rules: every
/// forward of unit u = micro-batch x slice in order on each stage, then every backward in
/// reverse), one event per unit and stage, `micro_batch` being the unit. stage_end_s[j] is the
/// end of stage j's last backward; stage 0's equals simulate_token_pipeline(pipe, slicing).
[[nodiscard]] PipelineSchedule token_pipeline_schedule(const TokenPipeline& pipe,
                                                       const Slicing& slicing);

/// Idle share of stage s between 0 and its last backward end (the bubble), 0..1.
[[nodiscard]] double stage_bubble_share(const PipelineSchedule& schedule, int stage);

} // namespace zerosearch
