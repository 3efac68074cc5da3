#pragma once
// The output columns: one table (kColumns in columns.cpp, one row per ColumnId) drives the CSV,
// the JSON and the pretty table. A row holds the column's name (CSV header and JSON key), its
// unit (the table's header), its kind of cell (integer, figure, boolean, name, text, or its
// own writers) with the getter of its value, and for figures the table's decimals and when a
// cell is blank; one writer per kind and format writes every cell.
//
// Adding a column: a ColumnId, its row in kColumns (columns.cpp), and its place in the layouts
// (csv_layout, table_layout); a column whose cells no kind writes gets its own SpecialCell.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zerosearch/search/ranking.hpp"
#include "zerosearch/search/run_cost_rows.hpp"

namespace zerosearch {

enum class ColumnId {
  m, mbs, tp, pp, dp, dp_method, overlap_comm, node_placement, partition, step_time,
  pipeline_time, dp_sync_time, embedding_sync_time, is_oom, gpumem, train_cost, price_per_step,
  exp_partition, node_count, rank, real_rank, pareto,
  /// Distinct rows (--distinct): the row's placement as runs of one node type, "A10x3 A6000x5",
  /// and how many placements the row stands for.
  placement_runs, placements,
  // Native estimator (docs/native.md): its dimensions and the parts of its estimate.
  estimator, recompute, offload, virtual_stages, dtype, optimizer_time, offload_time,
  host_memory, mem_weights, mem_gradients, mem_optimizer, mem_activations, mem_buffers,
  mem_overhead, schedule, slices,
  /// Native rows: the step-time interval from published runs of the plan's regime
  /// (RunResult::step_spread, docs/validation.md), and what it rests on.
  step_time_low, step_time_high, interval_basis,
  /// Throughput (RunThroughput): tokens per sequence and per step, tokens/s per GPU, MFU in
  /// percent and whose peak it is against. In JSON and the table always; in the CSV only where
  /// it is not the original's format (native rows, --distinct).
  seq_len, tokens_per_step, tokens_per_gpu_s, mfu, mfu_peak,
  /// memory_fit(): "fits", "within margin" (--memory_margin) or "OOM"; where the throughput
  /// columns are.
  memory_fit,
  /// The whole run (--tokens / --steps, search/run_cost_rows.hpp): wall-clock days, GPU-hours,
  /// dollars, MWh, energy dollars, effective training time, checkpoint interval, cluster MTBF.
  /// Last in every output of a run that has them; the unit is in the name.
  run_days, run_gpu_hours, run_usd, run_mwh, run_energy_usd, run_effective, run_checkpoint_interval,
  run_mtbf,
  /// Native rows: expert-parallel and expert tensor-parallel degrees (issue 27; 1, 1 dense).
  ep, etp,
  /// Native rows: the context-parallel degree and exchange (docs/native.md §2.4).
  cp, cp_comm,
  /// Native rows: one micro-batch's MoE all-to-all and exposed cp exchange on the stage with
  /// the most (Estimate::a2a_s, cp_s).
  a2a_time, cp_time,
  /// Native rows: --master_weights, on (mixed precision: fp32 master weights and Adam moments)
  /// or off (pure 16-bit training; docs/native.md §3).
  master_weights
};

class CellWriter;
struct Column;

/// How a column's cells are written in each format (columns.cpp has one writer per kind).
enum class CellKind : std::uint8_t {
  /// A whole number: 12 in every format.
  integer,
  /// A figure: Python's repr in the CSV, a number (null when not finite) in JSON, fixed
  /// decimals (ColumnDef::decimals) in the table.
  real,
  /// True/False in the CSV and the table, true/false in JSON.
  boolean,
  /// A plain ASCII word from a table (a method, a dtype): as is, quoted in JSON.
  name,
  /// Free text: quoted as Python's csv module quotes, escaped in JSON.
  text,
  /// Its own writers (ColumnDef::special): placements, partitions, token slices.
  special
};

/// When a figure's cell is left empty (CSV) or shown as "-" (table).
enum class Blank : std::uint8_t { never, if_nan, if_not_finite };

/// The writers of a column no kind writes.
struct SpecialCell {
  /// The CSV cell at `out` (room for CellWriter::max_row_size); returns the end.
  char* (*csv)(CellWriter& cells, char* out, const RankedRow& r);
  /// The JSON value at `out`; returns the end.
  char* (*json)(CellWriter& cells, char* out, const RankedRow& r);
  /// The JSON value as nlohmann's.
  nlohmann::ordered_json (*value)(const RankedRow& r);
  /// Appends the table's cell.
  void (*table)(std::string& out, const RankedRow& r);
};

/// One row of the column table.
struct ColumnDef {
  ColumnId id;
  /// The original's CSV header, also the JSON key ("A10" etc. for node counts).
  const char* name;
  /// Unit shown in the table's header, "" when the name says it or there is none.
  const char* unit;
  CellKind kind;
  /// Left-aligned in the table (everything but integers and figures).
  bool text;
  // The getter of its kind (the others are null).
  long long (*integer)(const RankedRow& r, const Column& c) = nullptr;
  double (*real)(const RankedRow& r, CellWriter& cells) = nullptr;
  bool (*boolean)(const RankedRow& r) = nullptr;
  std::string_view (*word)(const RankedRow& r, std::string& scratch) = nullptr;
  const SpecialCell* special = nullptr;
  /// Figures: decimals in the table, or -1 for the CSV's text.
  int decimals = -1;
  /// Figures: an empty CSV cell when unknown; "-" in the table.
  Blank csv_blank = Blank::never;
  Blank table_blank = Blank::never;
  /// Text: the table quotes it as the CSV does (else as is).
  bool table_quoted = false;
};

[[nodiscard]] const ColumnDef& column_def(ColumnId id) noexcept;

/// One column of an output: its definition and, for node counts, the node type it counts.
struct Column {
  const ColumnDef* def = nullptr;
  std::string node_type;
  /// CSV header and JSON key.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// Table header: the name with its unit, "gpumem (GiB)".
  [[nodiscard]] std::string table_header() const;

