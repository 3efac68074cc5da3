#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include <nlohmann/json.hpp>

#include "zerosearch/io/columns.hpp"
#include "zerosearch/io/report_format.hpp"

using namespace zerosearch;

namespace {

/// 3 A10 + 1 A6000 nodes, two placements, four rows (one OOM).
RunResult sample_run() {
  RunResult run;
  run.cluster = Cluster{{{"A10", 3}, {"A6000", 1}}, 4, {}};
  run.placements = PlacementSet::rotations({0, 0, 0, 1}); // placement 3: {1, 0, 0, 0}
  const auto add = [&](double t, bool oom, int placement, std::vector<int> partition) {
    ResultRow r;
    r.point = DesignPoint{DpMethod::zero1, 1, 2, static_cast<int>(partition.size()), 2, 16};
    r.placement = placement;
    r.estimate.step_s = t;
    r.estimate.pipeline_s = t - 0.5;
    r.estimate.dp_sync_s = 0.25;
    r.estimate.embedding_sync_s = 0.125;
    r.estimate.oom = oom;
    r.estimate.gpumem_gib = 20.375137329101562;
    r.estimate.price_per_step_usd = t * 0.01;
    r.estimate.train_cost_usd = t * 125000.0;
    r.estimate.partition = std::move(partition);
    run.rows.push_back(r);
  };
  add(21.69929885864258, false, 0, {22, 20});
  add(20.5, true, 3, {21, 21});
  add(30.0, false, 3, {11, 10, 10, 11});
  add(25.0, false, 0, {42});
  run.throughput.seq_len = 4096;
  run.throughput.tokens_per_step = 64 * 4096;
  run.throughput.model_flops_per_step = 1e15;
  run.throughput.gpus = 16;
  run.throughput.peak_flops = 2e15;
  run.throughput.peak_dtype = "bf16";
  run.margin_limit_gib = 20.0;
  return run;
}

} // namespace

TEST_CASE("placements are compressed into runs of one node type", "[report_format]") {
  const Cluster c{{{"A10", 3}, {"A6000", 5}}, 4, {}};
  CHECK(compress_placement(c, {0, 0, 1, 1, 1, 1, 1, 0}) == "A10x2 A6000x5 A10x1");
  CHECK(compress_placement(c, {1}) == "A6000x1");
  CHECK(compress_placement(c, {}).empty());
}

TEST_CASE("feasible-only drops OOM rows and top keeps the best N, ranks unchanged",
          "[report_format]") {
  const std::vector<RunResult> runs{sample_run()};
  const auto ranked = rank_results(runs);
  REQUIRE(ranked.size() == 4);
  CHECK(select_rows(ranked, {}).size() == 4);
  CHECK(select_rows(ranked, {false, 2}).size() == 2);
  const auto feasible = select_rows(ranked, {true, 0});
  REQUIRE(feasible.size() == 3);
  CHECK(feasible[0].rank == 2);
  CHECK(feasible[0].real_rank == 1);
  const auto best = select_rows(ranked, {true, 1});
  REQUIRE(best.size() == 1);
  CHECK(best[0].row->estimate.step_s == 21.69929885864258);
  CHECK(select_rows(ranked, {true, 100}).size() == 3);
}

