// validate_options: the one place the flags are checked and typed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "zerosearch/core/error.hpp"

using namespace zerosearch;
using namespace zerosearch::cli;

namespace {

Options parse(const std::vector<const char*>& args) {
  std::vector<const char*> argv{"zerosearch"};
  argv.reserve(args.size() + 1);
  for (const char* a : args) {
    argv.push_back(a);
  }
  const ParseResult r = parse_options(static_cast<int>(argv.size()), argv.data());
  REQUIRE(r.options.has_value());
  return *r.options;
}

std::string error_of(const std::vector<const char*>& args) {
  try {
    (void)parse(args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("defaults are typed values of the original's defaults", "[options]") {
  const Options o = parse({});
  CHECK(o.node_types == std::vector<std::string>{"A10"});
  CHECK(o.node_counts == std::vector<int>{8});
  CHECK(o.gpu_per_node == 4);
  CHECK(o.custom_gbs == 64);
  CHECK(o.precision == 16);
  CHECK(o.iter == 12'500'000);
  CHECK(o.framework == Framework::automatic);
  CHECK(o.search_method == PartitionMethod::minmax);
  CHECK(o.profile_source == ProfileSource::automatic);
  CHECK(o.threads == 0);
  CHECK_FALSE(o.format.has_value());
  CHECK_FALSE(o.top.has_value());
  CHECK(o.notes.empty());
}

TEST_CASE("flags become numbers, enums and lists", "[options]") {
  const Options o = parse({"--node_type", "A10", "A6000", "--node_type_num_node", "3", "5",
                           "-f", "d", "--search_method", "ga", "--seed", "7", "--format", "json",
                           "--top", "3", "-j", "2", "--inter_node_gbps", "100", "200"});
  CHECK(o.node_counts == std::vector<int>{3, 5});
  CHECK(o.framework == Framework::deepspeed);
  CHECK(o.search_method == PartitionMethod::ga);
  CHECK(o.seed == 7);
  CHECK(o.format == Format::json);
  CHECK(o.top == std::size_t{3});
  CHECK(o.threads == 2);
  CHECK(o.inter_node_Gbitps == std::vector<double>{100.0, 200.0});
  const Cluster c = cluster_of(o);
  REQUIRE(c.groups.size() == 2);
  CHECK(c.groups[1].gpu == "A6000");
  CHECK(c.groups[1].count == 5);
  CHECK(c.world_size() == 32);
}

TEST_CASE("num_node has one range in every mode and pareto has its own limit", "[options]") {
  const std::string range = "--num_node '0' is not a whole number from 1 to 1000000";
  CHECK(error_of({"--num_node", "0"}) == range);
  CHECK(error_of({"--pareto", "--node_type", "A10", "A6000", "--num_node", "0"}) == range);
  CHECK(error_of({"--search_space", "--pareto", "--node_type", "A10", "A6000", "--num_node",
                  "0"}) == range);
  CHECK(error_of({"--pareto", "--node_type", "A10", "A6000", "--num_node", "1000001"}) ==
        "--num_node '1000001' is not a whole number from 1 to 1000000");
  // Within the range but above what a sweep plans.
  CHECK(error_of({"--pareto", "--node_type", "A10", "A6000", "--num_node", "1001"})
            .rfind("--pareto --num_node 1001: ", 0) == 0);
  CHECK(parse({"--pareto", "--node_type", "A10", "A6000", "--num_node", "1000"}).num_node == 1000);
  CHECK(parse({"--num_node", "1000000", "--gpu_per_node", "16"}).node_counts ==
        std::vector<int>{1'000'000});
}

TEST_CASE("the cluster's shape and size are checked with the flags", "[options]") {
  CHECK(error_of({"--node_type", "A10", "A6000"}) ==
        "--node_type has 2 types; give their node counts with --node_type_num_node");
  CHECK(error_of({"--node_type", "A10", "A10", "--node_type_num_node", "1", "2"}) ==
        "--node_type lists 'A10' twice");
  CHECK(error_of({"--num_node", "1000000", "--gpu_per_node", "1024"}) ==
        "the cluster has 1024000000 GPUs (1000000 nodes x 1024 per node); the limit is "
        "16777216 GPUs");
  CHECK(error_of({"--pareto", "--node_type", "A10"}) ==
        "--pareto needs exactly two --node_type values, got 1");
  CHECK(error_of({"--pareto", "--node_type", "A10", "A10"}) ==
        "--pareto needs two different node types, got 'A10' twice");
  // --write_profile uses the first type only.
  const Options w = parse({"--write_profile", "x.json", "--node_type", "H100", "A10"});
  CHECK(w.node_types == std::vector<std::string>{"H100"});
  CHECK(w.node_counts == std::vector<int>{8});
}

TEST_CASE("flags of another mode are errors or notes", "[options]") {
  CHECK(error_of({"--tp", "2"}) == "--tp describes one design point and needs --exhaustive");
  CHECK(error_of({"--max_step_time", "30"}) == "--max_step_time needs --pareto");
  CHECK(error_of({"--search_space", "--top", "3"}).rfind("--top does not apply to --search_space", 0) == 0);
  CHECK(error_of({"--search_space", "--format", "json"}) ==
        "--format 'json' is not available with --search_space (allowed: table, csv)");
  CHECK(error_of({"--format", "xml"}) == "unknown --format 'xml' (allowed: csv, json, table)");
  CHECK(error_of({"--write_profile", "x.json", "-f", "both"}) ==
        "--write_profile takes -f m or -f d, not 'both'");
  const Options o = parse({"--add_exp_name", "_a"});
  REQUIRE(o.notes.size() == 1);
  CHECK(o.notes[0].rfind("--add_exp_name names the --record file", 0) == 0);
}

TEST_CASE("the exhaustive design point, partition and placement are typed", "[options]") {
  const Options o = parse({"--exhaustive", "--node_type", "A10", "A6000", "--node_type_num_node",
                           "1", "2", "--dp_method", "zero1", "--tp", "1", "--pp", "3", "--dp",
                           "4", "--mbs", "2", "--partition", "14,14,14", "--placement",
                           "A6000,A10,A6000"});
  CHECK(o.point.method == DpMethod::zero1);
  CHECK(o.point.pp == 3);
  CHECK(o.point.num_micro_batches == 8);
  CHECK(o.partition == std::vector<int>{14, 14, 14});
  CHECK(o.placement == Placement{1, 0, 1});
  const std::vector<const char*> point{"--exhaustive", "--dp_method", "zero1", "--tp", "1",
                                       "--pp", "2", "--dp", "16", "--mbs", "1"};
  auto with = [&](std::vector<const char*> extra) {
    std::vector<const char*> args = point;
    for (const char* e : extra) {
      args.push_back(e);
    }
    return error_of(args);
  };
  CHECK(with({"--partition", "5,4,3"}) ==
        "--partition '5,4,3' has 3 entries but pp is 2; give one layer count per stage");
  CHECK(with({"--partition", "5,0"}) == "--partition '5,0': '0' is not a whole number >= 1 "
                                        "(every stage holds at least one layer)");
  CHECK(with({"--placement", "A10,A10"}) ==
        "--placement 'A10,A10' names 2 nodes but the cluster has 8");
  CHECK(error_of({"--exhaustive", "--dp_method", "zero1", "--tp", "1", "--pp", "8", "--dp",
                  "4"}) ==
        "--exhaustive needs --mbs (give --dp_method, --tp, --pp, --dp and --mbs)");
  CHECK(with({"--tp", "0"}).find("--tp") != std::string::npos);
}

TEST_CASE("parse_int and parse_positive_real name the flag and the range", "[options]") {
  CHECK(parse_int("--x", "12", 1, 20) == 12);
  CHECK_THROWS_WITH(parse_int("--x", "1.5", 1, 20), "--x '1.5' is not a whole number from 1 to 20");
  CHECK_THROWS_WITH(parse_int("--x", "", 0, std::numeric_limits<long long>::max()),
                    "--x '' is not a whole number >= 0");
  CHECK(parse_positive_real("--y", "1e3") == 1000.0);
  CHECK_THROWS_WITH(parse_positive_real("--y", "0"), "--y '0' is not a number > 0");
  CHECK_THROWS_WITH(parse_positive_real("--y", "inf"), "--y 'inf' is not a number > 0");
}

TEST_CASE("a mistyped flag gets the flag it most likely meant", "[options]") {
  const std::vector<std::string> flags = {"--node_type", "--num_node", "--type", "--seq_len",
                                          "--gpu_per_node", "--custom_gbs"};
  CHECK(suggest_flag("--num_nodes", flags) == "--num_node");
  CHECK(suggest_flag("--model", flags) == "--type");
  CHECK(suggest_flag("--node-type", flags) == "--node_type");
  CHECK(suggest_flag("--Node_Type", flags) == "--node_type");
  CHECK(suggest_flag("--seq-len", flags) == "--seq_len");
  CHECK(suggest_flag("--gpus_per_node", flags) == "--gpu_per_node");
  CHECK(suggest_flag("--frobnicate", flags).empty());
}

TEST_CASE("top counts plans that fit, and include_oom and feasible exclude each other",
          "[options]") {
  const Options o = parse({"--top", "3", "--include_oom"});
  CHECK(o.include_oom);
  CHECK(error_of({"--top", "3", "--include_oom", "--feasible"})
            .rfind("--include_oom and --feasible contradict each other", 0) == 0);
}

TEST_CASE("memory_margin takes a percentage or GiB", "[options]") {
  CHECK(parse({}).memory_margin.percent == 10.0);
  const Options pct = parse({"--memory_margin", "15%"});
  CHECK(pct.memory_margin.percent == 15.0);
  CHECK(pct.memory_margin.gib == 0.0);
  const Options gib = parse({"--memory_margin", "4"});
  CHECK(gib.memory_margin.percent == 0.0);
  CHECK(gib.memory_margin.gib == 4.0);
  CHECK(error_of({"--memory_margin", "95%"}).rfind("--memory_margin '95%' is neither", 0) == 0);
  CHECK(error_of({"--memory_margin", "-1"}).rfind("--memory_margin '-1' is neither", 0) == 0);
}

TEST_CASE("`list WHAT` is the --list mode", "[options]") {
  CHECK(parse({"list", "models"}).list == "models");
  CHECK(parse({"--list", "gpus"}).list == "gpus");
  CHECK(error_of({"list"}) == "list needs what to list: list models or list gpus");
}

TEST_CASE("--help lists every schedule of the table under --schedule", "[options]") {
  std::ostringstream captured;
  std::streambuf* const was = std::cout.rdbuf(captured.rdbuf());
  const char* argv[] = {"zerosearch", "--help"};
  ParseResult r;
  try {
    r = parse_options(2, argv);
  } catch (...) {
    std::cout.rdbuf(was);
    throw;
  }
  std::cout.rdbuf(was);
  CHECK_FALSE(r.options.has_value());
  const std::string help = captured.str();
  // The --schedule entry: from its flag to the next flag's line.
  const auto from = help.find("  --schedule ");
  REQUIRE(from != std::string::npos);
  const auto to = help.find("\n  -", from + 1);
  std::string entry = help.substr(from, to - from);
  std::string flat;  // the entry on one line, single spaces
  for (const char c : entry) {
    const bool space = c == ' ' || c == '\n';
    if (!space || (!flat.empty() && flat.back() != ' ')) flat += space ? ' ' : c;
  }
  std::replace_if(
      entry.begin(), entry.end(),
      [](char c) { return c == ',' || c == '(' || c == ')' || c == ';' || c == '\n'; }, ' ');
  std::istringstream words(entry);
  std::set<std::string> said;
  for (std::string w; words >> w;) said.insert(w);
  for (const ScheduleInfo& s : schedules()) {
    INFO(s.name << " in:\n" << entry);
    CHECK(said.count(s.name) == 1);
  }
  // And the plan's default, as a list.
  CHECK(flat.find("(default: 1f1b,interleaved;") != std::string::npos);
}
