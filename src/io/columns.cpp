#include "zerosearch/io/columns.hpp"
#include "zerosearch/model/estimator.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <exception>
#include <iterator>
#include <thread>
#include <ostream>
#include <cmath>

#include <fmt/format.h>

#include "zerosearch/io/report.hpp"

namespace zerosearch {

namespace {

// The one table of output columns (docs/model.md §5 for the original's CSV).
constexpr std::array<ColumnDef, 61> kColumns{{
    {ColumnId::m, "m", "", false},
    {ColumnId::mbs, "mbs", "", false},
    {ColumnId::tp, "tp", "", false},
    {ColumnId::pp, "pp", "", false},
    {ColumnId::dp, "dp", "", false},
    {ColumnId::dp_method, "dp method", "", true},
    {ColumnId::overlap_comm, "overlap_comm", "", true},
    {ColumnId::node_placement, "node placement", "", true},
    {ColumnId::partition, "partition", "", true},
    {ColumnId::step_time, "estimated time (s/step)", "", false},
    {ColumnId::pipeline_time, "pipeline time", "s", false},
    {ColumnId::dp_sync_time, "DP all-reduce time", "s", false},
    {ColumnId::embedding_sync_time, "Emb layer all-reduce time", "s", false},
    {ColumnId::is_oom, "is_oom", "", true},
    {ColumnId::gpumem, "gpumem", "GiB", false},
    {ColumnId::train_cost, "train_cost", "USD", false},
    {ColumnId::price_per_step, "price_per_step", "USD", false},
    {ColumnId::exp_partition, "exp_partition", "", true},
    {ColumnId::node_count, "", "nodes", false},
    {ColumnId::rank, "rank", "", false},
    {ColumnId::real_rank, "real_rank", "", false},
    {ColumnId::pareto, "pareto", "", true},
    {ColumnId::placement_runs, "placement", "", true},
    {ColumnId::placements, "placements", "", false},
    {ColumnId::estimator, "estimator", "", true},
    {ColumnId::recompute, "recompute", "", true},
    {ColumnId::offload, "offload", "", true},
    {ColumnId::virtual_stages, "virtual_stages", "", false},
    {ColumnId::dtype, "dtype", "", true},
    {ColumnId::optimizer_time, "optimizer time", "s", false},
    {ColumnId::offload_time, "offload time", "s", false},
    {ColumnId::host_memory, "host memory per node", "GiB", false},
    {ColumnId::mem_weights, "mem weights", "GiB", false},
    {ColumnId::mem_gradients, "mem gradients", "GiB", false},
    {ColumnId::mem_optimizer, "mem optimizer", "GiB", false},
    {ColumnId::mem_activations, "mem activations", "GiB", false},
    {ColumnId::mem_buffers, "mem buffers", "GiB", false},
    {ColumnId::mem_overhead, "mem overhead", "GiB", false},
    {ColumnId::schedule, "schedule", "", true},
    {ColumnId::slices, "token slices", "", true},
    {ColumnId::step_time_low, "interval low (s/step)", "", false},
    {ColumnId::step_time_high, "interval high (s/step)", "", false},
    {ColumnId::interval_basis, "interval basis", "", true},
    {ColumnId::seq_len, "seq_len", "", false},
    {ColumnId::tokens_per_step, "tokens per step", "", false},
    {ColumnId::tokens_per_gpu_s, "tokens/s per GPU", "", false},
    {ColumnId::mfu, "MFU", "%", false},
    {ColumnId::mfu_peak, "MFU peak", "", true},
    {ColumnId::memory_fit, "memory fit", "", true},
    {ColumnId::run_days, "run time (days)", "", false},
    {ColumnId::run_gpu_hours, "run GPU-hours", "", false},
    {ColumnId::run_usd, "run cost (USD)", "", false},
    {ColumnId::run_mwh, "run energy (MWh)", "", false},
    {ColumnId::run_energy_usd, "run energy cost (USD)", "", false},
    {ColumnId::run_effective, "effective training time (%)", "", false},
    {ColumnId::run_checkpoint_interval, "checkpoint interval (s)", "", false},
    {ColumnId::run_mtbf, "cluster MTBF (h)", "", false},
    {ColumnId::ep, "ep", "", false},
    {ColumnId::etp, "etp", "", false},
    {ColumnId::cp, "cp", "", false},
    {ColumnId::cp_comm, "cp_comm", "", true},
}};
static_assert([] {
  for (std::size_t i = 0; i < kColumns.size(); ++i) {
    if (static_cast<std::size_t>(kColumns[i].id) != i) return false;
  }
  return true;
}(), "kColumns rows must follow the ColumnId enum's order");

Placement placement_of(const RankedRow& r) {
  return r.run->placements[static_cast<std::size_t>(r.row->placement)];
}

int node_count(const RankedRow& r, const std::string& name) {
  for (const auto& g : r.run->cluster.groups) {
    if (g.gpu == name) {
      return g.count;
    }
  }
  return 0;
}

nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

constexpr ColumnId kRunColumns[] = {ColumnId::run_days,       ColumnId::run_gpu_hours,
                                    ColumnId::run_usd,        ColumnId::run_mwh,
                                    ColumnId::run_energy_usd, ColumnId::run_effective,
                                    ColumnId::run_checkpoint_interval, ColumnId::run_mtbf};

/// A run column's figure of `c`; NaN when unknown (an empty CSV cell, JSON null, "-").
double run_value(ColumnId id, const RunCost& c) noexcept {
  switch (id) {
  case ColumnId::run_days: return c.days();
  case ColumnId::run_gpu_hours: return c.gpu_hours;
  case ColumnId::run_usd: return c.usd;
  case ColumnId::run_mwh: return c.energy_mwh;
  case ColumnId::run_energy_usd: return c.energy_usd;
  case ColumnId::run_effective: return 100.0 * c.effective_fraction;
  case ColumnId::run_checkpoint_interval: return c.interval_s;
  case ColumnId::run_mtbf: return c.mtbf_s / 3600.0;
  default: return std::nan("");
  }
}

/// The figure of a row whose run has no RunCostSpec: NaN.
double run_value(ColumnId id, const RankedRow& r) {
  const std::optional<RunCost> c = run_cost_of(r);
  return c ? run_value(id, *c) : std::nan("");
}

} // namespace

const ColumnDef& column_def(ColumnId id) noexcept {
  return kColumns[static_cast<std::size_t>(id)];
}

Column::Column(ColumnId id, std::string type)
    : def(&column_def(id)), node_type(std::move(type)),
      name_(id == ColumnId::node_count ? node_type : std::string(def->name)) {}

std::string Column::table_header() const {
  return def->unit[0] == '\0' || def->id == ColumnId::node_count
             ? name_
             : fmt::format("{} ({})", name_, def->unit);
}

std::vector<Column> csv_layout(const std::vector<std::string>& type_names,
                               const CsvOptions& options) {
  std::vector<Column> cols;
  using C = ColumnId;
  const auto add = [&](std::initializer_list<ColumnId> ids) {
    for (const ColumnId id : ids) {
      cols.emplace_back(id);
    }
  };
  const auto add_counts = [&] {
    for (const auto& t : type_names) {
      cols.emplace_back(C::node_count, t);
    }
  };
  if (options.pretty) {
    add({C::rank, C::real_rank, C::m, C::mbs, C::tp, C::pp, C::dp, C::dp_method});
    add_counts();
    add({C::step_time, C::pipeline_time, C::dp_sync_time, C::embedding_sync_time, C::gpumem,
         C::is_oom, C::node_placement, C::exp_partition, C::partition, C::train_cost,
         C::price_per_step});
  } else {
    add({C::m, C::mbs, C::tp, C::pp, C::dp, C::dp_method, C::overlap_comm, C::node_placement,
         C::partition, C::step_time, C::pipeline_time, C::dp_sync_time, C::embedding_sync_time,
         C::is_oom, C::gpumem, C::train_cost, C::price_per_step, C::exp_partition});
    add_counts();
    add({C::rank, C::real_rank});
  }
  if (options.pareto_column) {
    add({C::pareto});
  }
  if (options.distinct) {
    const auto at = std::find_if(cols.begin(), cols.end(), [](const Column& c) {
      return c.def->id == C::node_placement;
    });
    const auto i = at - cols.begin();
    cols[static_cast<std::size_t>(i)] = Column(C::placement_runs);
    cols.insert(cols.begin() + i + 1, Column(C::placements));
  }
  if (options.native) {
    add({C::estimator, C::schedule, C::recompute, C::offload, C::virtual_stages, C::dtype,
         C::slices, C::optimizer_time, C::offload_time, C::host_memory, C::mem_weights,
         C::mem_gradients, C::mem_optimizer, C::mem_activations, C::mem_buffers,
         C::mem_overhead, C::step_time_low, C::step_time_high, C::interval_basis, C::ep,
         C::etp, C::cp, C::cp_comm});
  }
  if (options.throughput) {
    add({C::seq_len, C::tokens_per_step, C::tokens_per_gpu_s, C::mfu, C::mfu_peak,
         C::memory_fit});
  }
  if (options.run_cost) {
    for (const ColumnId id : kRunColumns) {
      cols.emplace_back(id);
    }
  }
  return cols;
}

bool has_run_cost_rows(const std::vector<RankedRow>& rows) noexcept {
  return std::any_of(rows.begin(), rows.end(),
                     [](const RankedRow& r) { return r.run->run_cost.has_value(); });
}

const RunCost& CellWriter::cost_of(const RankedRow& r) {
  if (cost_row_ != r.row) {
    cost_row_ = r.row;
    const std::optional<RunCost> c = run_cost_of(r);
    cost_ = c ? *c : RunCost{};
    if (!c) {
      cost_.wall_s = cost_.gpu_hours = cost_.usd = cost_.energy_mwh = cost_.energy_usd =
          cost_.effective_fraction = cost_.interval_s = cost_.mtbf_s = std::nan("");
    }
  }
  return cost_;
}

bool has_native_rows(const std::vector<RankedRow>& rows) noexcept {
  return std::any_of(rows.begin(), rows.end(),
                     [](const RankedRow& r) { return estimator_info(r.run->estimator).extended_points; });
}

std::vector<Column> table_layout(const std::vector<std::string>& type_names, bool distinct,
                                 bool native, bool run_cost) {
  std::vector<Column> cols = csv_layout(type_names, CsvOptions{true, false, false});
  if (distinct) {
    // The table's node placement is compact already: the count follows it.
    const auto at = std::find_if(cols.begin(), cols.end(), [](const Column& c) {
      return c.def->id == ColumnId::node_placement;
    });
    cols.insert(at + 1, Column(ColumnId::placements));
  }
  if (native) {
    auto at = std::find_if(cols.begin(), cols.end(),
                           [](const Column& c) { return c.def->id == ColumnId::dp_method; });
    at = cols.insert(at + 1, Column(ColumnId::recompute));
    at = cols.insert(at + 1, Column(ColumnId::offload));
    at = cols.insert(at + 1, Column(ColumnId::virtual_stages));
    at = cols.insert(at + 1, Column(ColumnId::dtype));
    cols.insert(at + 1, Column(ColumnId::cp));
    at = std::find_if(cols.begin(), cols.end(),
                      [](const Column& c) { return c.def->id == ColumnId::step_time; });
    at = cols.insert(at + 1, Column(ColumnId::step_time_low));
    cols.insert(at + 1, Column(ColumnId::step_time_high));
  }
  for (const ColumnId id : {ColumnId::seq_len, ColumnId::tokens_per_step,
                            ColumnId::tokens_per_gpu_s, ColumnId::mfu, ColumnId::memory_fit}) {
    cols.emplace_back(id);
  }
  if (run_cost) {
    for (const ColumnId id : kRunColumns) {
      cols.emplace_back(id);
    }
  }
  return cols;
}

namespace {

char* put(char* out, std::string_view text) noexcept {
  std::memcpy(out, text.data(), text.size());
  return out + text.size();
}

char* put_int(char* out, long long v) noexcept { return std::to_chars(out, out + 24, v).ptr; }

char* put_bool(char* out, bool v) noexcept { return put(out, v ? "True" : "False"); }

/// "[6, 5, 5]", quoted when it has a comma (two or more entries).
char* put_int_list(char* out, const std::vector<int>& v) noexcept {
  const bool quoted = v.size() > 1;
  if (quoted) {
    *out++ = '"';
  }
  *out++ = '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) {
      out = put(out, ", ");
    }
    out = put_int(out, v[i]);
  }
  *out++ = ']';
  if (quoted) {
    *out++ = '"';
  }
  return out;
}

