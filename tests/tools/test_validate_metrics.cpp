// The validator's pure parts (tools/validate/metrics.cpp, corpus.cpp, cases.cpp, knobs.cpp)
// and the interval lookup (io/uncertainty.cpp), on hand-worked values.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "validate/cases.hpp"
#include "validate/corpus.hpp"
#include "validate/knobs.hpp"
#include "validate/metrics.hpp"
#include "zerosearch/io/hardware_json.hpp"
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

namespace {

Row corpus_row(std::map<std::string, std::string> over) {
  Row r;
  r.group = "fixture";
  r.line = 1;
  r.fields = {{"source", "fixture"}, {"model_name", "Llama-3-8B"}, {"num_layers", "32"},
              {"hidden_size", "4096"}, {"num_attention_heads", "32"}, {"num_kv_heads", "8"},
              {"ffn_hidden_size", "14336"}, {"vocab_size", "128256"}, {"seq_len", "8192"},
              {"gpu", "some GPU"}, {"num_gpus", "16"}, {"gpus_per_node", "8"}, {"tp", "1"},
              {"pp", "1"}, {"dp", "16"}, {"mbs", "1"}, {"gbs", "64"}, {"dp_method", "fsdp"},
              {"precision", "bf16"}, {"measured_metric", "tokens_per_s_per_gpu"},
              {"measured_value", "4096"}, {"framework", "torchtitan"},
              {"catalog_gpu", "A100-40GB"}, {"inter_node_gbit_per_node", "800"}, {"arch", ""}};
  for (const auto& [k, v] : over) r.fields[k] = v;
  return r;
}

} // namespace

