#include <catch2/catch.hpp>

#include <random>

#include "zerosearch/model/pipeline.hpp"
#include "zerosearch/model/schedule.hpp"

using namespace zerosearch;

namespace {
StageTimes random_times(int pp, std::mt19937& rng) {
  std::uniform_real_distribution<double> comp(0.1, 2.0);
  std::uniform_real_distribution<double> link(0.0, 0.3);
  StageTimes t;
  t.comp_s.resize(static_cast<std::size_t>(pp));
  t.for_send_s.assign(static_cast<std::size_t>(pp), 0.0);
  t.back_send_s.assign(static_cast<std::size_t>(pp), 0.0);
  t.comm_s.assign(static_cast<std::size_t>(pp), 0.0);
  for (auto& c : t.comp_s) {
    c = comp(rng);
  }
  // As stage_times does: stage 0 sends forward, the last stage backward.
  t.for_send_s.front() = link(rng);
  t.back_send_s.back() = link(rng);
  return t;
}
} // namespace

TEST_CASE("pipeline_schedule ends where simulate_1f1b ends, exactly", "[schedule]") {
  std::mt19937 rng(11);
  for (const ForwardShare share : {ForwardShare::third, ForwardShare::quarter}) {
    for (int pp = 2; pp <= 9; ++pp) {
      for (const int m : {1, 2, 3, pp - 1, pp, pp + 1, 16, 33}) {
        if (m < 1) {
          continue;
        }
        const StageTimes t = random_times(pp, rng);
        const PipelineSchedule s = pipeline_schedule(m, t, share);
        const std::vector<double> ends = simulate_1f1b(m, t, share);
        INFO("pp " << pp << " m " << m);
        REQUIRE(s.stage_end_s.size() == ends.size());
        for (std::size_t i = 0; i < ends.size(); ++i) {
          CHECK(s.stage_end_s[i] == ends[i]); // bit for bit
        }
      }
    }
  }
}

TEST_CASE("every stage runs each micro-batch forward then backward, one pass at a time",
          "[schedule]") {
  std::mt19937 rng(5);
  const int pp = 4;
  const int m = 7;
  const StageTimes t = random_times(pp, rng);
  const PipelineSchedule s = pipeline_schedule(m, t, ForwardShare::third);
  for (int stage = 0; stage < pp; ++stage) {
    std::vector<double> fwd_end(m, -1.0), bwd_start(m, -1.0);
    std::vector<std::pair<double, double>> passes;
    double last_bwd_end = 0.0;
    for (const ScheduleEvent& e : s.events) {
      CHECK(e.end_s >= e.start_s);
      if (e.stage != stage) {
        continue;
      }
      if (e.kind == ScheduleEventKind::forward) {
        fwd_end[static_cast<std::size_t>(e.micro_batch)] = e.end_s;
        passes.emplace_back(e.start_s, e.end_s);
        CHECK(e.end_s - e.start_s == Approx(t.comp_s[static_cast<std::size_t>(stage)] / 3.0));
      } else if (e.kind == ScheduleEventKind::backward) {
        bwd_start[static_cast<std::size_t>(e.micro_batch)] = e.start_s;
        passes.emplace_back(e.start_s, e.end_s);
        last_bwd_end = std::max(last_bwd_end, e.end_s);
        CHECK(e.end_s - e.start_s == Approx(2.0 * t.comp_s[static_cast<std::size_t>(stage)] / 3.0));
      }
    }
    for (int j = 0; j < m; ++j) {
      REQUIRE(fwd_end[static_cast<std::size_t>(j)] >= 0.0);
      REQUIRE(bwd_start[static_cast<std::size_t>(j)] >= 0.0);
      CHECK(bwd_start[static_cast<std::size_t>(j)] >= fwd_end[static_cast<std::size_t>(j)]);
    }
    // One pass at a time on a stage.
    std::sort(passes.begin(), passes.end());
    for (std::size_t i = 1; i < passes.size(); ++i) {
      CHECK(passes[i].first >= passes[i - 1].second - 1e-12);
    }
    CHECK(last_bwd_end == s.stage_end_s[static_cast<std::size_t>(stage)]);
  }
}

TEST_CASE("two stages, two micro-batches, worked by hand", "[schedule]") {
  // Stage compute 3 s each (forward 1, backward 2 with a third share), stage 0 sends forward in
  // 0.5 s, the last stage sends backward in 0.5 s.
  StageTimes t{{3.0, 3.0}, {0.5, 0.0}, {0.0, 0.5}, {0.0, 0.0}};
  const PipelineSchedule s = pipeline_schedule(2, t, ForwardShare::third);
  // Stage 0: F0 0-1, sent 1-1.5; F1 1.5-2.5 (after its send of F0), sent 2.5-3.
  // Stage 1: F0 1.5-2.5, B0 2.5-4.5, sent back 4.5-5; F1 waits for that send: 5-6; B1 6-8,
  // sent back 8-8.5.
  // Stage 0: B0 5-7 (when B0 arrives); B1 8.5-10.5.
  CHECK(s.stage_end_s == std::vector<double>{10.5, 8.0});
  CHECK(s.stage_end_s == simulate_1f1b(2, t, ForwardShare::third));
}