/// exp_partition(): "5-5-4".
char* put_exp_partition(char* out, const std::vector<int>& partition) noexcept {
  out = put_int(out, partition.front() - 1);
  for (std::size_t i = 1; i + 1 < partition.size(); ++i) {
    *out++ = '-';
    out = put_int(out, partition[i]);
  }
  *out++ = '-';
  return put_int(out, partition.back() - 1);
}

} // namespace

const CellWriter::RunText& CellWriter::text_of(const RunResult& run) {
  if (last_ != nullptr && last_->run == &run) {
    return *last_;
  }
  for (RunText& t : runs_) {
    if (t.run == &run) {
      last_ = &t;
      return t;
    }
  }
  // The placements are rotations of one base list: the base list written twice holds every
  // rotation's text as one substring.
  RunText t;
  t.run = &run;
  const Placement& base = run.placements.base();
  t.nodes = base.size();
  t.offsets.reserve(2 * base.size() + 1);
  t.json_offsets.reserve(2 * base.size() + 1);
  std::vector<std::string> json_names;
  for (const NodeGroup& g : run.cluster.groups) {
    json_names.push_back(json_string(g.gpu));
  }
  for (int copy = 0; copy < 2; ++copy) {
    for (const int g : base) {
      t.offsets.push_back(t.text.size());
      t.text += '\'';
      t.text += run.cluster.groups[static_cast<std::size_t>(g)].gpu;
      t.text += "', ";
      t.json_offsets.push_back(t.json.size());
      t.json += json_names[static_cast<std::size_t>(g)];
      t.json += ',';
    }
  }
  t.offsets.push_back(t.text.size());
  t.json_offsets.push_back(t.json.size());
  runs_.push_back(std::move(t));
  last_ = nullptr;
  return runs_.back();
}

