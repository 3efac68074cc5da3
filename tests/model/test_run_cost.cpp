#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "zerosearch/model/run_cost.hpp"

using namespace zerosearch;

namespace {

/// Llama 3 (Dubey et al. 2024, "The Llama 3 Herd of Models", sec. 3.3.4): 419 unexpected
/// interruptions in 54 days on 16,384 H100 GPUs.
constexpr double kLlama3FailuresPerGpuHour = 419.0 / (54.0 * 24.0 * 16384.0);

RunCostGroup h100_nodes(int nodes) {
  RunCostGroup g;
  g.nodes = nodes;
  g.gpus = 8 * nodes;
  g.usd_per_gpu_hour = 3.78;
  g.tdp_w = 700;
  g.idle_w = 80;
  g.failures_per_gpu_hour = kLlama3FailuresPerGpuHour;
  return g;
}

} // namespace

TEST_CASE("run_cost.young_daly_closed_form") {
  // C = 60 s, M = 6 h: Young sqrt(2 * 60 * 21600) = 1609.97 s.
  const double c = 60.0, m = 6.0 * 3600.0;
  CHECK(young_interval_s(c, m) == Approx(std::sqrt(2.0 * c * m)));
  CHECK(young_interval_s(c, m) == Approx(1609.968944).epsilon(1e-9));
  // Daly: 1609.97 (1 + sqrt(60/43200)/3 + (60/43200)/9) - 60
  const double x = c / (2.0 * m);
  const double daly = 1609.968944 * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - c;
  CHECK(daly_interval_s(c, m) == Approx(daly).epsilon(1e-9));
  CHECK(daly_interval_s(c, m) == Approx(1570.25).epsilon(1e-4));
  // Beyond C >= 2M the optimum is M.
  CHECK(daly_interval_s(3.0 * m, m) == m);
  // The optimum minimises Daly's wall time: nearby intervals are no better.
  const double best = expected_wall_s(1e6, daly_interval_s(c, m), c, 600, m);
  CHECK(best < expected_wall_s(1e6, 0.8 * daly_interval_s(c, m), c, 600, m));
  CHECK(best < expected_wall_s(1e6, 1.25 * daly_interval_s(c, m), c, 600, m));
}

TEST_CASE("run_cost.wall_time_first_order") {
  // Small C/M and R/M: wall / solve ~ 1 + C/tau + tau/(2M) + R/M.
  const double c = 5.0, m = 1e6, r = 100.0;
  const double tau = daly_interval_s(c, m);
  const double ratio = expected_wall_s(1e7, tau, c, r, m) / 1e7;
  CHECK(ratio == Approx(1.0 + c / tau + (tau + c) / (2.0 * m) + r / m).epsilon(1e-4));
}

TEST_CASE("run_cost.llama3_405b_goodput") {
  // A 405B-class plan on 16,384 H100 (2,048 nodes) with Llama 3's failure rate. Assumptions
  // (docs/run_cost.md): checkpoint = 405e9 parameters x 14 bytes (bf16 weights + fp32 master
  // weights and two Adam moments), written at Tectonic's sustained 2 TB/s over 2,048 nodes
  // (~0.98 GB/s per node, Llama 3 sec. 3.3.1); restart 10 minutes (Llama 3 gives none; an
  // assumption). Llama 3 reports more than 90 % effective training time.
  RunCostSettings s;
  s.steps = 1'000'000;
  s.checkpoint_bytes = 405e9 * 14.0;
  s.storage_GBps_per_node = 2000.0 / 2048.0;
  s.restart_s = 600.0;
  const RunCost c = run_cost({h100_nodes(2048)}, s, 10.0, 0.4);
  CHECK(c.mtbf_s / 3600.0 == Approx(54.0 * 24.0 / 419.0)); // one every 3.09 h
  CHECK(c.checkpoint_s == Approx(405e9 * 14.0 / 2e12));
  CHECK(c.effective_fraction > 0.87);
  CHECK(c.effective_fraction < 0.93);
  CHECK(c.effective_fraction == Approx(0.926).margin(0.002));
}

TEST_CASE("run_cost.larger_cluster_fails_more_often") {
  RunCostSettings s;
  s.steps = 100000;
  s.checkpoint_bytes = 70e9 * 14.0;
  const RunCost small = run_cost({h100_nodes(64)}, s, 10.0, 0.4);
  const RunCost large = run_cost({h100_nodes(1024)}, s, 10.0, 0.4);
  CHECK(large.mtbf_s == Approx(small.mtbf_s / 16.0));
  CHECK(large.effective_fraction < small.effective_fraction);
}

TEST_CASE("run_cost.energy_is_power_times_time") {
  // 2 nodes of 8 GPUs, TDP 700 W, idle 80 W, MFU 40 %: 80 + 620 x 0.4 = 328 W per GPU;
  // 16 x 328 + 2 x 1000 W node overhead = 7248 W, x PUE 1.2 = 8697.6 W.
  RunCostGroup g = h100_nodes(2);
  g.failures_per_gpu_hour = 0.0;
  RunCostSettings s;
  s.steps = 3600;
  s.checkpoint_bytes = 0.0;
  s.node_overhead_w = 1000.0;
  s.pue = 1.2;
  s.usd_per_kwh = 0.10;
  const RunCost c = run_cost({g}, s, 1.0, 0.4);
  CHECK(c.wall_s == Approx(3600.0)); // no failures, no checkpoint
  CHECK(c.gpu_power_w.at(0) == Approx(328.0));
  CHECK(c.facility_power_w == Approx(8697.6));
  CHECK(c.energy_mwh == Approx(8697.6 * 3600.0 / 3.6e9)); // 8.6976 kWh
  CHECK(c.energy_usd == Approx(0.86976));
  CHECK(c.gpu_hours == Approx(16.0));
  CHECK(c.usd == Approx(16.0 * 3.78));
}

