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

/// The start and end times of every pass, and the end of every send, of a simulation,
/// stage-major: entry [i * m + j] is stage i's micro-batch j. A send belongs to its sender
/// (forward sends from stages 0..pp-2, backward sends from stages 1..pp-1; the others stay 0).
struct OneFOneBEvents {
  std::vector<double> forward_start;
  std::vector<double> forward_end;
  std::vector<double> forward_send_end;
  std::vector<double> backward_start;
  std::vector<double> backward_end;
  std::vector<double> backward_send_end;
};

/// The same simulation on raw arrays of pp stages (compute, forward send, backward send
/// seconds), writing each stage's end to `ends` and returning true; allocates nothing once its
/// per-thread buffer is large enough. It gives up early, returning false with `ends` unset, once
/// a lower bound on stage 0's end reaches `stop_at` (+infinity: never): the simulation is then
/// known to end at `stop_at` or later. `events`, when given, receives every pass's and send's
/// end (for the timeline; schedule.hpp).
bool simulate_1f1b_into(int micro_batches, int pp, const double* comp_s, const double* for_send_s,
                        const double* back_send_s, ForwardShare share, double stop_at,
                        double* ends, OneFOneBEvents* events = nullptr);

// The first steps of every simulation, exposed for tests (the simulation runs them on its
// per-thread buffer).

/// Per stage: the forward and backward pass of one micro-batch, seconds (its compute split
/// 1:2, or 1:3 for ForwardShare::quarter), and its warm-up forwards, min(pp - 1 - i, m).
struct StagePasses {
  std::vector<double> forward_s;
  std::vector<double> backward_s;
  std::vector<int> warm_up;
};
[[nodiscard]] StagePasses stage_passes(int micro_batches, int pp, const double* comp_s,
                                       ForwardShare share);

/// The sums behind the early stop's lower bounds on stage 0's end, per stage i: `up`, the
/// backward passes of stages 0..i-1; `slow_up`, the longest of them (0 for stage 0); `down`,
/// the forward passes of stages i+1..pp-1 plus every stage's backward pass.
struct StopBounds {
  std::vector<double> up;
  std::vector<double> slow_up;
  std::vector<double> down;
  double slowest_backward_s = 0.0;
};
[[nodiscard]] StopBounds stop_bounds(const StagePasses& passes);

} // namespace zerosearch