TEST_CASE("JSON has the CSV's columns as keys, in order, with native types", "[report_format]") {
  const std::vector<RunResult> runs{sample_run()};
  const auto ranked = rank_results(runs);
  std::ostringstream out;
  write_json(out, ranked, {"A10", "A6000"});
  const auto doc = nlohmann::ordered_json::parse(out.str());
  REQUIRE(doc.is_array());
  REQUIRE(doc.size() == 4);
  const auto& first = doc[0];
  std::vector<std::string> keys;
  for (const auto& item : first.items()) {
    keys.push_back(item.key());
  }
  CsvOptions with_throughput;
  with_throughput.throughput = true;
  CHECK(keys == csv_columns({"A10", "A6000"}, with_throughput));
  // Throughput: 262144 tokens / 20.5 s / 16 GPUs; MFU 1e15 FLOPs / 20.5 s / 2e15 FLOP/s.
  CHECK(first["seq_len"] == 4096);
  CHECK(first["tokens per step"] == 262144);
  CHECK(first["tokens/s per GPU"].get<double>() == Approx(262144.0 / 20.5 / 16));
  CHECK(first["MFU"].get<double>() == Approx(100.0 / 20.5 / 2.0));
  CHECK(first["MFU peak"] == "bf16");
  CHECK(first["memory fit"] == "OOM");
  CHECK(doc[1]["memory fit"] == "within margin"); // 20.375 GiB above the 20.0 GiB limit
  CHECK(first["m"] == 16);
  CHECK(first["m"].is_number_integer());
  CHECK(first["dp method"] == "zero1");
  CHECK(first["overlap_comm"] == false);
  CHECK(first["node placement"] == nlohmann::ordered_json::array({"A6000", "A10", "A10", "A10"}));
  CHECK(first["partition"] == nlohmann::ordered_json::array({21, 21}));
  CHECK(first["estimated time (s/step)"].is_number_float());
  CHECK(first["estimated time (s/step)"].get<double>() == 20.5);
  CHECK(first["is_oom"] == true);
  CHECK(first["gpumem"].get<double>() == 20.375137329101562);
  CHECK(first["exp_partition"] == "20-20");
  CHECK(first["A10"] == 3);
  CHECK(first["A6000"] == 1);
  CHECK(first["rank"] == 1);
  CHECK(first["real_rank"] == 0);
  CHECK(doc[1]["real_rank"] == 1);
  CHECK(doc[3]["partition"].size() == 4);
}

TEST_CASE("JSON keys follow --pretty's order and no rows is an empty array", "[report_format]") {
  const std::vector<RunResult> runs{sample_run()};
  const auto ranked = rank_results(runs);
  std::ostringstream out;
  write_json(out, ranked, {"A10", "A6000"}, CsvOptions{true});
  const auto doc = nlohmann::ordered_json::parse(out.str());
  CHECK(doc[0].begin().key() == "rank");
  std::ostringstream empty;
  write_json(empty, {}, {"A10"});
  CHECK(empty.str() == "[]\n");
}

TEST_CASE("the table aligns columns in the original's pretty order", "[report_format]") {
  const std::vector<RunResult> runs{sample_run()};
  const auto ranked = rank_results(runs);
  std::ostringstream out;
  write_table(out, select_rows(ranked, {false, 2}), std::vector<std::string>{"A10", "A6000"});
  // The CSV's column names, with units where a name has none (s, GiB, USD).
  const std::string expected =
      "rank  real_rank   m  mbs  tp  pp  dp  dp method  A10  A6000  estimated time (s/step)  "
      "pipeline time (s)  DP all-reduce time (s)  Emb layer all-reduce time (s)  gpumem (GiB)  "
      "is_oom  node placement  exp_partition  partition  train_cost (USD)  price_per_step (USD)  "
      "seq_len  tokens per step  tokens/s per GPU  MFU (%)  memory fit\n"
      "   1          0  16    2   1   2   2  zero1        3      1                  20.5000  "
      "          20.0000                  0.2500                         0.1250         20.38  "
      "True    A6000x1 A10x3   20-20          [21,21]             2562500               0.20500  "
      "   4096           262144               799      2.4  OOM\n"
      "   2          1  16    2   1   2   2  zero1        3      1                  21.6993  "
      "          21.1993                  0.2500                         0.1250         20.38  "
      "False   A10x3 A6000x1   21-19          [22,20]             2712412               0.21699  "
      "   4096           262144               755      2.3  within margin\n";
  CHECK(out.str() == expected);
}

namespace {

/// The JSON of rows as nlohmann writes an object of json_cell values: what write_json wrote
/// before it wrote cells straight into its buffer.
std::string reference_json(const std::vector<RankedRow>& rows,
                           const std::vector<std::string>& type_names, const CsvOptions& options) {
  if (rows.empty()) return "[]\n";
  std::string out = "[\n";
  CsvOptions with_throughput = options; // write_json always adds the throughput columns
  with_throughput.throughput = true;
  const auto layout = csv_layout(type_names, with_throughput);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const Column& c : layout) object[c.name()] = json_cell(c, rows[i]);
    if (!rows[i].run->profile_source.empty()) object["profile_source"] = rows[i].run->profile_source;
    out += "  " + object.dump() + (i + 1 < rows.size() ? ",\n" : "\n");
  }
  return out + "]\n";
}

} // namespace

