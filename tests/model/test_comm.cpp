#include <catch2/catch.hpp>

#include "zerosearch/model/comm.hpp"

using namespace zerosearch;

TEST_CASE("ring all-reduce worked by hand", "[comm]") {
  // 2 (n-1) P q / (n B) = 2*3*1e9*16 / (4*100e9) = 0.24 s
  CHECK(dp_sync_time_s(DpMethod::dp, 4, 1e9F, 16, 100e9F, 8.0F) == Approx(0.24F));
  CHECK(dp_sync_time_s(DpMethod::zero0, 4, 1e9F, 16, 100e9F, 8.0F) == Approx(0.24F));
  // ZeRO-1 / FSDP: reduce-scatter + all-gather, the same total.
  CHECK(dp_sync_time_s(DpMethod::zero1, 4, 1e9F, 16, 100e9F, 8.0F) == Approx(0.24F));
  CHECK(dp_sync_time_s(DpMethod::fsdp, 4, 1e9F, 16, 100e9F, 8.0F) == Approx(0.24F));
  // ZeRO-2: 0.12 s per micro-batch plus one all-gather: 0.12 * (8 + 1).
  CHECK(dp_sync_time_s(DpMethod::zero2, 4, 1e9F, 16, 100e9F, 8.0F) == Approx(1.08F));
  // ZeRO-3: 32-bit reduce-scatter per micro-batch: 0.24 * 8.
  CHECK(dp_sync_time_s(DpMethod::zero3, 4, 1e9F, 16, 100e9F, 8.0F) == Approx(1.92F));
  // One replica needs no synchronisation.
  CHECK(dp_sync_time_s(DpMethod::dp, 1, 1e9F, 16, 100e9F, 8.0F) == 0.0F);
}

TEST_CASE("more bandwidth is never slower", "[comm]") {
  for (const DpMethodInfo& row : dp_methods()) {
    const DpMethod m = row.id;
    float previous = 1e30F;
    for (float bw : {1e9F, 1e10F, 1e11F, 1e12F}) {
      const float t = dp_sync_time_s(m, 8, 1e9F, 16, bw, 4.0F);
      CHECK(t <= previous);
      previous = t;
    }
  }
}

TEST_CASE("rank layout follows rank = t + tp*d + tp*dp*stage", "[comm]") {
  const RankLayout l{2, 2, 2, 4};
  CHECK(l.rank(0, 0, 0) == 0);
  CHECK(l.rank(0, 1, 1) == 3);
  CHECK(l.rank(1, 0, 0) == 4);
  CHECK(l.node(1, 1, 1) == 1);
}

TEST_CASE("pipeline links: inside a node intra/3.5, across nodes inter/dp/tp/1.05", "[comm]") {
  const std::vector<LinkF32> links{{100e9F, 350e9F}};
  // 2 nodes of 4 GPUs, tp 1, dp 4, pp 2: stage 0 = node 0, stage 1 = node 1: across nodes.
  const auto across = pipeline_link_times_s({1, 4, 2, 4}, {0, 0}, links, 1000.0F);
  REQUIRE(across.size() == 1);
  CHECK(across[0] == Approx(1000.0 * 16 / (100e9 / 4 / 1 / 1.05)));
  // 1 node of 4 GPUs, tp 1, dp 2, pp 2: both stages in node 0.
  const auto inside = pipeline_link_times_s({1, 2, 2, 4}, {0}, links, 1000.0F);
  CHECK(inside[0] == Approx(1000.0 * 16 / (350e9 / 3.5)));
  // pp == 1 has no pipeline communication.
  CHECK(pipeline_link_times_s({1, 8, 1, 4}, {0, 0}, links, 1000.0F).empty());
}

TEST_CASE("stage 0 parameters count the embedding once", "[comm]") {
  // h = 10, v = 100: embedding 1000; each transformer (12*100 + 20800)/1 = 22000.
  CHECK(stage0_param_count(3, 6, 10.0F, 100.0F, 1.0F) == Approx(1000.0F + 2 * 22000.0F));
  // pp == 1: all 4 transformers, post_process not counted again.
  CHECK(stage0_param_count(6, 6, 10.0F, 100.0F, 1.0F) == Approx(1000.0F + 4 * 22000.0F));
  CHECK(stage0_param_count(6, 6, 10.0F, 100.0F, 2.0F) == Approx(1000.0F + 4 * 11000.0F));
}

TEST_CASE("embedding sync uses the last replica's link shared by min(dp, M)", "[comm]") {
  const std::vector<LinkF32> links{{100e9F, 400e9F}};
  // tp 1, dp 2, pp 4 on 2 nodes of 4: stage 0 ranks 0-1 (node 0), last stage ranks 6-7 (node 1).
  const float t = embedding_sync_time_s({1, 2, 4, 4}, {0, 0}, links, 10.0, 100.0, 16);
  // 2*h*v*q / (2 * 100e9/2) / tp = 32000 / 100e9
  CHECK(t == Approx(32000.0 / 100e9));
  CHECK(embedding_sync_time_s({1, 8, 1, 4}, {0, 0}, links, 10.0, 100.0, 16) == 0.0F);
}