std::string_view CellWriter::placement_text(const RankedRow& r) {
  const RunText& t = text_of(*r.run);
  // Placement k is the base list rotated by k (PlacementSet).
  const auto k = static_cast<std::size_t>(r.row->placement);
  const std::size_t first = t.offsets[k % t.nodes];
  const std::size_t last = t.offsets[k % t.nodes + t.nodes] - 2; // without the trailing ", "
  return std::string_view(t.text).substr(first, last - first);
}

std::string_view CellWriter::placement_json(const RankedRow& r) {
  const RunText& t = text_of(*r.run);
  const auto k = static_cast<std::size_t>(r.row->placement);
  const std::size_t first = t.json_offsets[k % t.nodes];
  const std::size_t last = t.json_offsets[k % t.nodes + t.nodes] - 1; // without the last ','
  return std::string_view(t.json).substr(first, last - first);
}

namespace {

const StepSpread& spread_of(const RankedRow& r) noexcept {
  return r.run->step_spread[step_spread_index(r.row->point.method)];
}

/// The interval's bound in s/step, or NaN when the row has none (an empty cell, JSON null).
double spread_bound(const RankedRow& r, bool high) noexcept {
  const StepSpread& s = spread_of(r);
  if (s.high <= 0) {
    return std::nan("");
  }
  return r.row->estimate.step_s * (high ? s.high : s.low);
}

} // namespace