TEST_CASE("write_json writes what nlohmann's dump of the cells writes", "[report_format]") {
  RunResult run = sample_run();
  // Names that need escaping, figures that are not finite or need an exponent.
  run.cluster.groups[0].gpu = "A10 \"x\"\\y\xc3\xa9\t";
  run.profile_source = "measured \"a\"";
  run.rows[0].estimate.pipeline_s = std::nan("");
  run.rows[1].estimate.dp_sync_s = HUGE_VAL;
  run.rows[2].estimate.embedding_sync_s = 1e-7;
  run.rows[3].estimate.train_cost_usd = 1e22;
  run.rows[3].estimate.gpumem_gib = -0.0;
  const std::vector<RunResult> runs{run};
  const auto ranked = rank_results(runs);
  const std::vector<std::string> types{run.cluster.groups[0].gpu, "A6000"};
  for (const CsvOptions options : {CsvOptions{}, CsvOptions{true, false, false},
                                   CsvOptions{false, true, false}, CsvOptions{false, false, true}}) {
    std::ostringstream got;
    write_json(got, ranked, types, options);
    CHECK(got.str() == reference_json(ranked, types, options));
    const auto distinct = distinct_rows(ranked);
    std::ostringstream got_distinct;
    write_json(got_distinct, distinct, types, options);
    CHECK(got_distinct.str() == reference_json(distinct, types, options));
  }
  std::ostringstream empty;
  write_json(empty, {}, types);
  CHECK(empty.str() == "[]\n");
}

TEST_CASE("distinct CSV: placement as runs, quoted when a name needs it, and the count",
          "[report_format]") {
  RunResult run = sample_run();
  const std::vector<RunResult> runs{run};
  auto distinct = distinct_rows(rank_results(runs));
  distinct[0].placements = 3;
  std::ostringstream csv;
  write_csv(csv, distinct, {"A10", "A6000"}, CsvOptions{false, false, true});
  const std::string text = csv.str();
  CHECK(text.substr(0, text.find('\n')).find(",overlap_comm,placement,placements,partition,") !=
        std::string::npos);
  CHECK(text.find(",False,A6000x1 A10x3,3,\"[21, 21]\",") != std::string::npos);
  RunResult comma = sample_run();
  comma.cluster.groups[0].gpu = "A,10";
  const std::vector<RunResult> comma_runs{comma};
  std::ostringstream quoted;
  write_csv(quoted, distinct_rows(rank_results(comma_runs)), {"A,10", "A6000"},
            CsvOptions{false, false, true});
  CHECK(quoted.str().find(",False,\"A6000x1 A,10x3\",1,") != std::string::npos);
}

TEST_CASE("CSV and JSON: the same bytes whatever the number of formatting threads",
          "[report_format]") {
  // 5,000 rows: five chunks of 1,024 rows and a partial one, formatted 1, 2, 3 and 4 at once.
  RunResult run = sample_run();
  const std::vector<ResultRow> base = run.rows;
  run.rows.clear();
  for (int i = 0; i < 5000; ++i) {
    ResultRow r = base[static_cast<std::size_t>(i) % base.size()];
    r.estimate.step_s += 0.001 * i;
    run.rows.push_back(r);
  }
  const std::vector<RunResult> runs{run};
  const auto ranked = rank_results(runs);
  const std::vector<std::string> types{"A10", "A6000"};
  CsvOptions one;
  one.threads = 1;
  std::ostringstream csv1;
  std::ostringstream json1;
  write_csv(csv1, ranked, types, one);
  write_json(json1, ranked, types, one);
  const std::string csv_text = csv1.str();
  CHECK(std::count(csv_text.begin(), csv_text.end(), '\n') == 5001);
  for (const unsigned threads : {2U, 3U, 4U}) {
    CsvOptions many;
    many.threads = threads;
    std::ostringstream csv;
    std::ostringstream json;
    write_csv(csv, ranked, types, many);
    write_json(json, ranked, types, many);
    CHECK(csv.str() == csv1.str());
    CHECK(json.str() == json1.str());
  }
}

