#include "zerosearch/io/columns.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "zerosearch/io/report.hpp"

namespace zerosearch {

namespace {

// The one table of output columns (docs/model.md §5 for the original's CSV).
constexpr std::array<ColumnDef, 38> kColumns{{
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
}};
static_assert([] {
  for (std::size_t i = 0; i < kColumns.size(); ++i) {
    if (static_cast<std::size_t>(kColumns[i].id) != i) return false;
  }
  return true;
}(), "kColumns rows must follow the ColumnId enum's order");

const Placement& placement_of(const RankedRow& r) {
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

void append_int(std::string& out, long long v) { fmt::format_to(std::back_inserter(out), "{}", v); }


nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

} // namespace

std::span<const ColumnDef> column_defs() noexcept { return kColumns; }

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
  if (options.native) {
    add({C::estimator, C::schedule, C::recompute, C::offload, C::virtual_stages, C::dtype,
         C::slices, C::optimizer_time,
         C::offload_time, C::host_memory, C::mem_weights, C::mem_gradients, C::mem_optimizer,
         C::mem_activations, C::mem_buffers, C::mem_overhead});
  }
  return cols;
}

bool has_native_rows(const std::vector<RankedRow>& rows) noexcept {
  return std::any_of(rows.begin(), rows.end(),
                     [](const RankedRow& r) { return r.run->estimator == Estimator::native; });
}

std::vector<Column> table_layout(const std::vector<std::string>& type_names, bool native) {
  std::vector<Column> cols = csv_layout(type_names, CsvOptions{true, false, false});
  if (native) {
    auto at = std::find_if(cols.begin(), cols.end(),
                           [](const Column& c) { return c.def->id == ColumnId::dp_method; });
    at = cols.insert(at + 1, Column(ColumnId::recompute));
    at = cols.insert(at + 1, Column(ColumnId::offload));
    at = cols.insert(at + 1, Column(ColumnId::virtual_stages));
    cols.insert(at + 1, Column(ColumnId::dtype));
  }
  return cols;
}

void append_csv_cell(std::string& out, const Column& c, const RankedRow& r) {
  const ResultRow& row = *r.row;
  const DesignPoint& p = row.point;
  const Estimate& e = row.estimate;
  switch (c.def->id) {
  case ColumnId::m: append_int(out, p.num_micro_batches); return;
  case ColumnId::mbs: append_int(out, p.mbs); return;
  case ColumnId::tp: append_int(out, p.tp); return;
  case ColumnId::pp: append_int(out, p.pp); return;
  case ColumnId::dp: append_int(out, p.dp); return;
  case ColumnId::dp_method: out += to_string(p.method); return;
  case ColumnId::overlap_comm: out += "False"; return;
  case ColumnId::node_placement: {
    // "['A10', 'A6000']": quoted as soon as it has two nodes (a comma).
    const Placement& placement = placement_of(r);
    const auto& groups = r.run->cluster.groups;
    if (placement.size() > 1) {
      out += '"';
    }
    out += '[';
    for (std::size_t i = 0; i < placement.size(); ++i) {
      out += i == 0 ? "'" : ", '";
      out += groups[static_cast<std::size_t>(placement[i])].gpu;
      out += '\'';
    }
    out += ']';
    if (placement.size() > 1) {
      out += '"';
    }
    return;
  }
  case ColumnId::partition: append_csv_field(out, python_int_list(e.partition)); return;
  case ColumnId::step_time: out += python_float(e.step_s); return;
  case ColumnId::pipeline_time: out += python_float(e.pipeline_s); return;
  case ColumnId::dp_sync_time: out += python_float(e.dp_sync_s); return;
  case ColumnId::embedding_sync_time: out += python_float(e.embedding_sync_s); return;
  case ColumnId::is_oom: out += e.oom ? "True" : "False"; return;
  case ColumnId::gpumem: out += python_float(e.gpumem_gib); return;
  case ColumnId::train_cost: out += python_float(e.train_cost_usd); return;
  case ColumnId::price_per_step: out += python_float(e.price_per_step_usd); return;
  case ColumnId::exp_partition: out += exp_partition(e.partition); return;
  case ColumnId::node_count: append_int(out, node_count(r, c.node_type)); return;
  case ColumnId::rank: append_int(out, r.rank); return;
  case ColumnId::real_rank: append_int(out, r.real_rank); return;
  case ColumnId::pareto: out += r.on_front ? "True" : "False"; return;
  case ColumnId::estimator: out += to_string(r.run->estimator); return;
  case ColumnId::recompute: out += to_string(p.recompute); return;
  case ColumnId::offload: out += to_string(p.offload); return;
  case ColumnId::virtual_stages: append_int(out, p.virtual_stages); return;
  case ColumnId::dtype: out += to_string(p.dtype); return;
  case ColumnId::optimizer_time: out += python_float(e.optimizer_s); return;
  case ColumnId::offload_time: out += python_float(e.offload_s); return;
  case ColumnId::host_memory: out += python_float(e.host_gib_per_node); return;
  case ColumnId::mem_weights: out += python_float(e.peak_memory[0]); return;
  case ColumnId::mem_gradients: out += python_float(e.peak_memory[1]); return;
  case ColumnId::mem_optimizer: out += python_float(e.peak_memory[2]); return;
  case ColumnId::mem_activations: out += python_float(e.peak_memory[3]); return;
  case ColumnId::mem_buffers: out += python_float(e.peak_memory[4]); return;
  case ColumnId::mem_overhead: out += python_float(e.peak_memory[5]); return;
  case ColumnId::schedule: out += to_string(p.schedule); return;
  case ColumnId::slices: {
    std::vector<int> v(e.slices.begin(), e.slices.end());
    append_csv_field(out, python_int_list(v));
    return;
  }
  }
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
  case ColumnId::overlap_comm: return false;
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
  case ColumnId::exp_partition: return exp_partition(e.partition);
  case ColumnId::node_count: return node_count(r, c.node_type);
  case ColumnId::rank: return r.rank;
  case ColumnId::real_rank: return r.real_rank;
  case ColumnId::pareto: return r.on_front;
  case ColumnId::estimator: return to_string(r.run->estimator);
  case ColumnId::recompute: return to_string(p.recompute);
  case ColumnId::offload: return to_string(p.offload);
  case ColumnId::virtual_stages: return p.virtual_stages;
  case ColumnId::dtype: return to_string(p.dtype);
  case ColumnId::optimizer_time: return number(e.optimizer_s);
  case ColumnId::offload_time: return number(e.offload_s);
  case ColumnId::host_memory: return number(e.host_gib_per_node);
  case ColumnId::mem_weights: return number(e.peak_memory[0]);
  case ColumnId::mem_gradients: return number(e.peak_memory[1]);
  case ColumnId::mem_optimizer: return number(e.peak_memory[2]);
  case ColumnId::mem_activations: return number(e.peak_memory[3]);
  case ColumnId::mem_buffers: return number(e.peak_memory[4]);
  case ColumnId::mem_overhead: return number(e.peak_memory[5]);
  case ColumnId::schedule: return to_string(p.schedule);
  case ColumnId::slices: return e.slices;
  }
  return nullptr;
}

