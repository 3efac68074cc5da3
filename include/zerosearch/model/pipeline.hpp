#pragma once
// 1F1B pipeline schedule simulation (the original's PPGroup in src/stage.py).
#include <array>
#include <memory>
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

/// simulate_1f1b_into (no events) for a sequence of stage compute vectors with the same
/// micro-batches, stages, sends and forward share, such as the leaves of a depth-first search
/// over partitions: the warm-up events that depend only on the stages whose compute is the same,
/// bit for bit, as in the previous call are kept, not recomputed. The results (ends, and whether
/// it stops early) are those of simulate_1f1b_into, bit for bit, except that it checks only
/// backward passes for an early stop (a check left out can only make it stop later, or finish
/// at stop_at or later). Not thread safe: one per thread.
class OneFOneBSequence {
public:
  OneFOneBSequence(int micro_batches, int pp, std::vector<double> for_send_s,
                   std::vector<double> back_send_s, ForwardShare share);
  ~OneFOneBSequence();
  OneFOneBSequence(OneFOneBSequence&&) noexcept;
  OneFOneBSequence& operator=(OneFOneBSequence&&) noexcept;
  OneFOneBSequence(const OneFOneBSequence&) = delete;
  OneFOneBSequence& operator=(const OneFOneBSequence&) = delete;

  /// As simulate_1f1b_into(micro_batches, pp, comp_s, for_send_s, back_send_s, share, stop_at,
  /// ends): comp_s has pp entries.
  bool simulate(const double* comp_s, double stop_at, double* ends);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The events of simulate_1f1b_into (for m micro-batches on pp stages, with the given sends and
/// forward share) as a graph: each event is the latest of the events it waits for plus one
/// pass or send, as the simulation computes it. Every path through the graph is a lower bound
/// on the simulation's event times for every compute vector: a path that crosses stage s's
/// forward pass f_s times and backward pass b_s times, and sends adding up to `constant`, ends
/// no earlier than constant + sum_s (f_s fwd + b_s bwd) comp_s, fwd and bwd being the forward
/// share and the rest (up to rounding: each event time is a float64 sum along its longest
/// path). The early-stopped simulations of a search can learn such paths and reuse them.
class OneFOneBGraph {
public:
  OneFOneBGraph(int micro_batches, int pp, const double* for_send_s, const double* back_send_s,
                ForwardShare share);

  /// Evaluates every event for compute `comp_s` (pp entries), writing each stage's end to
  /// `ends` (bit for bit simulate_1f1b_into without an early stop), and the longest path to the
  /// latest stage end: its coefficient of each stage's compute into `coef` (pp entries) and its
  /// sends' sum. Returns the latest stage end.
  double critical_path(const double* comp_s, double* ends, double* coef, double* constant);

  /// Events (graph nodes), for tests.
  [[nodiscard]] std::size_t size() const noexcept { return add_.size(); }

private:
  /// What an event adds to the latest of its inputs: a stage's forward pass (stage), backward
  /// pass (pp + stage), or a constant (-1 - index into constants_).
  std::vector<int> add_;
  /// Up to three inputs per event (0: the constant 0, the graph's first node).
  std::vector<std::array<int, 3>> in_;
  std::vector<double> constants_;
  /// The last backward pass of each stage.
  std::vector<int> last_;
  int pp_;
  double fwd_share_;
  double parts_;
  double fwbw_;
  std::vector<double> value_;
  std::vector<double> pass_;
};

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
