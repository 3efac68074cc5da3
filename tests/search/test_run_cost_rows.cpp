#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "fixtures.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/search/run_cost_rows.hpp"

using namespace zerosearch;

namespace {

Cluster cluster_of(const std::string& gpu, int nodes) {
  Cluster c;
  c.gpus_per_node = 8;
  c.groups.push_back({gpu, nodes});
  return c;
}

RunCostFlags flags(Pricing pricing = Pricing::on_demand) {
  RunCostFlags f;
  f.steps = 100000;
  f.pricing = pricing;
  if (pricing == Pricing::spot) {
    f.settings.preemptions_per_node_hour = 0.2 / 730.0;
  }
  return f;
}

/// A run of one row of `step_s` on `cluster` with the spec of `f`; MFU 40 %.
RunResult one_row_run(const Cluster& cluster, double step_s, const RunCostFlags& f) {
  const Catalogs& cat = test::shipped_catalogs();
  RunResult run;
  run.cluster = cluster;
  ResultRow row;
  row.estimate.step_s = step_s;
  run.rows.push_back(row);
  run.throughput.gpus = cluster.world_size();
  run.throughput.peak_flops = 1e15 * cluster.world_size();
  run.throughput.model_flops_per_step = 0.4 * run.throughput.peak_flops * step_s;
  run.run_cost = make_run_cost_spec(f, cluster, cat.models.find("llama3_70B"), 4'000'000,
                                    cat.hardware);
  return run;
}

RankedRow ranked(const RunResult& run, int rank) {
  RankedRow r;
  r.run = &run;
  r.row = &run.rows.front();
  r.rank = rank;
  r.real_rank = rank;
  return r;
}

} // namespace

TEST_CASE("run_cost_rows.catalog_failure_rate_is_llama3s") {
  const Catalogs& cat = test::shipped_catalogs();
  const FailureRate& r = cat.hardware.failure_rates.at("hbm-nvlink");
  CHECK(r.per_gpu_hour == Approx(419.0 / (54.0 * 24.0 * 16384.0)).epsilon(1e-4));
  CHECK(r.source.find("Llama 3") != std::string::npos);
  CHECK(cat.hardware.gpu("H100-SXM").gpu_class == "hbm-nvlink");
}

TEST_CASE("run_cost_rows.llama3_405b_on_16384_h100") {
  // Llama 3 405B on 2,048 nodes of 8 H100 with the catalog's failure rate, its checkpoint
  // (405B parameters x 14 bytes) written at the default 1 GB/s per node, restart 10 min:
  // within 3 points of Llama 3's reported "more than 90 %" effective training time.
  const Catalogs& cat = test::shipped_catalogs();
  const ModelSpec& m = cat.models.find("llama3_405B");
  RunCostFlags f = flags();
  const RunCostSpec spec =
      make_run_cost_spec(f, cluster_of("H100-SXM", 2048), m, 16'000'000, cat.hardware);
  CHECK(spec.settings.checkpoint_bytes ==
        Approx(static_cast<double>(total_parameters(m)) * 14.0));
  CHECK(spec.settings.checkpoint_bytes / 1e12 == Approx(5.67).margin(0.05));
  // Pure bf16 (--master_weights off): 2 B weights + 4 B moments, 2.43 TB.
  const RunCostSpec pure = make_run_cost_spec(f, cluster_of("H100-SXM", 2048), m, 16'000'000,
                                              cat.hardware, checkpoint_bytes_per_param(false));
  CHECK(pure.settings.checkpoint_bytes ==
        Approx(static_cast<double>(total_parameters(m)) * 6.0));
  CHECK(checkpoint_bytes_per_param(true) == 14.0);
  const RunCost c = run_cost(spec.groups, spec.settings, 10.0, 0.38);
  CHECK(c.mtbf_s / 3600.0 == Approx(3.09).margin(0.01));
  CHECK(std::fabs(c.effective_fraction - 0.90) <= 0.03);
}

TEST_CASE("run_cost_rows.tokens_round_up_to_steps") {
  const Catalogs& cat = test::shipped_catalogs();
  RunCostFlags f;
  f.tokens = 15e12;
  const RunCostSpec spec = make_run_cost_spec(f, cluster_of("H100-SXM", 1),
                                              cat.models.find("llama3_70B"), 4'194'304, cat.hardware);
  CHECK(spec.settings.steps == 3'576'279); // ceil(15e12 / 4,194,304)
}

