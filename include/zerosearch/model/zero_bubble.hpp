#pragma once
// Pipeline schedules that split the backward pass (docs/native.md §2.2): zero-bubble 1F1B
// (ZB-H1, ZB-H2) and ZB-V (Qi et al., ICLR 2024), DualPipe and DualPipeV (DeepSeek-V3,
// deepseek-ai/DualPipe), and plain 1F1B in the same terms. A schedule is each rank's order of
// passes: forward (F), input-gradient backward (B), weight-gradient backward (W), full
// backward (B and W at once) and an overlapped forward-and-backward pair (F&B). The simulation
// runs those orders event by event on per-rank, per-chunk times and per-boundary link times:
// a pass starts when its rank is free and its input has arrived. Pure functions.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "zerosearch/core/dp_method.hpp"

namespace zerosearch {

enum class PipeOpKind : std::uint8_t {
  forward,
  input_backward,
  weight_backward,
  full_backward,
  forward_backward
};

/// One pass of a rank. `chunk` is the rank's local model chunk; forward_backward runs the
/// forward of (micro_batch, chunk) overlapped with the full backward of (back_micro_batch,
/// back_chunk). Micro-batches count within the chunk's direction.
struct PipeOp {
  PipeOpKind kind = PipeOpKind::forward;
  int micro_batch = 0;
  int chunk = 0;
  int back_micro_batch = 0;
  int back_chunk = 0;
};

/// A rank's chunks' (direction, position), at most two, kept inline: a layout of pp ranks is
/// one allocation for its ranks, not one per rank (schedule_layout runs once per order
/// summarised or compiled).
struct RankPlace {
  std::array<std::pair<int, int>, 2> slot{};
  std::size_t count = 0;
  [[nodiscard]] const std::pair<int, int>& operator[](std::size_t c) const noexcept { return slot[c]; }
  [[nodiscard]] std::size_t size() const noexcept { return count; }
  [[nodiscard]] const std::pair<int, int>* begin() const noexcept { return slot.data(); }
  [[nodiscard]] const std::pair<int, int>* end() const noexcept { return slot.data() + count; }
  /// Appends chunk size()'s place (at most two chunks per rank: the callers' layouts).
  void push_back(std::pair<int, int> p) {
    if (count == slot.size()) throw std::logic_error("pipeline layout: more than two chunks on a rank");
    slot[count++] = p;
  }
  friend bool operator==(const RankPlace&, const RankPlace&) = default;
};

/// Where each model chunk runs. A direction is one pipeline through `positions` chunks
/// (DualPipe has two, fed from opposite ends); position 0 holds the embedding, the last
/// position the LM head.
struct PipeLayout {
  int ranks = 0;
  int chunks_per_rank = 1;
  int directions = 1;
  int positions = 0;
  /// Micro-batches entering each direction.
  std::vector<int> micro_batches;
  /// [rank][chunk]: direction and position.
  std::vector<RankPlace> place;
  /// [direction][position]: rank and chunk.
  std::vector<std::vector<std::pair<int, int>>> at;
};

struct PipeProgram {
  PipeLayout layout;
  /// [rank]: the passes in the order the rank runs them.
  std::vector<std::vector<PipeOp>> orders;
};

/// What one rank holds at one point of its order, per local chunk: `b`, the micro-batches
/// whose forward has run and whose input-gradient backward has not (their activations, Qi et
/// al.'s M_B each); `w`, those whose input-gradient backward has run and whose weight pass has
/// not (the weight GEMMs' inputs and their outputs' gradients, M_W each). A full backward or
/// an F&B pair's backward frees the activations at once.
struct PipeHeld {
  std::int32_t b[2] = {0, 0};
  std::int32_t w[2] = {0, 0};
  friend bool operator==(const PipeHeld&, const PipeHeld&) = default;
};

/// The schedules simulated here: kSchedules' splits_backward (everything but 1f1b, interleaved
/// and terapipe).
[[nodiscard]] bool is_split_schedule(Schedule s) noexcept;
/// Model chunks per pipeline rank, kSchedules' chunks_per_rank: 2 for zbv, dualpipe and
/// dualpipev, else 1.
[[nodiscard]] int schedule_chunks_per_rank(Schedule s) noexcept;
/// Why `s` cannot run `micro_batches` micro-batches over `pp` ranks and a model of `layers`
/// transformer layers (DualPipe: even pp, an even number of micro-batches, at least 2 pp;
/// DualPipeV at least 2 pp; every chunk at least one layer), or an empty string.
[[nodiscard]] std::string split_schedule_invalid_reason(Schedule s, int pp, int micro_batches,
                                                        long long layers);
/// Whether split_schedule_invalid_reason is empty, without making the reason (the search's
/// enumeration skips the points that fail it before their other checks).
[[nodiscard]] bool split_schedule_runs(Schedule s, int pp, int micro_batches,
                                       long long layers) noexcept;
/// Each rank's order of passes. Precondition: is_split_schedule(s) or s == one_f_one_b, and
/// split_schedule_invalid_reason is empty.
[[nodiscard]] PipeProgram pipe_program(Schedule s, int pp, int micro_batches);

/// Times of one micro-batch through one chunk, seconds: forward, the backward's input-gradient
/// part and its weight-gradient part (full backward = input + weight), and the exposed
/// communication inside the forward and the backward that an overlapped F&B pair can hide
/// behind the other pass's compute.
struct PipeChunkTimes {
  double forward_s = 0.0;
  double input_s = 0.0;
  double weight_s = 0.0;
  double forward_comm_s = 0.0;
  double backward_comm_s = 0.0;
};

struct PipeTimes {
  /// [rank][chunk].
  std::vector<std::vector<PipeChunkTimes>> chunks;
  /// Per boundary between rank j and j + 1 (pp - 1 of them): one activation or gradient
  /// transfer, seconds.
  std::vector<double> link_s;
};

/// Time of the forward of `f` overlapped with the full backward of `b` on one rank: the
/// computes run one after the other; each pass's exposed communication hides behind the
/// other's compute where that is long enough (DualPipe's F&B).
[[nodiscard]] double overlapped_s(const PipeChunkTimes& f, const PipeChunkTimes& b) noexcept;

struct PipeEvent {
  PipeOpKind kind = PipeOpKind::forward;
  int rank = 0;
  int chunk = 0;
  int micro_batch = 0;
  /// forward_backward: the backward's chunk and micro-batch.
  int back_chunk = 0;
  int back_micro_batch = 0;
  double start_s = 0.0;
  double end_s = 0.0;
};

struct PipeRun {
  /// From the first pass's start to the last pass's end.
  double makespan_s = 0.0;
  /// Per rank: start of its first pass, end of its last.
  std::vector<double> rank_start_s;
  std::vector<double> rank_end_s;
  /// Every pass, when asked for.
  std::vector<PipeEvent> events;
};

/// Runs `program` on `times` event by event. Throws std::logic_error if the orders deadlock
/// (a bug in a generator, never a property of the input).
[[nodiscard]] PipeRun simulate_pipe(const PipeProgram& program, const PipeTimes& times,
                                    bool record_events = false);

/// An allocator whose resize leaves scalars uninitialized (default-initialized): PipeGraph's
/// arrays are sized once and each element written once by compile_pipe.
template <class T> struct UninitializedAllocator : std::allocator<T> {
  template <class U> struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U> UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U> void construct(U* p) { ::new (static_cast<void*>(p)) U; }
  template <class U, class... Args> void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// One pass of a compiled program: its rank; the index of its duration in pipe_makespan's
/// table (four single passes per rank and chunk, then the F&B pairs); its inputs, each the
/// 1-based index of the pass whose end it waits for (0: none, an end of 0) and the index of
/// the span of links that input crosses (0: none). An F&B pair has two inputs, others one.
/// No default member values: PipeGraph's array leaves them unwritten until compiled.
struct PipePass {
  std::int32_t rank;
  std::int32_t duration;
  std::int32_t dep;
  std::int32_t dep2;
  std::uint16_t span;
  std::uint16_t span2;
  friend bool operator==(const PipePass&, const PipePass&) = default;
};

/// A program compiled for repeated simulation (the search's fast path): every pass of every
/// rank in one topological order of the passes' dependencies, each with the pass whose end is
/// its input and the ranks its input crosses. Built once per (schedule, pp, micro-batches);
/// immutable, so one may be shared between threads.
struct PipeGraph {
  /// The program's layout (its orders are in `passes`, 20 bytes a pass).
  PipeLayout layout;
  int chunks_per_rank = 1;
  /// The passes in topological order (one array: the compile writes each pass with one
  /// pointer, the simulation reads it with one).
  std::vector<PipePass, UninitializedAllocator<PipePass>> passes;
  /// Spans of links [lo, hi) by index; spans[0] is empty.
  std::vector<std::pair<int, int>> spans{{0, 0}};
  /// Per rank: the index of its first pass, -1 if it has none.
  std::vector<std::int32_t> first;
  /// Per duration index: how many passes take it (a rank's busy time is the sum of its
  /// passes' durations: pipe_busy_bound).
  std::vector<std::uint32_t> uses;
  /// Whether any pass has a second input (dep2 or span2 not 0: an F&B pair); without, the
  /// simulation reads one input per pass.
  bool pairs = true;
};

/// Compiles `program` (any valid one; throws std::logic_error if its orders deadlock). Each
/// rank's passes keep the program's order within the compiled one.
[[nodiscard]] PipeGraph compile_pipe(const PipeProgram& program);
/// The compiled program of (s, pp, micro_batches), made once per thread and reused (the cache
/// holds each schedule's outline and peaks, counted without storing its order, and, once a
/// simulation asks for it, its compiled order; it is dropped whole past half a million passes'
/// worth, about 10 MB). Same preconditions as pipe_program.
[[nodiscard]] std::shared_ptr<const PipeGraph> cached_pipe_graph(Schedule s, int pp,
                                                                 int micro_batches);
/// pipe_held_peaks of (s, pp, micro_batches)'s program, from the per-thread cache of
/// cached_pipe_graph (made with the program, once per thread).
[[nodiscard]] std::shared_ptr<const std::vector<std::vector<PipeHeld>>>
cached_pipe_held_peaks(Schedule s, int pp, int micro_batches);
/// simulate_pipe(program, times).makespan_s of the program compiled, bit for bit, in one pass over the compiled
/// order with no allocation after a thread's first call.
[[nodiscard]] double pipe_makespan(const PipeGraph& graph, const PipeTimes& times);

/// pipe_makespan(*cached_pipe_graph(s, pp, micro_batches), times), remembered per thread by
/// (s, pp, micro_batches) and every figure of `times` bit for bit: plans whose chunk times and
/// links are the same (ZeRO stages, data-parallel methods or sizes that change only memory
/// and the step's other terms) are simulated once. Same preconditions as pipe_program.
[[nodiscard]] double cached_pipe_makespan(Schedule s, int pp, int micro_batches,
                                          const PipeTimes& times);

/// What a search needs of a program before it simulates it, without compiling it: its layout
/// and how many passes take each duration index (PipeGraph::uses, counted the same).
struct PipeOutline {
  PipeLayout layout;
  std::vector<std::uint32_t> uses;
  /// The passes each rank runs after its last backward pass (input or full backward, or an
  /// F&B pair), counted per duration index as `uses` is, and per rank that backward's
  /// (direction, position), {-1, -1} for none: what pipe_fill_bound's drain needs.
  std::vector<std::uint32_t> tail;
  std::vector<std::pair<int, int>> last_backward;
};
[[nodiscard]] PipeOutline pipe_outline(const PipeProgram& program);
/// The outline of (s, pp, micro_batches)'s program, from the per-thread cache of
/// cached_pipe_graph, counted as the order is generated (closed forms for ZB-H1 and ZB-H2);
/// equal to pipe_outline(pipe_program(...)).
[[nodiscard]] std::shared_ptr<const PipeOutline> cached_pipe_outline(Schedule s, int pp,
                                                                     int micro_batches);

/// A lower bound of pipe_makespan(graph, times) without simulating: the busiest rank's passes
/// end to end (no rank can finish before its own work is done; the slowest stage bounds the
/// makespan from below), less a relative 1e-9 that covers the simulation's rounding. O(ranks x
/// chunks^2), so a search can skip the simulation of plans that cannot rank (search/search.cpp).
[[nodiscard]] double pipe_busy_bound(const PipeGraph& graph, const PipeTimes& times);
/// The same bound from the program's outline (bit for bit: the same counts and durations).
[[nodiscard]] double pipe_busy_bound(const PipeOutline& outline, const PipeTimes& times);
/// A tighter lower bound of the makespan, from the outline too: each rank's passes end to
/// end, started no earlier than the chain of forwards that reaches its first pass (the
/// forwards of positions 0 .. k - 1 of its first chunk's direction and the links between
/// them, each forward at its shortest: alone or in an F&B pair); and each rank's passes up to
/// its last backward, followed by the chain of backwards of the same micro-batch down to
/// position 0 (each at its shortest of the kinds the order runs, and the links), less the
/// same 1e-9 margin. At least pipe_busy_bound's; O(ranks x chunks^2 + positions x links).
[[nodiscard]] double pipe_fill_bound(const PipeOutline& outline, const PipeTimes& times);

/// The memory `held` takes, in micro-batches of the whole rank's activations:
/// sum_c share[c] b[c] + w_ratio * sum_c share[c] w[c], `share[c]` the chunk's share of the
/// rank's layers and `w_ratio` M_W / M_B. Nondecreasing in every count (shares, w_ratio >= 0).
[[nodiscard]] double held_value(const PipeHeld& held, std::span<const double> share,
                                double w_ratio) noexcept;

/// Per rank, what it holds at the points of its order that no other point of the order holds
/// as much of in every count (the Pareto-maximal ones; after every pass, and inside an F&B pair
/// after its forward). The peak of held_value along the order is the largest held_value of
/// these, bit for bit (held_value is nondecreasing in each count).
[[nodiscard]] std::vector<std::vector<PipeHeld>> pipe_held_peaks(const PipeProgram& program);

/// Peak memory of activations and deferred weight passes each rank holds along its order, in
/// micro-batches of the whole rank's activations: the largest held_value after each pass (an
/// F&B pair also after its forward), `share[rank]` the chunk shares, `w_ratio` M_W / M_B.
[[nodiscard]] std::vector<double> pipe_in_flight(const PipeProgram& program,
                                                 const std::vector<std::vector<double>>& share,
                                                 double w_ratio);
/// The same peak from pipe_held_peaks' points (equal bit for bit).
[[nodiscard]] double held_peak(const std::vector<PipeHeld>& peaks, std::span<const double> share,
                               double w_ratio) noexcept;

} // namespace zerosearch
