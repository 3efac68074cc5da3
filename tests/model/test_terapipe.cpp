#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

#include "zerosearch/model/terapipe.hpp"

using namespace zerosearch;

namespace {

/// Every slicing of `seq_len` at multiples of `quantum` (2^(n-1) of them), by brute force.
Slicing brute_force(const SliceCost& cost, int stages, int m, std::int64_t seq_len,
                    std::int64_t quantum) {
  std::vector<std::int64_t> pos;
  for (std::int64_t p = quantum; p < seq_len; p += quantum) {
    pos.push_back(p);
  }
  double best = 1e300;
  Slicing best_s;
  for (std::uint32_t mask = 0; mask < (1U << pos.size()); ++mask) {
    Slicing s;
    std::int64_t last = 0;
    for (std::size_t b = 0; b < pos.size(); ++b) {
      if (mask & (1U << b)) {
        s.push_back(pos[b] - last);
        last = pos[b];
      }
    }
    s.push_back(seq_len - last);
    const double v = terapipe_objective(cost, stages, m, s);
    if (v < best) {
      best = v;
      best_s = s;
    }
  }
  return best_s;
}

} // namespace

TEST_CASE("slice cost: attention grows with the context, the rest with the length",
          "[terapipe]") {
  const SliceCost c{1e-3, 1e-5, 1e-8, 2.0};
  // 64 tokens after 0: 1e-3 + 64e-5 + 1e-8 * 64 * 32.5
  CHECK(c.forward_s(64, 0) == Approx(1e-3 + 64e-5 + 1e-8 * 64 * 32.5));
  CHECK(c.forward_s(64, 512) > c.forward_s(64, 0));
  CHECK(c.backward_s(64, 512) == Approx(2.0 * c.forward_s(64, 512)));
  // Two halves cost more than the whole in fixed time, the same in attention pairs.
  const SliceCost pairs_only{0.0, 0.0, 1e-8, 2.0};
  CHECK(pairs_only.forward_s(32, 0) + pairs_only.forward_s(32, 32) ==
        Approx(pairs_only.forward_s(64, 0)));
}

