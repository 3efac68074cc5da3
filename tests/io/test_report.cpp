#include <catch2/catch.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

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

namespace {

/// The straightforward formatter write_python_float replaced: Python's repr rules spelled out
/// with strings, kept here to check the fast one against it.
std::string reference_python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0.0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const auto epos = sci.find('e');
  std::string digits = sci.substr(0, epos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exponent = std::atoi(sci.c_str() + epos + 1);
  const int decpt = exponent + 1;
  const int nd = static_cast<int>(digits.size());
  std::string out;
  if (decpt <= -4 || decpt > 16) {
    out = digits.substr(0, 1);
    if (nd > 1) out += "." + digits.substr(1);
    const int e = std::abs(exponent);
    out += std::string("e") + (exponent < 0 ? '-' : '+') + (e < 10 ? "0" : "") + std::to_string(e);
  } else if (decpt <= 0) {
    out = "0." + std::string(static_cast<std::size_t>(-decpt), '0') + digits;
  } else if (decpt >= nd) {
    out = digits + std::string(static_cast<std::size_t>(decpt - nd), '0') + ".0";
  } else {
    out = digits.substr(0, static_cast<std::size_t>(decpt)) + "." +
          digits.substr(static_cast<std::size_t>(decpt));
  }
  return sign + out;
}

double from_bits(std::uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

} // namespace

TEST_CASE("python_float matches CPython's repr on edge cases and random values", "[report]") {
  // tests/data/python_repr.tsv: float64 bits and repr() as CPython printed them: powers of ten
  // from 1e-325 to 1e308, the neighbours of the 1e-4 and 1e16 switches, subnormals, the
  // largest float, random bit patterns, typical step times and prices, widened float32s.
  std::ifstream in(std::string(ZEROSEARCH_TEST_DATA) + "/python_repr.tsv");
  REQUIRE(in);
  std::string line;
  std::size_t checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    const double v = from_bits(std::strtoull(line.substr(0, tab).c_str(), nullptr, 16));
    const std::string expected = line.substr(tab + 1);
    char buf[kPythonFloatMaxChars];
    const std::string fast(buf, write_python_float(buf, v));
    if (fast != expected) {
      FAIL_CHECK(line << " gave " << fast);
    }
    ++checked;
  }
  CHECK(checked > 4000);
}

TEST_CASE("python_float equals the string-building formatter on a million values", "[report]") {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> step(0.0, 1000.0);
  std::size_t mismatches = 0;
  for (int i = 0; i < 1000000; ++i) {
    // Half arbitrary bit patterns (every exponent, subnormals, NaN, inf), half typical values.
    const double v = i % 2 ? from_bits(rng()) : step(rng) * std::pow(10.0, i % 40 - 20);
    char buf[kPythonFloatMaxChars];
    const std::string fast(buf, write_python_float(buf, v));
    if (fast != reference_python_float(v) && ++mismatches < 10) {
      FAIL_CHECK(fast << " != " << reference_python_float(v));
    }
    if (fast != python_float(v)) ++mismatches;
  }
  CHECK(mismatches == 0);
  for (const double v : {0.0, -0.0, std::nan(""), HUGE_VAL, -HUGE_VAL, 5e-324, -1.7976931348623157e308}) {
    CHECK(python_float(v) == reference_python_float(v));
  }
  CHECK(python_float(-0.0) == "-0.0");
  CHECK(python_float(-1.7976931348623157e308) == "-1.7976931348623157e+308");
  CHECK(python_float(5e-324) == "5e-324");
  std::string s = "x";
  append_python_float(s, 0.25);
  CHECK(s == "x0.25");
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
  run.placements = PlacementSet(Placement{0});
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

TEST_CASE("placement cells: each rotation, a single node, a placement of its own", "[report]") {
  RunResult run;
  run.cluster = Cluster{{{"A10", 2}, {"A6000", 1}}, 4, {}};
  run.placements = placements(run.cluster);
  for (int k = 0; k < 3; ++k) {
    ResultRow r;
    r.placement = k;
    r.estimate.partition = {20, 20};
    run.rows.push_back(r);
  }
  RunResult single;
  single.cluster = Cluster{{{"A10", 1}}, 4, {}};
  single.placements = PlacementSet(Placement{0});
  single.rows.resize(1);
  single.rows[0].estimate.partition = {40};
  RunResult own; // --exhaustive --placement: not a rotation of anything
  own.cluster = run.cluster;
  own.placements = PlacementSet(Placement{1, 0, 0});
  own.rows.resize(1);
  own.rows[0].estimate.partition = {20, 20};
  const Column c(ColumnId::node_placement);
  const auto cell = [&](const RunResult& rr, std::size_t i) {
    std::string out;
    append_csv_cell(out, c, RankedRow{&rr, &rr.rows[i], 1, 1});
    return out;
  };
  CHECK(cell(run, 0) == "\"['A10', 'A10', 'A6000']\"");
  CHECK(cell(run, 1) == "\"['A10', 'A6000', 'A10']\"");
  CHECK(cell(run, 2) == "\"['A6000', 'A10', 'A10']\"");
  CHECK(cell(single, 0) == "['A10']");
  CHECK(cell(own, 0) == "\"['A6000', 'A10', 'A10']\"");
  std::string part;
  append_csv_cell(part, Column(ColumnId::partition), RankedRow{&run, &run.rows[0], 1, 1});
  CHECK(part == "\"[20, 20]\"");
  std::string exp;
  append_csv_cell(exp, Column(ColumnId::exp_partition), RankedRow{&run, &run.rows[0], 1, 1});
  CHECK(exp == "19-19");
}