std::size_t CellWriter::max_row_size(std::span<const Column> columns, const RankedRow& r) {
  std::size_t n = 64 * columns.size() + 32 * r.row->estimate.partition.size() +
                  16 * r.row->estimate.slices.size();
  for (const Column& c : columns) {
    n += 8 * c.name().size() + 8; // the JSON key, escaped
    if (c.def->id == ColumnId::node_placement) {
      n += std::max(placement_text(r).size(), placement_json(r).size());
    } else if (c.def->id == ColumnId::interval_basis) {
      n += 6 * spread_of(r).basis.size() + 2;
    } else if (c.def->id == ColumnId::placement_runs) {
      // Quoted or escaped, a character takes at most 6 (JSON's \u00XX).
      n += 6 * compress_placement(r.run->cluster, placement_of(r)).size() + 2;
    }
  }
  return n;
}

char* CellWriter::write(char* out, const Column& c, const RankedRow& r) {
  const ResultRow& row = *r.row;
  const DesignPoint& p = row.point;
  const Estimate& e = row.estimate;
  switch (c.def->id) {
  case ColumnId::m: return put_int(out, p.num_micro_batches);
  case ColumnId::mbs: return put_int(out, p.mbs);
  case ColumnId::tp: return put_int(out, p.tp);
  case ColumnId::pp: return put_int(out, p.pp);
  case ColumnId::dp: return put_int(out, p.dp);
  case ColumnId::dp_method: return put(out, to_string(p.method));
  case ColumnId::overlap_comm: return put_bool(out, overlaps_comm(*r.run, p.method));
  case ColumnId::node_placement: {
    // "['A10', 'A6000']": quoted as soon as it has two nodes (a comma).
    const std::string_view text = placement_text(r);
    const bool quoted = text.find(',') != std::string_view::npos;
    if (quoted) {
      *out++ = '"';
    }
    *out++ = '[';
    out = put(out, text);
    *out++ = ']';
    if (quoted) {
      *out++ = '"';
    }
    return out;
  }
  case ColumnId::partition: return put_int_list(out, e.partition);
  case ColumnId::step_time: return write_python_float(out, e.step_s);
  case ColumnId::pipeline_time: return write_python_float(out, e.pipeline_s);
  case ColumnId::dp_sync_time: return write_python_float(out, e.dp_sync_s);
  case ColumnId::embedding_sync_time: return write_python_float(out, e.embedding_sync_s);
  case ColumnId::is_oom: return put_bool(out, e.oom);
  case ColumnId::gpumem: return write_python_float(out, e.gpumem_gib);
  case ColumnId::train_cost: return write_python_float(out, e.train_cost_usd);
  case ColumnId::price_per_step: return write_python_float(out, e.price_per_step_usd);
  case ColumnId::exp_partition: return put_exp_partition(out, e.partition);
  case ColumnId::node_count: return put_int(out, node_count(r, c.node_type));
  case ColumnId::rank: return put_int(out, r.rank);
  case ColumnId::real_rank: return put_int(out, r.real_rank);
  case ColumnId::pareto: return put_bool(out, r.on_front);
  case ColumnId::placement_runs:
    scratch_.clear();
    append_csv_field(scratch_, compress_placement(r.run->cluster, placement_of(r)));
    return put(out, scratch_);
  case ColumnId::placements: return put_int(out, static_cast<long long>(r.placements));
  case ColumnId::estimator: return put(out, to_string(r.run->estimator));
  case ColumnId::recompute: return put(out, to_string(p.recompute));
  case ColumnId::offload: return put(out, to_string(p.offload));
  case ColumnId::virtual_stages: return put_int(out, p.virtual_stages);
  case ColumnId::ep: return put_int(out, p.ep);
  case ColumnId::etp: return put_int(out, p.etp);
  case ColumnId::dtype: return put(out, to_string(p.dtype));
  case ColumnId::cp: return put_int(out, p.cp);
  case ColumnId::cp_comm: return put(out, to_string(p.cp_comm));
  case ColumnId::schedule: return put(out, to_string(p.schedule));
  case ColumnId::slices: {
    const std::vector<int> v(e.slices.begin(), e.slices.end());
    if (v.size() > 1) *out++ = '"';
    out = put_int_list(out, v);
    if (v.size() > 1) *out++ = '"';
    return out;
  }
  case ColumnId::optimizer_time: return write_python_float(out, static_cast<double>(e.optimizer_s));
  case ColumnId::offload_time: return write_python_float(out, static_cast<double>(e.offload_s));
  case ColumnId::host_memory: return write_python_float(out, static_cast<double>(e.host_gib_per_node));
  case ColumnId::mem_weights: return write_python_float(out, static_cast<double>(e.peak_memory[0]));
  case ColumnId::mem_gradients: return write_python_float(out, static_cast<double>(e.peak_memory[1]));
  case ColumnId::mem_optimizer: return write_python_float(out, static_cast<double>(e.peak_memory[2]));
  case ColumnId::mem_activations: return write_python_float(out, static_cast<double>(e.peak_memory[3]));
  case ColumnId::mem_buffers: return write_python_float(out, static_cast<double>(e.peak_memory[4]));
  case ColumnId::mem_overhead: return write_python_float(out, static_cast<double>(e.peak_memory[5]));
  case ColumnId::step_time_low:
  case ColumnId::step_time_high: {
    const double v = spread_bound(r, c.def->id == ColumnId::step_time_high);
    return std::isnan(v) ? out : write_python_float(out, v);
  }
  case ColumnId::interval_basis:
    scratch_.clear();
    append_csv_field(scratch_, spread_of(r).basis);
    return put(out, scratch_);
  case ColumnId::seq_len: return put_int(out, r.run->throughput.seq_len);
  case ColumnId::tokens_per_step: return put_int(out, r.run->throughput.tokens_per_step);
  case ColumnId::tokens_per_gpu_s:
    return write_python_float(out, r.run->throughput.tokens_per_gpu_s(e.step_s));
  case ColumnId::mfu: return write_python_float(out, r.run->throughput.mfu_percent(e.step_s));
  case ColumnId::mfu_peak: return put(out, r.run->throughput.peak_dtype);
  case ColumnId::memory_fit: return put(out, memory_fit(*r.run, e));
  case ColumnId::run_days:
  case ColumnId::run_gpu_hours:
  case ColumnId::run_usd:
  case ColumnId::run_mwh:
  case ColumnId::run_energy_usd:
  case ColumnId::run_effective:
  case ColumnId::run_checkpoint_interval:
  case ColumnId::run_mtbf: {
    const double v = run_value(c.def->id, cost_of(r));
    return std::isfinite(v) ? write_python_float(out, v) : out;
  }
  }
  return out;
}

