// The validator's pure figures (tools/validate/metrics.cpp, corpus.cpp, knobs.cpp), on
// hand-worked values.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "validate/cases.hpp"
#include "validate/corpus.hpp"
#include "validate/metrics.hpp"
#include "zerosearch/io/uncertainty.hpp"

using namespace zerosearch::validate;
namespace fs = std::filesystem;

TEST_CASE("Kendall tau-b of hand-worked series", "[validate]") {
  // Same order: all 3 pairs concordant.
  CHECK(kendall_tau_b({1, 2, 3}, {10, 20, 30}) == Approx(1.0));
  // Reversed: all discordant.
  CHECK(kendall_tau_b({1, 2, 3}, {30, 20, 10}) == Approx(-1.0));
  // {1,2,3} vs {1,3,2}: pairs (1,2) C, (1,3) C, (2,3) D -> (2 - 1) / 3.
  CHECK(kendall_tau_b({1, 2, 3}, {1, 3, 2}) == Approx(1.0 / 3.0));
  // 4 values, x = {1,2,3,4}, y = {2,1,4,3}: D for (1,2) and (3,4), C for the other 4 -> 2/6.
  CHECK(kendall_tau_b({1, 2, 3, 4}, {2, 1, 4, 3}) == Approx(1.0 / 3.0));
  // A tie in x: x = {1,1,2}, y = {1,2,3}: (1,2) tied in x, (1,3) C, (2,3) C.
  // tau-b = 2 / sqrt((2 + 0 + 1) * (2 + 0 + 0)) = 2 / sqrt(6).
  CHECK(kendall_tau_b({1, 1, 2}, {1, 2, 3}) == Approx(2.0 / std::sqrt(6.0)));
  // A constant series says nothing: 0.
  CHECK(kendall_tau_b({5, 5, 5}, {1, 2, 3}) == 0.0);
}

TEST_CASE("top-1 regret of hand-worked groups", "[validate]") {
  // The predicted fastest (index 1) is the measured fastest: no regret.
  CHECK(top1_regret({3.0, 1.0, 2.0}, {3.3, 1.1, 2.2}) == Approx(0.0));
  // Predicted fastest is index 0 measured 12 s; the measured best is 10 s: 20 %.
  CHECK(top1_regret({1.0, 2.0, 3.0}, {12.0, 10.0, 11.0}) == Approx(0.2));
  // Two layouts tied for the fastest prediction: their mean measured (12 + 11) / 2 over 10.
  CHECK(top1_regret({1.0, 1.0, 3.0}, {12.0, 11.0, 10.0}) == Approx(0.15));
}

TEST_CASE("ranking groups need three layouts and average repeated layouts", "[validate]") {
  const std::vector<RankItem> items = {
      {"g1", "a", 10, 1}, {"g1", "b", 12, 2}, {"g1", "c", 11, 3},
      // "a" again: its measured time is the mean 14, the predicted the same 1.
      {"g1", "a", 18, 1},
      // Two layouts only: left out.
      {"g2", "a", 1, 1}, {"g2", "b", 2, 2},
      // Perfect group of 4.
      {"g3", "a", 1, 1}, {"g3", "b", 2, 2}, {"g3", "c", 3, 3}, {"g3", "d", 4, 4}};
  const auto groups = ranking_groups(items);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].group == "g1");
  CHECK(groups[0].layouts == 3);
  // predicted 1,2,3 against measured 14,12,11: all 3 pairs discordant.
  CHECK(groups[0].tau == Approx(-1.0));
  CHECK(groups[0].regret == Approx(14.0 / 11.0 - 1.0));
  CHECK(groups[1].tau == Approx(1.0));
  const RankSummary s = rank_summary(groups);
  CHECK(s.groups == 2);
  CHECK(s.layouts == 7);
  // Weighted by layouts: (-1 * 3 + 1 * 4) / 7.
  CHECK(s.tau == Approx(1.0 / 7.0));
  CHECK(s.regret == Approx((14.0 / 11.0 - 1.0) * 3.0 / 7.0));
}

