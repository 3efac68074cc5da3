#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zerosearch/io/columns.hpp"

using namespace zerosearch;

namespace {

/// Every ColumnId: the enum's values run from m to the last, master_weights.
std::vector<ColumnId> every_column() {
  std::vector<ColumnId> ids;
  for (int i = 0; i <= static_cast<int>(ColumnId::master_weights); ++i) {
    ids.push_back(static_cast<ColumnId>(i));
  }
  return ids;
}

/// One native row on 2 A10 nodes with every column's value set: an interval, token slices,
/// a memory breakdown.
RunResult native_run() {
  RunResult run;
  run.cluster = Cluster{{{"A10", 2}}, 4, {}};
  run.placements = PlacementSet::rotations({0, 0});
  run.estimator = Estimator::native;
  run.step_spread[1] = StepSpread{0.9, 1.2, "published runs, \"a\", b"};
  ResultRow r;
  r.point = DesignPoint{DpMethod::zero1, 2, 2, 2, 1, 8};
  r.point.schedule = Schedule::terapipe;
  r.estimate.step_s = 2.5;
  r.estimate.pipeline_s = 2.0;
  r.estimate.dp_sync_s = 0.25;
  r.estimate.embedding_sync_s = 0.125;
  r.estimate.gpumem_gib = 17.5;
  r.estimate.train_cost_usd = 1e6;
  r.estimate.price_per_step_usd = 0.02;
  r.estimate.partition = {13, 13};
  r.estimate.native.slices = {1024, 1024, 2048};
  r.estimate.native.optimizer_s = 0.5F;
  r.estimate.native.a2a_s = 0.125F;
  r.estimate.native.cp_s = 0.0625F;
  r.estimate.native.peak_memory = {1.0F, 2.0F, 3.0F, 4.0F, 5.0F, 6.0F};
  run.rows.push_back(r);
  run.throughput.seq_len = 4096;
  run.throughput.tokens_per_step = 32 * 4096;
  run.throughput.model_flops_per_step = 1e15;
  run.throughput.gpus = 8;
  run.throughput.peak_flops = 1e15;
  run.throughput.peak_dtype = "bf16";
  return run;
}

} // namespace

TEST_CASE("column table: every ColumnId has exactly one row, its CSV header unique",
          "[columns]") {
  std::set<std::string> headers;
  for (const ColumnId id : every_column()) {
    const ColumnDef& d = column_def(id);
    CAPTURE(static_cast<int>(id), d.name);
    CHECK(d.id == id);
    if (id == ColumnId::node_count) {
      CHECK(std::string(d.name).empty()); // the node type names it: "A10"
    } else {
      CHECK(headers.insert(d.name).second);
    }
    // The getter of its kind, and no other.
    const int getters = (d.integer != nullptr) + (d.real != nullptr) + (d.boolean != nullptr) +
                        (d.word != nullptr) + (d.special != nullptr);
    CHECK(getters == 1);
    switch (d.kind) {
    case CellKind::integer: CHECK(d.integer != nullptr); break;
    case CellKind::real: CHECK(d.real != nullptr); break;
    case CellKind::boolean: CHECK(d.boolean != nullptr); break;
    case CellKind::name:
    case CellKind::text: CHECK(d.word != nullptr); break;
    case CellKind::special: CHECK(d.special != nullptr); break;
    }
    // Numbers right-aligned, everything else left-aligned.
    CHECK(d.text == (d.kind != CellKind::integer && d.kind != CellKind::real));
    if (d.kind != CellKind::real) {
      CHECK(d.decimals == -1);
      CHECK(d.csv_blank == Blank::never);
      CHECK(d.table_blank == Blank::never);
    }
    CHECK((d.table_quoted ? d.kind == CellKind::text : true));
  }
}

TEST_CASE("column table: the CSV, JSON and table writers of every column agree", "[columns]") {
  const RunResult run = native_run();
  const RankedRow row{&run, &run.rows[0], 1, 1};
  CellWriter cells;
  for (const ColumnId id : every_column()) {
    const Column c(id, id == ColumnId::node_count ? "A10" : "");
    CAPTURE(c.name());
    // The writers' path and the one-cell functions write the same cell.
    std::string buffer(cells.max_row_size({&c, 1}, row), '\0');
    const std::string csv(buffer.data(), cells.write(buffer.data(), c, row));
    std::string one;
    append_csv_cell(one, c, row);
    CHECK(csv == one);
    const std::string json(buffer.data(), cells.write_json(buffer.data(), c, row));
    CHECK(json == json_cell(c, row).dump());
    CHECK_NOTHROW(nlohmann::json::parse(json));
    std::string table;
    append_table_cell(table, c, row);
    // Without a whole run (no --tokens) the run columns are unknown: empty, null and "-".
    if (id >= ColumnId::run_days && id <= ColumnId::run_mtbf) {
      CHECK(csv.empty());
      CHECK(json == "null");
      CHECK(table == "-");
    } else {
      CHECK_FALSE(table.empty());
    }
  }
  // A few cells by kind: integer, figure, boolean, name, text, special.
  const auto csv_of = [&](ColumnId id) {
    std::string out;
    append_csv_cell(out, Column(id), row);
    return out;
  };
  const auto table_of = [&](ColumnId id) {
    std::string out;
    append_table_cell(out, Column(id), row);
    return out;
  };
  CHECK(csv_of(ColumnId::tp) == "2");
  CHECK(csv_of(ColumnId::step_time) == "2.5");
  CHECK(table_of(ColumnId::step_time) == "2.5000");
  CHECK(table_of(ColumnId::gpumem) == "17.50");
  CHECK(csv_of(ColumnId::is_oom) == "False");
  CHECK(csv_of(ColumnId::schedule) == "terapipe");
  CHECK(csv_of(ColumnId::interval_basis) == "\"published runs, \"\"a\"\", b\"");
  CHECK(json_cell(Column(ColumnId::interval_basis), row) == "published runs, \"a\", b");
  CHECK(csv_of(ColumnId::partition) == "\"[13, 13]\"");
  CHECK(table_of(ColumnId::partition) == "[13,13]");
  CHECK(table_of(ColumnId::slices) == "3 (1024..2048)");
  CHECK(csv_of(ColumnId::step_time_low) == "2.25");
  CHECK(table_of(ColumnId::step_time_high) == "3.0000");
  // The all-to-all and cp exchange of the stage with the most: native CSV and JSON, last.
  CHECK(csv_of(ColumnId::a2a_time) == "0.125");
  CHECK(json_cell(Column(ColumnId::cp_time), row) == 0.0625);
  CsvOptions native;
  native.native = true;
  const std::vector<Column> cols = csv_layout({"A10"}, native);
  REQUIRE(cols.size() >= 3);
  CHECK(cols[cols.size() - 3].name() == "a2a time");
  CHECK(cols[cols.size() - 2].name() == "cp time");
  // --master_weights, after them (docs/native.md §3).
  CHECK(cols.back().name() == "master_weights");
  CHECK(csv_of(ColumnId::master_weights) == "on");
  for (const Column& c : csv_layout({"A10"})) {
    CHECK(c.name() != "a2a time"); // not in the original's CSV
    CHECK(c.name() != "master_weights");
  }
}