std::string json_string(std::string_view text) {
  return nlohmann::ordered_json(std::string(text)).dump();
}

namespace {

/// nlohmann's number text (Grisu2, ".0" on integral values), or null when not finite: what
/// json_cell(...).dump() writes for a figure.
char* put_json_number(char* out, double v) noexcept {
  if (!std::isfinite(v)) {
    return put(out, "null");
  }
  return nlohmann::detail::to_chars(out, out + 64, v);
}

char* put_json_bool(char* out, bool v) noexcept { return put(out, v ? "true" : "false"); }

} // namespace

char* CellWriter::write_json(char* out, const Column& c, const RankedRow& r) {
  const ResultRow& row = *r.row;
  const DesignPoint& p = row.point;
  const Estimate& e = row.estimate;
  switch (c.def->id) {
  case ColumnId::m: return put_int(out, p.num_micro_batches);
  case ColumnId::mbs: return put_int(out, p.mbs);
  case ColumnId::tp: return put_int(out, p.tp);
  case ColumnId::pp: return put_int(out, p.pp);
  case ColumnId::dp: return put_int(out, p.dp);
  case ColumnId::dp_method: // method names are plain ASCII (kDpMethods)
    *out++ = '"';
    out = put(out, to_string(p.method));
    *out++ = '"';
    return out;
  case ColumnId::overlap_comm: return put_json_bool(out, overlaps_comm(*r.run, p.method));
  case ColumnId::node_placement:
    *out++ = '[';
    out = put(out, placement_json(r));
    *out++ = ']';
    return out;
  case ColumnId::partition:
    *out++ = '[';
    for (std::size_t i = 0; i < e.partition.size(); ++i) {
      if (i) {
        *out++ = ',';
      }
      out = put_int(out, e.partition[i]);
    }
    *out++ = ']';
    return out;
  case ColumnId::step_time: return put_json_number(out, e.step_s);
  case ColumnId::pipeline_time: return put_json_number(out, e.pipeline_s);
  case ColumnId::dp_sync_time: return put_json_number(out, e.dp_sync_s);
  case ColumnId::embedding_sync_time: return put_json_number(out, e.embedding_sync_s);
  case ColumnId::is_oom: return put_json_bool(out, e.oom);
  case ColumnId::gpumem: return put_json_number(out, e.gpumem_gib);
  case ColumnId::train_cost: return put_json_number(out, e.train_cost_usd);
  case ColumnId::price_per_step: return put_json_number(out, e.price_per_step_usd);
  case ColumnId::exp_partition:
    *out++ = '"';
    out = e.partition.size() == 1 ? put_int(out, e.partition.front() - 2)
                                  : put_exp_partition(out, e.partition);
    *out++ = '"';
    return out;
  case ColumnId::node_count: return put_int(out, node_count(r, c.node_type));
  case ColumnId::rank: return put_int(out, r.rank);
  case ColumnId::real_rank: return put_int(out, r.real_rank);
  case ColumnId::pareto: return put_json_bool(out, r.on_front);
  case ColumnId::placement_runs:
    scratch_ = json_string(compress_placement(r.run->cluster, placement_of(r)));
    return put(out, scratch_);
  case ColumnId::placements: return put_int(out, static_cast<long long>(r.placements));
  case ColumnId::seq_len: return put_int(out, r.run->throughput.seq_len);
  case ColumnId::tokens_per_step: return put_int(out, r.run->throughput.tokens_per_step);
  case ColumnId::tokens_per_gpu_s:
    return put_json_number(out, r.run->throughput.tokens_per_gpu_s(e.step_s));
  case ColumnId::mfu: return put_json_number(out, r.run->throughput.mfu_percent(e.step_s));
  case ColumnId::mfu_peak: // "bf16" or "fp16": plain ASCII
    *out++ = '"';
    out = put(out, r.run->throughput.peak_dtype);
    *out++ = '"';
    return out;
  case ColumnId::memory_fit:
    *out++ = '"';
    out = put(out, memory_fit(*r.run, e));
    *out++ = '"';
    return out;
  case ColumnId::run_days:
  case ColumnId::run_gpu_hours:
  case ColumnId::run_usd:
  case ColumnId::run_mwh:
  case ColumnId::run_energy_usd:
  case ColumnId::run_effective:
  case ColumnId::run_checkpoint_interval:
  case ColumnId::run_mtbf: return put_json_number(out, run_value(c.def->id, cost_of(r)));
  default:
    // The native columns: few rows' worth, through nlohmann.
    scratch_ = json_cell(c, r).dump();
    return put(out, scratch_);
  }
  return out;
}

