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

#include "zerosearch/core/enum_table.hpp"
#include "zerosearch/io/report.hpp"

namespace zerosearch {

namespace {

using C = ColumnId;
using Row = const RankedRow&;

// The row factories: the kind, its getter, and what the kind needs.
constexpr ColumnDef integer(C id, const char* name, long long (*get)(Row, const Column&),
                            const char* unit = "") {
  ColumnDef d{id, name, unit, CellKind::integer, false};
  d.integer = get;
  return d;
}
constexpr ColumnDef real(C id, const char* name, const char* unit, double (*get)(Row, CellWriter&),
                         int decimals = -1, Blank csv_blank = Blank::never,
                         Blank table_blank = Blank::never) {
  ColumnDef d{id, name, unit, CellKind::real, false};
  d.real = get;
  d.decimals = decimals;
  d.csv_blank = csv_blank;
  d.table_blank = table_blank;
  return d;
}
constexpr ColumnDef boolean(C id, const char* name, bool (*get)(Row)) {
  ColumnDef d{id, name, "", CellKind::boolean, true};
  d.boolean = get;
  return d;
}
constexpr ColumnDef word(C id, const char* name, std::string_view (*get)(Row, std::string&)) {
  ColumnDef d{id, name, "", CellKind::name, true};
  d.word = get;
  return d;
}
constexpr ColumnDef text(C id, const char* name, std::string_view (*get)(Row, std::string&),
                         bool table_quoted) {
  ColumnDef d{id, name, "", CellKind::text, true};
  d.word = get;
  d.table_quoted = table_quoted;
  return d;
}
constexpr ColumnDef special(C id, const char* name, const SpecialCell& cells) {
  ColumnDef d{id, name, "", CellKind::special, true};
  d.special = &cells;
  return d;
}

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

/// What the getters read of a CellWriter: the whole run's figures of the row, cached.
struct CellAccess {
  static const RunCost& cost(CellWriter& w, const RankedRow& r) { return w.cost_of(r); }
  static std::string_view placement_text(CellWriter& w, const RankedRow& r) {
    return w.placement_text(r);
  }
  static std::string_view placement_json(CellWriter& w, const RankedRow& r) {
    return w.placement_json(r);
  }
};

namespace {

char* put(char* out, std::string_view text) noexcept {
  std::memcpy(out, text.data(), text.size());
  return out + text.size();
}

char* put_int(char* out, long long v) noexcept { return std::to_chars(out, out + 24, v).ptr; }

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

/// An integer list as JSON: "[6,5,5]".
template <typename T> char* put_json_list(char* out, const std::vector<T>& v) noexcept {
  *out++ = '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) {
      *out++ = ',';
    }
    out = put_int(out, v[i]);
  }
  *out++ = ']';
  return out;
}

// The columns no kind writes.

/// The node list of the row's placement: "['A10', 'A6000']" (quoted as soon as it has a comma)
/// in the CSV, an array of names in JSON, runs of one type in the table.
constexpr SpecialCell kNodePlacement{
    [](CellWriter& w, char* out, Row r) {
      const std::string_view text = CellAccess::placement_text(w, r);
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
    },
    [](CellWriter& w, char* out, Row r) {
      *out++ = '[';
      out = put(out, CellAccess::placement_json(w, r));
      *out++ = ']';
      return out;
    },
    [](Row r) {
      auto names = nlohmann::ordered_json::array();
      for (const int g : placement_of(r)) {
        names.push_back(r.run->cluster.groups[static_cast<std::size_t>(g)].gpu);
      }
      return names;
    },
    [](std::string& out, Row r) {
      // One placement per thread, reused: the rows of a large cluster have thousands of nodes.
      thread_local Placement placement;
      r.run->placements.get(static_cast<std::size_t>(r.row->placement), placement);
      append_compressed_placement(out, r.run->cluster, placement);
    }};

/// Layers per stage: "[6, 5, 5]" in the CSV, an array in JSON, "[6,5,5]" in the table.
constexpr SpecialCell kPartition{
    [](CellWriter&, char* out, Row r) { return put_int_list(out, r.row->estimate.partition); },
    [](CellWriter&, char* out, Row r) { return put_json_list(out, r.row->estimate.partition); },
    [](Row r) { return nlohmann::ordered_json(r.row->estimate.partition); },
    [](std::string& out, Row r) {
      fmt::format_to(std::back_inserter(out), "[{}]", fmt::join(r.row->estimate.partition, ","));
    }};

/// The original's "5-5-4" (first and last stage without the embedding and the head); one
/// stage: its transformer layers in JSON and the table (the CSV keeps the original's "81-81"
/// for 80 layers).
constexpr SpecialCell kExpPartition{
    [](CellWriter&, char* out, Row r) { return put_exp_partition(out, r.row->estimate.partition); },
    [](CellWriter&, char* out, Row r) {
      const std::vector<int>& partition = r.row->estimate.partition;
      *out++ = '"';
      out = partition.size() == 1 ? put_int(out, partition.front() - 2)
                                  : put_exp_partition(out, partition);
      *out++ = '"';
      return out;
    },
    [](Row r) {
      const std::vector<int>& partition = r.row->estimate.partition;
      return nlohmann::ordered_json(partition.size() == 1
                                        ? std::to_string(partition.front() - 2)
                                        : exp_partition(partition));
    },
    [](std::string& out, Row r) {
      const std::vector<int>& partition = r.row->estimate.partition;
      if (partition.size() == 1) {
        fmt::format_to(std::back_inserter(out), "{}", partition.front() - 2);
        return;
      }
      const std::size_t old = out.size();
      out.resize(old + 24 * partition.size() + 24);
      char* const end = put_exp_partition(out.data() + old, partition);
      out.resize(static_cast<std::size_t>(end - out.data()));
    }};

/// TeraPipe's token slices: a list in the CSV and JSON; "4x2048" or "4 (1024..3072)" in the
/// table, "-" without slices.
constexpr SpecialCell kSlices{
    [](CellWriter&, char* out, Row r) {
      const auto& slices = r.row->estimate.native.slices;
      const std::vector<int> v(slices.begin(), slices.end());
      if (v.size() > 1) *out++ = '"';
      out = put_int_list(out, v);
      if (v.size() > 1) *out++ = '"';
      return out;
    },
    [](CellWriter&, char* out, Row r) { return put_json_list(out, r.row->estimate.native.slices); },
    [](Row r) { return nlohmann::ordered_json(r.row->estimate.native.slices); },
    [](std::string& out, Row r) {
      const auto& slices = r.row->estimate.native.slices;
      if (slices.empty()) {
        out += '-';
        return;
      }
      const bool equal = std::all_of(slices.begin(), slices.end(),
                                     [&](std::int32_t l) { return l == slices.front(); });
      if (equal) {
        fmt::format_to(std::back_inserter(out), "{}x{}", slices.size(), slices.front());
      } else {
        fmt::format_to(std::back_inserter(out), "{} ({}..{})", slices.size(), slices.front(),
                       slices.back());
      }
    }};

const DesignPoint& point(Row r) noexcept { return r.row->point; }
const Estimate& estimate(Row r) noexcept { return r.row->estimate; }
double peak(Row r, std::size_t part) noexcept {
  return static_cast<double>(r.row->estimate.native.peak_memory[part]);
}
const RunCost& cost(Row r, CellWriter& w) { return CellAccess::cost(w, r); }

constexpr Blank kNan = Blank::if_nan;
constexpr Blank kNotFinite = Blank::if_not_finite;

// The one table of output columns, in the enum's order (docs/model.md §5 for the original's
// CSV).
constexpr auto kColumns = std::to_array<ColumnDef>({
    integer(C::m, "m",
            [](Row r, const Column&) -> long long { return point(r).num_micro_batches; }),
    integer(C::mbs, "mbs", [](Row r, const Column&) -> long long { return point(r).mbs; }),
    integer(C::tp, "tp", [](Row r, const Column&) -> long long { return point(r).tp; }),
    integer(C::pp, "pp", [](Row r, const Column&) -> long long { return point(r).pp; }),
    integer(C::dp, "dp", [](Row r, const Column&) -> long long { return point(r).dp; }),
    word(C::dp_method, "dp method",
         [](Row r, std::string&) -> std::string_view { return to_string(point(r).method); }),
    boolean(C::overlap_comm, "overlap_comm",
            [](Row r) { return overlaps_comm(*r.run, point(r).method); }),
    special(C::node_placement, "node placement", kNodePlacement),
    special(C::partition, "partition", kPartition),
    real(C::step_time, "estimated time (s/step)", "",
         [](Row r, CellWriter&) { return estimate(r).step_s; }, 4),
    real(C::pipeline_time, "pipeline time", "s",
         [](Row r, CellWriter&) { return estimate(r).pipeline_s; }, 4),
    real(C::dp_sync_time, "DP all-reduce time", "s",
         [](Row r, CellWriter&) { return estimate(r).dp_sync_s; }, 4),
    real(C::embedding_sync_time, "Emb layer all-reduce time", "s",
         [](Row r, CellWriter&) { return estimate(r).embedding_sync_s; }, 4),
    boolean(C::is_oom, "is_oom", [](Row r) { return estimate(r).oom; }),
    real(C::gpumem, "gpumem", "GiB", [](Row r, CellWriter&) { return estimate(r).gpumem_gib; },
         2),
    real(C::train_cost, "train_cost", "USD",
         [](Row r, CellWriter&) { return estimate(r).train_cost_usd; }, 0),
    real(C::price_per_step, "price_per_step", "USD",
         [](Row r, CellWriter&) { return estimate(r).price_per_step_usd; }, 5),
    special(C::exp_partition, "exp_partition", kExpPartition),
    integer(C::node_count, "",
            [](Row r, const Column& c) -> long long { return node_count(r, c.node_type); },
            "nodes"),
    integer(C::rank, "rank", [](Row r, const Column&) -> long long { return r.rank; }),
    integer(C::real_rank, "real_rank",
            [](Row r, const Column&) -> long long { return r.real_rank; }),
    boolean(C::pareto, "pareto", [](Row r) { return r.on_front; }),
    text(C::placement_runs, "placement",
         [](Row r, std::string& scratch) -> std::string_view {
           scratch = compress_placement(r.run->cluster, placement_of(r));
           return scratch;
         },
         false),
    integer(C::placements, "placements",
            [](Row r, const Column&) { return static_cast<long long>(r.placements); }),
    word(C::estimator, "estimator",
         [](Row r, std::string&) -> std::string_view { return to_string(r.run->estimator); }),
    word(C::recompute, "recompute",
         [](Row r, std::string&) -> std::string_view { return to_string(point(r).recompute); }),
    word(C::offload, "offload",
         [](Row r, std::string&) -> std::string_view { return to_string(point(r).offload); }),
    integer(C::virtual_stages, "virtual_stages",
            [](Row r, const Column&) -> long long { return point(r).virtual_stages; }),
    word(C::dtype, "dtype",
         [](Row r, std::string&) -> std::string_view { return to_string(point(r).dtype); }),
    real(C::optimizer_time, "optimizer time", "s",
         [](Row r, CellWriter&) { return static_cast<double>(estimate(r).native.optimizer_s); }),
    real(C::offload_time, "offload time", "s",
         [](Row r, CellWriter&) { return static_cast<double>(estimate(r).native.offload_s); }),
    real(C::host_memory, "host memory per node", "GiB",
         [](Row r, CellWriter&) { return static_cast<double>(estimate(r).native.host_gib_per_node); }),
    real(C::mem_weights, "mem weights", "GiB", [](Row r, CellWriter&) { return peak(r, 0); }),
    real(C::mem_gradients, "mem gradients", "GiB", [](Row r, CellWriter&) { return peak(r, 1); }),
    real(C::mem_optimizer, "mem optimizer", "GiB", [](Row r, CellWriter&) { return peak(r, 2); }),
    real(C::mem_activations, "mem activations", "GiB",
         [](Row r, CellWriter&) { return peak(r, 3); }),
    real(C::mem_buffers, "mem buffers", "GiB", [](Row r, CellWriter&) { return peak(r, 4); }),
    real(C::mem_overhead, "mem overhead", "GiB", [](Row r, CellWriter&) { return peak(r, 5); }),
    word(C::schedule, "schedule",
         [](Row r, std::string&) -> std::string_view { return to_string(point(r).schedule); }),
    special(C::slices, "token slices", kSlices),
    real(C::step_time_low, "interval low (s/step)", "",
         [](Row r, CellWriter&) { return spread_bound(r, false); }, 4, kNan, kNan),
    real(C::step_time_high, "interval high (s/step)", "",
         [](Row r, CellWriter&) { return spread_bound(r, true); }, 4, kNan, kNan),
    text(C::interval_basis, "interval basis",
         [](Row r, std::string&) -> std::string_view { return spread_of(r).basis; }, true),
    integer(C::seq_len, "seq_len",
            [](Row r, const Column&) -> long long { return r.run->throughput.seq_len; }),
    integer(C::tokens_per_step, "tokens per step",
            [](Row r, const Column&) -> long long { return r.run->throughput.tokens_per_step; }),
    real(C::tokens_per_gpu_s, "tokens/s per GPU", "",
         [](Row r, CellWriter&) { return r.run->throughput.tokens_per_gpu_s(estimate(r).step_s); },
         0),
    real(C::mfu, "MFU", "%",
         [](Row r, CellWriter&) { return r.run->throughput.mfu_percent(estimate(r).step_s); }, 1,
         Blank::never, kNotFinite),
    word(C::mfu_peak, "MFU peak",
         [](Row r, std::string&) -> std::string_view { return r.run->throughput.peak_dtype; }),
    word(C::memory_fit, "memory fit",
         [](Row r, std::string&) -> std::string_view { return memory_fit(*r.run, estimate(r)); }),
    real(C::run_days, "run time (days)", "",
         [](Row r, CellWriter& w) { return cost(r, w).days(); }, 2, kNotFinite, kNotFinite),
    real(C::run_gpu_hours, "run GPU-hours", "",
         [](Row r, CellWriter& w) { return cost(r, w).gpu_hours; }, 0, kNotFinite, kNotFinite),
    real(C::run_usd, "run cost (USD)", "", [](Row r, CellWriter& w) { return cost(r, w).usd; }, 0,
         kNotFinite, kNotFinite),
    real(C::run_mwh, "run energy (MWh)", "",
         [](Row r, CellWriter& w) { return cost(r, w).energy_mwh; }, 1, kNotFinite, kNotFinite),
    real(C::run_energy_usd, "run energy cost (USD)", "",
         [](Row r, CellWriter& w) { return cost(r, w).energy_usd; }, 0, kNotFinite, kNotFinite),
    real(C::run_effective, "effective training time (%)", "",
         [](Row r, CellWriter& w) { return 100.0 * cost(r, w).effective_fraction; }, 2,
         kNotFinite, kNotFinite),
    real(C::run_checkpoint_interval, "checkpoint interval (s)", "",
         [](Row r, CellWriter& w) { return cost(r, w).interval_s; }, 0, kNotFinite, kNotFinite),
    real(C::run_mtbf, "cluster MTBF (h)", "",
         [](Row r, CellWriter& w) { return cost(r, w).mtbf_s / 3600.0; }, 2, kNotFinite,
         kNotFinite),
    integer(C::ep, "ep", [](Row r, const Column&) -> long long { return point(r).ep; }),
    integer(C::etp, "etp", [](Row r, const Column&) -> long long { return point(r).etp; }),
    integer(C::cp, "cp", [](Row r, const Column&) -> long long { return point(r).cp; }),
    word(C::cp_comm, "cp_comm",
         [](Row r, std::string&) -> std::string_view { return to_string(point(r).cp_comm); }),
    real(C::a2a_time, "a2a time", "s",
         [](Row r, CellWriter&) { return static_cast<double>(estimate(r).native.a2a_s); }),
    real(C::cp_time, "cp time", "s",
         [](Row r, CellWriter&) { return static_cast<double>(estimate(r).native.cp_s); }),
    word(C::master_weights, "master_weights",
         [](Row r, std::string&) -> std::string_view {
           return r.run->master_weights ? "on" : "off";
         }),
});
static_assert(rows_follow_enum(kColumns),
              "kColumns rows must follow the ColumnId enum's order");

nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

constexpr ColumnId kRunColumns[] = {ColumnId::run_days,       ColumnId::run_gpu_hours,
                                    ColumnId::run_usd,        ColumnId::run_mwh,
                                    ColumnId::run_energy_usd, ColumnId::run_effective,
                                    ColumnId::run_checkpoint_interval, ColumnId::run_mtbf};

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
         C::etp, C::cp, C::cp_comm, C::a2a_time, C::cp_time, C::master_weights});
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