std::string table_cell(const Column& c, const RankedRow& r) {
  const ResultRow& row = *r.row;
  const Estimate& e = row.estimate;
  switch (c.def->id) {
  case ColumnId::node_placement: return compress_placement(r.run->cluster, placement_of(r));
  case ColumnId::partition: return fmt::format("[{}]", fmt::join(e.partition, ","));
  case ColumnId::step_time: return fmt::format("{:.4f}", e.step_s);
  case ColumnId::pipeline_time: return fmt::format("{:.4f}", e.pipeline_s);
  case ColumnId::dp_sync_time: return fmt::format("{:.4f}", e.dp_sync_s);
  case ColumnId::embedding_sync_time: return fmt::format("{:.4f}", e.embedding_sync_s);
  case ColumnId::gpumem: return fmt::format("{:.2f}", e.gpumem_gib);
  case ColumnId::train_cost: return fmt::format("{:.0f}", e.train_cost_usd);
  case ColumnId::price_per_step: return fmt::format("{:.5f}", e.price_per_step_usd);
  case ColumnId::slices: {
    if (e.slices.empty()) return "-";
    const bool equal = std::all_of(e.slices.begin(), e.slices.end(),
                                   [&](std::int32_t l) { return l == e.slices.front(); });
    return equal ? fmt::format("{}x{}", e.slices.size(), e.slices.front())
                 : fmt::format("{} ({}..{})", e.slices.size(), e.slices.front(), e.slices.back());
  }
  default: {
    std::string out;
    append_csv_cell(out, c, r);
    return out;
  }
  }
}

std::string compress_placement(const Cluster& cluster, const Placement& placement) {
  std::string out;
  std::size_t i = 0;
  while (i < placement.size()) {
    std::size_t j = i;
    while (j < placement.size() && placement[j] == placement[i]) {
      ++j;
    }
    out += out.empty() ? "" : " ";
    out += fmt::format("{}x{}", cluster.groups[static_cast<std::size_t>(placement[i])].gpu, j - i);
    i = j;
  }
  return out;
}

} // namespace zerosearch