char* RowBuffer::reserve(std::size_t room) {
  if (data_.size() < used_ + room) {
    // Grows without writing zeros into every byte each time.
    data_.resize(std::max(used_ + room, 2 * data_.size()));
  }
  return data_.data() + used_;
}

void RowBuffer::commit(const char* end) noexcept {
  used_ = static_cast<std::size_t>(end - data_.data());
}

void write_rows(std::ostream& out, std::string_view head, std::size_t n, const RowFormat& format,
                unsigned threads, std::size_t row_bytes) {
  // A chunk: at most 1,024 rows and about 1 MiB of text (rows of thousands of nodes spell out
  // every node's type).
  constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  const std::size_t max_rows =
      std::clamp<std::size_t>(kChunkBytes / std::max<std::size_t>(row_bytes, 1), 16, 1024);
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  if (threads == 0) {
    threads = std::min(4U, std::max(1U, std::thread::hardware_concurrency()));
  }
  // Rounds of one chunk per lane, of at most max_rows rows, as even as they can be.
  const std::size_t lanes =
      std::max<std::size_t>(1, std::min<std::size_t>(threads, (n + max_rows - 1) / max_rows));
  const std::size_t rounds = (n + lanes * max_rows - 1) / (lanes * max_rows);
  const std::size_t chunk_rows = std::max<std::size_t>(1, (n + rounds * lanes - 1) /
                                                              std::max<std::size_t>(1, rounds * lanes));
  const std::size_t chunks = (n + chunk_rows - 1) / chunk_rows;
  std::vector<RowBuffer> buffers(lanes);
  std::vector<CellWriter> cells(buffers.size());
  const auto format_chunk = [&](std::size_t lane, std::size_t chunk) {
    RowBuffer& buffer = buffers[lane];
    buffer.clear();
    const std::size_t end = std::min(n, (chunk + 1) * chunk_rows);
    for (std::size_t i = chunk * chunk_rows; i < end; ++i) {
      format(cells[lane], i, buffer);
    }
  };
  for (std::size_t first = 0; first < chunks; first += buffers.size()) {
    const std::size_t count = std::min(buffers.size(), chunks - first);
    // Lanes 1.. on their own threads, lane 0 here; then the chunks go out in order.
    std::vector<std::thread> pool;
    std::vector<std::exception_ptr> failures(count);
    for (std::size_t lane = 1; lane < count; ++lane) {
      pool.emplace_back([&, lane] {
        try {
          format_chunk(lane, first + lane);
        } catch (...) {
          failures[lane] = std::current_exception();
        }
      });
    }
    try {
      format_chunk(0, first);
    } catch (...) {
      failures[0] = std::current_exception();
    }
    for (std::thread& t : pool) {
      t.join();
    }
    for (std::size_t lane = 0; lane < count; ++lane) {
      if (failures[lane]) {
        std::rethrow_exception(failures[lane]);
      }
      const std::string_view text = buffers[lane].text();
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
    }
  }
}