TEST_CASE("run_cost.power_cap") {
  // 700 W TDP, 80 W idle, at MFU 1 it draws 700 W; a 600 W cap leaves (600-80)/(700-80).
  CHECK(cap_throughput(600, 700, 80) == Approx(520.0 / 620.0));
  CHECK(cap_throughput(800, 700, 80) == 1.0);
  RunCostGroup g = h100_nodes(1);
  g.failures_per_gpu_hour = 0.0;
  RunCostSettings s;
  s.steps = 100;
  s.power_cap_w = 300.0;
  // MFU 0.4: 328 W uncapped, capped at 300 W: throughput (300-80)/(328-80).
  const RunCost c = run_cost({g}, s, 2.0, 0.4);
  CHECK(c.cap_throughput == Approx(220.0 / 248.0));
  CHECK(c.step_s == Approx(2.0 * 248.0 / 220.0));
  CHECK(c.gpu_power_w.at(0) == Approx(300.0));
  // A cap above the draw changes nothing.
  s.power_cap_w = 650.0;
  CHECK(run_cost({g}, s, 2.0, 0.4).step_s == Approx(2.0));
}

TEST_CASE("run_cost.spot_and_on_demand_rank_differently") {
  // Plan A: 16 H100-SXM nodes at 10 s/step. Plan B: 8 B200 nodes at 8 s/step. The catalog's
  // prices: H100-SXM $3.78 on demand, $2.69 spot (29 % off); B200 $10.57 and $5.98 (43 % off).
  // On demand A is cheaper (128 x 3.78 x 10 = 4838 < 64 x 10.57 x 8 = 5412 per step-second);
  // on spot B is (128 x 2.69 x 10 = 3443 > 64 x 5.98 x 8 = 3062).
  RunCostSettings s;
  s.steps = 10000;
  s.checkpoint_bytes = 70e9 * 14.0;
  RunCostGroup a = h100_nodes(16);
  RunCostGroup b = h100_nodes(8);
  b.usd_per_gpu_hour = 10.57;
  const double a_od = run_cost({a}, s, 10.0, 0.4).usd;
  const double b_od = run_cost({b}, s, 8.0, 0.4).usd;
  CHECK(a_od < b_od);
  a.usd_per_gpu_hour = 2.69;  // spot
  b.usd_per_gpu_hour = 5.98;  // spot
  s.preemptions_per_node_hour = 0.01;
  const RunCost a_spot = run_cost({a}, s, 10.0, 0.4);
  const RunCost b_spot = run_cost({b}, s, 8.0, 0.4);
  CHECK(b_spot.usd < a_spot.usd);
  // Preemptions add to the failures: a shorter MTBF than on demand.
  RunCostSettings on_demand = s;
  on_demand.preemptions_per_node_hour = 0.0;
  CHECK(a_spot.mtbf_s < run_cost({h100_nodes(16)}, on_demand, 10.0, 0.4).mtbf_s);
}

TEST_CASE("run_cost.unknown_power_is_nan") {
  RunCostGroup g = h100_nodes(1);
  g.tdp_w = 0.0;
  RunCostSettings s;
  s.steps = 10;
  const RunCost c = run_cost({g}, s, 1.0, 0.4);
  CHECK(std::isnan(c.energy_mwh));
  CHECK(std::isnan(c.energy_usd));
  CHECK(std::isnan(run_cost({h100_nodes(1)}, s, 1.0, std::nan("")).energy_mwh));
  CHECK(c.usd > 0.0);
}

TEST_CASE("run_cost.pricing_names") {
  CHECK(parse_pricing("spot") == Pricing::spot);
  CHECK(parse_pricing("on_demand") == Pricing::on_demand);
  CHECK(parse_pricing("reserved") == Pricing::reserved);
  CHECK_FALSE(parse_pricing("ondemand").has_value());
}

TEST_CASE("run_cost.checkpoint_writers_follow_the_plan") {
  // Sharded optimizer states (ZeRO 1-3, FSDP): every node holds a distinct shard and writes.
  CHECK(checkpoint_writer_nodes(1, 1, 1, 8, 16) == 16);
  CHECK(checkpoint_writer_nodes(3, 8, 2, 8, 16) == 16);
  // Replicated states (plain DP, ZeRO-0): one replica of tp x pp GPUs writes.
  CHECK(checkpoint_writer_nodes(0, 1, 1, 8, 16) == 1);
  CHECK(checkpoint_writer_nodes(0, 8, 4, 8, 16) == 4);
  CHECK(checkpoint_writer_nodes(0, 4, 3, 8, 16) == 2); // 12 GPUs on ceil(12 / 8) nodes
  CHECK(checkpoint_writer_nodes(0, 8, 64, 8, 16) == 16); // never more than the cluster
  // The write takes nodes / writers times as long: 1 TB on 16 nodes at 1 GB/s each is 62.5 s;
  // on the 4 nodes of one replica, 250 s.
  RunCostSettings s;
  s.steps = 1000;
  s.checkpoint_bytes = 1e12;
  s.storage_GBps_per_node = 1.0;
  const RunCost all = run_cost({h100_nodes(16)}, s, 10.0, 0.4);
  const RunCost four = run_cost({h100_nodes(16)}, s, 10.0, 0.4, 4);
  CHECK(all.checkpoint_s == Approx(62.5));
  CHECK(four.checkpoint_s == Approx(250.0));
  CHECK(four.wall_s > all.wall_s);
  CHECK(run_cost({h100_nodes(16)}, s, 10.0, 0.4, 0).checkpoint_s == Approx(62.5));
}