TEST_CASE("write_rows: rows in order for any chunk size and thread count", "[report_format]") {
  const auto format = [](CellWriter&, std::size_t i, RowBuffer& buffer) {
    const std::string text = std::to_string(i) + '\n';
    char* p = buffer.reserve(text.size());
    std::memcpy(p, text.data(), text.size());
    buffer.commit(p + text.size());
  };
  std::string expected = "head\n";
  for (std::size_t i = 0; i < 3001; ++i) expected += std::to_string(i) + '\n';
  // Short rows (chunks of 1,024), rows of 64 KiB (16-row chunks), and no rows at all.
  for (const std::size_t row_bytes : {std::size_t{0}, std::size_t{64} << 10}) {
    for (const unsigned threads : {1U, 2U, 4U}) {
      std::ostringstream out;
      write_rows(out, "head\n", 3001, format, threads, row_bytes);
      CHECK(out.str() == expected);
      std::ostringstream none;
      write_rows(none, "head\n", 0, format, threads, row_bytes);
      CHECK(none.str() == "head\n");
    }
  }
}

namespace {

// -Wswitch-enum: a new ReportFormat fails to compile here until it is counted (and
// kReportFormats has its row: the test below checks the count).
constexpr std::size_t format_count(ReportFormat f) {
  switch (f) {
  case ReportFormat::summary:
  case ReportFormat::csv:
  case ReportFormat::json:
  case ReportFormat::table:
  case ReportFormat::none: return 5;
  }
  return 0;
}

} // namespace

TEST_CASE("format table: one row per format, --format's words unique and read back",
          "[report_format]") {
  REQUIRE(kReportFormats.size() == format_count(ReportFormat::csv));
  std::vector<std::string> names;
  for (std::size_t i = 0; i < kReportFormats.size(); ++i) {
    const ReportFormatInfo& f = kReportFormats[i];
    CHECK(static_cast<std::size_t>(f.id) == i);
    CHECK(&info(f.id) == &f);
    CHECK(std::string(f.summary).size() > 0);
    if (f.name != nullptr) {
      CAPTURE(f.name);
      CHECK(std::find(names.begin(), names.end(), f.name) == names.end());
      names.emplace_back(f.name);
      CHECK(parse_report_format(f.name) == f.id);
    }
  }
  CHECK(names == std::vector<std::string>{"csv", "json", "table"});
  CHECK(report_format_names() == "csv, json, table");
  CHECK(report_format_names(" or ") == "csv, json or table");
  CHECK_THROWS_WITH(parse_report_format("xml"),
                    "unknown --format 'xml' (allowed: csv, json, table)");
  CHECK_THROWS_WITH(parse_report_format("summary"),
                    "unknown --format 'summary' (allowed: csv, json, table)");
  // The formats of one row per placement: the original's CSV and the JSON of its columns.
  CHECK(info(ReportFormat::csv).per_placement);
  CHECK(info(ReportFormat::json).per_placement);
  CHECK_FALSE(info(ReportFormat::table).per_placement);
  CHECK_FALSE(info(ReportFormat::summary).per_placement);
  // Distinct rows (one per design point): the summary and the table; the formats that list the
  // ranked rows themselves: csv, json and the table. A format is one of these kinds, never
  // both per placement and distinct.
  for (const ReportFormatInfo& f : report_formats()) {
    CHECK_FALSE((f.per_placement && f.distinct_rows));
    CHECK((!f.per_placement || f.lists_rows));
  }
  CHECK(info(ReportFormat::summary).distinct_rows);
  CHECK_FALSE(info(ReportFormat::summary).lists_rows);
  CHECK(info(ReportFormat::table).distinct_rows);
  CHECK(info(ReportFormat::table).lists_rows);
  CHECK_FALSE(info(ReportFormat::none).lists_rows);
}