void append_csv_cell(std::string& out, const Column& c, const RankedRow& r) {
  CellWriter writer;
  const std::size_t old = out.size();
  out.resize(old + writer.max_row_size(std::span<const Column>(&c, 1), r));
  char* const end = writer.write(out.data() + old, c, r);
  out.resize(static_cast<std::size_t>(end - out.data()));
}

nlohmann::ordered_json json_cell(const Column& c, const RankedRow& r) {
  const ResultRow& row = *r.row;
  const DesignPoint& p = row.point;
  const Estimate& e = row.estimate;
  switch (c.def->id) {
  case ColumnId::m: return p.num_micro_batches;
  case ColumnId::mbs: return p.mbs;
  case ColumnId::tp: return p.tp;
  case ColumnId::pp: return p.pp;
  case ColumnId::dp: return p.dp;
  case ColumnId::dp_method: return to_string(p.method);
  case ColumnId::overlap_comm: return overlaps_comm(*r.run, p.method);
  case ColumnId::node_placement: {
    auto names = nlohmann::ordered_json::array();
    for (const int g : placement_of(r)) {
      names.push_back(r.run->cluster.groups[static_cast<std::size_t>(g)].gpu);
    }
    return names;
  }
  case ColumnId::partition: return e.partition;
  case ColumnId::step_time: return number(e.step_s);
  case ColumnId::pipeline_time: return number(e.pipeline_s);
  case ColumnId::dp_sync_time: return number(e.dp_sync_s);
  case ColumnId::embedding_sync_time: return number(e.embedding_sync_s);
  case ColumnId::is_oom: return e.oom;
  case ColumnId::gpumem: return number(e.gpumem_gib);
  case ColumnId::train_cost: return number(e.train_cost_usd);
  case ColumnId::price_per_step: return number(e.price_per_step_usd);
  // One stage: its transformer layers (the CSV keeps the original's "81-81" for 80 layers).
  case ColumnId::exp_partition:
    return e.partition.size() == 1 ? std::to_string(e.partition.front() - 2)
                                   : exp_partition(e.partition);
  case ColumnId::node_count: return node_count(r, c.node_type);
  case ColumnId::rank: return r.rank;
  case ColumnId::real_rank: return r.real_rank;
  case ColumnId::pareto: return r.on_front;
  case ColumnId::placement_runs: return compress_placement(r.run->cluster, placement_of(r));
  case ColumnId::placements: return r.placements;
  case ColumnId::estimator: return to_string(r.run->estimator);
  case ColumnId::recompute: return to_string(p.recompute);
  case ColumnId::offload: return to_string(p.offload);
  case ColumnId::virtual_stages: return p.virtual_stages;
  case ColumnId::ep: return p.ep;
  case ColumnId::etp: return p.etp;
  case ColumnId::dtype: return to_string(p.dtype);
  case ColumnId::cp: return p.cp;
  case ColumnId::cp_comm: return to_string(p.cp_comm);
  case ColumnId::schedule: return to_string(p.schedule);
  case ColumnId::slices: return e.slices;
  case ColumnId::optimizer_time: return number(static_cast<double>(e.optimizer_s));
  case ColumnId::offload_time: return number(static_cast<double>(e.offload_s));
  case ColumnId::host_memory: return number(static_cast<double>(e.host_gib_per_node));
  case ColumnId::mem_weights: return number(static_cast<double>(e.peak_memory[0]));
  case ColumnId::mem_gradients: return number(static_cast<double>(e.peak_memory[1]));
  case ColumnId::mem_optimizer: return number(static_cast<double>(e.peak_memory[2]));
  case ColumnId::mem_activations: return number(static_cast<double>(e.peak_memory[3]));
  case ColumnId::mem_buffers: return number(static_cast<double>(e.peak_memory[4]));
  case ColumnId::mem_overhead: return number(static_cast<double>(e.peak_memory[5]));
  case ColumnId::step_time_low:
  case ColumnId::step_time_high:
    return number(spread_bound(r, c.def->id == ColumnId::step_time_high));
  case ColumnId::interval_basis: return spread_of(r).basis;
  case ColumnId::seq_len: return r.run->throughput.seq_len;
  case ColumnId::tokens_per_step: return r.run->throughput.tokens_per_step;
  case ColumnId::tokens_per_gpu_s: return number(r.run->throughput.tokens_per_gpu_s(e.step_s));
  case ColumnId::mfu: return number(r.run->throughput.mfu_percent(e.step_s));
  case ColumnId::mfu_peak: return r.run->throughput.peak_dtype;
  case ColumnId::memory_fit: return memory_fit(*r.run, e);
  case ColumnId::run_days:
  case ColumnId::run_gpu_hours:
  case ColumnId::run_usd:
  case ColumnId::run_mwh:
  case ColumnId::run_energy_usd:
  case ColumnId::run_effective:
  case ColumnId::run_checkpoint_interval:
  case ColumnId::run_mtbf: return number(run_value(c.def->id, r));
  }
  return nullptr;
}

