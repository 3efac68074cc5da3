#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "zerosearch/model/pipeline.hpp"

using namespace zerosearch;

namespace {
StageTimes two_stages(double comp0, double comp1, double send_for, double send_back) {
  StageTimes t;
  t.comp_s = {comp0, comp1};
  t.for_send_s = {send_for, 0.0};
  t.back_send_s = {0.0, send_back};
  t.comm_s = {0.0, 0.0};
  return t;
}
} // namespace

TEST_CASE("two-stage 1F1B schedule worked by hand", "[pipeline]") {
  // Forward = comp/3, backward = 2 comp/3: stage 0 F=1 B=2, stage 1 F=2 B=4; sends 0.5 / 0.25.
  // Stage 0: F0 [0,1] -> arrives 1.5, F1 [1.5,2.5]. Stage 1: F0 [1.5,3.5], B0 [3.5,7.5] -> 7.75.
  // Stage 0: B0 [7.75,9.75]. Stage 1: F1 [7.75,9.75], B1 [9.75,13.75] -> 14. Stage 0: B1 [14,16].
  const auto ends = simulate_1f1b(2, two_stages(3.0, 6.0, 0.5, 0.25), ForwardShare::third);
  REQUIRE(ends.size() == 2);
  CHECK(ends[0] == Approx(16.0));
  CHECK(ends[1] == Approx(13.75));
}

TEST_CASE("one micro-batch runs the stages back to back", "[pipeline]") {
  // F0 [0,1], send 0.5, F1 [1.5,3.5], B1 [3.5,7.5], send 0.25, B0 [7.75,9.75].
  const auto ends = simulate_1f1b(1, two_stages(3.0, 6.0, 0.5, 0.25), ForwardShare::third);
  CHECK(ends[0] == Approx(9.75));
  CHECK(ends[1] == Approx(7.5));
}

TEST_CASE("ZeRO 0/1 split compute a quarter forward, three quarters backward", "[pipeline]") {
  // comp 4 and 8: F=1,2 B=3,6; no sends. F0[0,1] F0'[1,3] B0'[3,9] B0[9,12].
  const auto ends = simulate_1f1b(1, two_stages(4.0, 8.0, 0.0, 0.0), ForwardShare::quarter);
  CHECK(ends[0] == Approx(12.0));
  CHECK(ends[1] == Approx(9.0));
}

TEST_CASE("a balanced pipeline approaches m times the stage time", "[pipeline]") {
  // With equal stages and no sends, 1F1B takes (m + pp - 1) * stage time.
  StageTimes t;
  const int pp = 4;
  t.comp_s.assign(pp, 3.0);
  t.for_send_s.assign(pp, 0.0);
  t.back_send_s.assign(pp, 0.0);
  t.comm_s.assign(pp, 0.0);
  for (int m : {1, 4, 16}) {
    const auto ends = simulate_1f1b(m, t, ForwardShare::third);
    CHECK(ends[0] == Approx(3.0 * (m + pp - 1)));
  }
}

TEST_CASE("slower links never make the pipeline faster", "[pipeline]") {
  double previous = 0.0;
  for (double send : {0.0, 0.1, 0.5, 2.0}) {
    const auto ends = simulate_1f1b(8, two_stages(3.0, 3.0, send, send), ForwardShare::third);
    CHECK(ends[0] >= previous);
    previous = ends[0];
  }
}

