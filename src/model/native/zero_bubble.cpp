// Orders of passes per rank and their event simulation (zero_bubble.hpp). The orders are
// those of the published implementations, re-derived here: ZB-H1 as torch.distributed.
// pipelining's ScheduleInterleavedZeroBubble with one stage per rank (1F1B whose rank i keeps
// i weight passes back to fill the drain); ZB-H2 as Qi et al.'s Figure 3 (rank i warms up with
// 2(p - 1 - i) + 1 forwards and keeps 2i weight passes back); ZB-V as ScheduleZBVZeroBubble;
// DualPipe and DualPipeV as deepseek-ai/DualPipe's step() (its eight steps, the F&B pairs and
// the FIFO of deferred weight passes), DualPipeV being DualPipe's schedule on one direction
// folded into a V.
#include "zerosearch/model/zero_bubble.hpp"

#include <algorithm>
#include <bit>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace zerosearch {

bool is_split_schedule(Schedule s) noexcept { return info(s).splits_backward; }

int schedule_chunks_per_rank(Schedule s) noexcept { return info(s).chunks_per_rank; }

bool split_schedule_runs(Schedule s, int pp, int m, long long layers) noexcept {
  if (pp < 2) return false;
  if (s == Schedule::dualpipe && (pp % 2 != 0 || m % 2 != 0 || m < 2 * pp)) return false;
  if (s == Schedule::dualpipev && m < 2 * pp) return false;
  return layers >= schedule_model_chunks(s, pp);
}

std::string split_schedule_invalid_reason(Schedule s, int pp, int m, long long layers) {
  const char* name = to_string(s);
  if (pp < 2) {
    return fmt::format("the {} schedule needs a pipeline (pp > 1)", name);
  }
  if (s == Schedule::dualpipe) {
    if (pp % 2 != 0) {
      return fmt::format("the dualpipe schedule needs an even pp (it pairs rank i with rank "
                         "pp - 1 - i), not {}",
                         pp);
    }
    if (m % 2 != 0 || m < 2 * pp) {
      return fmt::format("the dualpipe schedule needs an even number of micro-batches, at least "
                         "2 x pp = {} (half enter from each end), not {}",
                         2 * pp, m);
    }
  }
  if (s == Schedule::dualpipev && m < 2 * pp) {
    return fmt::format("the dualpipev schedule needs at least 2 x pp = {} micro-batches, not {}",
                       2 * pp, m);
  }
  const long long chunks = schedule_model_chunks(s, pp);
  if (layers < chunks) {
    return fmt::format("the {} schedule with pp {} needs at least {} layers ({} model chunks), "
                       "not {}",
                       name, pp, chunks, chunks, layers);
  }
  return {};
}

namespace {

PipeLayout linear_layout(int pp, int m) {
  PipeLayout l;
  l.ranks = pp;
  l.positions = pp;
  l.micro_batches = {m};
  l.place.assign(static_cast<std::size_t>(pp), {});
  l.at.assign(1, std::vector<std::pair<int, int>>(static_cast<std::size_t>(pp)));
  for (int r = 0; r < pp; ++r) {
    l.place[static_cast<std::size_t>(r)].push_back({0, r});
    l.at[0][static_cast<std::size_t>(r)] = {r, 0};
  }
  return l;
}

/// Chunk 0 of rank r at position r, chunk 1 at position 2 pp - 1 - r (ZB-V, DualPipeV).
PipeLayout v_layout(int pp, int m) {
  PipeLayout l;
  l.ranks = pp;
  l.chunks_per_rank = 2;
  l.positions = 2 * pp;
  l.micro_batches = {m};
  l.place.assign(static_cast<std::size_t>(pp), {});
  l.at.assign(1, std::vector<std::pair<int, int>>(static_cast<std::size_t>(2 * pp)));
  for (int r = 0; r < pp; ++r) {
    l.place[static_cast<std::size_t>(r)].push_back({0, r});
    l.place[static_cast<std::size_t>(r)].push_back({0, 2 * pp - 1 - r});
    l.at[0][static_cast<std::size_t>(r)] = {r, 0};
    l.at[0][static_cast<std::size_t>(2 * pp - 1 - r)] = {r, 1};
  }
  return l;
}

/// DualPipe: direction 0 runs ranks 0 .. pp - 1, direction 1 ranks pp - 1 .. 0. Local chunk
/// c of rank r is DualPipe's phase c: direction c on the first half of the ranks, 1 - c on the
/// second half.
PipeLayout dual_layout(int pp, int m) {
  PipeLayout l;
  l.ranks = pp;
  l.chunks_per_rank = 2;
  l.directions = 2;
  l.positions = pp;
  l.micro_batches = {m / 2, m / 2};
  l.place.assign(static_cast<std::size_t>(pp), {});
  l.at.assign(2, std::vector<std::pair<int, int>>(static_cast<std::size_t>(pp)));
  for (int r = 0; r < pp; ++r) {
    const int second = r >= pp / 2 ? 1 : 0;
    for (int c = 0; c < 2; ++c) {
      const int d = c ^ second;
      const int pos = d == 0 ? r : pp - 1 - r;
      l.place[static_cast<std::size_t>(r)].push_back({d, pos});
      l.at[static_cast<std::size_t>(d)][static_cast<std::size_t>(pos)] = {r, c};
    }
  }
  return l;
}

PipeOp op(PipeOpKind k, int mb, int chunk) {
  PipeOp o;
  o.kind = k;
  o.micro_batch = mb;
  o.chunk = chunk;
  return o;
}

/// 1F1B on one chunk per rank; with `zero_bubble`, the backward split and rank i keeping i
/// weight passes back (ZB-H1).
template <class Emit> void one_f_one_b_order(int pp, int i, int m, bool zero_bubble, Emit&& emit) {
  const int warm = std::min(pp - 1 - i, m);
  int f = 0, b = 0;
  int w = 0; // the weight passes kept back are those of micro-batches w .. b - 1, oldest first
  for (; f < warm; ++f) emit(op(PipeOpKind::forward, f, 0));
  const auto backward = [&](bool steady) {
    if (!zero_bubble) {
      emit(op(PipeOpKind::full_backward, b++, 0));
      return;
    }
    emit(op(PipeOpKind::input_backward, b++, 0));
    if (!steady || b - w > i) emit(op(PipeOpKind::weight_backward, w++, 0));
  };
  while (f < m) {
    emit(op(PipeOpKind::forward, f++, 0));
    backward(true);
  }
  while (b < m) backward(false);
  if (zero_bubble) {
    while (w < b) emit(op(PipeOpKind::weight_backward, w++, 0));
  }
}

/// ZB-H2: rank i warms up with 2 (pp - 1 - i) + 1 forwards (the first rank holds 2 pp - 1
/// micro-batches), then runs B, W, F, keeping 2i weight passes back for the drain.
template <class Emit> void zb_h2_order(int pp, int i, int m, Emit&& emit) {
  const int warm = std::min(2 * (pp - 1 - i) + 1, m);
  int f = 0, b = 0;
  int w = 0; // the weight passes kept back: micro-batches w .. b - 1, oldest first
  for (; f < warm; ++f) emit(op(PipeOpKind::forward, f, 0));
  const auto backward = [&] {
    emit(op(PipeOpKind::input_backward, b++, 0));
    if (b - w > 2 * i) emit(op(PipeOpKind::weight_backward, w++, 0));
  };
  while (f < m) {
    backward();
    emit(op(PipeOpKind::forward, f++, 0));
  }
  while (b < m) backward();
  while (w < b) emit(op(PipeOpKind::weight_backward, w++, 0));
}

/// ZB-V (ScheduleZBVZeroBubble): chunk 0 descends, chunk 1 climbs back; at least 2 pp - 1
/// micro-batches are scheduled and the passes of the ones that do not exist dropped.
template <class Emit> void zbv_order(int pp, int r, int m, Emit&& out) {
  const auto emit = [m, &out](const PipeOp& x) {
    if (x.micro_batch < m) out(x);
  };
  const int n = std::max(2 * pp - 1, m);
  int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  for (int k = 0; k < 2 * (pp - r) - 1; ++k) emit(op(PipeOpKind::forward, f0++, 0));
  for (int k = 0; k < r; ++k) {
    emit(op(PipeOpKind::forward, f1++, 1));
    emit(op(PipeOpKind::forward, f0++, 0));
  }
  for (int k = 0; k < pp - r; ++k) {
    emit(op(PipeOpKind::forward, f1++, 1));
    emit(op(PipeOpKind::input_backward, b1, 1));
    emit(op(PipeOpKind::weight_backward, b1++, 1));
  }
  while (f1 < f0 || f0 < n) {
    // Every pass from here on is of a micro-batch at or past b0 or b1 (a weight pass of one
    // whose input backward ran, a forward of one whose backward has not): none exists.
    if (b0 >= m && b1 >= m) return;
    if (f0 < n) emit(op(PipeOpKind::forward, f0++, 0));
    emit(op(PipeOpKind::input_backward, b0, 0));
    emit(op(PipeOpKind::weight_backward, b0++, 0));
    emit(op(PipeOpKind::forward, f1++, 1));
    emit(op(PipeOpKind::input_backward, b1, 1));
    emit(op(PipeOpKind::weight_backward, b1++, 1));
  }
  int w0 = b0, w1 = b1;
  for (int k = 0; k < r; ++k) {
    emit(op(PipeOpKind::input_backward, b0++, 0));
    emit(op(PipeOpKind::input_backward, b1++, 1));
  }
  for (int k = 0; k < pp - r; ++k) {
    emit(op(PipeOpKind::input_backward, b0++, 0));
    emit(op(PipeOpKind::weight_backward, w0++, 0));
  }
  while (w1 < b1) emit(op(PipeOpKind::weight_backward, w1++, 1));
  while (w0 < b0) emit(op(PipeOpKind::weight_backward, w0++, 0));
}

/// DualPipe's step() for one rank: `n` ranks per half (DualPipe: pp / 2; DualPipeV: pp),
/// `h` this rank's index in its half, `chunks` micro-batches per direction, `middle` the
/// rank whose first F&B is not overlapped.
template <class Emit> void dualpipe_order(int n, int h, int chunks, bool middle, Emit&& emit) {
  int fwd[2] = {0, 0}, bwd[2] = {0, 0};
  // (chunk, micro-batch) of the weight passes kept back, first in, first out: from `head` on.
  thread_local std::vector<std::pair<int, int>> weights;
  weights.clear();
  std::size_t head = 0;
  const auto forward = [&](int c) { emit(op(PipeOpKind::forward, fwd[c]++, c)); };
  const auto backward = [&](int c, bool zero_bubble) {
    if (zero_bubble) {
      emit(op(PipeOpKind::input_backward, bwd[c], c));
      weights.emplace_back(c, bwd[c]++);
    } else {
      emit(op(PipeOpKind::full_backward, bwd[c]++, c));
    }
  };
  const auto weight = [&] {
    if (head == weights.size()) return;
    emit(op(PipeOpKind::weight_backward, weights[head].second, weights[head].first));
    ++head;
  };
  const auto pair = [&](int cf, int cb) {
    PipeOp x = op(PipeOpKind::forward_backward, fwd[cf]++, cf);
    x.back_chunk = cb;
    x.back_micro_batch = bwd[cb]++;
    emit(x);
  };
  for (int k = 0; k < (n - h - 1) * 2; ++k) forward(0); // step 1: nF0
  for (int k = 0; k < h + 1; ++k) {                     // step 2: nF0F1
    forward(0);
    forward(1);
  }
  for (int k = 0; k < n - h - 1; ++k) { // step 3: nB1W1F1
    backward(1, true);
    weight();
    forward(1);
  }
  for (int k = 0; k < chunks - 2 * n + h + 1; ++k) { // step 4: nF0B1F1B0
    if (k == 0 && middle) {
      forward(0);
      backward(1, false);
    } else {
      pair(0, 1);
    }
    pair(1, 0);
  }
  for (int k = 0; k < n - h - 1; ++k) { // step 5: nB1F1B0
    backward(1, false);
    pair(1, 0);
  }
  bool zero_bubble = false; // step 6: nB1B0, the second half with zero bubble
  for (int k = 0; k < h + 1; ++k) {
    if (k == (h + 1) / 2 && h % 2 == 1) zero_bubble = true;
    backward(1, zero_bubble);
    if (k == (h + 1) / 2 && h % 2 == 0) zero_bubble = true;
    backward(0, zero_bubble);
  }
  for (int k = 0; k < n - h - 1; ++k) { // step 7: nWB0
    weight();
    backward(0, true);
  }
  for (int k = 0; k < h + 1; ++k) weight(); // step 8: nW
}

/// Rank r's passes of schedule s, in order, each handed to `emit`.
template <class Emit> void rank_order(Schedule s, int pp, int r, int m, Emit&& emit) {
  switch (s) {
  case Schedule::zb_h1: one_f_one_b_order(pp, r, m, true, emit); break;
  case Schedule::zb_h2: zb_h2_order(pp, r, m, emit); break;
  case Schedule::zbv: zbv_order(pp, r, m, emit); break;
  case Schedule::dualpipev: dualpipe_order(pp, r, m, r == pp - 1, emit); break;
  case Schedule::dualpipe: {
    const int h = std::min(r, pp - 1 - r);
    dualpipe_order(pp / 2, h, m / 2, h == pp / 2 - 1, emit);
    break;
  }
  case Schedule::one_f_one_b:
  case Schedule::interleaved:
  case Schedule::terapipe: one_f_one_b_order(pp, r, m, false, emit); break;
  }
}

PipeLayout schedule_layout(Schedule s, int pp, int m) {
  switch (s) {
  case Schedule::zbv:
  case Schedule::dualpipev: return v_layout(pp, m);
  case Schedule::dualpipe: return dual_layout(pp, m);
  case Schedule::one_f_one_b:
  case Schedule::interleaved:
  case Schedule::terapipe:
  case Schedule::zb_h1:
  case Schedule::zb_h2: break;
  }
  return linear_layout(pp, m);
}

} // namespace

