#include <catch2/catch.hpp>

#include <sstream>

#include "zerosearch/io/report.hpp"

using namespace zerosearch;

TEST_CASE("floats are written as Python's repr", "[report]") {
  CHECK(python_float(0.0) == "0.0");
  CHECK(python_float(22.625741958618164) == "22.625741958618164");
  CHECK(python_float(6152050.178308884) == "6152050.178308884");
  CHECK(python_float(1e16) == "1e+16");
  CHECK(python_float(1e15) == "1000000000000000.0");
  CHECK(python_float(0.0001) == "0.0001");
  CHECK(python_float(1e-05) == "1e-05");
  CHECK(python_float(1.5e-07) == "1.5e-07");
  CHECK(python_float(-2.5) == "-2.5");
  CHECK(python_float(48.0) == "48.0");
}

TEST_CASE("lists and partitions as the original writes them", "[report]") {
  CHECK(python_int_list({17, 25}) == "[17, 25]");
  CHECK(exp_partition({42}) == "41-41");
  CHECK(exp_partition({6, 5, 5}) == "5-5-4");
  CHECK(csv_field("[42]") == "[42]");
  CHECK(csv_field("[17, 25]") == "\"[17, 25]\"");
  CHECK(csv_field("a\"b") == "\"a\"\"b\"");
}

TEST_CASE("ranks: ties share the lowest rank, OOM rows get real_rank 0", "[report]") {
  RunResult run;
  run.cluster = Cluster{{{"A10", 1}}, 4, {}};
  run.placements = {{0}};
  const auto add = [&](double t, bool oom) {
    ResultRow r;
    r.estimate.step_s = t;
    r.estimate.oom = oom;
    r.estimate.partition = {42};
    run.rows.push_back(r);
  };
  add(3.0, false);
  add(1.0, true);
  add(2.0, false);
  add(2.0, false);
  add(5.0, false);
  const std::vector<RunResult> runs{run};
  const auto ranked = rank_results(runs);
  std::vector<int> rank, real;
  for (const auto& r : ranked) {
    rank.push_back(r.rank);
    real.push_back(r.real_rank);
  }
  CHECK(rank == std::vector<int>{1, 2, 2, 4, 5});
  CHECK(real == std::vector<int>{0, 1, 1, 3, 4});

  std::ostringstream csv;
  write_csv(csv, ranked, {"A10"});
  const std::string text = csv.str();
  CHECK(text.substr(0, text.find('\n')) ==
        "m,mbs,tp,pp,dp,dp method,overlap_comm,node placement,partition,estimated time (s/step),"
        "pipeline time,DP all-reduce time,Emb layer all-reduce time,is_oom,gpumem,train_cost,"
        "price_per_step,exp_partition,A10,rank,real_rank");
  CHECK(text.find("\n1,1,1,1,1,dp,False,['A10'],[42],1.0,0.0,0.0,0.0,True,0.0,0.0,0.0,41-41,1,1,0\n") !=
        std::string::npos);
}
