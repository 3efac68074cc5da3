#include "zerosearch/io/timeline.hpp"
#include "zerosearch/model/estimator.hpp"
#include "zerosearch/model/estimator_ops.hpp"
#include "zerosearch/model/pipeline_layout.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "zerosearch/io/markup.hpp"
#include "zerosearch/io/report_format.hpp"

namespace zerosearch {

namespace {

constexpr double kWidth = 1100.0;
constexpr double kLabel = 150.0;   // stage labels, left
constexpr double kMemory = 210.0;  // memory bars, right
constexpr double kGap = 20.0;
constexpr double kTop = 64.0;
constexpr double kLane = 30.0;
constexpr double kLaneGap = 10.0;

const char* kForward = "#4e79a7";
const char* kBackward = "#f28e2b";
const char* kSendForward = "#59a14f";
const char* kSendBackward = "#e15759";
const char* kDpSync = "#b07aa1";
const char* kEmbSync = "#9c755f";
const char* kWeight = "#edc948";
const char* kOverlapped = "#17becf";
const char* kAllToAll = "#d37295";
const char* kContext = "#499894";

bool is_compute(ScheduleEventKind k) {
  return k == ScheduleEventKind::forward || k == ScheduleEventKind::backward ||
         k == ScheduleEventKind::weight || k == ScheduleEventKind::overlapped;
}

/// A pass's label: its micro-batch, with a prime on a rank's second model chunk and "cN" on its
/// chunk N from the third on (a --pipeline_layout's interleaved chunks); an F&B pair names both.
std::string pass_label(const ScheduleEvent& ev) {
  const auto one = [](int mb, int chunk) {
    return fmt::format("{}{}", mb,
                       chunk == 1 ? std::string("\'")
                       : chunk > 1 ? fmt::format("c{}", chunk)
                                   : std::string());
  };
  if (ev.kind == ScheduleEventKind::overlapped) {
    return one(ev.micro_batch, ev.chunk) + "|" + one(ev.back_micro_batch, ev.back_chunk);
  }
  return one(ev.micro_batch, ev.chunk);
}

double nice_step(double range) {
  const double raw = range / 8.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * mag;
}

} // namespace

double stage_bubble_share(const PipelineSchedule& schedule, int stage) {
  double busy = 0.0;
  for (const ScheduleEvent& ev : schedule.events) {
    if (ev.stage == stage && is_compute(ev.kind)) {
      busy += ev.end_s - ev.start_s;
    }
  }
  const double end = schedule.stage_end_s[static_cast<std::size_t>(stage)];
  return end > 0.0 ? std::max(0.0, 1.0 - busy / end) : 0.0;
}

PipelineSchedule token_pipeline_schedule(const TokenPipeline& pipe, const Slicing& slicing) {
  // The estimator's own simulation, recording its passes.
  PipelineSchedule out;
  simulate_token_pipeline(pipe, slicing, &out);
  return out;
}

/// A native 1F1B or interleaved plan's stages as the chunk times simulate_interleaved runs:
/// each stage's forward and backward (recompute, gathers and its exposed collectives
/// included) split evenly over its v chunks, as one_f_one_b_s's closed form takes them (1/v of
/// the rank's passes per chunk pass); links the stages' sends, the last rank's back to the
/// first the slowest send; a steady pair hiding 1/v of the stage's MoE all-to-all overlap.
InterleavedTimes even_chunk_times(const NativeEstimate& n, int v) {
  InterleavedTimes t;
  t.pp = static_cast<int>(n.stages.size());
  t.virtual_stages = std::max(1, v);
  const double chunks = t.virtual_stages;
  double slowest_send = 0.0;
  bool hides = false;
  for (const NativeStage& st : n.stages) {
    for (int c = 0; c < t.virtual_stages; ++c) {
      t.forward_s.push_back(st.forward_s / chunks);
      t.backward_s.push_back(st.backward_s / chunks);
      t.pair_hidden_s.push_back(st.moe_a2a_overlap_s / chunks);
    }
    hides = hides || st.moe_a2a_overlap_s > 0.0;
    t.link_s.push_back(st.send_s);
    slowest_send = std::max(slowest_send, st.send_s);
  }
  t.link_s.back() = slowest_send;
  if (!hides) t.pair_hidden_s.clear();
  return t;
}

/// The weight-gradient part of chunk `chunk` of rank `rank`'s backward in `t`: the stage's
/// weight_s in the proportion of the chunk's backward to the stage's.
double chunk_weight_s(const NativeEstimate& n, const InterleavedTimes& t, int rank, int chunk) {
  const NativeStage& st = n.stages[static_cast<std::size_t>(rank)];
  if (st.backward_s <= 0.0 || st.weight_s <= 0.0) return 0.0;
  const std::size_t i =
      static_cast<std::size_t>(rank) * static_cast<std::size_t>(t.virtual_stages) +
      static_cast<std::size_t>(chunk);
  return std::min(t.backward_s[i], st.weight_s * t.backward_s[i] / st.backward_s);
}

namespace {

/// The timeline of a native estimate: 1F1B and interleaved plans as simulate_interleaved runs
/// their stages' own forward and backward times (even_chunk_times; a --pipeline_layout's
/// interleaved plan on its chunk times, as estimated), the split schedules as simulated,
/// TeraPipe plans as their token slices (token_pipeline_schedule); the step time is the
/// estimate's.
TimelineInput timeline_input(NativeEstimator, const EstimateContext& ctx, const DesignPoint& p,
                             const Placement& placement, const Estimate& e) {
  NativeEstimate n;
  const Estimate again = estimate_native(ctx, p, placement, e.partition, &n);
  // A --pipeline_layout: its stages are the layout's; interleaved, every chunk pass as the
  // estimate simulated it on that chunk's own times (native_interleaved_run).
  const NativeSettings* settings = plan_settings(NativeEstimator{}, ctx);
  const PipelineLayout* layout = settings != nullptr ? settings->pipeline_layout.get() : nullptr;
  InterleavedRun layout_run = layout != nullptr && p.virtual_stages > 1
                                  ? interleaved_run(NativeEstimator{}, ctx, p, placement, n)
                                  : InterleavedRun{};
  // Any other 1F1B or interleaved plan: the same simulation on the stages' own forward and
  // backward times, each split evenly over the rank's chunks (even_chunk_times).
  const bool own_passes = layout_run.passes.empty() && !is_split_schedule(p.schedule) &&
                          p.schedule != Schedule::terapipe && !n.stages.empty();
  if (own_passes) {
    layout_run.times = even_chunk_times(n, p.virtual_stages);
    layout_run.makespan_s =
        simulate_interleaved(layout_run.times, p.num_micro_batches, &layout_run.passes);
  }
  TimelineInput in;
  in.title = fmt::format("{}: {} tp {} pp {} dp {} micro-batch {} ({} micro-batches), recompute "
                         "{}, offload {}, virtual stages {}, {}{}",
                         ctx.model.name, to_string(p.method), p.tp, p.pp, p.dp, p.mbs,
                         p.num_micro_batches, to_string(p.recompute), to_string(p.offload),
                         p.virtual_stages, to_string(p.dtype),
                         p.pp > 1 ? fmt::format(", schedule {}", to_string(p.schedule)) : "");
  if (p.cp > 1) {
    // The exposed context-parallel exchange is inside each pass (docs/native.md §2.4).
    double exposed = 0.0;
    for (const NativeStage& st : n.stages) exposed = std::max(exposed, st.cp_comm_s);
    in.title += fmt::format(", cp {} ({}: up to {:.1f} ms of exposed exchange per micro-batch "
                            "inside the passes)",
                            p.cp, to_string(p.cp_comm), exposed * 1e3);
  }
  in.subtitle = fmt::format("{}, partition {}: {:.4f} s/step, {:.2f} GiB peak{} (native "
                            "estimator{})",
                            compress_placement(ctx.cluster, placement),
                            fmt::join(again.partition, "-"), again.step_s, again.gpumem_gib,
                            again.oom ? " (OOM)" : "",
                            is_split_schedule(p.schedule)
                                ? fmt::format("; {}: forward, input-gradient (B) and weight-"
                                              "gradient (W) passes as simulated{}",
                                              to_string(p.schedule),
                                              schedule_chunks_per_rank(p.schedule) > 1
                                                  ? ", a prime marks a rank's second model chunk"
                                                  : "")
                            : !layout_run.passes.empty() && !own_passes
                                ? fmt::format("; pipeline layout '{}': interleaved 1F1B as "
                                              "simulated on each chunk's own times, {} x {} "
                                              "chunk passes; a prime marks a rank's second "
                                              "model chunk, cN its chunk N; W: each "
                                              "backward's weight-gradient part, at its end",
                                              layout->text, p.num_micro_batches,
                                              p.virtual_stages)
                            : p.virtual_stages > 1
                                ? fmt::format("; interleaved 1F1B as simulated on each stage's "
                                              "forward and backward, split evenly over its {} "
                                              "model chunks ({} x {} chunk passes; a prime "
                                              "marks a rank's second chunk); W: each "
                                              "backward's weight-gradient part, at its end",
                                              p.virtual_stages, p.num_micro_batches,
                                              p.virtual_stages)
                            : own_passes && p.pp > 1
                                ? fmt::format("; 1F1B as simulated on each stage's forward and "
                                              "backward{}; W: each backward's weight-gradient "
                                              "part, at its end",
                                              layout != nullptr
                                                  ? fmt::format(" (pipeline layout '{}')",
                                                                layout->text)
                                                  : "")
                            : p.schedule == Schedule::terapipe
                                ? fmt::format("; TeraPipe: {} micro-batches x {} token slices",
                                              p.num_micro_batches, again.native.slices.size())
                            : layout != nullptr
                                ? fmt::format("; pipeline layout '{}': each stage holds its rank's "
                                              "layers",
                                              layout->text)
                                : "");
  StageTimes times;
  const std::size_t stages = n.stages.size();
  const int v = p.virtual_stages;
  times.comp_s.assign(stages, 0.0);
  times.for_send_s.assign(stages, 0.0);
  times.back_send_s.assign(stages, 0.0);
  times.comm_s.assign(stages, 0.0);
  for (std::size_t j = 0; j < stages; ++j) {
    const NativeStage& st = n.stages[j];
    in.stage_gpu.push_back(ctx.cluster.groups[static_cast<std::size_t>(st.gpu)].gpu);
    in.stage_layers.push_back(st.layers);
    in.stage_mem_gib.push_back(st.memory.total());
    in.stage_limit_gib.push_back(st.memory_limit_gib);
    // Interleaved 1F1B (docs/native.md §2.2): a micro-batch passes each rank once per model
    // chunk, 1/v of the rank's layers each time, so the estimate's fill and drain shrink by v.
    times.comp_s[j] = (st.forward_s + st.backward_s) / std::max(1, static_cast<int>(v));
    if (j + 1 < stages) {
      times.comm_s[j + 1] = st.send_s;
    }
  }
  if (stages > 1) {
    times.for_send_s[0] = n.stages[0].send_s;
    times.back_send_s[stages - 1] = n.stages[stages - 2].send_s;
    times.comm_s[stages - 1] = 0.0;
  }
  // Drawn as 1F1B over m x v chunk passes: the compute of the estimate's closed form,
  // m max_t + (sum_t - max_t) / v.
  if (!own_passes) {
    in.schedule = pipeline_schedule(p.num_micro_batches * std::max(1, static_cast<int>(v)), times,
                                    ForwardShare::third);
  }
  if (is_split_schedule(p.schedule) && p.pp > 1) {
    // Zero-bubble and DualPipe plans: the passes of the simulation that gave the estimate.
    const PipeRun run = pipe_run(NativeEstimator{}, ctx, p, n);
    const bool chunks = schedule_chunks_per_rank(p.schedule) > 1;
    in.schedule = PipelineSchedule{};
    for (const PipeEvent& pe : run.events) {
      ScheduleEvent ev;
      switch (pe.kind) {
      case PipeOpKind::forward: ev.kind = ScheduleEventKind::forward; break;
      case PipeOpKind::input_backward:
      case PipeOpKind::full_backward: ev.kind = ScheduleEventKind::backward; break;
      case PipeOpKind::weight_backward: ev.kind = ScheduleEventKind::weight; break;
      case PipeOpKind::forward_backward: ev.kind = ScheduleEventKind::overlapped; break;
      }
      ev.stage = pe.rank;
      ev.micro_batch = pe.micro_batch;
      ev.chunk = chunks ? pe.chunk : -1;
      ev.back_micro_batch = pe.back_micro_batch;
      ev.back_chunk = chunks ? pe.back_chunk : -1;
      ev.start_s = pe.start_s;
      ev.end_s = pe.end_s;
      in.schedule.events.push_back(ev);
    }
    in.schedule.stage_end_s = run.rank_end_s;
  }
  if (!layout_run.passes.empty()) {
    // 1F1B and interleaved 1F1B: each pass at the time the simulation ran it (the estimate's
    // own with a layout), its send after it (the rank is busy until the send ends); each
    // backward's weight-gradient part (NativeStage::weight_s, the chunk's share of it) drawn
    // as a W box at its end, as the split schedules draw theirs.
    in.schedule = PipelineSchedule{};
    in.schedule.stage_end_s.assign(stages, 0.0);
    for (const InterleavedPass& ip : layout_run.passes) {
      ScheduleEvent ev;
      ev.kind = ip.forward ? ScheduleEventKind::forward : ScheduleEventKind::backward;
      ev.stage = ip.rank;
      ev.micro_batch = ip.micro_batch;
      ev.chunk = v > 1 ? ip.chunk : -1;
      ev.start_s = ip.start_s;
      ev.end_s = ip.compute_end_s;
      const double w = ip.forward ? 0.0 : chunk_weight_s(n, layout_run.times, ip.rank, ip.chunk);
      if (w > 0.0) {
        ev.end_s = std::max(ev.start_s, ip.compute_end_s - w);
        in.schedule.events.push_back(ev);
        ev.kind = ScheduleEventKind::weight;
        ev.start_s = ev.end_s;
        ev.end_s = ip.compute_end_s;
      }
      in.schedule.events.push_back(ev);
      if (ip.end_s > ip.compute_end_s) {
        ev.kind = ip.forward ? ScheduleEventKind::send_forward : ScheduleEventKind::send_backward;
        ev.start_s = ip.compute_end_s;
        ev.end_s = ip.end_s;
        in.schedule.events.push_back(ev);
      }
      double& end = in.schedule.stage_end_s[static_cast<std::size_t>(ip.rank)];
      end = std::max(end, ip.end_s);
    }
  }
  if (p.schedule == Schedule::terapipe && !again.native.slices.empty()) {
    // TeraPipe as estimated: its token slices through the stages (token_pipeline).
    in.schedule = token_pipeline_schedule(token_pipeline(NativeEstimator{}, ctx, p, n),
                                          Slicing(again.native.slices.begin(), again.native.slices.end()));
  }
  if (p.pp == 1) {
    in.schedule.stage_end_s = {again.pipeline_s};
  }
  // The MoE all-to-all and the exposed cp exchange inside each stage's passes. TeraPipe's token
  // pipeline is left out: its slice costs do not charge the all-to-all (token_pipeline)
  // and cp does not combine with it.
  bool moe = false, cp = false;
  for (const NativeStage& st : n.stages) {
    moe = moe || st.moe_comm_s > 0.0;
    cp = cp || st.cp_comm_s > 0.0;
  }
  if (p.schedule != Schedule::terapipe && (moe || cp)) {
    for (const NativeStage& st : n.stages) {
      if (moe) {
        in.a2a_forward_s.push_back(st.moe_comm_forward_s);
        in.a2a_backward_s.push_back(st.moe_comm_s - st.moe_comm_forward_s);
      }
      if (cp) {
        in.cp_forward_s.push_back(st.cp_comm_forward_s);
        in.cp_backward_s.push_back(st.cp_comm_s - st.cp_comm_forward_s);
      }
    }
    in.chunks = is_split_schedule(p.schedule) && p.pp > 1 ? schedule_chunks_per_rank(p.schedule)
                                                          : std::max(1, static_cast<int>(v));
    in.cp_ring = p.cp_comm == CpComm::ring;
    if (!layout_run.passes.empty() && !own_passes) {
      // Each chunk's own all-to-all and exchange, as the estimate charged them.
      const InterleavedTimes& t = layout_run.times;
      if (moe) {
        in.chunk_a2a_forward_s = t.a2a_forward_s;
        in.chunk_a2a_backward_s = t.a2a_backward_s;
      }
      if (cp) {
        in.chunk_cp_forward_s = t.cp_forward_s;
        in.chunk_cp_backward_s = t.cp_backward_s;
      }
    }
  }
  in.dp_sync_s = again.dp_sync_s + static_cast<double>(again.native.optimizer_s) +
                 static_cast<double>(again.native.offload_s);
  in.embedding_sync_s = again.embedding_sync_s;
  in.step_s = again.step_s;
  return in;
}

/// The timeline of the original's estimate: its stage times (EstimateDetail) in the 1F1B order.
TimelineInput timeline_input(OriginalEstimator, const EstimateContext& ctx, const DesignPoint& p,
                             const Placement& placement, const Estimate& e) {
  const LayerCosts costs = layer_costs(ctx, p);
  EstimateDetail d;
  const Estimate again = estimate(ctx, p, costs, placement, e.partition, &d);
  TimelineInput in;
  in.title = fmt::format("{}: {} tp {} pp {} dp {} micro-batch {} ({} micro-batches)",
                         ctx.model.name, to_string(p.method), p.tp, p.pp, p.dp, p.mbs,
                         p.num_micro_batches);
  in.subtitle = fmt::format("{}, partition {}: {:.4f} s/step, {:.2f} GiB peak{}",
                            compress_placement(ctx.cluster, placement),
                            fmt::join(again.partition, "-"), again.step_s, again.gpumem_gib,
                            again.oom ? " (OOM)" : "");
  for (std::size_t s = 0; s < d.stage_gpu.size(); ++s) {
    in.stage_gpu.push_back(ctx.cluster.groups[static_cast<std::size_t>(d.stage_gpu[s])].gpu);
    in.stage_layers.push_back(again.partition[s]);
    in.stage_mem_gib.push_back(static_cast<double>(d.stage_mem_gib[s]));
    in.stage_limit_gib.push_back(static_cast<double>(d.stage_limit_gib[s]));
  }
  in.schedule = pipeline_schedule(p.num_micro_batches, d.times, info(p.method).forward_share);
  if (p.pp == 1) {
    // The estimator's pp == 1 pipeline time (float32 m * compute).
    in.schedule.stage_end_s = d.stage_end_s;
  }
  in.dp_sync_s = again.dp_sync_s;
  in.embedding_sync_s = again.embedding_sync_s;
  in.step_s = again.step_s;
  return in;
}

} // namespace

TimelineInput timeline_input(const EstimateContext& ctx, const DesignPoint& p,
                             const Placement& placement, const Estimate& e) {
  return visit_estimator(ctx.estimator, [&](auto estimator) {
    return timeline_input(estimator, ctx, p, placement, e);
  });
}

PassComm timeline_comm(const TimelineInput& in, const ScheduleEvent& ev) {
  PassComm c;
  const auto s = static_cast<std::size_t>(ev.stage);
  const double chunks = std::max(1, in.chunks);
  const auto part = [&](const std::vector<double>& v, const std::vector<double>& per_chunk) {
    if (ev.chunk >= 0 && !per_chunk.empty()) {
      const std::size_t i =
          s * static_cast<std::size_t>(std::max(1, in.chunks)) + static_cast<std::size_t>(ev.chunk);
      return i < per_chunk.size() ? per_chunk[i] : 0.0;
    }
    return s < v.size() ? v[s] / chunks : 0.0;
  };
  const bool forward =
      ev.kind == ScheduleEventKind::forward || ev.kind == ScheduleEventKind::overlapped;
  const bool backward =
      ev.kind == ScheduleEventKind::backward || ev.kind == ScheduleEventKind::overlapped;
  if (forward) {
    c.a2a_s += part(in.a2a_forward_s, in.chunk_a2a_forward_s);
    c.cp_s += part(in.cp_forward_s, in.chunk_cp_forward_s);
  }
  if (backward) {
    c.a2a_s += part(in.a2a_backward_s, in.chunk_a2a_backward_s);
    c.cp_s += part(in.cp_backward_s, in.chunk_cp_backward_s);
  }
  return c;
}

std::string timeline_svg(const TimelineInput& in) {
  const int stages = static_cast<int>(in.stage_gpu.size());
  const double plot_left = kLabel;
  const double plot_right = kWidth - kMemory - kGap;
  const double lanes_h = stages * (kLane + kLaneGap);
  const double axis_y = kTop + lanes_h + 4.0;
  // Legend: what the schedule holds, laid out in rows that fit the width.
  bool has_weight = false, has_overlapped = false, has_a2a = false, has_cp = false;
  for (const ScheduleEvent& ev : in.schedule.events) {
    has_weight = has_weight || ev.kind == ScheduleEventKind::weight;
    has_overlapped = has_overlapped || ev.kind == ScheduleEventKind::overlapped;
    const PassComm c = timeline_comm(in, ev);
    has_a2a = has_a2a || c.a2a_s > 0.0;
    has_cp = has_cp || c.cp_s > 0.0;
  }
  std::vector<std::pair<const char*, const char*>> legend = {
      {kForward, "forward"}, {kBackward, has_weight ? "backward (B: input gradient)" : "backward"}};
  if (has_weight) legend.emplace_back(kWeight, "W (weight gradient)");
  if (has_overlapped) legend.emplace_back(kOverlapped, "F&B overlapped");
  if (has_a2a) {
    legend.emplace_back(kAllToAll, has_overlapped
                                       ? "MoE all-to-all (dispatch + combine; in an F&B pair part "
                                         "of it hides behind the other pass)"
                                       : "MoE all-to-all (dispatch + combine, not overlapped)");
  }
  if (has_cp) {
    legend.emplace_back(kContext, in.cp_ring ? "cp K/V exchange (exposed part; the rest hides "
                                               "behind attention)"
                                             : "cp all-to-all (Ulysses, not overlapped)");
  }
  legend.insert(legend.end(), {{kSendForward, "send forward"},  {kSendBackward, "send backward"},
                               {kDpSync, "data-parallel sync"}, {kEmbSync, "embedding sync"},
                               {"#eeeeee", "idle (bubble)"}});
  std::vector<std::pair<double, double>> legend_at; // x, row
  {
    double lx = plot_left;
    double row = 0.0;
    for (const auto& entry : legend) {
      const double w = 24.0 + 7.0 * static_cast<double>(std::string(entry.second).size());
      if (lx > plot_left && lx + w > kWidth - 10.0) {
        lx = plot_left;
        row += 1.0;
      }
      legend_at.emplace_back(lx, row);
      lx += w;
    }
  }
  const double height = axis_y + 80.0 + 20.0 * (legend_at.empty() ? 0.0 : legend_at.back().second);
  double end_s = in.step_s;
  for (const double e : in.schedule.stage_end_s) {
    end_s = std::max(end_s, e + in.dp_sync_s + in.embedding_sync_s);
  }
  end_s = std::max(end_s, 1e-9);
  const auto X = [&](double t) { return plot_left + (plot_right - plot_left) * t / end_s; };
  const auto lane_y = [&](int s) { return kTop + s * (kLane + kLaneGap); };

  std::string o;
  o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
                   "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\" font-size=\"12\" "
                   "class=\"zerosearch-timeline\">\n",
                   kWidth, height, kWidth, height);
  o += fmt::format("<rect width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n", kWidth, height);
  o += fmt::format("<text x=\"{:.1f}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                   plot_left, escape_markup(in.title));
  o += fmt::format("<text x=\"{:.1f}\" y=\"40\" fill=\"#444\">{}</text>\n", plot_left,
                   escape_markup(in.subtitle));
  o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-weight=\"bold\">memory / GPU limit</text>\n",
                   plot_right + kGap, kTop - 8.0);