PipeProgram pipe_program(Schedule s, int pp, int m) {
  PipeProgram prog;
  prog.orders.resize(static_cast<std::size_t>(pp));
  prog.layout = schedule_layout(s, pp, m);
  // At most a forward, an input backward and a weight pass per chunk and micro-batch. Each
  // rank's order is written into a per-thread buffer of that size (no capacity check per
  // pass beyond the bound's) and copied into its vector once.
  const std::size_t most = static_cast<std::size_t>(3 * m * prog.layout.chunks_per_rank);
  thread_local std::vector<PipeOp> buffer;
  if (buffer.size() < most) buffer.resize(most);
  PipeOp* const out = buffer.data();
  for (int r = 0; r < pp; ++r) {
    std::size_t n = 0;
    // The emit inlined into the generators (GCC left it a call per pass, about 14
    // instructions each): 0.4 M on native_h100x512_zb_top10 since compile_pipe's counts come
    // from the outline (zbspeed7 had found it 0.4 M worse before, compile_pipe's code grown).
    rank_order(s, pp, r, m, [out, most, &n](const PipeOp& x) __attribute__((always_inline)) {
      if (n == most) throw std::logic_error("pipeline schedule: more passes than 3 per chunk and micro-batch");
      out[n++] = x;
    });
    prog.orders[static_cast<std::size_t>(r)].assign(out, out + n);
  }
  return prog;
}

double overlapped_s(const PipeChunkTimes& f, const PipeChunkTimes& b) noexcept {
  const double back = b.input_s + b.weight_s;
  const double f_compute = std::max(0.0, f.forward_s - f.forward_comm_s);
  const double b_compute = std::max(0.0, back - b.backward_comm_s);
  const double hidden = std::min(f.forward_comm_s, b_compute) + std::min(b.backward_comm_s, f_compute);
  return f.forward_s + back - hidden;
}

namespace {

/// Done times of the forwards and input backwards of every (direction, position,
/// micro-batch), and the rank waiting for each.
class Board {
public:
  explicit Board(const PipeLayout& l) : l_(l) {
    offset_.push_back(0);
    for (int d = 0; d < l.directions; ++d) {
      offset_.push_back(offset_.back() + static_cast<std::size_t>(l.positions) *
                                             static_cast<std::size_t>(l.micro_batches[static_cast<std::size_t>(d)]));
    }
    const std::size_t n = offset_.back();
    forward_.assign(n, -1.0);
    backward_.assign(n, -1.0);
    forward_waiter_.assign(n, -1);
    backward_waiter_.assign(n, -1);
  }
  std::size_t key(int d, int pos, int mb) const {
    return offset_[static_cast<std::size_t>(d)] +
           static_cast<std::size_t>(pos) * static_cast<std::size_t>(l_.micro_batches[static_cast<std::size_t>(d)]) +
           static_cast<std::size_t>(mb);
  }
  std::vector<double> forward_, backward_;
  std::vector<int> forward_waiter_, backward_waiter_;

private:
  const PipeLayout& l_;
  std::vector<std::size_t> offset_;
};

double link_between(const PipeTimes& t, int a, int b) {
  double s = 0.0;
  for (int j = std::min(a, b); j < std::max(a, b); ++j) {
    s += t.link_s[static_cast<std::size_t>(j)];
  }
  return s;
}

} // namespace