TEST_CASE("simulate_1f1b_into stops only when stage 0 would end at the limit or later",
          "[pipeline]") {
  // Random pipelines: the full run equals simulate_1f1b; a run told to stop at a limit gives up
  // only when stage 0's end reaches it (up to float64 rounding), and never below the end.
  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> comp(0.05, 2.0);
  std::uniform_real_distribution<double> link(0.0, 0.5);
  std::uniform_real_distribution<double> frac(0.3, 1.3);
  int stopped = 0;
  int ran = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int pp = std::uniform_int_distribution<int>(2, 12)(rng);
    const int m = std::uniform_int_distribution<int>(1, 20)(rng);
    const ForwardShare share = trial % 2 == 0 ? ForwardShare::third : ForwardShare::quarter;
    StageTimes t;
    for (int s = 0; s < pp; ++s) {
      t.comp_s.push_back(comp(rng));
    }
    t.for_send_s.assign(static_cast<std::size_t>(pp), 0.0);
    t.back_send_s.assign(static_cast<std::size_t>(pp), 0.0);
    t.comm_s.assign(static_cast<std::size_t>(pp), 0.0);
    t.for_send_s.front() = link(rng);
    t.back_send_s.back() = link(rng);
    const std::vector<double> full = simulate_1f1b(m, t, share);
    std::vector<double> ends(static_cast<std::size_t>(pp), -1.0);
    REQUIRE(simulate_1f1b_into(m, pp, t.comp_s.data(), t.for_send_s.data(), t.back_send_s.data(),
                               share, std::numeric_limits<double>::infinity(), ends.data()));
    CHECK(ends == full); // bit for bit
    const double limit = full[0] * frac(rng);
    if (simulate_1f1b_into(m, pp, t.comp_s.data(), t.for_send_s.data(), t.back_send_s.data(),
                           share, limit, ends.data())) {
      ++ran;
      CHECK(ends == full);
    } else {
      ++stopped;
      CHECK(full[0] >= limit * (1.0 - 1e-12));
    }
  }
  // Limits below the end stop most runs; those above it never stop them.
  CHECK(stopped > 200);
  CHECK(ran > 100);
}

TEST_CASE("stage_passes: the forward share splits compute, warm-up is min(pp - 1 - i, m)",
          "[pipeline]") {
  const std::vector<double> comp{3.0, 6.0, 9.0, 12.0};
  const StagePasses third = stage_passes(2, 4, comp.data(), ForwardShare::third);
  CHECK(third.forward_s == std::vector<double>{1.0, 2.0, 3.0, 4.0});
  CHECK(third.backward_s == std::vector<double>{2.0, 4.0, 6.0, 8.0});
  CHECK(third.warm_up == std::vector<int>{2, 2, 1, 0}); // stage 0 would warm 3 but m = 2
  const std::vector<double> four{4.0, 8.0};
  const StagePasses quarter = stage_passes(5, 2, four.data(), ForwardShare::quarter);
  CHECK(quarter.forward_s == std::vector<double>{1.0, 2.0});
  CHECK(quarter.backward_s == std::vector<double>{3.0, 6.0});
  CHECK(quarter.warm_up == std::vector<int>{1, 0});
}

TEST_CASE("stop_bounds: sums of the passes above and below each stage", "[pipeline]") {
  const std::vector<double> comp{3.0, 6.0, 9.0};
  const StopBounds b = stop_bounds(stage_passes(4, 3, comp.data(), ForwardShare::third));
  // F = 1, 2, 3 and B = 2, 4, 6.
  CHECK(b.up == std::vector<double>{0.0, 2.0, 6.0});
  CHECK(b.slow_up == std::vector<double>{0.0, 2.0, 4.0});
  CHECK(b.down == std::vector<double>{17.0, 15.0, 12.0}); // 2+3+12, 3+12, 12
  CHECK(b.slowest_backward_s == 6.0);
}