TEST_CASE("a corpus row's four columns: catalog GPU, network, framework, architecture",
          "[validate]") {
  const auto catalog = zerosearch::load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  const Row r = corpus_row({});
  const Case c = make_case(r, catalog);
  CHECK(c.id == "fixture:1");
  // catalog_gpu wins over the name ("some GPU" maps to nothing).
  CHECK(c.catalog_gpu == "A100-40GB");
  CHECK(c.gpu_family == "hbm-nvlink");
  CHECK(c.inter_node_Gbitps == 800);
  CHECK(c.framework == "torchtitan");
  // Empty arch: by name.
  CHECK(c.arch == "llama");
  // 64 x 8192 tokens / (4096 tokens/s/GPU x 16 GPUs) = 8 s.
  CHECK(c.measured_s == Approx(8.0));
  CHECK(c.not_modelled.empty());
  const auto args = contract(c, "zs", "m.json", {{"--flash_attention", "off"}});
  const auto at = std::find(args.begin(), args.end(), "--inter_node_gbps");
  REQUIRE(at != args.end());
  // The row's nominal 800 Gbit/s as the catalog's nominal figures are taken: 60 % achieved.
  CHECK(*(at + 1) == "480");
  // Extra (knob) flags come before --format json -q.
  CHECK(args[args.size() - 5] == "--flash_attention");
  CHECK(args.back() == "-q");

  // Empty framework: the dp method's; empty catalog_gpu: not modelled, still a case.
  const Case d = make_case(corpus_row({{"framework", ""}, {"catalog_gpu", ""}, {"arch", "gpt"}}),
                           catalog);
  CHECK(d.framework == "fsdp");
  CHECK(d.arch == "gpt");
  CHECK(d.not_modelled == "GPU 'some GPU' is not in the catalog");
  // Part of a node: one node of the GPUs the run uses.
  const Case e = make_case(corpus_row({{"num_gpus", "2"}, {"dp", "2"}}), catalog);
  CHECK(e.gpn == 2);
  CHECK(e.not_modelled.empty());
  // A measured bus bandwidth (achieved) goes to --inter_node_gbps as it is, in place of the
  // nominal figure through the 60 % rule: BigScience's 55 Gbit/s on Jean Zay, not 0.6 x 800.
  const auto measured = contract(
      make_case(corpus_row({{"inter_node_busbw_gbit", "55"}}), catalog), "zs", "m.json");
  const auto bw = std::find(measured.begin(), measured.end(), "--inter_node_gbps");
  REQUIRE(bw != measured.end());
  CHECK(*(bw + 1) == "55");
  CHECK(std::count(measured.begin(), measured.end(), "--inter_node_gbps") == 1);
  CHECK_THROWS_WITH(make_case(corpus_row({{"inter_node_busbw_gbit", "0"}}), catalog),
                    Catch::Contains("inter_node_busbw_gbit '0' must be positive"));
  CHECK_THROWS_WITH(make_case(corpus_row({{"inter_node_busbw_gbit", "fast"}}), catalog),
                    Catch::Contains("inter_node_busbw_gbit 'fast'"));
  // The row's token dispatcher goes to --moe_dispatcher; empty leaves the default (alltoall).
  const auto flex = contract(make_case(corpus_row({{"moe_dispatcher", "hybridep"}}), catalog),
                             "zs", "m.json");
  const auto disp = std::find(flex.begin(), flex.end(), "--moe_dispatcher");
  REQUIRE(disp != flex.end());
  CHECK(*(disp + 1) == "hybridep");
  const auto plain = contract(make_case(corpus_row({}), catalog), "zs", "m.json");
  CHECK(std::find(plain.begin(), plain.end(), "--moe_dispatcher") == plain.end());
  CHECK_THROWS_WITH(make_case(corpus_row({{"moe_dispatcher", "flex"}}), catalog),
                    Catch::Contains("moe_dispatcher 'flex' must be alltoall, deepep, hybridep "
                                    "or empty"));
  // Bad values are one-line errors naming them.
  CHECK_THROWS_WITH(make_case(corpus_row({{"catalog_gpu", "Z9"}}), catalog),
                    Catch::Contains("catalog_gpu 'Z9'"));
  CHECK_THROWS_WITH(make_case(corpus_row({{"framework", "jax"}}), catalog),
                    Catch::Contains("framework 'jax'"));
  CHECK_THROWS_WITH(make_case(corpus_row({{"arch", "mamba"}}), catalog),
                    Catch::Contains("arch 'mamba'"));
}

TEST_CASE("a knob applies to the rows its filters name", "[validate]") {
  const auto catalog = zerosearch::load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  const Row stated = corpus_row({{"flash_attention", "off"}});
  const Row unstated = corpus_row({});
  const Row other = corpus_row({{"framework", "deepspeed"}, {"dp_method", "zero3"}});
  Knob k;
  k.flag = "--flash_attention";
  k.candidates = {"on", "off"};
  k.shipped = "on";
  k.unstated = "flash_attention";
  k.frameworks = {"torchtitan"};
  CHECK(k.shipped_index() == 0);
  CHECK_FALSE(k.applies(make_case(stated, catalog)));
  CHECK(k.applies(make_case(unstated, catalog)));
  CHECK_FALSE(k.applies(make_case(other, catalog)));
  k.frameworks.clear();
  CHECK(k.applies(make_case(other, catalog)));
}