PipeRun simulate_pipe(const PipeProgram& prog, const PipeTimes& times, bool record_events) {
  const PipeLayout& l = prog.layout;
  const auto R = static_cast<std::size_t>(l.ranks);
  Board board(l);
  PipeRun run;
  run.rank_start_s.assign(R, -1.0);
  run.rank_end_s.assign(R, 0.0);
  std::vector<std::size_t> next(R, 0);
  std::vector<double> free_at(R, 0.0);
  std::vector<int> ready;
  for (int r = l.ranks - 1; r >= 0; --r) ready.push_back(r);

  // When the input of a forward of (rank r, chunk c, mb) arrives, or -1 (not yet; r waits).
  const auto forward_input = [&](int r, int c, int mb) -> double {
    const auto [d, pos] = l.place[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
    if (pos == 0) return 0.0;
    const std::size_t k = board.key(d, pos - 1, mb);
    if (board.forward_[k] < 0.0) {
      board.forward_waiter_[k] = r;
      return -1.0;
    }
    const int from = l.at[static_cast<std::size_t>(d)][static_cast<std::size_t>(pos - 1)].first;
    return board.forward_[k] + link_between(times, from, r);
  };
  const auto backward_input = [&](int r, int c, int mb) -> double {
    const auto [d, pos] = l.place[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
    if (pos == l.positions - 1) {
      const std::size_t k = board.key(d, pos, mb);
      if (board.forward_[k] < 0.0) {
        board.forward_waiter_[k] = r;
        return -1.0;
      }
      return board.forward_[k];
    }
    const std::size_t k = board.key(d, pos + 1, mb);
    if (board.backward_[k] < 0.0) {
      board.backward_waiter_[k] = r;
      return -1.0;
    }
    const int from = l.at[static_cast<std::size_t>(d)][static_cast<std::size_t>(pos + 1)].first;
    return board.backward_[k] + link_between(times, from, r);
  };
  const auto finish = [&](std::vector<double>& done, std::vector<int>& waiter, int r, int c,
                          int mb, double end) {
    const auto [d, pos] = l.place[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
    const std::size_t k = board.key(d, pos, mb);
    done[k] = end;
    if (waiter[k] >= 0) {
      ready.push_back(waiter[k]);
      waiter[k] = -1;
    }
  };

  while (!ready.empty()) {
    const int r = ready.back();
    ready.pop_back();
    const auto ru = static_cast<std::size_t>(r);
    const std::vector<PipeOp>& order = prog.orders[ru];
    const std::vector<PipeChunkTimes>& ct = times.chunks[ru];
    while (next[ru] < order.size()) {
      const PipeOp& o = order[next[ru]];
      const PipeChunkTimes& t = ct[static_cast<std::size_t>(o.chunk)];
      double input = 0.0, duration = 0.0;
      switch (o.kind) {
      case PipeOpKind::forward:
        input = forward_input(r, o.chunk, o.micro_batch);
        duration = t.forward_s;
        break;
      case PipeOpKind::input_backward:
        input = backward_input(r, o.chunk, o.micro_batch);
        duration = t.input_s;
        break;
      case PipeOpKind::full_backward:
        input = backward_input(r, o.chunk, o.micro_batch);
        duration = t.input_s + t.weight_s;
        break;
      case PipeOpKind::weight_backward: duration = t.weight_s; break;
      case PipeOpKind::forward_backward: {
        const double a = forward_input(r, o.chunk, o.micro_batch);
        const double b = a < 0.0 ? -1.0 : backward_input(r, o.back_chunk, o.back_micro_batch);
        input = a < 0.0 || b < 0.0 ? -1.0 : std::max(a, b);
        duration = overlapped_s(t, ct[static_cast<std::size_t>(o.back_chunk)]);
        break;
      }
      }
      if (input < 0.0) break; // waits; the pass it waits for puts it back on `ready`
      const double start = std::max(free_at[ru], input);
      const double end = start + duration;
      if (run.rank_start_s[ru] < 0.0) run.rank_start_s[ru] = start;
      free_at[ru] = end;
      ++next[ru];
      if (record_events) {
        run.events.push_back(PipeEvent{o.kind, r, o.chunk, o.micro_batch, o.back_chunk,
                                       o.back_micro_batch, start, end});
      }
      switch (o.kind) {
      case PipeOpKind::forward:
        finish(board.forward_, board.forward_waiter_, r, o.chunk, o.micro_batch, end);
        break;
      case PipeOpKind::input_backward:
      case PipeOpKind::full_backward:
        finish(board.backward_, board.backward_waiter_, r, o.chunk, o.micro_batch, end);
        break;
      case PipeOpKind::weight_backward: break;
      case PipeOpKind::forward_backward:
        finish(board.forward_, board.forward_waiter_, r, o.chunk, o.micro_batch, end);
        finish(board.backward_, board.backward_waiter_, r, o.back_chunk, o.back_micro_batch, end);
        break;
      }
    }
  }
  double first = 0.0;
  for (std::size_t r = 0; r < R; ++r) {
    if (next[r] != prog.orders[r].size()) {
      throw std::logic_error(fmt::format("pipeline schedule deadlocks on rank {} at pass {}", r,
                                         next[r]));
    }
    run.rank_end_s[r] = free_at[r];
    if (run.rank_start_s[r] < 0.0) run.rank_start_s[r] = 0.0;
    first = r == 0 ? run.rank_start_s[r] : std::min(first, run.rank_start_s[r]);
    run.makespan_s = std::max(run.makespan_s, free_at[r]);
  }
  run.makespan_s -= first;
  return run;
}

namespace {

/// Index of a pass's duration in pipe_makespan's table: four single passes per (rank, chunk),
/// then one F&B pair per (rank, forward chunk, backward chunk).
std::int32_t duration_index(int r, int c, PipeOpKind k, int back_chunk, int ranks, int chunks) {
  const int rc = r * chunks + c;
  switch (k) {
  case PipeOpKind::forward: return rc * 4;
  case PipeOpKind::input_backward: return rc * 4 + 1;
  case PipeOpKind::full_backward: return rc * 4 + 2;
  case PipeOpKind::weight_backward: return rc * 4 + 3;
  case PipeOpKind::forward_backward: break;
  }
  return ranks * chunks * 4 + rc * chunks + back_chunk;
}

} // namespace

namespace {

/// One pass of a rank as the compile reads it, decoded once (CompileKeys::decode): the keys
/// of the compile's state array that it reads (its inputs; an always-made key for none) and
/// marks (its outputs; a scratch key for none), and the compiled pass with its rank, duration
/// index (duration_index) and the spans of links its inputs cross (its inputs' passes are
/// the compile's).
struct DecodedPass {
  std::uint32_t in, in2, out, out2;
  PipePass pass;
};

/// Per (rank, chunk), where its passes' inputs come from (as simulate_pipe's forward_input
/// and backward_input): the forward at the position before (the always-made keys at position
/// 0) and the input backward at the position after (the last position's own forward), each
/// by the key of its micro-batch 0 with the span of links it crosses; the keys its own
/// passes make; the index of its forward's duration (duration_index).
struct Wiring {
  std::uint32_t forward_in = 0, backward_in = 0;
  std::uint32_t forward_out = 0, backward_out = 0;
  std::uint16_t forward_span = 0, backward_span = 0;
  std::int32_t duration = 0;
};

/// The compile's keys of a layout: one state per key, forwards' keys [0, K), input
/// backwards' [K, 2K), and past them one key per micro-batch that is always made (a
/// forward's input at position 0: pass 0, "no input"), then one scratch key that passes
/// without a second output mark. Each state is the pass (1-based index in the compiled
/// order) that made the key, or -1 while none has, or -(r + 2) while rank r waits for it
/// (one rank waits on a key: the pass at the next position, or the previous one for a
/// backward).
class CompileKeys {
public:
  /// Makes the layout's link spans in `spans`, rank by rank and chunk by chunk (not at their
  /// first use: their order differs from one made pass by pass, their figures do not:
  /// pipe_makespan sums each span's links by its ends; every (rank, chunk) of a program runs
  /// its forwards and backwards).
  CompileKeys(const PipeLayout& l, std::vector<std::pair<int, int>>& spans)
      : C_(l.chunks_per_rank), pair_base_(l.ranks * l.chunks_per_rank * 4) {
    const int R = l.ranks;
    std::vector<std::size_t> offset{0};
    int most_mb = 0;
    for (int d = 0; d < l.directions; ++d) {
      const int mb = l.micro_batches[static_cast<std::size_t>(d)];
      offset.push_back(offset.back() + static_cast<std::size_t>(l.positions) * static_cast<std::size_t>(mb));
      most_mb = std::max(most_mb, mb);
    }
    K_ = offset.back();
    most_mb_ = static_cast<std::size_t>(most_mb);
    if (2 * K_ + most_mb_ + 1 > std::size_t{0x7fffffff}) throw std::logic_error("pipeline schedule: too many passes");
    const auto key = [&](int d, int pos) {
      return static_cast<std::uint32_t>(offset[static_cast<std::size_t>(d)] +
                                        static_cast<std::size_t>(pos) *
                                            static_cast<std::size_t>(l.micro_batches[static_cast<std::size_t>(d)]));
    };
    // Index of the span [lo, hi) by lo * R + hi, 0 until first made.
    std::vector<std::uint16_t> span_index(static_cast<std::size_t>(R) * static_cast<std::size_t>(R), 0);
    const auto span_of = [&spans, &span_index, R](int from, int r) {
      const int lo = std::min(from, r), hi = std::max(from, r);
      std::uint16_t& k = span_index[static_cast<std::size_t>(lo * R + hi)];
      if (k == 0) {
        if (spans.size() > 65535) throw std::logic_error("pipeline schedule: too many link spans");
        spans.emplace_back(lo, hi);
        k = static_cast<std::uint16_t>(spans.size() - 1);
      }
      return k;
    };
    wiring_.resize(static_cast<std::size_t>(R * C_));
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C_; ++c) {
        Wiring& w = wiring_[static_cast<std::size_t>(r * C_ + c)];
        const auto [d, pos] = l.place[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
        const auto du = static_cast<std::size_t>(d);
        w.forward_out = key(d, pos);
        w.backward_out = static_cast<std::uint32_t>(K_) + w.forward_out;
        w.duration = (r * C_ + c) * 4;
        if (pos > 0) {
          w.forward_in = key(d, pos - 1);
          w.forward_span = span_of(l.at[du][static_cast<std::size_t>(pos - 1)].first, r);
        } else {
          w.forward_in = static_cast<std::uint32_t>(2 * K_);
        }
        if (pos == l.positions - 1) {
          w.backward_in = w.forward_out;
        } else {
          w.backward_in = static_cast<std::uint32_t>(K_) + key(d, pos + 1);
          w.backward_span = span_of(l.at[du][static_cast<std::size_t>(pos + 1)].first, r);
        }
      }
    }
  }
  /// The keys' count.
  [[nodiscard]] std::size_t states() const noexcept { return 2 * K_ + most_mb_ + 1; }
  /// The first key that is always made (states [always(), states() - 1) start at 0).
  [[nodiscard]] std::size_t always() const noexcept { return 2 * K_; }
  /// Rank r's wiring, by chunk.
  [[nodiscard]] const Wiring* rank(int r) const noexcept { return &wiring_[static_cast<std::size_t>(r * C_)]; }

  /// Pass `o` of rank r (`wr` its wiring), its kind known where the generator makes it
  /// inlined (the switch folds away there).
  [[gnu::always_inline]] DecodedPass decode(const Wiring* wr, int r, const PipeOp& o) const {
    const Wiring& w = wr[o.chunk];
    const auto mb = static_cast<std::uint32_t>(o.micro_batch);
    DecodedPass p;
    p.in2 = static_cast<std::uint32_t>(2 * K_);
    p.out2 = static_cast<std::uint32_t>(2 * K_ + most_mb_);
    p.pass.rank = r;
    p.pass.dep = 0;
    p.pass.dep2 = 0;
    p.pass.span2 = 0;
    switch (o.kind) {
    case PipeOpKind::forward:
      p.in = w.forward_in + mb;
      p.out = w.forward_out + mb;
      p.pass.span = w.forward_span;
      p.pass.duration = w.duration;
      break;
    case PipeOpKind::input_backward:
    case PipeOpKind::full_backward:
      p.in = w.backward_in + mb;
      p.out = w.backward_out + mb;
      p.pass.span = w.backward_span;
      p.pass.duration = w.duration + (o.kind == PipeOpKind::input_backward ? 1 : 2);
      break;
    case PipeOpKind::weight_backward:
      p.in = p.in2;
      p.out = p.out2;
      p.pass.span = 0;
      p.pass.duration = w.duration + 3;
      break;
    case PipeOpKind::forward_backward: {
      const Wiring& wb = wr[o.back_chunk];
      const auto bmb = static_cast<std::uint32_t>(o.back_micro_batch);
      p.in = w.forward_in + mb;
      p.out = w.forward_out + mb;
      p.pass.span = w.forward_span;
      p.in2 = wb.backward_in + bmb;
      p.out2 = wb.backward_out + bmb;
      p.pass.span2 = wb.backward_span;
      p.pass.duration = pair_base_ + (r * C_ + o.chunk) * C_ + o.back_chunk;
      break;
    }
    }
    return p;
  }

private:
  int C_ = 1;
  std::int32_t pair_base_ = 0;
  std::size_t K_ = 0, most_mb_ = 0;
  std::vector<Wiring> wiring_;
};

/// Compiles decoded passes, rank r's `count[r]` from `passes + begin[r]`, into g's arrays
/// (g.spans made by `keys`). Each rank runs its passes in order until one waits for an input
/// no pass has made yet; it then waits on that input's key and is put back on `ready` by the
/// pass that makes it, as simulate_pipe does. Every pass is looked at once, and once more per
/// wait. An F&B pair waits on its forward's input first, then on its backward's.
void compile_decoded(PipeGraph& g, const CompileKeys& keys, int R, const DecodedPass* passes,
                     const std::vector<std::size_t>& begin, const std::vector<std::size_t>& count) {
  thread_local std::vector<std::int32_t> state;
  state.assign(keys.states(), -1);
  std::fill(state.begin() + static_cast<std::ptrdiff_t>(keys.always()), state.end() - 1, 0);
  std::size_t total = 0;
  for (int r = 0; r < R; ++r) total += count[static_cast<std::size_t>(r)];
  g.first.assign(static_cast<std::size_t>(R), -1);
  // The ranks ready to run, a stack: a rank is on it or waits on one key, never both.
  thread_local std::vector<std::int32_t> ready_buffer;
  ready_buffer.resize(static_cast<std::size_t>(R));
  std::int32_t* const ready = ready_buffer.data();
  std::size_t top = 0;
  for (int r = R - 1; r >= 0; --r) ready[top++] = r;
  // The compiled array is sized without filling (UninitializedAllocator) and each element
  // written once below.
  g.passes.resize(total);
  PipePass* const out = g.passes.data();
  std::int32_t* const st = state.data();
  std::size_t n = 0;
  // Marks key k made by pass `made`, putting its waiter back on `ready`.
  const auto mark = [ready, &top, st](std::size_t k, std::int32_t made) {
    const std::int32_t was = st[k];
    st[k] = made;
    if (was < -1) ready[top++] = -was - 2;
  };
  std::int32_t second = 0; // the second inputs or'ed: not 0 once an F&B pair has one
  thread_local std::vector<std::size_t> next;
  next.assign(static_cast<std::size_t>(R), 0);
  while (top > 0) {
    const int r = ready[--top];
    const auto ru = static_cast<std::size_t>(r);
    const DecodedPass* const p = passes + begin[ru];
    const std::size_t cnt = count[ru];
    const std::int32_t waiting = -(r + 2);
    std::size_t at = next[ru];
    const std::size_t n_before = n; // this run's passes are n_before .. n - 1
    for (; at < cnt; ++at) {
      const DecodedPass& o = p[at];
      const std::int32_t a = st[o.in];
      if (a < 0) { // the pass it waits for puts it back on `ready`
        st[o.in] = waiting;
        break;
      }
      const std::int32_t b = st[o.in2];
      if (b < 0) {
        st[o.in2] = waiting;
        break;
      }
      const auto made = static_cast<std::int32_t>(n + 1);
      mark(o.out, made);
      mark(o.out2, made);
      PipePass& q = out[n];
      q = o.pass;
      q.dep = a;
      q.dep2 = b;
      second |= b;
      ++n;
    }
    if (n > n_before && g.first[ru] < 0) g.first[ru] = static_cast<std::int32_t>(n_before);
    next[ru] = at;
  }
  for (std::size_t r = 0; r < next.size(); ++r) {
    if (next[r] != count[r]) {
      throw std::logic_error(fmt::format("pipeline schedule deadlocks on rank {} at pass {}", r,
                                         next[r]));
    }
  }
  g.pairs = second != 0;
}

/// The compiled order of (s, pp, m) with `layout` (schedule_layout's), its passes decoded as
/// the generators make them (no PipeProgram: pipe_program's orders are written and read
/// again otherwise); g.uses left empty for the caller (the order's outline counts the same
/// passes by the same index). Equal to compile_pipe(pipe_program(s, pp, m)) array by array
/// but `uses` (test: `the compiled fast path ...`).
PipeGraph compile_order(Schedule s, int pp, int m, const PipeLayout& layout) {
  PipeGraph g;
  g.chunks_per_rank = layout.chunks_per_rank;
  const CompileKeys keys(layout, g.spans);
  // At most a forward, an input backward and a weight pass per chunk and micro-batch, as
  // pipe_program's bound; each rank's passes from r * most.
  const std::size_t most = static_cast<std::size_t>(3 * m * layout.chunks_per_rank);
  // Grown without copying or filling: every pass read is written first.
  thread_local std::vector<DecodedPass, UninitializedAllocator<DecodedPass>> buffer;
  thread_local std::vector<std::size_t> begin, count;
  if (const std::size_t need = most * static_cast<std::size_t>(pp); buffer.size() < need) {
    buffer = {};
    buffer.resize(need);
  }
  begin.resize(static_cast<std::size_t>(pp));
  count.resize(static_cast<std::size_t>(pp));
  for (int r = 0; r < pp; ++r) {
    const auto ru = static_cast<std::size_t>(r);
    DecodedPass* const out = buffer.data() + ru * most;
    const Wiring* const wr = keys.rank(r);
    std::size_t n = 0;
    rank_order(s, pp, r, m, [out, most, wr, r, &keys, &n](const PipeOp& x) __attribute__((always_inline)) {
      if (n == most) throw std::logic_error("pipeline schedule: more passes than 3 per chunk and micro-batch");
      out[n++] = keys.decode(wr, r, x);
    });
    begin[ru] = ru * most;
    count[ru] = n;
  }
  compile_decoded(g, keys, pp, buffer.data(), begin, count);
  g.layout = layout;
  return g;
}

} // namespace

PipeGraph compile_pipe(const PipeProgram& prog) {
  PipeGraph g;
  const PipeLayout& l = prog.layout;
  const int R = l.ranks;
  const int C = l.chunks_per_rank;
  g.chunks_per_rank = C;
  const CompileKeys keys(l, g.spans);
  g.uses.assign(static_cast<std::size_t>(R * C * 4 + R * C * C), 0);
  std::vector<DecodedPass> passes;
  std::vector<std::size_t> begin, count;
  for (int r = 0; r < R; ++r) {
    begin.push_back(passes.size());
    count.push_back(prog.orders[static_cast<std::size_t>(r)].size());
    const Wiring* const wr = keys.rank(r);
    for (const PipeOp& o : prog.orders[static_cast<std::size_t>(r)]) {
      passes.push_back(keys.decode(wr, r, o));
      ++g.uses[static_cast<std::size_t>(passes.back().pass.duration)];
    }
  }
  compile_decoded(g, keys, R, passes.data(), begin, count);
  g.layout = l;
  return g;
}

namespace {

bool covers(const PipeHeld& a, const PipeHeld& b) noexcept {
  return a.b[0] >= b.b[0] && a.b[1] >= b.b[1] && a.w[0] >= b.w[0] && a.w[1] >= b.w[1];
}

/// Follows one rank's passes and keeps the points of its order no other point covers
/// (pipe_held_peaks): a point after a pass that frees something is covered by the one before
/// it, a point followed by a forward by the forward's; the rest are kept unless another
/// covers them.
class PeakTracker {
public:
  void pass(const PipeOp& o) {
    if (pending_ && o.kind != PipeOpKind::forward) keep(held_);
    pending_ = false;
    const auto c = static_cast<std::size_t>(o.chunk);
    switch (o.kind) {
    case PipeOpKind::forward:
      ++held_.b[c];
      pending_ = true;
      break;
    case PipeOpKind::input_backward:
      --held_.b[c];
      ++held_.w[c];
      pending_ = true;
      break;
    case PipeOpKind::full_backward: --held_.b[c]; break;
    case PipeOpKind::weight_backward: --held_.w[c]; break;
    case PipeOpKind::forward_backward:
      ++held_.b[c];
      keep(held_); // the pair's forward done, its backward not
      --held_.b[static_cast<std::size_t>(o.back_chunk)];
      break;
    }
  }
  std::vector<PipeHeld> finish() {
    if (pending_) keep(held_);
    pending_ = false;
    return std::move(front_);
  }

private:
  void keep(const PipeHeld& h) {
    // The point kept last covers most of the points that follow it: looked at first.
    if (!front_.empty() && covers(front_.back(), h)) return;
    for (const PipeHeld& f : front_) {
      if (covers(f, h)) return;
    }
    std::erase_if(front_, [&h](const PipeHeld& f) { return covers(h, f); });
    front_.push_back(h);
  }
  PipeHeld held_;
  bool pending_ = false;
  std::vector<PipeHeld> front_;
};

/// Follows one rank's passes and counts those after its last backward (PipeOutline::tail,
/// last_backward).
class DrainTracker {
public:
  DrainTracker(const PipeLayout& l, int r) : l_(l), r_(r), C_(l.chunks_per_rank) {}
  void pass(const PipeOp& o) {
    int back = -1;
    switch (o.kind) {
    case PipeOpKind::input_backward:
    case PipeOpKind::full_backward: back = o.chunk; break;
    case PipeOpKind::forward_backward: back = o.back_chunk; break;
    case PipeOpKind::forward:
    case PipeOpKind::weight_backward: break;
    }
    if (back >= 0) {
      counts_.fill(0);
      last_ = l_.place[static_cast<std::size_t>(r_)][static_cast<std::size_t>(back)];
      // The backward itself is before the tail.
      return;
    }
    ++counts_[local(o)];
  }
  /// Writes the rank's tail into `tail` (laid out as PipeOutline::uses) and its last
  /// backward into `last`.
  void finish(std::vector<std::uint32_t>& tail, std::pair<int, int>& last) const {
    const auto R = static_cast<std::size_t>(l_.ranks);
    const auto C = static_cast<std::size_t>(C_);
    const auto r = static_cast<std::size_t>(r_);
    for (std::size_t k = 0; k < 4 * C; ++k) tail[r * C * 4 + k] = counts_[k];
    for (std::size_t k = 0; k < C * C; ++k) tail[R * C * 4 + r * C * C + k] = counts_[4 * C + k];
    last = last_;
  }

private:
  [[nodiscard]] std::size_t local(const PipeOp& o) const noexcept {
    const auto c = static_cast<std::size_t>(o.chunk);
    const auto C = static_cast<std::size_t>(C_);
    switch (o.kind) {
    case PipeOpKind::forward: return c * 4;
    case PipeOpKind::input_backward: return c * 4 + 1;
    case PipeOpKind::full_backward: return c * 4 + 2;
    case PipeOpKind::weight_backward: return c * 4 + 3;
    case PipeOpKind::forward_backward: break;
    }
    return 4 * C + c * C + static_cast<std::size_t>(o.back_chunk);
  }
  const PipeLayout& l_;
  int r_ = 0;
  int C_ = 1;
  std::array<std::uint32_t, 12> counts_{}; // 4 C singles and C x C pairs, C <= 2
  std::pair<int, int> last_{-1, -1};
};

/// One rank's passes counted and followed as the generator makes them, in one switch per
/// pass: what PipeOutline::uses (per local duration index: 4 single kinds per chunk, then
/// the C x C F&B pairs), DrainTracker (the passes after the last backward and its chunk)
/// and PeakTracker (the Pareto-maximal points) each count of it, the same figures.
struct RankSummary {
  std::array<std::uint32_t, 12> count{}; // 4 C singles and C x C pairs, C <= 2
  std::array<std::uint32_t, 12> tail{};
  int last_chunk = -1;

  [[gnu::always_inline]] void pass(const PipeOp& o) {
    const auto c = static_cast<std::size_t>(o.chunk);
    if (pending_ && o.kind != PipeOpKind::forward) keep(held_);
    pending_ = false;
    switch (o.kind) {
    case PipeOpKind::forward:
      ++count[c * 4];
      ++tail[c * 4];
      ++held_.b[c];
      pending_ = true;
      break;
    case PipeOpKind::input_backward:
      ++count[c * 4 + 1];
      tail.fill(0);
      last_chunk = o.chunk;
      --held_.b[c];
      ++held_.w[c];
      pending_ = true;
      break;
    case PipeOpKind::full_backward:
      ++count[c * 4 + 2];
      tail.fill(0);
      last_chunk = o.chunk;
      --held_.b[c];
      break;
    case PipeOpKind::weight_backward:
      ++count[c * 4 + 3];
      ++tail[c * 4 + 3];
      --held_.w[c];
      break;
    case PipeOpKind::forward_backward: {
      // Only DualPipe's two-chunk ranks run pairs (C = 2: the pairs from index 8).
      const auto bc = static_cast<std::size_t>(o.back_chunk);
      ++count[8 + c * 2 + bc];
      tail.fill(0);
      last_chunk = o.back_chunk;
      ++held_.b[c];
      keep(held_); // the pair's forward done, its backward not
      --held_.b[bc];
      break;
    }
    }
  }
  std::vector<PipeHeld> finish() {
    if (pending_) keep(held_);
    pending_ = false;
    return std::move(front_);
  }

private:
  // PeakTracker::keep's result. `hi_` and `lo_` bound the kept points per count from above
  // and below (maxima and minima over every point kept, dropped ones included): a point with
  // a count above hi_'s is covered by none, one with a count below lo_'s covers none, so the
  // scans are skipped (a run of input backwards adds such points: one micro-batch's
  // activations fewer and one deferred weight pass more than any before).
  void keep(const PipeHeld& h) {
    // The point kept last covers most of the points that follow it: looked at first.
    if (!front_.empty() && covers(front_.back(), h)) return;
    keep_new(h);
  }
  [[gnu::noinline]] void keep_new(const PipeHeld& h) {
    if (front_.empty()) {
      hi_ = lo_ = h;
      front_.push_back(h);
      return;
    }
    if (covers(hi_, h)) {
      for (const PipeHeld& f : front_) {
        if (covers(f, h)) return;
      }
    }
    if (covers(h, lo_)) {
      std::erase_if(front_, [&h](const PipeHeld& f) { return covers(h, f); });
    }
    hi_.b[0] = std::max(hi_.b[0], h.b[0]);
    hi_.b[1] = std::max(hi_.b[1], h.b[1]);
    hi_.w[0] = std::max(hi_.w[0], h.w[0]);
    hi_.w[1] = std::max(hi_.w[1], h.w[1]);
    lo_.b[0] = std::min(lo_.b[0], h.b[0]);
    lo_.b[1] = std::min(lo_.b[1], h.b[1]);
    lo_.w[0] = std::min(lo_.w[0], h.w[0]);
    lo_.w[1] = std::min(lo_.w[1], h.w[1]);
    front_.push_back(h);
  }
  PipeHeld hi_, lo_;
  PipeHeld held_;
  bool pending_ = false;
  std::vector<PipeHeld> front_;
};

/// What a search needs of (s, pp, m)'s order without storing it: its outline (pipe_outline)
/// and each rank's peaks (pipe_held_peaks), the passes counted as the generators make them.
struct OrderSummary {
  PipeOutline outline;
  std::vector<std::vector<PipeHeld>> peaks;
};

/// With `with_peaks` false, the peaks of ZB-H1 (m >= pp) and ZB-H2 (m >= 2 pp - 1), which do
/// not depend on m there, are left empty (GraphCache::summary shares one copy per pp).
OrderSummary summarize_order(Schedule s, int pp, int m, bool with_peaks = true) {
  OrderSummary out;
  out.outline.layout = schedule_layout(s, pp, m);
  const int C = out.outline.layout.chunks_per_rank;
  std::vector<std::uint32_t>& uses = out.outline.uses;
  uses.assign(static_cast<std::size_t>(pp * C * 4 + pp * C * C), 0);
  // Closed forms (tests: `the closed forms of the peaks and outlines equal the orders'`):
  // ZB-H1 with m >= pp, rank i holds p - i micro-batches after its steady forwards with the i
  // W passes it keeps back, and p - i - 1 with i + 1 between a B and its W; ZB-H2 with
  // m >= 2 pp - 1, 2 (pp - i) - 1 with 2i, and one fewer with one more. Every rank runs m
  // forwards, B and W passes. ZB-H1 with m < pp and ZB-H2 with m < 2 pp - 1: below.
  const int i_peak = s == Schedule::zb_h1 && m >= pp ? 1 : s == Schedule::zb_h2 && m >= 2 * pp - 1 ? 2 : 0;
  if (i_peak == 0 || with_peaks) out.peaks.resize(static_cast<std::size_t>(pp));
  if (i_peak > 0) {
    for (int i = 0; i < pp; ++i) {
      const auto k = static_cast<std::size_t>(i) * 4;
      uses[k] = uses[k + 1] = uses[k + 3] = static_cast<std::uint32_t>(m);
      const int b = i_peak * (pp - i) - (i_peak - 1), w = i_peak * i;
      PipeHeld after_forward, after_backward;
      after_forward.b[0] = b;
      after_forward.w[0] = w;
      after_backward.b[0] = b - 1;
      after_backward.w[0] = w + 1;
      if (with_peaks) out.peaks[static_cast<std::size_t>(i)] = {after_forward, after_backward};
    }
    // After its last input backward (in the cool-down, or the steady phase's last on the last
    // rank) rank i runs that backward's W, then the i (ZB-H1) or 2i (ZB-H2) it kept back.
    out.outline.tail.assign(uses.size(), 0);
    out.outline.last_backward.assign(static_cast<std::size_t>(pp), {-1, -1});
    for (int i = 0; i < pp; ++i) {
      out.outline.tail[static_cast<std::size_t>(i) * 4 + 3] = static_cast<std::uint32_t>(i_peak * i + 1);
      out.outline.last_backward[static_cast<std::size_t>(i)] = {0, i};
    }
    return out;
  }
  out.outline.tail.assign(uses.size(), 0);
  out.outline.last_backward.assign(static_cast<std::size_t>(pp), {-1, -1});
  if (s == Schedule::zb_h1 && m < pp) {
    // ZB-H1 with m < pp: rank i warms up with k = min(pp - 1 - i, m) forwards, then runs
    // t = m - k steady F B (no W: b - w <= t <= i), then k cool-down B W, then its t W. Its
    // points: k + 1 held after each steady forward (t - 1 W at most), k with t after the last
    // steady B, k - 1 with t + 1 after the first cool-down B (k >= 1); with t = 0, m after
    // the forwards and m - 1 with 1 after the first B. After its last B it runs t + 1 W
    // (t with k = 0: that B is the last steady one).
    for (int i = 0; i < pp; ++i) {
      const auto iu = static_cast<std::size_t>(i);
      const auto k = iu * 4;
      uses[k] = uses[k + 1] = uses[k + 3] = static_cast<std::uint32_t>(m);
      const int warm = std::min(pp - 1 - i, m);
      const int t = m - warm;
      const auto held = [](int b, int w) {
        PipeHeld h;
        h.b[0] = b;
        h.w[0] = w;
        return h;
      };
      std::vector<PipeHeld>& peaks = out.peaks[iu];
      if (t == 0) {
        peaks = {held(m, 0), held(m - 1, 1)};
      } else {
        peaks = {held(warm + 1, t - 1), held(warm, t)};
        if (warm >= 1) peaks.push_back(held(warm - 1, t + 1));
      }
      out.outline.tail[k + 3] = static_cast<std::uint32_t>(warm >= 1 ? t + 1 : t);
      out.outline.last_backward[iu] = {0, i};
    }
    return out;
  }
  if (s == Schedule::zb_h2 && m < 2 * pp - 1) {
    // ZB-H2 with m < 2 pp - 1: rank i warms up with a = min(2 (pp - 1 - i) + 1, m) forwards,
    // then runs t = m - a < 2i steady B F (no W: b - w <= t), then a cool-down B each (a W
    // after the B that leaves more than 2i back), then the rest of its W. Its points: a held
    // with t after its last forward, then a - j with t + j after the j-th cool-down B, up to
    // the first B followed by a W (j = 2i + 1 - t) or the last (j = a). After its last B it
    // runs min(m, 2i + 1) W.
    for (int i = 0; i < pp; ++i) {
      const auto iu = static_cast<std::size_t>(i);
      const auto k = iu * 4;
      uses[k] = uses[k + 1] = uses[k + 3] = static_cast<std::uint32_t>(m);
      const int a = std::min(2 * (pp - 1 - i) + 1, m);
      const int t = m - a;
      std::vector<PipeHeld>& peaks = out.peaks[iu];
      const int last = std::min(a, 2 * i + 1 - t);
      for (int j = 0; j <= last; ++j) {
        PipeHeld h;
        h.b[0] = a - j;
        h.w[0] = t + j;
        peaks.push_back(h);
      }
      out.outline.tail[k + 3] = static_cast<std::uint32_t>(std::min(m, 2 * i + 1));
      out.outline.last_backward[iu] = {0, i};
    }
    return out;
  }
  const auto R = static_cast<std::size_t>(pp);
  const auto Cu = static_cast<std::size_t>(C);
  for (int r = 0; r < pp; ++r) {
    const auto ru = static_cast<std::size_t>(r);
    RankSummary t;
    rank_order(s, pp, r, m, [&t](const PipeOp& o) __attribute__((always_inline)) { t.pass(o); });
    out.peaks[ru] = t.finish();
    // The rank's counts laid out as duration_index's (PipeOutline::uses, tail).
    for (std::size_t k = 0; k < 4 * Cu; ++k) {
      uses[ru * Cu * 4 + k] = t.count[k];
      out.outline.tail[ru * Cu * 4 + k] = t.tail[k];
    }
    for (std::size_t k = 0; k < Cu * Cu; ++k) {
      uses[R * Cu * 4 + ru * Cu * Cu + k] = t.count[4 * Cu + k];
      out.outline.tail[R * Cu * 4 + ru * Cu * Cu + k] = t.tail[4 * Cu + k];
    }
    if (t.last_chunk >= 0) {
      out.outline.last_backward[ru] = out.outline.layout.place[ru][static_cast<std::size_t>(t.last_chunk)];
    }
  }
  return out;
}

/// Where (s, pp)'s orders become periodic in m: from `from` micro-batches on, `step` more
/// only add one more round of the steady phase to every rank, a round that holds nothing at
/// its end and passes through the same points as the rounds already there (ZB-V's
/// F0 B0 W0 F1 B1 W1 once every rank runs at least one with a forward of chunk 0: m >= 2 pp;
/// DualPipe's step 4, two F&B pairs, from m >= 2 pp, where rank h of a half runs h + 1 >= 1
/// rounds, two micro-batches more per round: the middle ranks' first round, a forward and a
/// full backward in place of the first pair, passes through the same two points as a pair
/// does and stays first, so a round more adds two pairs there too; DualPipeV's step 4, one
/// more micro-batch per round, from m >= 2 pp). So the counts of passes grow by the same
/// amount per step and the Pareto-maximal points stay those of `from`. {0, 0}: not used
/// (ZB-H1 and ZB-H2 have closed forms; 1F1B is not summarised).
struct Period {
  int from = 0;
  int step = 0;
};

Period steady_period(Schedule s, int pp) noexcept {
  switch (s) {
  case Schedule::zbv:
  case Schedule::dualpipev: return {2 * pp, 1};
  case Schedule::dualpipe: return {2 * pp, 2};
  case Schedule::one_f_one_b:
  case Schedule::interleaved:
  case Schedule::terapipe:
  case Schedule::zb_h1:
  case Schedule::zb_h2: break;
  }
  return {};
}

/// The summary of (s, pp) at the start of its period and the passes one step adds
/// (steady_period): ZB-V's round is one forward, input backward and weight pass of each
/// chunk on every rank; DualPipe's and DualPipeV's two F&B pairs on every rank, a forward of
/// chunk 0 with a backward of chunk 1 and the reverse.
struct PeriodicSummary {
  Period period;
  OrderSummary base;
  std::vector<std::uint32_t> delta;
  /// The base's peaks, shared by every m of the period (GraphCache::at): they do not depend
  /// on the rounds added.
  std::shared_ptr<const std::vector<std::vector<PipeHeld>>> peaks;
};

PeriodicSummary periodic_summary(Schedule s, int pp) {
  PeriodicSummary out;
  out.period = steady_period(s, pp);
  out.base = summarize_order(s, pp, out.period.from);
  const int C = out.base.outline.layout.chunks_per_rank;
  std::vector<std::uint32_t> delta(out.base.outline.uses.size(), 0);
  for (int r = 0; r < pp; ++r) {
    if (s == Schedule::zbv) {
      for (int c = 0; c < C; ++c) {
        for (const PipeOpKind k : {PipeOpKind::forward, PipeOpKind::input_backward, PipeOpKind::weight_backward}) {
          ++delta[static_cast<std::size_t>(duration_index(r, c, k, 0, pp, C))];
        }
      }
    } else {
      ++delta[static_cast<std::size_t>(duration_index(r, 0, PipeOpKind::forward_backward, 1, pp, C))];
      ++delta[static_cast<std::size_t>(duration_index(r, 1, PipeOpKind::forward_backward, 0, pp, C))];
    }
  }
  out.delta = std::move(delta);
  out.peaks = std::make_shared<const std::vector<std::vector<PipeHeld>>>(out.base.peaks);
  return out;
}

/// summarize_order(s, pp, m)'s outline from `ps` (m in its period, (m - from) a multiple of
/// the step): the base's counts plus one delta per step, the layout of m. Its peaks are the
/// base's (ps.peaks).
PipeOutline extend_outline(const PeriodicSummary& ps, Schedule s, int pp, int m) {
  PipeOutline out;
  out.layout = schedule_layout(s, pp, m);
  const auto k = static_cast<std::uint32_t>((m - ps.period.from) / ps.period.step);
  const std::vector<std::uint32_t>& a = ps.base.outline.uses;
  out.uses.reserve(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out.uses.push_back(a[i] + k * ps.delta[i]);
  // The rounds are inserted before every rank's last backward: the same passes after it.
  out.tail = ps.base.outline.tail;
  out.last_backward = ps.base.outline.last_backward;
  return out;
}

} // namespace

namespace {

/// One cache per thread (no locks): per recent (schedule, pp, micro-batches) its outline and
/// peaks (summarize_order) and, once simulated, its compiled graph. Dropped whole when it holds
/// more than kBudget passes' worth, so a thread keeps about 10 MB at most. Graphs are immutable and
/// shared with callers.
struct GraphCache {
  struct Entry {
    std::shared_ptr<const PipeOutline> outline;
    /// Compiled when first simulated (cached_pipe_graph).
    std::shared_ptr<const PipeGraph> graph;
    std::shared_ptr<const std::vector<std::vector<PipeHeld>>> peaks;
  };
  static constexpr std::size_t kBudget = std::size_t{1} << 19;
  std::unordered_map<std::uint64_t, Entry> entries;
  std::size_t passes = 0;
  /// Per (schedule, pp) with a period (steady_period): its start and step (a few KB each).
  std::unordered_map<std::uint64_t, PeriodicSummary> periodic;
  /// Per (schedule, pp) of ZB-H1 and ZB-H2: the peaks of their closed forms past m = pp and
  /// m = 2 pp - 1 (the same for every such m).
  std::unordered_map<std::uint64_t, std::shared_ptr<const std::vector<std::vector<PipeHeld>>>> closed_peaks;

  /// summarize_order(s, pp, m) as an entry's outline and peaks, taken from the period's start
  /// where m is in the period (the start itself included: its order is summarised once, as the
  /// period's base; its peaks shared by every m of the period, not copied per m).
  void summary(Schedule s, int pp, int m, Entry& e) {
    const Period period = steady_period(s, pp);
    if ((s == Schedule::zb_h1 && m >= pp) || (s == Schedule::zb_h2 && m >= 2 * pp - 1)) {
      // Closed forms whose peaks do not depend on m: one copy per (s, pp), shared.
      OrderSummary sum = summarize_order(s, pp, m, false);
      e.outline = std::make_shared<const PipeOutline>(std::move(sum.outline));
      const std::uint64_t key = (static_cast<std::uint64_t>(s) << 32) | static_cast<std::uint32_t>(pp);
      auto it = closed_peaks.find(key);
      if (it == closed_peaks.end()) {
        it = closed_peaks.emplace(key, std::make_shared<const std::vector<std::vector<PipeHeld>>>(
                                           summarize_order(s, pp, m).peaks)).first;
      }
      e.peaks = it->second;
      return;
    }
    if (period.step == 0 || m < period.from || (m - period.from) % period.step != 0) {
      OrderSummary sum = summarize_order(s, pp, m);
      e.outline = std::make_shared<const PipeOutline>(std::move(sum.outline));
      e.peaks = std::make_shared<const std::vector<std::vector<PipeHeld>>>(std::move(sum.peaks));
      return;
    }
    const std::uint64_t key = (static_cast<std::uint64_t>(s) << 32) | static_cast<std::uint32_t>(pp);
    auto it = periodic.find(key);
    if (it == periodic.end()) it = periodic.emplace(key, periodic_summary(s, pp)).first;
    e.outline = std::make_shared<const PipeOutline>(extend_outline(it->second, s, pp, m));
    e.peaks = it->second.peaks;
  }

  Entry& at(Schedule s, int pp, int m) {
    const std::uint64_t key = (static_cast<std::uint64_t>(s) << 56) |
                              (static_cast<std::uint64_t>(static_cast<std::uint32_t>(pp)) << 32) |
                              static_cast<std::uint32_t>(m);
    if (const auto it = entries.find(key); it != entries.end()) return it->second;
    Entry fresh;
    summary(s, pp, m, fresh);
    make_room(fresh.outline->uses.size()); // about its size in passes' worth of memory
    Entry& e = entries[key];
    e = std::move(fresh);
    return e;
  }

  /// Drops every entry when `n` more passes would pass the budget.
  void make_room(std::size_t n) {
    if (passes + n > kBudget) {
      entries.clear();
      passes = 0;
    }
    passes += n;
  }
};

GraphCache& graph_cache() {
  thread_local GraphCache cache;
  return cache;
}

} // namespace

PipeOutline pipe_outline(const PipeProgram& prog) {
  PipeOutline o;
  o.layout = prog.layout;
  const int R = prog.layout.ranks;
  const int C = prog.layout.chunks_per_rank;
  o.uses.assign(static_cast<std::size_t>(R * C * 4 + R * C * C), 0);
  o.tail.assign(o.uses.size(), 0);
  o.last_backward.assign(static_cast<std::size_t>(R), {-1, -1});
  for (int r = 0; r < R; ++r) {
    DrainTracker drain(o.layout, r);
    for (const PipeOp& op : prog.orders[static_cast<std::size_t>(r)]) {
      ++o.uses[static_cast<std::size_t>(duration_index(r, op.chunk, op.kind, op.back_chunk, R, C))];
      drain.pass(op);
    }
    drain.finish(o.tail, o.last_backward[static_cast<std::size_t>(r)]);
  }
  return o;
}

std::shared_ptr<const PipeGraph> cached_pipe_graph(Schedule s, int pp, int m) {
  GraphCache& cache = graph_cache();
  GraphCache::Entry* e = &cache.at(s, pp, m);
  if (!e->graph) {
    // The passes' counts per duration index are the outline's (summarize_order's, equal to
    // pipe_outline's: tested), not counted again.
    PipeGraph compiled = compile_order(s, pp, m, e->outline->layout);
    compiled.uses = e->outline->uses;
    auto g = std::make_shared<const PipeGraph>(std::move(compiled));
    const std::size_t before = cache.entries.size();
    cache.make_room(g->passes.size());
    if (cache.entries.size() != before) e = &cache.at(s, pp, m); // dropped: made again
    e->graph = std::move(g);
  }
  return e->graph;
}

namespace {

/// Makespans already simulated on this thread, by (schedule, pp, micro-batches) and every
/// figure of the times bit for bit (cached_pipe_makespan). Dropped whole past kBudget doubles
/// of keys (about 8 MB).
struct MakespanMemo {
  static constexpr std::size_t kBudget = std::size_t{1} << 20;
  /// Keys laid end to end, each [length, schedule, pp, m, figures...] as 64-bit words.
  std::vector<std::uint64_t> keys;
  /// Per entry: where its key starts in `keys`, its makespan.
  std::unordered_multimap<std::uint64_t, std::pair<std::size_t, double>> index;
  /// The key of the last lookup.
  std::vector<std::uint64_t> key;
};

MakespanMemo& makespan_memo() {
  thread_local MakespanMemo memo;
  return memo;
}

} // namespace

double cached_pipe_makespan(Schedule s, int pp, int m, const PipeTimes& times) {
  MakespanMemo& memo = makespan_memo();
  std::vector<std::uint64_t>& key = memo.key;
  key.clear();
  key.push_back(0); // the length, below
  key.push_back(static_cast<std::uint64_t>(s));
  key.push_back(static_cast<std::uint64_t>(static_cast<std::uint32_t>(pp)));
  key.push_back(static_cast<std::uint64_t>(static_cast<std::uint32_t>(m)));
  for (const std::vector<PipeChunkTimes>& rank : times.chunks) {
    key.push_back(rank.size());
    for (const PipeChunkTimes& c : rank) {
      for (const double v : {c.forward_s, c.input_s, c.weight_s, c.forward_comm_s, c.backward_comm_s}) {
        key.push_back(std::bit_cast<std::uint64_t>(v));
      }
    }
  }
  for (const double v : times.link_s) key.push_back(std::bit_cast<std::uint64_t>(v));
  key[0] = key.size();
  std::uint64_t h = 0;
  for (const std::uint64_t v : key) h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  const auto [lo, hi] = memo.index.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    const std::size_t at = it->second.first;
    if (memo.keys[at] == key.size() &&
        std::equal(key.begin(), key.end(), memo.keys.begin() + static_cast<std::ptrdiff_t>(at))) {
      return it->second.second;
    }
  }
  const double makespan = pipe_makespan(*cached_pipe_graph(s, pp, m), times);
  if (memo.keys.size() + key.size() > MakespanMemo::kBudget) {
    memo.keys.clear();
    memo.index.clear();
  }
  memo.index.emplace(h, std::pair{memo.keys.size(), makespan});
  memo.keys.insert(memo.keys.end(), key.begin(), key.end());
  return makespan;
}

std::shared_ptr<const PipeOutline> cached_pipe_outline(Schedule s, int pp, int m) {
  return graph_cache().at(s, pp, m).outline;
}

std::shared_ptr<const std::vector<std::vector<PipeHeld>>>
cached_pipe_held_peaks(Schedule s, int pp, int m) {
  return graph_cache().at(s, pp, m).peaks;
}

namespace {

/// The duration of each pass kind (PipeGraph::duration's indices) of `ranks` ranks of `chunks`
/// chunks on `times`.
/// With `uses` (PipeGraph::uses), the F&B pairs no pass takes are left at 0.0 instead (the
/// bounds multiply each duration by its count: 0.0 either way).
void pass_durations(int ranks, int chunks, const PipeTimes& times, std::vector<double>& duration,
                    const std::vector<std::uint32_t>* uses = nullptr) {
  const auto R = static_cast<std::size_t>(ranks);
  const auto C = static_cast<std::size_t>(chunks);
  duration.resize(R * C * 4 + R * C * C);
  for (std::size_t r = 0; r < R; ++r) {
    const std::vector<PipeChunkTimes>& ct = times.chunks[r];
    for (std::size_t c = 0; c < C; ++c) {
      const PipeChunkTimes& t = ct[c];
      double* d = &duration[(r * C + c) * 4];
      d[0] = t.forward_s;
      d[1] = t.input_s;
      d[2] = t.input_s + t.weight_s;
      d[3] = t.weight_s;
      for (std::size_t b = 0; b < C; ++b) {
        const std::size_t k = R * C * 4 + (r * C + c) * C + b;
        duration[k] = uses != nullptr && (*uses)[k] == 0 ? 0.0 : overlapped_s(t, ct[b]);
      }
    }
  }
}

/// Rank r's passes end to end: each pass kind's count (`uses`) times its duration, over the
/// rank's chunk passes (4 per chunk) and its links (C x C per rank, after every rank's passes).
double rank_busy(const std::vector<std::uint32_t>& uses, const std::vector<double>& duration,
                 std::size_t R, std::size_t C, std::size_t r) noexcept {
  double busy = 0.0;
  for (std::size_t k = (r * C) * 4; k < (r * C + C) * 4; ++k) {
    busy += static_cast<double>(uses[k]) * duration[k];
  }
  for (std::size_t k = R * C * 4 + r * C * C; k < R * C * 4 + (r + 1) * C * C; ++k) {
    busy += static_cast<double>(uses[k]) * duration[k];
  }
  return busy;
}

/// The busiest rank's passes end to end: `uses` per duration index (PipeGraph::uses).
double busy_bound(int ranks, int chunks, const std::vector<std::uint32_t>& uses,
                  const PipeTimes& times) {
  const auto R = static_cast<std::size_t>(ranks);
  const auto C = static_cast<std::size_t>(chunks);
  thread_local std::vector<double> duration;
  pass_durations(ranks, chunks, times, duration);
  const std::vector<std::uint32_t>& u = uses;
  double busiest = 0.0;
  for (std::size_t r = 0; r < R; ++r) {
    const double busy = rank_busy(u, duration, R, C, r);
    busiest = std::max(busiest, busy);
  }
  // The simulation adds the same durations one pass at a time (and waits in between): its
  // rounding may fall below this sum's by a few ulps per pass, far less than this margin.
  return busiest * (1.0 - 1e-9);
}

} // namespace

double pipe_busy_bound(const PipeGraph& graph, const PipeTimes& times) {
  return busy_bound(graph.layout.ranks, graph.chunks_per_rank, graph.uses, times);
}

double pipe_busy_bound(const PipeOutline& outline, const PipeTimes& times) {
  return busy_bound(outline.layout.ranks, outline.layout.chunks_per_rank, outline.uses, times);
}

double pipe_fill_bound(const PipeOutline& outline, const PipeTimes& times) {
  const PipeLayout& l = outline.layout;
  const auto R = static_cast<std::size_t>(l.ranks);
  const auto C = static_cast<std::size_t>(l.chunks_per_rank);
  const std::vector<std::uint32_t>& u = outline.uses;
  thread_local std::vector<double> duration;
  pass_durations(l.ranks, l.chunks_per_rank, times, duration, &u);
  // The shortest a forward of chunk (r, c) can take: alone, or inside an F&B pair with a
  // backward of its rank, of the kinds the order runs (a pair's end is its forward's output:
  // never before F, and the minimum covers any rounding of overlapped_s).
  const auto shortest_forward = [&](std::size_t r, std::size_t c) {
    const std::size_t alone = (r * C + c) * 4;
    double f = u[alone] > 0 ? duration[alone] : HUGE_VAL;
    for (std::size_t b = 0; b < C; ++b) {
      const std::size_t k = R * C * 4 + (r * C + c) * C + b;
      if (u[k] > 0) f = std::min(f, duration[k]);
    }
    return f == HUGE_VAL ? duration[alone] : f;
  };
  // The shortest a backward of chunk (r, c) can take, of the kinds the order runs: an input
  // backward, a full backward, or inside an F&B pair with any forward of its rank (the pair's
  // end is the backward's output).
  const auto shortest_backward = [&](std::size_t r, std::size_t c) {
    const std::size_t k = (r * C + c) * 4;
    double b = HUGE_VAL;
    if (u[k + 1] > 0) b = duration[k + 1];
    if (u[k + 2] > 0) b = std::min(b, duration[k + 2]);
    for (std::size_t f = 0; f < C; ++f) {
      const std::size_t pk = R * C * 4 + (r * C + f) * C + c;
      if (u[pk] > 0) b = std::min(b, duration[pk]);
    }
    return b == HUGE_VAL ? 0.0 : b;
  };
  const bool drain = outline.tail.size() == u.size() && outline.last_backward.size() == R;
  // Per rank, the earliest its first pass can start after the first pass of the whole run: a
  // rank's first pass is a forward, of some (direction, position); it waits for the forward
  // of the same micro-batch at the position before, and so on back to position 0. And per
  // (direction, position), `down`: the chain of backwards of one micro-batch from there to
  // position 0 after that position's backward (each lower position's backward and the link
  // before it).
  thread_local std::vector<double> start, down;
  start.assign(R, HUGE_VAL);
  const std::size_t P = static_cast<std::size_t>(l.positions);
  down.resize(l.at.size() * P);
  for (std::size_t d = 0; d < l.at.size(); ++d) {
    double t = 0.0, back = 0.0;
    for (std::size_t pos = 0; pos < l.at[d].size(); ++pos) {
      const auto [r, c] = l.at[d][pos];
      const auto ru = static_cast<std::size_t>(r);
      const auto cu = static_cast<std::size_t>(c);
      start[ru] = std::min(start[ru], t);
      down[d * P + pos] = back;
      if (pos + 1 < l.at[d].size()) {
        const int next = l.at[d][pos + 1].first;
        double link = 0.0;
        for (int j = std::min(r, next); j < std::max(r, next); ++j) {
          link += times.link_s[static_cast<std::size_t>(j)];
        }
        t += shortest_forward(ru, cu) + link;
        if (drain) back += link + shortest_backward(ru, cu);
      }
    }
  }
  // Each rank's passes end to end after that start; the run's first pass starts no later than
  // any, so the makespan is at least the latest of these ends. And a rank's last backward
  // ends no earlier than its passes but the tail after it, end to end after that start; the
  // backwards of the same micro-batch at the positions below follow it.
  double latest = 0.0;
  for (std::size_t r = 0; r < R; ++r) {
    const double from = start[r] == HUGE_VAL ? 0.0 : start[r];
    if (!drain || outline.last_backward[r].first < 0) {
      const double busy = rank_busy(u, duration, R, C, r);
      if (busy > 0.0) latest = std::max(latest, from + busy);
      continue;
    }
    // The passes up to the last backward and those after it, in one sweep of the rank's
    // duration indices (rank_busy's order for `busy`).
    double busy = 0.0, tail = 0.0;
    const std::uint32_t* tu = outline.tail.data();
    for (std::size_t k = (r * C) * 4; k < (r * C + C) * 4; ++k) {
      busy += static_cast<double>(u[k]) * duration[k];
      tail += static_cast<double>(tu[k]) * duration[k];
    }
    for (std::size_t k = R * C * 4 + r * C * C; k < R * C * 4 + (r + 1) * C * C; ++k) {
      busy += static_cast<double>(u[k]) * duration[k];
      tail += static_cast<double>(tu[k]) * duration[k];
    }
    if (busy > 0.0) latest = std::max(latest, from + busy);
    const auto [d, pos] = outline.last_backward[r];
    latest = std::max(latest, from + (busy - tail) +
                                  down[static_cast<std::size_t>(d) * P + static_cast<std::size_t>(pos)]);
  }
  // The same margin as busy_bound's for the simulation's rounding.
  return latest * (1.0 - 1e-9);
}

double pipe_makespan(const PipeGraph& g, const PipeTimes& times) {
  const auto R = static_cast<std::size_t>(g.layout.ranks);
  // One set of buffers per thread, reused.
  thread_local std::vector<double> duration, end, free_at, span;
  pass_durations(g.layout.ranks, g.chunks_per_rank, times, duration);
  // The links each input crosses, summed from the lower rank up as simulate_pipe's
  // link_between does (span 0: none; an end plus 0.0 is that end, ends being >= 0).
  span.resize(g.spans.size());
  for (std::size_t k = 0; k < g.spans.size(); ++k) {
    double s = 0.0;
    for (int j = g.spans[k].first; j < g.spans[k].second; ++j) s += times.link_s[static_cast<std::size_t>(j)];
    span[k] = s;
  }
  free_at.assign(R, 0.0);
  const std::size_t n = g.passes.size();
  end.resize(n + 1);
  end[0] = 0.0; // "no input": a pass waiting on nothing waits for time 0
  const double* sp = span.data();
  const double* du = duration.data();
  double* e = end.data();
  double* fr = free_at.data();
  const PipePass* const passes = g.passes.data();
  // simulate_pipe's arithmetic pass for pass: a pass starts at max(rank free, input) and an
  // F&B pair's input is max(forward input, backward input); max(x, 0.0) is x for x >= 0.
  if (g.pairs) {
    for (std::size_t i = 0; i < n; ++i) {
      const PipePass& p = passes[i];
      const auto r = static_cast<std::size_t>(p.rank);
      const double a = e[p.dep] + sp[p.span];
      const double b = e[p.dep2] + sp[p.span2];
      const double s = std::max(fr[r], std::max(a, b));
      fr[r] = s + du[p.duration];
      e[i + 1] = fr[r];
    }
  } else {
    // No F&B pair: every second input is "none", 0.0, and max(a, 0.0) is a (a >= 0).
    for (std::size_t i = 0; i < n; ++i) {
      const PipePass& p = passes[i];
      const auto r = static_cast<std::size_t>(p.rank);
      const double a = e[p.dep] + sp[p.span];
      const double s = std::max(fr[r], a);
      fr[r] = s + du[p.duration];
      e[i + 1] = fr[r];
    }
  }
  double first = 0.0, makespan = 0.0;
  for (std::size_t r = 0; r < R; ++r) {
    double rs = 0.0;
    if (const std::int32_t i = g.first[r]; i >= 0) {
      // Its first pass started at its input (the rank was free from 0).
      const auto u = static_cast<std::size_t>(i);
      const PipePass& p = passes[u];
      rs = std::max(0.0, std::max(e[p.dep] + sp[p.span], e[p.dep2] + sp[p.span2]));
    }
    first = r == 0 ? rs : std::min(first, rs);
    makespan = std::max(makespan, free_at[r]);
  }
  return makespan - first;
}

double held_value(const PipeHeld& held, std::span<const double> share, double w_ratio) noexcept {
  double b = 0.0, w = 0.0;
  for (std::size_t c = 0; c < share.size() && c < 2; ++c) {
    b += share[c] * held.b[c];
    w += share[c] * held.w[c];
  }
  return b + w_ratio * w;
}

namespace {

/// Walks each rank's order, calling `at(rank, held)` after every pass (an F&B pair also after
/// its forward).
template <class At> void walk_held(const PipeProgram& prog, At&& at) {
  for (std::size_t r = 0; r < prog.orders.size(); ++r) {
    PipeHeld h;
    for (const PipeOp& o : prog.orders[r]) {
      const auto c = static_cast<std::size_t>(o.chunk);
      switch (o.kind) {
      case PipeOpKind::forward: ++h.b[c]; break;
      case PipeOpKind::input_backward:
        --h.b[c];
        ++h.w[c];
        break;
      case PipeOpKind::full_backward: --h.b[c]; break;
      case PipeOpKind::weight_backward: --h.w[c]; break;
      case PipeOpKind::forward_backward:
        ++h.b[c];
        at(r, h);
        --h.b[static_cast<std::size_t>(o.back_chunk)];
        break;
      }
      at(r, h);
    }
  }
}

} // namespace

std::vector<std::vector<PipeHeld>> pipe_held_peaks(const PipeProgram& prog) {
  std::vector<std::vector<PipeHeld>> out;
  for (const std::vector<PipeOp>& order : prog.orders) {
    PeakTracker t;
    for (const PipeOp& o : order) t.pass(o);
    out.push_back(t.finish());
  }
  return out;
}

std::vector<double> pipe_in_flight(const PipeProgram& prog,
                                   const std::vector<std::vector<double>>& share, double w_ratio) {
  std::vector<double> out(prog.orders.size(), 0.0);
  walk_held(prog, [&](std::size_t r, const PipeHeld& h) {
    out[r] = std::max(out[r], held_value(h, share[r], w_ratio));
  });
  return out;
}

double held_peak(const std::vector<PipeHeld>& peaks, std::span<const double> share,
                 double w_ratio) noexcept {
  double peak = 0.0;
  for (const PipeHeld& h : peaks) peak = std::max(peak, held_value(h, share, w_ratio));
  return peak;
}

} // namespace zerosearch