TEST_CASE("the phases: warm-up forwards, then one forward one backward, then cool-down",
          "[pipeline]") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> time(0.1, 3.0);
  for (int trial = 0; trial < 50; ++trial) {
    const int pp = 2 + trial % 5;
    const int m = 1 + trial % 7;
    std::vector<double> comp, fwd_send, back_send;
    for (int i = 0; i < pp; ++i) {
      comp.push_back(time(rng));
      fwd_send.push_back(i + 1 < pp ? time(rng) / 4 : 0.0);
      back_send.push_back(i > 0 ? time(rng) / 4 : 0.0);
    }
    const StagePasses passes = stage_passes(m, pp, comp.data(), ForwardShare::third);
    std::vector<double> ends(static_cast<std::size_t>(pp));
    OneFOneBEvents ev;
    REQUIRE(simulate_1f1b_into(m, pp, comp.data(), fwd_send.data(), back_send.data(),
                               ForwardShare::third, std::numeric_limits<double>::infinity(),
                               ends.data(), &ev));
    for (int i = 0; i < pp; ++i) {
      const auto base = static_cast<std::size_t>(i * m);
      const int w = passes.warm_up[static_cast<std::size_t>(i)];
      // Warm-up: forwards 0..w-1 end before backward 0 starts, and so does forward w (the
      // first of the steady phase) when there is one.
      for (int j = 0; j < std::min(w + 1, m); ++j) {
        CHECK(ev.forward_end[base + static_cast<std::size_t>(j)] <= ev.backward_start[base]);
      }
      // Steady state: forward w + j runs between backwards j - 1 and j.
      for (int j = 1; j + w < m; ++j) {
        const auto f = base + static_cast<std::size_t>(j + w);
        CHECK(ev.forward_start[f] >= ev.backward_end[base + static_cast<std::size_t>(j - 1)]);
        CHECK(ev.forward_end[f] <= ev.backward_start[base + static_cast<std::size_t>(j)]);
      }
      // Cool-down: the last w backwards follow the last forward.
      for (int j = std::max(m - w, 0); j < m; ++j) {
        CHECK(ev.backward_start[base + static_cast<std::size_t>(j)] >=
              ev.forward_end[base + static_cast<std::size_t>(m - 1)]);
      }
      CHECK(ends[static_cast<std::size_t>(i)] ==
            ev.backward_end[base + static_cast<std::size_t>(m - 1)]);
    }
  }
}

namespace {

/// A random pipeline for the simulation tests: 2-36 stages, 1-40 micro-batches, either forward
/// share, sends of up to 0.5 s. Only stage 0 sends forward and only the last stage sends
/// backward, as in stage_times(); with `every`, every stage has its sends, which the
/// simulation also allows.
struct RandomPipeline {
  int pp = 2;
  int m = 1;
  ForwardShare share = ForwardShare::third;
  bool every = false;
  std::vector<double> for_send;
  std::vector<double> back_send;
};

RandomPipeline random_pipeline(std::mt19937& rng, bool every) {
  RandomPipeline r;
  r.pp = std::uniform_int_distribution<int>(2, 36)(rng);
  r.m = std::uniform_int_distribution<int>(1, 40)(rng);
  r.share = std::uniform_int_distribution<int>(0, 1)(rng) != 0 ? ForwardShare::quarter
                                                               : ForwardShare::third;
  r.every = every;
  std::uniform_real_distribution<double> link(0.0, 0.5);
  r.for_send.assign(static_cast<std::size_t>(r.pp), 0.0);
  r.back_send.assign(static_cast<std::size_t>(r.pp), 0.0);
  for (int s = 0; s < r.pp; ++s) {
    if (every || s == 0) {
      r.for_send[static_cast<std::size_t>(s)] = s + 1 < r.pp ? link(rng) : 0.0;
    }
    if (every || s == r.pp - 1) {
      r.back_send[static_cast<std::size_t>(s)] = s > 0 ? link(rng) : 0.0;
    }
  }
  return r;
}

} // namespace