TEST_CASE("a corpus row's ep, etp and model columns: a built-in model and expert parallelism",
          "[validate]") {
  const auto catalog = zerosearch::load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  const auto value_of = [](const std::vector<std::string>& args, const std::string& flag) {
    const auto at = std::find(args.begin(), args.end(), flag);
    return at == args.end() || at + 1 == args.end() ? std::string("(absent)") : *(at + 1);
  };
  // A file whose header has the three columns, one MoE row (a fixture of the corpus format).
  const fs::path dir = fs::temp_directory_path() / "zerosearch_test_corpus_moe";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "moe.tsv") << "source\tep\tetp\tmodel\nm1\t8\t2\tqwen3_30B_A3B\n";
  const auto rows = load_corpus(corpus_files(dir));
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("ep") == "8");
  CHECK(rows[0].at("etp") == "2");
  CHECK(rows[0].at("model") == "qwen3_30B_A3B");
  fs::remove_all(dir);

  const Case c = make_case(corpus_row({{"model", "qwen3_30B_A3B"}, {"ep", "8"}, {"etp", "2"},
                                       {"seq_len", "4096"}}),
                           catalog);
  CHECK(c.catalog_model == "qwen3_30B_A3B");
  CHECK(c.ep == 8);
  CHECK(c.etp == 2);
  const auto args = contract(c, "zs", "m.json");
  // The built-in model by name, not the model file; the row's sequence length; ep and etp.
  CHECK(value_of(args, "--type") == "qwen3_30B_A3B");
  CHECK(value_of(args, "--seq_len") == "4096");
  CHECK(value_of(args, "--ep") == "8");
  CHECK(value_of(args, "--etp") == "2");

  // Empty columns (every older file): the model file, no --ep/--etp (1 and Megatron's default).
  const Case d = make_case(corpus_row({}), catalog);
  CHECK(d.catalog_model.empty());
  CHECK(d.ep == 1);
  CHECK(d.etp == 0);
  const auto dense = contract(d, "zs", "m.json");
  CHECK(value_of(dense, "--type") == "m.json");
  CHECK(value_of(dense, "--ep") == "(absent)");
  CHECK(value_of(dense, "--etp") == "(absent)");
  // ep given, etp empty: --ep only.
  const auto ep_only = contract(make_case(corpus_row({{"ep", "4"}}), catalog), "zs", "m.json");
  CHECK(value_of(ep_only, "--ep") == "4");
  CHECK(value_of(ep_only, "--etp") == "(absent)");

  // Bad values are one-line errors naming them.
  CHECK_THROWS_WITH(make_case(corpus_row({{"ep", "0"}}), catalog), Catch::Contains("ep '0'"));
  CHECK_THROWS_WITH(make_case(corpus_row({{"etp", "0"}}), catalog), Catch::Contains("etp '0'"));
  CHECK_THROWS_WITH(make_case(corpus_row({{"ep", "x"}}), catalog), Catch::Contains("ep 'x'"));
  CHECK_THROWS_WITH(make_case(corpus_row({{"model", "../m.json"}}), catalog),
                    Catch::Contains("model '../m.json'"));
}