TEST_CASE("error statistics, median and quantiles", "[validate]") {
  const Stats s = error_stats({-0.30, -0.05, 0.08, 0.20});
  CHECK(s.rows == 4);
  // |e| sorted 0.05 0.08 0.20 0.30: median (0.08 + 0.20) / 2.
  CHECK(s.median_abs == Approx(0.14));
  CHECK(s.median_signed == Approx(0.015));
  CHECK(s.within10 == Approx(0.5));
  CHECK(s.within25 == Approx(0.75));
  // Type-7 quantiles of 1..11: the 10th percentile is 2, the 90th 10.
  std::vector<double> v;
  for (int i = 1; i <= 11; ++i) v.push_back(i);
  CHECK(quantile(v, 0.1) == Approx(2.0));
  CHECK(quantile(v, 0.9) == Approx(10.0));
  // Between order statistics: 1..4 at 0.5 -> 2.5.
  CHECK(quantile({4, 1, 3, 2}, 0.5) == Approx(2.5));
}

TEST_CASE("a knob is re-chosen by the median on the training rows, ties to the shipped value",
          "[validate]") {
  // Candidate 0 (shipped): median 0.2; candidate 1: median 0.1.
  CHECK(choose_candidate({{0.1, 0.2, 0.3}, {0.05, 0.1, 0.5}}, 0) == 1);
  // Equal medians: the shipped value stays.
  CHECK(choose_candidate({{0.1, 0.2, 0.3}, {0.0, 0.2, 0.9}}, 0) == 0);
  CHECK(choose_candidate({{0.1, 0.2, 0.3}, {0.0, 0.2, 0.9}}, 1) == 1);
  // No training rows: the shipped value.
  CHECK(choose_candidate({{}, {}}, 1) == 1);
}

TEST_CASE("the corpus is every file, each its own source group", "[validate]") {
  const fs::path dir = fs::temp_directory_path() / "zerosearch_test_corpus";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "beta.tsv") << "source\tgpu\tframework\nb1\tH100\tfsdp\n";
  std::ofstream(dir / "alpha.tsv") << "source\tgpu\nr1\tA100\n\"r \"\"2\"\"\"\tV100\n";
  std::ofstream(dir / "notes.txt") << "not a corpus file\n";
  const auto files = corpus_files(dir);
  REQUIRE(files.size() == 2);
  const auto rows = load_corpus(files);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].group == "alpha");
  CHECK(rows[1].line == 2);
  CHECK(rows[1].at("source") == "r \"2\"");
  // A column the file does not have reads as empty.
  CHECK(rows[1].at("framework").empty());
  CHECK(rows[2].group == "beta");
  CHECK(rows[2].at("framework") == "fsdp");
  // The same group twice is an error.
  CHECK_THROWS_AS(load_corpus({dir / "alpha.tsv", dir / "alpha.tsv"}), BadInput);
  fs::remove_all(dir);
}

TEST_CASE("regimes: scale buckets, framework families, fallback", "[validate]") {
  CHECK(zerosearch::scale_bucket(8) == "1-8");
  CHECK(zerosearch::scale_bucket(9) == "9-64");
  CHECK(zerosearch::scale_bucket(512) == "65-512");
  CHECK(zerosearch::scale_bucket(513) == ">512");
  CHECK(framework_family("torchtitan") == "fsdp");
  CHECK(framework_family("megatron-deepspeed") == "deepspeed");
  CHECK(framework_family("megatron-bridge") == "megatron");
  CHECK(framework_family("nanotron") == "other");
  CHECK(zerosearch::framework_family_of_method("zero1") == "deepspeed");
  CHECK(zerosearch::framework_family_of_method("dp") == "megatron");
  zerosearch::UncertaintyTable t;
  // Own regime with 3 runs, the GPU with 12.
  zerosearch::UncertaintyRegime own;
  own.gpu = "A100-80GB";
  own.framework = "fsdp";
  own.scale = "9-64";
  own.runs = 3;
  zerosearch::UncertaintyRegime gpu;
  gpu.gpu = "A100-80GB";
  gpu.runs = 12;
  gpu.low = 0.9;
  gpu.high = 1.2;
  t.regimes = {own, gpu};
  const auto i = zerosearch::find_interval(t, "A100-80GB", "hbm-nvlink", "fsdp", "9-64");
  CHECK(i.found);
  CHECK(i.level == 2);
  CHECK(i.own_runs == 3);
  CHECK(zerosearch::interval_text(i, 10.0) ==
        "10.00 s/step (80 % of published runs on A100-80GB: 9-12 s; its regime A100-80GB x fsdp "
        "x 9-64 has 3 runs)");
  const auto none = zerosearch::find_interval(t, "T4", "gddr-pcie", "fsdp", "1-8");
  CHECK_FALSE(none.found);
  CHECK(zerosearch::interval_text(none, 2.0) ==
        "2.00 s/step (fewer than 10 published runs in its regime T4 x fsdp x 1-8: no interval)");
}