TEST_CASE("one slice per sequence is the synchronous pipeline (GPipe)", "[terapipe]") {
  // K uniform stages, m micro-batches, no link time: (m + K - 1) (f + b).
  const SliceCost c{0.0, 1e-4, 0.0, 2.0};
  for (int stages : {1, 2, 4, 8}) {
    for (int m : {1, 2, 5}) {
      TokenPipeline pipe{std::vector<SliceCost>(static_cast<std::size_t>(stages), c), {}, m};
      pipe.link_s_per_token.assign(static_cast<std::size_t>(stages - 1), 0.0);
      const double f = c.forward_s(1024, 0);
      const double expected = (m + stages - 1) * (f + 2.0 * f);
      CHECK(simulate_token_pipeline(pipe, {1024}) == Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("slicing fills a pipeline that one micro-batch leaves idle", "[terapipe]") {
  // 8 stages, one sequence: 8 equal-work slices keep the stages busy.
  const SliceCost c{0.0, 1e-4, 0.0, 2.0};
  TokenPipeline pipe{std::vector<SliceCost>(8, c), std::vector<double>(7, 0.0), 1};
  const double whole = simulate_token_pipeline(pipe, {2048});
  const double sliced = simulate_token_pipeline(pipe, Slicing(8, 256));
  // whole: 8 stages x (f + b) of 2048 tokens; sliced: (8 + 8 - 1) x (f + b) of 256 tokens.
  CHECK(whole == Approx(8 * 3 * 2048e-4));
  CHECK(sliced == Approx(15 * 3 * 256e-4));
  // The uniform-stage simulation equals TeraPipe's objective when there is no link time.
  CHECK(sliced == Approx(terapipe_objective(c, 8, 1, Slicing(8, 256))));
}

TEST_CASE("link time delays each slice once per boundary", "[terapipe]") {
  const SliceCost c{0.0, 1e-4, 0.0, 1.0};
  TokenPipeline pipe{std::vector<SliceCost>(2, c), {1e-5}, 1};
  // One slice of 100 tokens: f = 0.01 on each stage, link 1e-3 each way.
  CHECK(simulate_token_pipeline(pipe, {100}) == Approx(0.01 + 1e-3 + 0.01 + 0.01 + 1e-3 + 0.01));
}

TEST_CASE("the dynamic programme equals brute force on small inputs", "[terapipe]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const SliceCost c{u(rng) * 2e-3, u(rng) * 1e-5, u(rng) * 1e-7, 1.0 + u(rng) * 2.0};
    const int stages = 1 + static_cast<int>(u(rng) * 12);
    const int m = 1 + static_cast<int>(u(rng) * 4);
    const std::int64_t quantum = 16;
    const std::int64_t seq = quantum * (1 + static_cast<int>(u(rng) * 11)) +
                             static_cast<std::int64_t>(u(rng) * 15);
    const Slicing dp = optimal_slicing(c, stages, m, seq, quantum);
    const Slicing bf = brute_force(c, stages, m, seq, quantum);
    std::int64_t total = 0;
    for (const auto l : dp) {
      total += l;
    }
    REQUIRE(total == seq);
    CHECK(terapipe_objective(c, stages, m, dp) ==
          Approx(terapipe_objective(c, stages, m, bf)).epsilon(1e-12));
  }
}

TEST_CASE("a large fixed cost per slice keeps one slice, more stages cut finer",
          "[terapipe]") {
  const SliceCost heavy{10.0, 1e-5, 1e-9, 2.0};
  CHECK(optimal_slicing(heavy, 8, 1, 2048, 64).size() == 1);
  // With no fixed cost the finest slicing always wins (the attention pairs add up to the same
  // total however the sequence is cut); a small fixed cost makes the stage count matter.
  const SliceCost light{1e-4, 1e-5, 1e-9, 2.0};
  const auto few = optimal_slicing(light, 2, 1, 2048, 64).size();
  const auto many = optimal_slicing(light, 16, 1, 2048, 64).size();
  CHECK(many > few);
  // Later slices attend to more context, so the optimal slices get shorter along the sequence.
  const Slicing s = optimal_slicing(SliceCost{0.0, 1e-6, 1e-8, 2.0}, 16, 1, 2048, 16);
  REQUIRE(s.size() >= 3);
  CHECK(s.front() >= s.back());
}

TEST_CASE("the simulation records the passes it times when asked", "[terapipe]") {
  TokenPipeline pipe;
  pipe.stages = {SliceCost{1e-3, 2e-5, 1e-9, 2.0}, SliceCost{2e-3, 3e-5, 2e-9, 2.0}};
  pipe.link_s_per_token = {1e-6};
  pipe.micro_batches = 2;
  const Slicing slicing = {512, 256, 256};
  PipelineSchedule s;
  s.events.push_back({}); // a used schedule is refilled, not appended to
  const double t = simulate_token_pipeline(pipe, slicing, &s);
  CHECK(t == simulate_token_pipeline(pipe, slicing));
  REQUIRE(s.events.size() == 2 * 2 * 3 * 2);
  REQUIRE(s.stage_end_s.size() == 2);
  CHECK(s.stage_end_s[0] == t);
  // Stage 0's last backward is the step's last event, of unit 0; stage 1 ends before it.
  CHECK(s.events.back().kind == ScheduleEventKind::backward);
  CHECK(s.events.back().stage == 0);
  CHECK(s.events.back().micro_batch == 0);
  CHECK(s.events.back().end_s == t);
  CHECK(s.stage_end_s[1] < t);
  // Each stage runs one pass at a time.
  for (std::size_t i = 1; i < s.events.size(); ++i) {
    if (s.events[i].stage == s.events[i - 1].stage) {
      CHECK(s.events[i].start_s >= s.events[i - 1].end_s);
    }
  }
}
