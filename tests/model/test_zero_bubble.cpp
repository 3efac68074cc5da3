#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "zerosearch/model/zero_bubble.hpp"

using namespace zerosearch;

namespace {

/// Every rank and chunk alike: forward F, input-gradient backward I, weight gradient W, and
/// the exposed communication of the forward and the backward; links free.
PipeTimes equal_times(const PipeProgram& prog, double F, double I, double W, double comm = 0.0) {
  PipeTimes t;
  PipeChunkTimes c;
  c.forward_s = F;
  c.input_s = I;
  c.weight_s = W;
  c.forward_comm_s = comm;
  c.backward_comm_s = comm;
  t.chunks.assign(static_cast<std::size_t>(prog.layout.ranks),
                  std::vector<PipeChunkTimes>(static_cast<std::size_t>(prog.layout.chunks_per_rank), c));
  t.link_s.assign(static_cast<std::size_t>(prog.layout.ranks - 1), 0.0);
  return t;
}

/// The largest (last pass's end - first pass's start) of any rank: the bubble Qi et al. count
/// for ZB-H2 and ZB-V, whose ranks start F apart (the skew their optimizer post-validation
/// overlaps with the next step).
double longest_rank_span(const PipeRun& run) {
  double out = 0.0;
  for (std::size_t r = 0; r < run.rank_end_s.size(); ++r) {
    out = std::max(out, run.rank_end_s[r] - run.rank_start_s[r]);
  }
  return out;
}

/// (F, I, W) per chunk; B = I + W is the full backward of DualPipe's notation.
struct Passes {
  double F, I, W;
};

const std::vector<Passes> kTimes = {{1, 1, 1}, {2, 2, 1}, {1, 1.2, 0.8}, {1.5, 1, 0.3}, {1, 1, 0.25}};

} // namespace

TEST_CASE("a layout's ranks hold their chunks' places inline, at most two", "[zb]") {
  // ZB-V on 4 ranks: rank r holds positions r and 7 - r; DualPipe: rank r runs direction 0 at
  // position r and direction 1 at 3 - r (its second half the other way round); ZB-H1 one each.
  const PipeLayout v = pipe_program(Schedule::zbv, 4, 8).layout;
  REQUIRE(v.place.size() == 4);
  CHECK(v.place[1].size() == 2);
  CHECK(v.place[1][0] == std::pair{0, 1});
  CHECK(v.place[1][1] == std::pair{0, 6});
  const PipeLayout d = pipe_program(Schedule::dualpipe, 4, 8).layout;
  CHECK(std::vector<std::pair<int, int>>(d.place[0].begin(), d.place[0].end()) ==
        std::vector<std::pair<int, int>>{{0, 0}, {1, 3}});
  CHECK(std::vector<std::pair<int, int>>(d.place[3].begin(), d.place[3].end()) ==
        std::vector<std::pair<int, int>>{{1, 0}, {0, 3}});
  const PipeLayout h = pipe_program(Schedule::zb_h1, 3, 4).layout;
  CHECK(h.place[2].size() == 1);
  CHECK(h.place[2][0] == std::pair{0, 2});
  RankPlace full = v.place[0];
  CHECK_THROWS_AS(full.push_back({0, 3}), std::logic_error);
}

TEST_CASE("every pass of every chunk and micro-batch runs once", "[zb]") {
  for (const Schedule s : {Schedule::one_f_one_b, Schedule::zb_h1, Schedule::zb_h2, Schedule::zbv,
                           Schedule::dualpipe, Schedule::dualpipev}) {
    for (const int p : {2, 4, 6}) {
      const int m = 4 * p;
      const PipeProgram prog = pipe_program(s, p, m);
      std::map<std::tuple<int, int, int, int>, int> seen; // (kind, rank, chunk, mb)
      for (int r = 0; r < p; ++r) {
        for (const PipeOp& o : prog.orders[static_cast<std::size_t>(r)]) {
          if (o.kind == PipeOpKind::forward_backward) {
            ++seen[{0, r, o.chunk, o.micro_batch}];
            ++seen[{1, r, o.back_chunk, o.back_micro_batch}];
            ++seen[{2, r, o.back_chunk, o.back_micro_batch}];
          } else if (o.kind == PipeOpKind::full_backward) {
            ++seen[{1, r, o.chunk, o.micro_batch}];
            ++seen[{2, r, o.chunk, o.micro_batch}];
          } else {
            ++seen[{static_cast<int>(o.kind), r, o.chunk, o.micro_batch}];
          }
        }
      }
      const int per_chunk = prog.layout.micro_batches.front();
      CHECK(seen.size() == static_cast<std::size_t>(3 * p * prog.layout.chunks_per_rank * per_chunk));
      for (const auto& [key, n] : seen) {
        CHECK(n == 1);
        CHECK(std::get<3>(key) < per_chunk);
      }
    }
  }
}