  Column(ColumnId id, std::string type = {});

private:
  std::string name_;
};

struct CsvOptions {
  /// The original's --pretty column order.
  bool pretty = false;
  /// Adds a last column `pareto` (True/False: the row is on the price/step-time front).
  bool pareto_column = false;
  /// Distinct rows (--distinct): `node placement` gives way to `placement` (runs, compact) and
  /// `placements` (how many placements the row stands for).
  bool distinct = false;
  /// Adds the native estimator's columns after the original's (rows of --estimator native).
  bool native = false;
  /// Adds the throughput columns (seq_len ... mfu_peak) last. write_json always adds them;
  /// write_csv with `native` or `distinct` (formats that are not the original's).
  bool throughput = false;
  /// Adds the whole run's columns (run_days ... run_mtbf) last: rows of a run with --tokens or
  /// --steps (has_run_cost_rows).
  bool run_cost = false;
  /// Threads that format the rows (write_rows); 0: one per hardware thread, at most 4.
  unsigned threads = 0;
};
/// True when any row's run has a RunCostSpec (--tokens / --steps).
[[nodiscard]] bool has_run_cost_rows(const std::vector<RankedRow>& rows) noexcept;
/// True when any row comes from the native estimator.
[[nodiscard]] bool has_native_rows(const std::vector<RankedRow>& rows) noexcept;

/// The original's CSV column order (or its --pretty order); `type_names` are the node-count
/// columns in command-line order.
[[nodiscard]] std::vector<Column> csv_layout(const std::vector<std::string>& type_names,
                                             const CsvOptions& options = {});
/// The table's columns: the original's --pretty order (with `distinct`, `placements` after the
/// node placement, which the table writes compactly anyway).
/// Native rows add their recompute, offload, virtual stages and dtype after the method.
[[nodiscard]] std::vector<Column> table_layout(const std::vector<std::string>& type_names,
                                               bool distinct = false, bool native = false,
                                               bool run_cost = false);

/// A placement for the screen: runs of one node type, "A10x2 A6000x5 A10x1".
[[nodiscard]] std::string compress_placement(const Cluster& cluster, const Placement& placement);
/// Appends compress_placement(cluster, placement) to `out`.
void append_compressed_placement(std::string& out, const Cluster& cluster,
                                 const Placement& placement);

/// Writes the CSV and JSON cells of rows into a caller's buffer without building a string per
/// cell: the writers' path. Keeps the text of each run's placements (the rotations of one node
/// list are substrings of that list written twice), so a placement cell is one copy.
class CellWriter {
public:
  /// Bytes enough for the CSV or JSON cells of `columns` in row `r` (keys, separators and
  /// newline included).
  [[nodiscard]] std::size_t max_row_size(std::span<const Column> columns, const RankedRow& r);
  /// Writes the CSV cell at `out` (room for max_row_size) as append_csv_cell does; returns the
  /// end.
  char* write(char* out, const Column& c, const RankedRow& r);
  /// Writes the JSON value of the cell at `out` exactly as json_cell(c, r).dump() would;
  /// returns the end.
  char* write_json(char* out, const Column& c, const RankedRow& r);

private:
  friend struct CellAccess;
  struct RunText {
    const RunResult* run = nullptr;
    std::size_t nodes = 0;
    /// "'A10', 'A10', 'A6000', " for the first placement, twice.
    std::string text;
    /// Where node i of the doubled list starts in `text`; 2 * nodes + 1 entries.
    std::vector<std::size_t> offsets;
    /// The same in JSON: "\"A10\",\"A10\",\"A6000\"," twice.
    std::string json;
    std::vector<std::size_t> json_offsets;
  };
  /// The whole run of the last row asked (run_cost_of), kept for its other columns.
  const RunCost& cost_of(const RankedRow& r);
  const ResultRow* cost_row_ = nullptr;
  RunCost cost_;
  const RunText& text_of(const RunResult& run);
  /// The placement's Python list without its brackets: "'A10', 'A6000'".
  std::string_view placement_text(const RankedRow& r);
  /// Its JSON array without the brackets: "\"A10\",\"A6000\"".
  std::string_view placement_json(const RankedRow& r);
  std::vector<RunText> runs_;
  const RunText* last_ = nullptr;
  /// A text cell's value (ColumnDef::word), and its CSV field.
  std::string scratch_;
  std::string field_;
};

/// A chunk of output rows: rows are written straight into it (CellWriter).
class RowBuffer {
public:
  /// Where to write the next row, with room for `room` bytes.
  [[nodiscard]] char* reserve(std::size_t room);
  /// The row written at reserve() ends at `end`.
  void commit(const char* end) noexcept;
  [[nodiscard]] std::string_view text() const noexcept { return {data_.data(), used_}; }
  void clear() noexcept { used_ = 0; }

private:
  std::string data_;
  std::size_t used_ = 0;
};

/// Writes row i of n into `buffer` with `cells` (the calling thread's); must not depend on
/// which thread calls it or in which order.
using RowFormat = std::function<void(CellWriter& cells, std::size_t i, RowBuffer& buffer)>;

/// Writes `head`, then rows 0..n-1 in order. The rows are formatted in chunks of at most 1,024
/// rows and about 1 MiB (`row_bytes`: about how long a row is; 0: short), up to `threads`
/// chunks at once (0: one per hardware thread, at most 4), each written whole in row order, so
/// memory holds one chunk per thread.
void write_rows(std::ostream& out, std::string_view head, std::size_t n, const RowFormat& format,
                unsigned threads = 0, std::size_t row_bytes = 0);

/// JSON text of a string, as nlohmann's dump writes it (quoted, escaped).
[[nodiscard]] std::string json_string(std::string_view text);

/// Appends the column's cell of `r` in the original's CSV format (pandas to_csv, Python repr
/// of floats and lists), quoted as Python's csv module does.
void append_csv_cell(std::string& out, const Column& c, const RankedRow& r);
/// The cell as a native JSON value: numbers (null when not finite), booleans, arrays for the
/// placement and the partition.
[[nodiscard]] nlohmann::ordered_json json_cell(const Column& c, const RankedRow& r);
/// Appends the cell for the screen to `out`: times to 4 decimals, GiB to 2, placements
/// compressed.
void append_table_cell(std::string& out, const Column& c, const RankedRow& r);

} // namespace zerosearch