TEST_CASE("a corpus row's mixed cluster and stated partition", "[validate]") {
  const auto catalog = zerosearch::load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  const auto values_of = [](const std::vector<std::string>& args, const std::string& flag) {
    std::vector<std::string> out;
    auto at = std::find(args.begin(), args.end(), flag);
    if (at == args.end()) return out;
    for (++at; at != args.end() && at->rfind("--", 0) != 0; ++at) out.push_back(*at);
    return out;
  };
  const auto mixed = [](std::map<std::string, std::string> over) {
    std::map<std::string, std::string> row = {
        {"catalog_gpu", "V100-16GB*3+T4*1"}, {"inter_node_gbit_per_node", "10+50"},
        {"gpus_per_node", "4"}, {"pp", "4"}, {"dp", "4"}, {"dp_method", "zero0"},
        {"framework", "megatron-deepspeed"}, {"partition", "9,8,8,9"}};
    for (const auto& [k, v] : over) row[k] = v;
    return corpus_row(row);
  };
  const Case c = make_case(mixed({}), catalog);
  CHECK(c.not_modelled.empty());
  // The regime of a mixed cluster, as the CLI names it (plan_interval).
  CHECK(c.catalog_gpu == "mixed");
  CHECK(c.gpu_family == "mixed");
  const auto args = contract(c, "zs", "m.json");
  CHECK(values_of(args, "--node_type") == std::vector<std::string>{"V100-16GB", "T4"});
  CHECK(values_of(args, "--node_type_num_node") == std::vector<std::string>{"3", "1"});
  CHECK(values_of(args, "--placement") ==
        std::vector<std::string>{"V100-16GB,V100-16GB,V100-16GB,T4"});
  CHECK(values_of(args, "--inter_node_gbps") == std::vector<std::string>{"6", "30"});
  // Measured bus bandwidths, one per node type, pass as they are.
  CHECK(values_of(contract(make_case(mixed({{"inter_node_busbw_gbit", "9+29"}}), catalog), "zs",
                           "m.json"),
                  "--inter_node_gbps") == std::vector<std::string>{"9", "29"});
  CHECK_THROWS_WITH(make_case(mixed({{"inter_node_busbw_gbit", "9+29+1"}}), catalog),
                    Catch::Contains("inter_node_busbw_gbit '9+29+1'"));
  CHECK(values_of(args, "--partition") == std::vector<std::string>{"9,8,8,9"});
  CHECK(values_of(args, "--num_node").empty());
  // One GPU type: --node_type and --num_node, no placement; without the column, the even split.
  const auto plain = contract(make_case(corpus_row({{"pp", "2"}, {"dp", "8"}}), catalog), "zs",
                              "m.json");
  CHECK(values_of(plain, "--node_type") == std::vector<std::string>{"A100-40GB"});
  CHECK(values_of(plain, "--num_node") == std::vector<std::string>{"2"});
  CHECK(values_of(plain, "--placement").empty());
  CHECK(values_of(plain, "--partition") == std::vector<std::string>{"17,17"});
  CHECK(values_of(plain, "--intra_node_gbps").empty()); // no column: the catalog's links
  // The intra-node link a row states, nominal, through the same 60 % rule: one per type...
  CHECK(values_of(contract(make_case(mixed({{"intra_node_gbit_per_node", "170+50"}}), catalog),
                           "zs", "m.json"),
                  "--intra_node_gbps") == std::vector<std::string>{"102", "30"});
  // ... or one for all.
  CHECK(values_of(contract(make_case(mixed({{"intra_node_gbit_per_node", "50"}}), catalog), "zs",
                           "m.json"),
                  "--intra_node_gbps") == std::vector<std::string>{"30"});
  CHECK_THROWS_WITH(make_case(mixed({{"intra_node_gbit_per_node", "1+2+3"}}), catalog),
                    Catch::Contains("intra_node_gbit_per_node '1+2+3'"));
  CHECK_THROWS_WITH(make_case(mixed({{"intra_node_gbit_per_node", "fast"}}), catalog),
                    Catch::Contains("fast"));
  // Bad values are one-line errors naming them.
  CHECK_THROWS_WITH(make_case(mixed({{"catalog_gpu", "V100-16GB*0+T4*1"}}), catalog),
                    Catch::Contains("catalog_gpu 'V100-16GB*0+T4*1'"));
  CHECK_THROWS_WITH(make_case(mixed({{"catalog_gpu", "V100-16GB*3+Z9*1"}}), catalog),
                    Catch::Contains("catalog_gpu 'V100-16GB*3+Z9*1'"));
  CHECK_THROWS_WITH(make_case(mixed({{"catalog_gpu", "V100-16GB*2+T4*1"}}), catalog),
                    Catch::Contains("not num_gpus 16"));
  CHECK_THROWS_WITH(make_case(mixed({{"inter_node_gbit_per_node", "10+50+100"}}), catalog),
                    Catch::Contains("inter_node_gbit_per_node '10+50+100'"));
  CHECK_THROWS_WITH(make_case(mixed({{"partition", "9,8,17"}}), catalog),
                    Catch::Contains("partition '9,8,17' must have pp = 4 stages"));
  CHECK_THROWS_WITH(make_case(mixed({{"partition", "9,8,0,17"}}), catalog),
                    Catch::Contains("partition '9,8,0,17'"));
}