TEST_CASE("1F1B's bubble is (p-1)(F+B)", "[zb]") {
  for (const int p : {2, 3, 4, 8}) {
    for (const int m : {p, 2 * p, 3 * p + 1}) {
      for (const Passes& x : kTimes) {
        const PipeProgram prog = pipe_program(Schedule::one_f_one_b, p, m);
        const PipeRun run = simulate_pipe(prog, equal_times(prog, x.F, x.I, x.W));
        const double B = x.I + x.W;
        CHECK(run.makespan_s == Approx(m * (x.F + B) + (p - 1) * (x.F + B)).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("ZB-H1's bubble is (p-1)(F+B-2W)", "[zb]") {
  for (const int p : {2, 3, 4, 8}) {
    for (const int m : {p, 2 * p, 3 * p + 1}) {
      for (const Passes& x : kTimes) {
        const PipeProgram prog = pipe_program(Schedule::zb_h1, p, m);
        const PipeRun run = simulate_pipe(prog, equal_times(prog, x.F, x.I, x.W));
        const double B = x.I + x.W;
        CHECK(run.makespan_s == Approx(m * (x.F + B) + (p - 1) * (x.F + B - 2 * x.W)).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("ZB-H2's bubble is (p-1)(F+B-3W) for m >= 2p-1 and 2W <= F+I, zero at F=I=W", "[zb]") {
  // Qi et al. Table 2 in their notation: (p-1)(T_F + T_B - 2 T_W), T_B the input gradient.
  for (const int p : {2, 3, 4, 8}) {
    for (const int m : {2 * p - 1, 3 * p}) {
      for (const Passes& x : kTimes) {
        const PipeProgram prog = pipe_program(Schedule::zb_h2, p, m);
        const PipeRun run = simulate_pipe(prog, equal_times(prog, x.F, x.I, x.W));
        const double B = x.I + x.W;
        CHECK(longest_rank_span(run) ==
              Approx(m * (x.F + B) + (p - 1) * (x.F + B - 3 * x.W)).epsilon(1e-12));
        // The first rank starts at once, the last (p-1) F later: the makespan carries that
        // skew where the weight passes cannot absorb it.
        CHECK(run.makespan_s >= longest_rank_span(run) - 1e-12);
        CHECK(run.makespan_s <= longest_rank_span(run) + (p - 1) * x.F + 1e-12);
      }
      const PipeProgram prog = pipe_program(Schedule::zb_h2, p, m);
      CHECK(longest_rank_span(simulate_pipe(prog, equal_times(prog, 1, 1, 1))) == Approx(3.0 * m));
    }
  }
}

TEST_CASE("ZB-V's bubble is (p-1)(F+B-3W) per chunk for m >= 2p-1, F = I >= W", "[zb]") {
  // Qi et al. §6: ZB-V has zero bubble when T_F = T_B = T_W, and the bubble of ZB-H2 with
  // half the stage's time per chunk otherwise (their handcrafted V assumes F = B-input).
  for (const int p : {2, 4, 6}) {
    for (const int m : {2 * p - 1, 2 * p, 5 * p}) {
      for (const Passes& x : {Passes{1, 1, 1}, Passes{2, 2, 1}, Passes{1, 1, 0.3}, Passes{1.5, 1.5, 1}}) {
        const PipeProgram prog = pipe_program(Schedule::zbv, p, m);
        const PipeRun run = simulate_pipe(prog, equal_times(prog, x.F, x.I, x.W));
        const double B = x.I + x.W;
        CHECK(longest_rank_span(run) ==
              Approx(2 * m * (x.F + B) + (p - 1) * (x.F + B - 3 * x.W)).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("DualPipe's bubble is (p/2-1)(F&B+B-3W), DualPipeV's (p-1)(F&B+B-3W)", "[zb]") {
  // deepseek-ai/DualPipe README, with F and B-input of a chunk alike as in its figure; F&B the
  // overlapped pair. The bubble is the idle time of the busiest rank.
  for (const int p : {2, 4, 6, 8}) {
    for (const int m : {2 * p, 4 * p + 2}) {
      for (const Passes& x : {Passes{1, 1, 1}, Passes{2, 2, 1}, Passes{1, 1, 0.3}, Passes{1.5, 1.5, 1}}) {
        for (const double comm : {0.0, 0.3}) {
          for (const Schedule s : {Schedule::dualpipe, Schedule::dualpipev}) {
            const PipeProgram prog = pipe_program(s, p, m);
            const PipeTimes t = equal_times(prog, x.F, x.I, x.W, comm);
            const PipeRun run = simulate_pipe(prog, t, true);
            std::vector<double> busy(static_cast<std::size_t>(p), 0.0);
            for (const PipeEvent& e : run.events) busy[static_cast<std::size_t>(e.rank)] += e.end_s - e.start_s;
            const double B = x.I + x.W;
            const double fb = overlapped_s(t.chunks[0][0], t.chunks[0][0]);
            const double ranks = s == Schedule::dualpipe ? p / 2.0 : p;
            const double bubble = (ranks - 1) * (fb + B - 3 * x.W);
            double idle = 0.0;
            for (const double b : busy) idle = std::max(idle, run.makespan_s - b);
            CHECK(idle == Approx(bubble).margin(1e-12));
            if (comm == 0.0) {
              CHECK(fb == x.F + B);
              const double work = s == Schedule::dualpipe ? m * (x.F + B) : 2 * m * (x.F + B);
              CHECK(run.makespan_s == Approx(work + bubble).epsilon(1e-12));
            } else {
              CHECK(fb < x.F + B); // the pair hides some communication, not all of it
              CHECK(fb >= x.F + B - 2 * comm);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("activations in flight per schedule match the papers' tables", "[zb]") {
  const auto in_flight = [](Schedule s, int p, int m) {
    const PipeProgram prog = pipe_program(s, p, m);
    const auto C = static_cast<std::size_t>(prog.layout.chunks_per_rank);
    return pipe_in_flight(prog, std::vector<std::vector<double>>(
                                    static_cast<std::size_t>(p), std::vector<double>(C, 1.0 / static_cast<double>(C))),
                          0.0);
  };
  for (const int p : {2, 4, 8}) {
    const int m = 4 * p;
    const auto one = in_flight(Schedule::one_f_one_b, p, m);
    const auto h1 = in_flight(Schedule::zb_h1, p, m);
    const auto h2 = in_flight(Schedule::zb_h2, p, m);
    const auto v = in_flight(Schedule::zbv, p, m);
    const auto dual = in_flight(Schedule::dualpipe, p, m);
    const auto dualv = in_flight(Schedule::dualpipev, p, m);
    for (int i = 0; i < p; ++i) {
      const auto u = static_cast<std::size_t>(i);
      CHECK(one[u] == p - i);            // 1F1B: p - i micro-batches on rank i
      CHECK(h1[u] == one[u]);            // ZB-H1: as 1F1B (Qi et al.: p M_B)
      CHECK(h2[u] == 2 * (p - 1 - i) + 1); // ZB-H2: (2p - 1) M_B on the first rank
      CHECK(v[u] == p);                  // ZB-V: p M_B on every rank, two half-size chunks
    }
    // DualPipe: PP + 1 micro-batches of one stage's activations on the end ranks, a rank
    // holding two stages (2x parameters); DualPipeV: the same on p ranks of two half-chunks.
    CHECK(dual.front() * 2 == p + 1);
    CHECK(dual.back() * 2 == p + 1);
    CHECK(dualv.front() * 2 == 2 * p + 1);
  }
}

TEST_CASE("deferred weight passes hold M_W each, as Qi et al. count them", "[zb]") {
  // Qi et al. (ICLR 2024), section 3.1: worker i (from 1) of p holds (p - i + 1) M_B +
  // (i - 1) M_W under ZB-H1 and (2p - 2i + 1) M_B + (2i - 2) M_W under ZB-H2; in units of M_B,
  // with M_W / M_B = 32 / 34 (a GPT layer with flash attention: 32 s b h of 34 s b h).
  const double w = 32.0 / 34.0;
  for (const int p : {2, 4, 8, 16}) {
    for (const int m : {2 * p, 4 * p}) {
      const std::vector<std::vector<double>> one(static_cast<std::size_t>(p), {1.0});
      const auto h1 = pipe_in_flight(pipe_program(Schedule::zb_h1, p, m), one, w);
      const auto h2 = pipe_in_flight(pipe_program(Schedule::zb_h2, p, m), one, w);
      const auto plain = pipe_in_flight(pipe_program(Schedule::one_f_one_b, p, m), one, w);
      for (int i = 1; i <= p; ++i) {
        const auto u = static_cast<std::size_t>(i - 1);
        CHECK(h1[u] == (p - i + 1) + (i - 1) * w);
        CHECK(h2[u] == (2 * p - 2 * i + 1) + (2 * i - 2) * w);
        CHECK(plain[u] == p - i + 1); // 1F1B's backward frees everything at once
      }
      // The peak over the workers: ZB-H1 the last one's ~p M_B (p M_B on the first, the
      // paper's "same as 1F1B"), ZB-H2 (2p - 1) M_B on the first.
      CHECK(*std::max_element(h1.begin(), h1.end()) == Approx(p).epsilon(1.0 / 16));
      CHECK(*std::max_element(h2.begin(), h2.end()) == 2 * p - 1);
    }
  }
  // With full recompute a deferred W holds far more than the checkpoint (M_W > M_B): between
  // a B and its W every rank holds one W's inputs (rank 0: p - 1 checkpoints and one W), the
  // last rank p of them (p - 1 kept back and the one just made).
  const int p = 4;
  const auto h1 = pipe_in_flight(pipe_program(Schedule::zb_h1, p, 16),
                                 std::vector<std::vector<double>>(p, {1.0}), 16.0);
  CHECK(h1[0] == 3.0 + 16.0);
  CHECK(h1[3] == 4 * 16.0);
}

TEST_CASE("heterogeneous stages: the slowest rank bounds the makespan, slower is never faster",
          "[zb]") {
  std::mt19937 rng(28);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (const Schedule s : {Schedule::one_f_one_b, Schedule::zb_h1, Schedule::zb_h2, Schedule::zbv,
                           Schedule::dualpipe, Schedule::dualpipev}) {
    for (int trial = 0; trial < 20; ++trial) {
      const int p = 2 * (1 + trial % 4);
      const int m = 2 * p + 2 * (trial % 3);
      const PipeProgram prog = pipe_program(s, p, m);
      PipeTimes t = equal_times(prog, 1, 1, 1);
      for (auto& rank : t.chunks) {
        for (PipeChunkTimes& c : rank) {
          c.forward_s = u(rng);
          c.input_s = u(rng);
          c.weight_s = 0.5 * u(rng);
        }
      }
      for (double& l : t.link_s) l = 0.05 * u(rng);
      const PipeRun run = simulate_pipe(prog, t, true);
      std::vector<double> busy(static_cast<std::size_t>(p), 0.0);
      for (const PipeEvent& e : run.events) busy[static_cast<std::size_t>(e.rank)] += e.end_s - e.start_s;
      CHECK(run.makespan_s >= *std::max_element(busy.begin(), busy.end()) - 1e-12);
      // Slowing one rank's forward never shortens the step.
      PipeTimes slower = t;
      slower.chunks[static_cast<std::size_t>(trial % p)][0].forward_s *= 1.5;
      CHECK(simulate_pipe(prog, slower).makespan_s >= run.makespan_s - 1e-12);
    }
  }
}

TEST_CASE("ZB-H1 is never slower than 1F1B on the same heterogeneous stages", "[zb]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (int trial = 0; trial < 30; ++trial) {
    const int p = 2 + trial % 7;
    const int m = p + trial % 11;
    const PipeProgram a = pipe_program(Schedule::one_f_one_b, p, m);
    const PipeProgram b = pipe_program(Schedule::zb_h1, p, m);
    PipeTimes t = equal_times(a, 1, 1, 1);
    for (auto& rank : t.chunks) {
      rank[0].forward_s = u(rng);
      rank[0].input_s = u(rng);
      rank[0].weight_s = 0.5 * u(rng);
    }
    CHECK(simulate_pipe(b, t).makespan_s <= simulate_pipe(a, t).makespan_s + 1e-12);
  }
}

TEST_CASE("links delay the passes that wait for a transfer", "[zb]") {
  // Two ranks, one micro-batch of 1F1B: F0, link, F1, B1, link, B0.
  const PipeProgram prog = pipe_program(Schedule::one_f_one_b, 2, 1);
  PipeTimes t = equal_times(prog, 1, 2, 1);
  t.link_s = {0.5};
  CHECK(simulate_pipe(prog, t).makespan_s == Approx(1 + 0.5 + 1 + 3 + 0.5 + 3));
}

TEST_CASE("schedule conditions are one-line reasons", "[zb]") {
  CHECK(split_schedule_invalid_reason(Schedule::dualpipe, 3, 12, 80) ==
        "the dualpipe schedule needs an even pp (it pairs rank i with rank pp - 1 - i), not 3");
  CHECK(split_schedule_invalid_reason(Schedule::dualpipe, 4, 7, 80) ==
        "the dualpipe schedule needs an even number of micro-batches, at least 2 x pp = 8 (half "
        "enter from each end), not 7");
  CHECK(split_schedule_invalid_reason(Schedule::dualpipev, 4, 6, 80) ==
        "the dualpipev schedule needs at least 2 x pp = 8 micro-batches, not 6");
  CHECK(split_schedule_invalid_reason(Schedule::zbv, 1, 6, 80) ==
        "the zbv schedule needs a pipeline (pp > 1)");
  CHECK(split_schedule_invalid_reason(Schedule::zbv, 8, 16, 12) ==
        "the zbv schedule with pp 8 needs at least 16 layers (16 model chunks), not 12");
  CHECK(split_schedule_invalid_reason(Schedule::zb_h1, 4, 1, 80).empty());
  CHECK(split_schedule_invalid_reason(Schedule::dualpipe, 4, 8, 80).empty());
}

TEST_CASE("split_schedule_runs is split_schedule_invalid_reason's emptiness", "[zb]") {
  int runs = 0, not_runs = 0;
  for (const Schedule s : {Schedule::zb_h1, Schedule::zb_h2, Schedule::zbv, Schedule::dualpipe,
                           Schedule::dualpipev}) {
    for (int pp = 0; pp <= 9; ++pp) {
      for (int m = 0; m <= 20; ++m) {
        for (const long long layers : {1LL, 7LL, 8LL, 16LL, 80LL}) {
          const bool ok = split_schedule_runs(s, pp, m, layers);
          CHECK(ok == split_schedule_invalid_reason(s, pp, m, layers).empty());
          (ok ? runs : not_runs) += 1;
        }
      }
    }
  }
  CHECK(runs > 0);
  CHECK(not_runs > 0);
}

TEST_CASE("the closed forms of the peaks and outlines equal the orders'", "[zb]") {
  // The per-thread cache counts its outline and peaks as the passes are made, or takes them
  // from closed forms (ZB-H1 below m = pp and from it, ZB-H2 below 2 pp - 1 and from it) or
  // from the start of the steady period (ZB-V and DualPipeV from m = 2 pp + 1, DualPipe from 2 pp + 2:
  // the counts grow by the same amount per micro-batch, the points stay): the same counts and
  // the same Pareto-maximal points as the stored order, exhaustively over pp and m, and at a
  // few m far into the period. (It fails with ZB-V's period started at 2 pp - 2, and with
  // ZB-H1's closed form below pp missing its point after the first cool-down B or one W
  // more in the last rank's tail, and with ZB-H2's below 2 pp - 1 one point short.)
  const auto sorted = [](std::vector<PipeHeld> v) {
    std::sort(v.begin(), v.end(), [](const PipeHeld& a, const PipeHeld& b) {
      return std::tie(a.b[0], a.b[1], a.w[0], a.w[1]) < std::tie(b.b[0], b.b[1], b.w[0], b.w[1]);
    });
    return v;
  };
  int orders = 0;
  for (const Schedule s : {Schedule::zb_h1, Schedule::zb_h2, Schedule::zbv, Schedule::dualpipe,
                           Schedule::dualpipev}) {
    for (int p = 2; p <= 24; ++p) {
      std::vector<int> ms;
      for (int m = 1; m <= 4 * p + 3; ++m) ms.push_back(m);
      for (const int m : {6 * p + 1, 6 * p + 2, 9 * p + 4, 128, 257}) ms.push_back(m);
      for (const int m : ms) {
        if (!split_schedule_invalid_reason(s, p, m, 1000).empty()) continue;
        const PipeProgram prog = pipe_program(s, p, m);
        const std::vector<std::vector<PipeHeld>> walk = pipe_held_peaks(prog);
        const auto cached = cached_pipe_held_peaks(s, p, m);
        REQUIRE(cached->size() == walk.size());
        for (std::size_t r = 0; r < walk.size(); ++r) {
          CHECK(sorted((*cached)[r]) == sorted(walk[r]));
        }
        const PipeOutline outline = pipe_outline(prog);
        const auto cached_outline = cached_pipe_outline(s, p, m);
        CHECK(cached_outline->uses == outline.uses);
        CHECK(cached_outline->tail == outline.tail);
        CHECK(cached_outline->last_backward == outline.last_backward);
        ++orders;
      }
    }
  }
  CHECK(orders > 1700);
}

TEST_CASE("the compiled fast path gives simulate_pipe's makespan bit for bit", "[zb]") {
  // pipe_makespan (the search's path) against the event simulation on random heterogeneous
  // ranks, chunks, links and exposed communication: every schedule, many pp and m, exact
  // equality of the doubles (not Approx).
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<double> u(0.05, 3.0);
  std::uniform_real_distribution<double> frac(0.0, 0.6);
  int compared = 0;
  for (const Schedule s : {Schedule::one_f_one_b, Schedule::zb_h1, Schedule::zb_h2, Schedule::zbv,
                           Schedule::dualpipe, Schedule::dualpipev}) {
    for (const int p : {2, 3, 4, 5, 6, 8, 12, 16}) {
      for (const int m : {1, 2, 3, p - 1, p, p + 1, 2 * p - 1, 2 * p, 2 * p + 2, 3 * p + 1, 4 * p, 64}) {
        if (m < 1) continue;
        if (s != Schedule::one_f_one_b && !split_schedule_invalid_reason(s, p, m, 1000).empty()) continue;
        const PipeProgram prog = pipe_program(s, p, m);
        const PipeGraph graph = compile_pipe(prog);
        const std::shared_ptr<const PipeGraph> cached = cached_pipe_graph(s, p, m);
        // The cached graph is compiled from the generators' passes decoded as they are made
        // (no PipeProgram): the same compiled order, array by array.
        CHECK(cached->passes == graph.passes);
        CHECK(cached->spans == graph.spans);
        CHECK(cached->first == graph.first);
        CHECK(cached->uses == graph.uses);
        CHECK(cached->pairs == graph.pairs);
        CHECK(cached->chunks_per_rank == graph.chunks_per_rank);
        for (int trial = 0; trial < 4; ++trial) {
          PipeTimes t;
          t.chunks.resize(static_cast<std::size_t>(p));
          for (auto& rank : t.chunks) {
            rank.resize(static_cast<std::size_t>(prog.layout.chunks_per_rank));
            for (PipeChunkTimes& c : rank) {
              c.forward_s = u(rng);
              c.input_s = u(rng);
              c.weight_s = trial == 0 ? 0.0 : 0.5 * u(rng);
              c.forward_comm_s = frac(rng) * c.forward_s;
              c.backward_comm_s = frac(rng) * c.input_s;
            }
          }
          for (int j = 0; j + 1 < p; ++j) t.link_s.push_back(trial == 1 ? 0.0 : 0.2 * u(rng));
          const double reference = simulate_pipe(prog, t).makespan_s;
          CHECK(pipe_makespan(graph, t) == reference);
          CHECK(pipe_makespan(*cached, t) == reference);
          // Remembered per thread by the times' bits: the first call simulates, the second
          // finds it; times that differ in one figure (a link, a weight pass, a hidden
          // collective) are simulated afresh.
          CHECK(cached_pipe_makespan(s, p, m, t) == reference);
          CHECK(cached_pipe_makespan(s, p, m, t) == reference);
          PipeTimes other = t;
          const auto r = static_cast<std::size_t>(trial) % other.chunks.size();
          switch (trial) {
          case 0: other.chunks[r].back().forward_s *= 3.0; break;
          case 1: other.chunks[r].front().weight_s += 1.0; break;
          case 2: other.chunks.back().back().input_s += 0.75; break;
          default:
            if (!other.link_s.empty()) other.link_s.front() += 1.0;
            else other.chunks[r].front().forward_s += 1.0;
          }
          CHECK(cached_pipe_makespan(s, p, m, other) == simulate_pipe(prog, other).makespan_s);
          ++compared;
        }
        // The activations in flight, through the per-thread cache, with uneven chunk shares.
        std::vector<std::vector<double>> share(static_cast<std::size_t>(p));
        for (auto& r : share) {
          const double a = frac(rng) + 0.2;
          r = prog.layout.chunks_per_rank == 1 ? std::vector<double>{1.0}
                                               : std::vector<double>{a / (a + 0.5), 0.5 / (a + 0.5)};
        }
        // The peak from the cached Pareto points equals the walk's, bit for bit, for M_W / M_B
        // below and above 1 (full recompute).
        const auto peaks = cached_pipe_held_peaks(s, p, m);
        for (const double w_ratio : {0.0, 0.3 + frac(rng), 16.0 * (1.0 + frac(rng))}) {
          const std::vector<double> walk = pipe_in_flight(prog, share, w_ratio);
          for (std::size_t r = 0; r < walk.size(); ++r) {
            CHECK(held_peak((*peaks)[r], share[r], w_ratio) == walk[r]);
          }
        }
      }
    }
  }
  CHECK(compared > 1000);
}

TEST_CASE("a compiled program runs its passes in an order that respects every input", "[zb]") {
  // Every dependency of a pass comes earlier in the compiled order, and the order holds each
  // rank's passes in the program's order.
  for (const Schedule s : {Schedule::zb_h1, Schedule::zb_h2, Schedule::zbv, Schedule::dualpipe,
                           Schedule::dualpipev}) {
    const PipeProgram prog = pipe_program(s, 4, 16);
    const PipeGraph g = compile_pipe(prog);
    std::size_t passes = 0;
    for (const auto& o : prog.orders) passes += o.size();
    REQUIRE(g.passes.size() == passes);
    for (std::size_t i = 0; i < g.passes.size(); ++i) {
      CHECK(static_cast<std::size_t>(g.passes[i].dep) <= i);
      CHECK(static_cast<std::size_t>(g.passes[i].dep2) <= i);
    }
    for (int r = 0; r < 4; ++r) CHECK(g.first[static_cast<std::size_t>(r)] >= 0);
  }
}

TEST_CASE("the busiest rank's passes bound the makespan from below, tightly without a bubble",
          "[zb][prune]") {
  // pipe_busy_bound never exceeds the simulated makespan (random heterogeneous ranks, chunks,
  // links and exposed communication, every schedule), and it is the busiest rank's work: for
  // equal stages and one chunk per rank, m (F + B) less its 1e-9 margin.
  std::mt19937 rng(28);
  std::uniform_real_distribution<double> u(0.05, 3.0);
  std::uniform_real_distribution<double> frac(0.0, 0.6);
  int compared = 0;
  for (const Schedule s : {Schedule::one_f_one_b, Schedule::zb_h1, Schedule::zb_h2, Schedule::zbv,
                           Schedule::dualpipe, Schedule::dualpipev}) {
    for (const int p : {2, 3, 4, 6, 8, 16}) {
      for (const int m : {1, 2, p, 2 * p, 2 * p + 2, 4 * p + 1, 64}) {
        if (s != Schedule::one_f_one_b && !split_schedule_invalid_reason(s, p, m, 1000).empty()) continue;
        const PipeProgram prog = pipe_program(s, p, m);
        const PipeGraph graph = compile_pipe(prog);
        // The outline (what a search keeps before compiling) counts the passes as the graph.
        const PipeOutline outline = pipe_outline(prog);
        CHECK(outline.uses == graph.uses);
        CHECK(cached_pipe_outline(s, p, m)->uses == graph.uses);
        for (int trial = 0; trial < 4; ++trial) {
          PipeTimes t;
          t.chunks.resize(static_cast<std::size_t>(p));
          for (auto& rank : t.chunks) {
            rank.resize(static_cast<std::size_t>(prog.layout.chunks_per_rank));
            for (PipeChunkTimes& c : rank) {
              c.forward_s = u(rng);
              c.input_s = u(rng);
              c.weight_s = trial == 0 ? 0.0 : 0.5 * u(rng);
              c.forward_comm_s = frac(rng) * c.forward_s;
              c.backward_comm_s = frac(rng) * c.input_s;
            }
          }
          for (int j = 0; j + 1 < p; ++j) t.link_s.push_back(trial == 1 ? 0.0 : 0.2 * u(rng));
          const double bound = pipe_busy_bound(graph, t);
          CHECK(bound <= pipe_makespan(graph, t));
          CHECK(pipe_busy_bound(outline, t) == bound);
          CHECK(bound > 0.0);
          ++compared;
        }
        if (prog.layout.chunks_per_rank == 1) {
          const PipeTimes eq = equal_times(prog, 1.0, 1.25, 0.5);
          CHECK(pipe_busy_bound(graph, eq) == Approx(m * 2.75).epsilon(1e-8));
          CHECK(pipe_busy_bound(graph, eq) < m * 2.75);
        }
      }
    }
  }
  CHECK(compared > 400);
}

TEST_CASE("the forwards that reach each rank tighten the bound, still below the makespan",
          "[zb][prune]") {
  // pipe_fill_bound never exceeds the simulated makespan and is never below pipe_busy_bound
  // (random heterogeneous ranks, chunks, links and exposed communication, every schedule);
  // for equal stages of one chunk it adds the last rank's wait, (p - 1)(F + link), and the
  // drain after its last backward.
  std::mt19937 rng(2828);
  std::uniform_real_distribution<double> u(0.05, 3.0);
  std::uniform_real_distribution<double> frac(0.0, 0.6);
  int compared = 0, tighter = 0;
  for (const Schedule s : {Schedule::one_f_one_b, Schedule::zb_h1, Schedule::zb_h2, Schedule::zbv,
                           Schedule::dualpipe, Schedule::dualpipev}) {
    for (const int p : {2, 3, 4, 6, 8, 16}) {
      for (const int m : {1, 2, p, 2 * p, 2 * p + 2, 4 * p + 1, 64}) {
        if (s != Schedule::one_f_one_b && !split_schedule_invalid_reason(s, p, m, 1000).empty()) continue;
        const PipeProgram prog = pipe_program(s, p, m);
        const PipeGraph graph = compile_pipe(prog);
        const PipeOutline outline = pipe_outline(prog);
        for (int trial = 0; trial < 4; ++trial) {
          PipeTimes t;
          t.chunks.resize(static_cast<std::size_t>(p));
          for (auto& rank : t.chunks) {
            rank.resize(static_cast<std::size_t>(prog.layout.chunks_per_rank));
            for (PipeChunkTimes& c : rank) {
              c.forward_s = u(rng);
              c.input_s = u(rng);
              c.weight_s = trial == 0 ? 0.0 : 0.5 * u(rng);
              c.forward_comm_s = frac(rng) * c.forward_s;
              c.backward_comm_s = frac(rng) * c.input_s;
            }
          }
          for (int j = 0; j + 1 < p; ++j) t.link_s.push_back(trial == 1 ? 0.0 : 0.2 * u(rng));
          const double bound = pipe_fill_bound(outline, t);
          const double makespan = pipe_makespan(graph, t);
          INFO(to_string(s) << " p " << p << " m " << m << " trial " << trial);
          CHECK(bound <= makespan);
          CHECK(bound >= pipe_busy_bound(outline, t));
          tighter += bound > pipe_busy_bound(outline, t) ? 1 : 0;
          ++compared;
        }
        if (prog.layout.chunks_per_rank == 1 && prog.layout.directions == 1) {
          PipeTimes eq = equal_times(prog, 1.0, 1.25, 0.5);
          eq.link_s.assign(static_cast<std::size_t>(p - 1), 0.125);
          // The last rank starts after p - 1 forwards and links, then runs m (F + B).
          const double fill = (p - 1) * 1.125 + m * 2.75;
          const double bound = pipe_fill_bound(outline, eq);
          const double makespan = pipe_makespan(graph, eq);
          INFO(to_string(s) << " p " << p << " m " << m);
          CHECK(bound >= fill * (1.0 - 1e-8));
          CHECK(bound <= makespan);
          // The last rank's last backward, then the backwards of its micro-batch down the
          // p - 1 ranks below (and their links), tighten it.
          if (s == Schedule::one_f_one_b || (s == Schedule::zb_h1 && m >= p)) {
            CHECK(bound > fill);
          }
          // Without links: 1F1B's whole makespan, (m + p - 1)(F + B); ZB-H1's, less one W
          // (the last rank runs p weight passes after its last input backward, and the
          // bound counts none of them).
          eq.link_s.assign(static_cast<std::size_t>(p - 1), 0.0);
          const double bound0 = pipe_fill_bound(outline, eq);
          const double makespan0 = pipe_makespan(graph, eq);
          CHECK(bound0 <= makespan0);
          if (s == Schedule::one_f_one_b) CHECK(bound0 == Approx((m + p - 1) * 2.75).epsilon(1e-8));
          if (s == Schedule::zb_h1 && m >= p) {
            CHECK(makespan0 == Approx(m * 2.75 + (p - 1) * (2.75 - 2 * 0.5)).epsilon(1e-12));
            CHECK(bound0 == Approx(makespan0 - 0.5).epsilon(1e-8));
          }
        }
      }
    }
  }
  CHECK(compared > 400);
  CHECK(tighter > compared / 2);
}
