#include <catch2/catch.hpp>

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