TEST_CASE("OneFOneBSequence equals simulate_1f1b_into bit for bit on random sequences",
          "[pipeline]") {
  // Sequences like a depth-first search's leaves: each next vector changes the stages from a
  // random one on (sometimes none, sometimes all), so that kept warm-up events are exercised.
  std::mt19937 rng(1313);
  const double inf = std::numeric_limits<double>::infinity();
  int compared = 0;
  int stopped = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const auto [pp, m, share, every, for_send, back_send] = random_pipeline(rng, trial % 2 == 0);
    std::uniform_real_distribution<double> comp(0.01, 2.0);
    OneFOneBSequence seq(m, pp, for_send, back_send, share);
    std::vector<double> c(static_cast<std::size_t>(pp));
    for (auto& x : c) {
      x = comp(rng);
    }
    for (int step = 0; step < 60; ++step) {
      const int from = std::uniform_int_distribution<int>(0, pp)(rng);
      for (int s = from; s < pp; ++s) {
        c[static_cast<std::size_t>(s)] = comp(rng);
      }
      std::vector<double> want(static_cast<std::size_t>(pp), -1.0);
      REQUIRE(simulate_1f1b_into(m, pp, c.data(), for_send.data(), back_send.data(), share, inf,
                                 want.data()));
      // No limit, a limit above the end, at it, and below it (an early stop).
      const double limits[] = {inf, want[0] * 1.5, want[0],
                               want[0] * std::uniform_real_distribution<double>(0.3, 1.0)(rng)};
      for (const double stop_at : limits) {
        std::vector<double> ref(static_cast<std::size_t>(pp), -1.0);
        std::vector<double> got(static_cast<std::size_t>(pp), -1.0);
        const bool ref_done = simulate_1f1b_into(m, pp, c.data(), for_send.data(),
                                                 back_send.data(), share, stop_at, ref.data());
        const bool got_done = seq.simulate(c.data(), stop_at, got.data());
        INFO("pp " << pp << " m " << m << " every " << every << " step " << step << " from " << from
                   << " stop_at " << stop_at << " want " << want[0]);
        if (ref_done) {
          REQUIRE(got_done);
          REQUIRE(got == ref);
          ++compared;
        } else if (got_done) {
          // Stopped in the warm-up, which the sequence runs to its end: it ends past the limit.
          REQUIRE(got == want);
          REQUIRE(got[0] >= stop_at);
        } else {
          ++stopped;
        }
      }
    }
  }
  CHECK(compared > 5000);
  CHECK(stopped > 1000);
}

TEST_CASE("OneFOneBGraph evaluates as simulate_1f1b_into and its paths bound other computes",
          "[pipeline]") {
  std::mt19937 rng(2026);
  const double inf = std::numeric_limits<double>::infinity();
  for (int trial = 0; trial < 200; ++trial) {
    const auto [pp, m, share, every, for_send, back_send] = random_pipeline(rng, trial % 2 == 0);
    std::uniform_real_distribution<double> comp(0.01, 2.0);
    OneFOneBGraph graph(m, pp, for_send.data(), back_send.data(), share);
    const auto ppu = static_cast<std::size_t>(pp);
    std::vector<double> c(ppu);
    std::vector<double> other(ppu);
    for (int step = 0; step < 20; ++step) {
      for (auto& x : c) {
        // Sometimes a few slow stages, so that different paths are the longest.
        x = step % 3 == 0 ? comp(rng) : comp(rng) * 0.1 + (rng() % 5 == 0 ? 1.0 : 0.0);
      }
      std::vector<double> want(ppu, -1.0);
      REQUIRE(simulate_1f1b_into(m, pp, c.data(), for_send.data(), back_send.data(), share, inf,
                                 want.data()));
      std::vector<double> got(ppu, -1.0);
      std::vector<double> coef(ppu, -1.0);
      double constant = -1.0;
      const double latest = graph.critical_path(c.data(), got.data(), coef.data(), &constant);
      INFO("pp " << pp << " m " << m << " every " << every << " step " << step);
      REQUIRE(got == want);
      REQUIRE(latest == *std::max_element(want.begin(), want.end()));
      const auto path_value = [&](const std::vector<double>& x) {
        double v = constant;
        for (std::size_t u = 0; u < ppu; ++u) {
          v += coef[u] * x[u];
        }
        return v;
      };
      CHECK(std::abs(path_value(c) - latest) <= 1e-12 * latest);
      // The path is a lower bound on the latest end of any other compute vector.
      for (int k = 0; k < 5; ++k) {
        for (auto& x : other) {
          x = comp(rng);
        }
        std::vector<double> ends(ppu);
        REQUIRE(simulate_1f1b_into(m, pp, other.data(), for_send.data(), back_send.data(), share,
                                   inf, ends.data()));
        CHECK(path_value(other) <= *std::max_element(ends.begin(), ends.end()) * (1.0 + 1e-12));
      }
    }
  }
}