void append_table_cell(std::string& out, const Column& c, const RankedRow& r) {
  const ResultRow& row = *r.row;
  const Estimate& e = row.estimate;
  const auto to = std::back_inserter(out);
  switch (c.def->id) {
  case ColumnId::node_placement:
  case ColumnId::placement_runs: {
    // One placement per thread, reused: the rows of a large cluster have thousands of nodes.
    thread_local Placement placement;
    r.run->placements.get(static_cast<std::size_t>(row.placement), placement);
    append_compressed_placement(out, r.run->cluster, placement);
    return;
  }
  case ColumnId::partition: fmt::format_to(to, "[{}]", fmt::join(e.partition, ",")); return;
  case ColumnId::exp_partition:
    if (e.partition.size() == 1) {
      fmt::format_to(to, "{}", e.partition.front() - 2);
      return;
    }
    append_csv_cell(out, c, r);
    return;
  case ColumnId::step_time: fmt::format_to(to, "{:.4f}", e.step_s); return;
  case ColumnId::pipeline_time: fmt::format_to(to, "{:.4f}", e.pipeline_s); return;
  case ColumnId::dp_sync_time: fmt::format_to(to, "{:.4f}", e.dp_sync_s); return;
  case ColumnId::embedding_sync_time: fmt::format_to(to, "{:.4f}", e.embedding_sync_s); return;
  case ColumnId::gpumem: fmt::format_to(to, "{:.2f}", e.gpumem_gib); return;
  case ColumnId::train_cost: fmt::format_to(to, "{:.0f}", e.train_cost_usd); return;
  case ColumnId::price_per_step: fmt::format_to(to, "{:.5f}", e.price_per_step_usd); return;
  case ColumnId::step_time_low:
  case ColumnId::step_time_high: {
    const double v = spread_bound(r, c.def->id == ColumnId::step_time_high);
    if (std::isnan(v)) {
      out += '-';
    } else {
      fmt::format_to(to, "{:.4f}", v);
    }
    return;
  }
  case ColumnId::tokens_per_gpu_s:
    fmt::format_to(to, "{:.0f}", r.run->throughput.tokens_per_gpu_s(e.step_s));
    return;
  case ColumnId::mfu: {
    const double mfu = r.run->throughput.mfu_percent(e.step_s);
    if (std::isfinite(mfu)) {
      fmt::format_to(to, "{:.1f}", mfu);
    } else {
      out += '-';
    }
    return;
  }
  case ColumnId::run_days:
  case ColumnId::run_gpu_hours:
  case ColumnId::run_usd:
  case ColumnId::run_mwh:
  case ColumnId::run_energy_usd:
  case ColumnId::run_effective:
  case ColumnId::run_checkpoint_interval:
  case ColumnId::run_mtbf: {
    const ColumnId id = c.def->id;
    const double v = run_value(id, r);
    if (!std::isfinite(v)) {
      out += '-';
    } else if (id == ColumnId::run_days || id == ColumnId::run_effective ||
               id == ColumnId::run_mtbf) {
      fmt::format_to(to, "{:.2f}", v);
    } else if (id == ColumnId::run_mwh) {
      fmt::format_to(to, "{:.1f}", v);
    } else {
      fmt::format_to(to, "{:.0f}", v);
    }
    return;
  }
  case ColumnId::slices: {
    if (e.slices.empty()) {
      out += '-';
      return;
    }
    const bool equal = std::all_of(e.slices.begin(), e.slices.end(),
                                   [&](std::int32_t l) { return l == e.slices.front(); });
    if (equal) {
      fmt::format_to(to, "{}x{}", e.slices.size(), e.slices.front());
    } else {
      fmt::format_to(to, "{} ({}..{})", e.slices.size(), e.slices.front(), e.slices.back());
    }
    return;
  }
  default: append_csv_cell(out, c, r); return;
  }
}

std::string compress_placement(const Cluster& cluster, const Placement& placement) {
  std::string out;
  append_compressed_placement(out, cluster, placement);
  return out;
}

void append_compressed_placement(std::string& out, const Cluster& cluster,
                                 const Placement& placement) {
  std::size_t i = 0;
  bool first = true;
  while (i < placement.size()) {
    std::size_t j = i;
    while (j < placement.size() && placement[j] == placement[i]) {
      ++j;
    }
    if (!first) {
      out += ' ';
    }
    first = false;
    out += cluster.groups[static_cast<std::size_t>(placement[i])].gpu;
    out += 'x';
    fmt::format_to(std::back_inserter(out), "{}", j - i);
    i = j;
  }
}

} // namespace zerosearch