std::size_t CellWriter::max_row_size(std::span<const Column> columns, const RankedRow& r) {
  std::size_t n = 64 * columns.size() + 32 * r.row->estimate.partition.size() +
                  16 * r.row->estimate.native.slices.size();
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

namespace {

/// nlohmann's number text (Grisu2, ".0" on integral values), or null when not finite: what
/// json_cell(...).dump() writes for a figure.
char* put_json_number(char* out, double v) noexcept {
  if (!std::isfinite(v)) {
    return put(out, "null");
  }
  return nlohmann::detail::to_chars(out, out + 64, v);
}

/// Whether `v` is unknown under `rule`: an empty CSV cell, "-" in the table.
bool blank(Blank rule, double v) noexcept {
  switch (rule) {
  case Blank::never: return false;
  case Blank::if_nan: return std::isnan(v);
  case Blank::if_not_finite: return !std::isfinite(v);
  }
  return false;
}

} // namespace

char* CellWriter::write(char* out, const Column& c, const RankedRow& r) {
  const ColumnDef& d = *c.def;
  switch (d.kind) {
  case CellKind::integer: return put_int(out, d.integer(r, c));
  case CellKind::real: {
    const double v = d.real(r, *this);
    return blank(d.csv_blank, v) ? out : write_python_float(out, v);
  }
  case CellKind::boolean: return put(out, d.boolean(r) ? "True" : "False");
  case CellKind::name: return put(out, d.word(r, scratch_));
  case CellKind::text:
    field_.clear();
    append_csv_field(field_, d.word(r, scratch_));
    return put(out, field_);
  case CellKind::special: return d.special->csv(*this, out, r);
  }
  return out;
}

std::string json_string(std::string_view text) {
  return nlohmann::ordered_json(std::string(text)).dump();
}


char* CellWriter::write_json(char* out, const Column& c, const RankedRow& r) {
  const ColumnDef& d = *c.def;
  switch (d.kind) {
  case CellKind::integer: return put_int(out, d.integer(r, c));
  case CellKind::real: return put_json_number(out, d.real(r, *this));
  case CellKind::boolean: return put(out, d.boolean(r) ? "true" : "false");
  case CellKind::name: // plain ASCII words from the tables: nothing to escape
    *out++ = '"';
    out = put(out, d.word(r, scratch_));
    *out++ = '"';
    return out;
  case CellKind::text: return put(out, json_string(d.word(r, scratch_)));
  case CellKind::special: return d.special->json(*this, out, r);
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
  const ColumnDef& d = *c.def;
  CellWriter cells;
  std::string scratch;
  switch (d.kind) {
  case CellKind::integer: return d.integer(r, c);
  case CellKind::real: return number(d.real(r, cells));
  case CellKind::boolean: return d.boolean(r);
  case CellKind::name:
  case CellKind::text: return std::string(d.word(r, scratch));
  case CellKind::special: return d.special->value(r);
  }
  return nullptr;
}

void append_table_cell(std::string& out, const Column& c, const RankedRow& r) {
  const ColumnDef& d = *c.def;
  std::string scratch;
  switch (d.kind) {
  case CellKind::integer: fmt::format_to(std::back_inserter(out), "{}", d.integer(r, c)); return;
  case CellKind::real: {
    CellWriter cells;
    const double v = d.real(r, cells);
    if (blank(d.table_blank, v)) {
      out += '-';
    } else if (d.decimals < 0) {
      char buffer[kPythonFloatMaxChars];
      out.append(buffer, write_python_float(buffer, v));
    } else {
      fmt::format_to(std::back_inserter(out), "{:.{}f}", v, d.decimals);
    }
    return;
  }
  case CellKind::boolean: out += d.boolean(r) ? "True" : "False"; return;
  case CellKind::name: out += d.word(r, scratch); return;
  case CellKind::text:
    if (d.table_quoted) {
      append_csv_field(out, d.word(r, scratch));
    } else {
      out += d.word(r, scratch);
    }
    return;
  case CellKind::special: d.special->table(out, r); return;
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