TEST_CASE("run_cost_rows.pricing_without_a_catalog_price") {
  const Catalogs& cat = test::shipped_catalogs();
  try {
    (void)make_run_cost_spec(flags(Pricing::spot), cluster_of("A10", 2),
                             cat.models.find("llama3_70B"), 1, cat.hardware);
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.rfind("--pricing spot: GPU 'A10' has no spot price in the hardware catalog", 0) ==
          0);
    CHECK(what.find("H100-SXM") != std::string::npos);
  }
  RunCostFlags capped = flags();
  capped.settings.power_cap_w = 50.0;
  CHECK_THROWS_WITH(make_run_cost_spec(capped, cluster_of("H100-SXM", 1),
                                       cat.models.find("llama3_70B"), 1, cat.hardware),
                    Catch::StartsWith("--power_cap_w 50 is at or below the idle power of "
                                      "H100-SXM (80 W)"));
}

TEST_CASE("run_cost_rows.spot_and_on_demand_rank_differently") {
  // 16 H100-SXM nodes at 10 s/step against 8 B200 nodes at 8 s/step, the catalog's prices:
  // on demand the H100 plan is cheaper, on spot the B200 plan.
  const RunResult h_od = one_row_run(cluster_of("H100-SXM", 16), 10.0, flags());
  const RunResult b_od = one_row_run(cluster_of("B200", 8), 8.0, flags());
  CHECK(run_cost_of(ranked(h_od, 2))->usd < run_cost_of(ranked(b_od, 1))->usd);
  const RunResult h_spot = one_row_run(cluster_of("H100-SXM", 16), 10.0, flags(Pricing::spot));
  const RunResult b_spot = one_row_run(cluster_of("B200", 8), 8.0, flags(Pricing::spot));
  CHECK(run_cost_of(ranked(h_spot, 2))->usd > run_cost_of(ranked(b_spot, 1))->usd);
  // The dollar front agrees: on demand both are on it (B200 sooner, H100 cheaper); on spot
  // the B200 plan is sooner and cheaper, alone on the front.
  const std::vector<bool> od = run_cost_front({ranked(b_od, 1), ranked(h_od, 2)}, false);
  CHECK(od == std::vector<bool>{true, true});
  const std::vector<bool> spot = run_cost_front({ranked(b_spot, 1), ranked(h_spot, 2)}, false);
  CHECK(spot == std::vector<bool>{true, false});
}

TEST_CASE("run_cost_rows.rank_change_note") {
  // A step 2 % faster on 2,048 nodes than on 16, but the large cluster fails every 3.1 h and
  // loses an hour per restart: it ranks first by step time and second by days.
  RunCostFlags f = flags();
  f.settings.restart_s = 3600.0;
  f.steps = 1'000'000;
  const RunResult big = one_row_run(cluster_of("H100-SXM", 2048), 1.00, f);
  const RunResult small = one_row_run(cluster_of("H100-SXM", 16), 1.02, f);
  const std::vector<RankedRow> rows{ranked(big, 1), ranked(small, 2)};
  REQUIRE(run_cost_of(rows[0])->days() > run_cost_of(rows[1])->days());
  const std::string note = rank_change_note(rows);
  CHECK(note.rfind("ranking by time-to-train differs from step time: #1 by step time is #2 by "
                   "days",
                   0) == 0);
  CHECK(rank_change_note({ranked(small, 1), ranked(big, 2)}).empty());
}

TEST_CASE("run_cost_rows.budget_and_deadline_filter") {
  const RunResult a = one_row_run(cluster_of("H100-SXM", 16), 10.0, flags());
  const RunResult b = one_row_run(cluster_of("B200", 8), 8.0, flags());
  const double a_usd = run_cost_of(ranked(a, 2))->usd;
  const double b_days = run_cost_of(ranked(b, 1))->days();
  std::vector<RankedRow> rows{ranked(b, 1), ranked(a, 2)};
  filter_run_cost(rows, a_usd * 1.0001, std::nullopt);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].run == &a);
  CHECK(rows[0].rank == 2); // ranks kept
  rows = {ranked(b, 1), ranked(a, 2)};
  filter_run_cost(rows, std::nullopt, b_days * 1.0001);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].run == &b);
}