  // Lanes: background (idle = bubble), labels.
  for (int s = 0; s < stages; ++s) {
    const double y = lane_y(s);
    const auto u = static_cast<std::size_t>(s);
    o += fmt::format("<rect class=\"lane\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                     "height=\"{:.1f}\" fill=\"#eeeeee\"/>\n",
                     plot_left, y, plot_right - plot_left, kLane);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">stage {} · {}</text>\n",
                     plot_left - 8.0, y + 13.0, s, escape_markup(in.stage_gpu[u]));
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#666\" "
                     "font-size=\"10\">{} layers, bubble {:.0f}%</text>\n",
                     plot_left - 8.0, y + 26.0, in.stage_layers[u],
                     100.0 * stage_bubble_share(in.schedule, s));
  }
  // Passes and sends.
  for (const ScheduleEvent& ev : in.schedule.events) {
    const double y = lane_y(ev.stage);
    const double x0 = X(ev.start_s);
    const double w = std::max(0.5, X(ev.end_s) - x0);
    const char* kind = "forward";
    const char* fill = kForward;
    double top = y;
    double h = kLane - 7.0;
    switch (ev.kind) {
    case ScheduleEventKind::forward: break;
    case ScheduleEventKind::backward: kind = "backward"; fill = kBackward; break;
    case ScheduleEventKind::weight: kind = "weight gradient"; fill = kWeight; break;
    case ScheduleEventKind::overlapped: kind = "forward and backward overlapped"; fill = kOverlapped; break;
    case ScheduleEventKind::send_forward:
      kind = "send forward"; fill = kSendForward; top = y + kLane - 6.0; h = 6.0; break;
    case ScheduleEventKind::send_backward:
      kind = "send backward"; fill = kSendBackward; top = y + kLane - 6.0; h = 6.0; break;
    }
    if (ev.kind == ScheduleEventKind::send_forward || ev.kind == ScheduleEventKind::send_backward) {
      if (ev.end_s <= ev.start_s) {
        continue;
      }
    }
    const std::string what =
        ev.kind == ScheduleEventKind::overlapped
            ? fmt::format("forward of micro-batch {}{} and backward of micro-batch {}{} overlapped",
                          ev.micro_batch, ev.chunk >= 0 ? fmt::format(" chunk {}", ev.chunk) : "",
                          ev.back_micro_batch,
                          ev.back_chunk >= 0 ? fmt::format(" chunk {}", ev.back_chunk) : "")
            : fmt::format("{} micro-batch {}{}", kind, ev.micro_batch,
                          ev.chunk >= 0 ? fmt::format(" chunk {}", ev.chunk) : "");
    o += fmt::format("<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" "
                     "fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"0.5\"><title>stage {} {}: "
                     "{:.4f}-{:.4f} s</title></rect>\n",
                     ev.kind == ScheduleEventKind::forward      ? "fwd"
                     : ev.kind == ScheduleEventKind::backward   ? "bwd"
                     : ev.kind == ScheduleEventKind::weight     ? "wgt"
                     : ev.kind == ScheduleEventKind::overlapped ? "fb"
                                                                : "send",
                     x0, top, w, h, fill, ev.stage, what, ev.start_s, ev.end_s);
    // The MoE all-to-all and the cp exchange inside the pass: cp's at its start (attention
    // comes first in a layer), the all-to-all at its end, both shrunk alike where they would not
    // fit the pass.
    if (const PassComm c = timeline_comm(in, ev); c.a2a_s + c.cp_s > 0.0) {
      const double pass_s = ev.end_s - ev.start_s;
      const double fit = std::min(1.0, pass_s / (c.a2a_s + c.cp_s));
      const auto segment = [&](const char* cls, const char* color, double from, double drawn,
                               double full, const char* name) {
        const double to = from + drawn;
        o += fmt::format("<rect class=\"{}\" data-stage=\"{}\" data-s=\"{}\" x=\"{:.2f}\" "
                         "y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" "
                         "stroke=\"#ffffff\" stroke-width=\"0.5\"><title>stage {} {} in {}: "
                         "{:.3f} ms</title></rect>\n",
                         cls, ev.stage, drawn, X(from), top, std::max(0.5, X(to) - X(from)),
                         h, color, ev.stage, name, what, full * 1e3);
      };
      if (c.cp_s > 0.0) {
        segment("cp", kContext, ev.start_s, c.cp_s * fit, c.cp_s,
                in.cp_ring ? "exposed cp K/V exchange" : "cp all-to-all");
      }
      if (c.a2a_s > 0.0) {
        segment("a2a", kAllToAll, ev.end_s - c.a2a_s * fit, c.a2a_s * fit, c.a2a_s,
                "MoE all-to-all");
      }
    }
    if (is_compute(ev.kind) && w >= 16.0) {
      o += fmt::format("<text x=\"{:.2f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#ffffff\" "
                       "font-size=\"10\">{}</text>\n",
                       x0 + w / 2.0, y + 15.0, pass_label(ev));
    }
  }
  // Data-parallel sync after each stage's end; embedding sync at the end (first and last stage
  // hold the embedding matrices).
  double slowest = 0.0;
  for (int s = 0; s < stages; ++s) {
    const double e = in.schedule.stage_end_s[static_cast<std::size_t>(s)];
    slowest = std::max(slowest, e + in.dp_sync_s);
    if (in.dp_sync_s > 0.0) {
      o += fmt::format("<rect class=\"dpsync\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" "
                       "height=\"{:.1f}\" fill=\"{}\"><title>stage {} data-parallel sync: "
                       "{:.4f} s</title></rect>\n",
                       X(e), lane_y(s), std::max(0.5, X(e + in.dp_sync_s) - X(e)), kLane - 7.0,
                       kDpSync, s, in.dp_sync_s);
    }
  }
  if (in.embedding_sync_s > 0.0) {
    for (const int s : {0, stages - 1}) {
      o += fmt::format("<rect class=\"embsync\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" "
                       "height=\"{:.1f}\" fill=\"{}\"><title>embedding sync: {:.4f} s</title></rect>\n",
                       X(slowest), lane_y(s), std::max(0.5, X(slowest + in.embedding_sync_s) - X(slowest)),
                       kLane - 7.0, kEmbSync, in.embedding_sync_s);
      if (stages == 1) {
        break;
      }
    }
  }
  // Step end marker.
  o += fmt::format("<line x1=\"{0:.2f}\" y1=\"{1:.1f}\" x2=\"{0:.2f}\" y2=\"{2:.1f}\" "
                   "stroke=\"#000\" stroke-dasharray=\"4 3\"/>\n",
                   X(in.step_s), kTop - 4.0, axis_y);
  o += fmt::format("<text x=\"{:.2f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"11\">step "
                   "{:.3f} s</text>\n",
                   X(in.step_s) - 3.0, kTop - 8.0, in.step_s);
  // Time axis.
  o += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000\"/>\n",
                   plot_left, axis_y, plot_right, axis_y);
  const double step = nice_step(end_s);
  for (double t = 0.0; t <= end_s * (1.0 + 1e-9); t += step) {
    o += fmt::format("<line x1=\"{0:.2f}\" y1=\"{1:.1f}\" x2=\"{0:.2f}\" y2=\"{2:.1f}\" "
                     "stroke=\"#000\"/><text x=\"{0:.2f}\" y=\"{3:.1f}\" "
                     "text-anchor=\"middle\">{4:g}</text>\n",
                     X(t), axis_y, axis_y + 5.0, axis_y + 18.0, t);
  }
  o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time in the step (s)</text>\n",
                   (plot_left + plot_right) / 2.0, axis_y + 34.0);
  // Legend.
  for (std::size_t i = 0; i < legend.size(); ++i) {
    const auto& [color, name] = legend[i];
    const auto& [lx, row] = legend_at[i];
    const double ly = axis_y + 48.0 + 20.0 * row;
    o += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\" "
                     "stroke=\"#999\" stroke-width=\"0.5\"/><text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                     lx, ly, color, lx + 16.0, ly + 10.0, escape_markup(name));
  }
  // Memory bars.
  double mem_max = 0.0;
  for (std::size_t s = 0; s < in.stage_mem_gib.size(); ++s) {
    mem_max = std::max({mem_max, in.stage_mem_gib[s], in.stage_limit_gib[s]});
  }
  const double mx0 = plot_right + kGap;
  const double mw = kMemory - 90.0;
  for (int s = 0; s < stages && !in.stage_mem_gib.empty(); ++s) {
    const auto u = static_cast<std::size_t>(s);
    const double y = lane_y(s);
    const bool over = in.stage_mem_gib[u] > in.stage_limit_gib[u];
    const double w = mem_max > 0.0 ? mw * in.stage_mem_gib[u] / mem_max : 0.0;
    const double lim = mem_max > 0.0 ? mw * in.stage_limit_gib[u] / mem_max : 0.0;
    o += fmt::format("<rect class=\"mem\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" "
                     "fill=\"{}\"><title>stage {}: {:.2f} GiB of {:.2f} GiB</title></rect>\n",
                     mx0, y + 4.0, w, kLane - 12.0, over ? "#d62728" : "#76b7b2", s,
                     in.stage_mem_gib[u], in.stage_limit_gib[u]);
    o += fmt::format("<line class=\"limit\" x1=\"{0:.2f}\" y1=\"{1:.1f}\" x2=\"{0:.2f}\" y2=\"{2:.1f}\" "
                     "stroke=\"#000\" stroke-width=\"2\"/>\n",
                     mx0 + lim, y, y + kLane - 4.0);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{:.1f}/{:.1f}{}</text>\n",
                     mx0 + mw + 6.0, y + 17.0, in.stage_mem_gib[u], in.stage_limit_gib[u],
                     over ? " OOM" : "");
  }
  o += "</svg>\n";
  return o;
}

} // namespace zerosearch
