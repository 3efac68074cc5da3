#include "zerosearch/io/report_format.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace zerosearch {

std::vector<RankedRow> select_rows(const std::vector<RankedRow>& ranked,
                                   const RowSelection& selection) {
  std::vector<RankedRow> out;
  for (const RankedRow& r : ranked) {
    if (selection.top != 0 && out.size() == selection.top) {
      break;
    }
    if (selection.feasible_only && r.row->estimate.oom) {
      continue;
    }
    out.push_back(r);
  }
  return out;
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

namespace {

const Placement& placement_of(const RankedRow& r) {
  return r.run->placements[static_cast<std::size_t>(r.row->placement)];
}

/// Node count of type `name` in the row's cluster (0 when the cluster does not have it).
int node_count(const RankedRow& r, const std::string& name) {
  for (const auto& g : r.run->cluster.groups) {
    if (g.gpu == name) {
      return g.count;
    }
  }
  return 0;
}

/// A float for JSON: a number, or null when it is not finite (JSON has no NaN).
nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json json_value(const RankedRow& r, const std::string& col) {
  const ResultRow& row = *r.row;
  const DesignPoint& p = row.point;
  const Estimate& e = row.estimate;
  if (col == "m") return p.num_micro_batches;
  if (col == "mbs") return p.mbs;
  if (col == "tp") return p.tp;
  if (col == "pp") return p.pp;
  if (col == "dp") return p.dp;
  if (col == "dp method") return to_string(p.method);
  if (col == "overlap_comm") return false;
  if (col == "node placement") {
    auto names = nlohmann::ordered_json::array();
    for (const int g : placement_of(r)) {
      names.push_back(r.run->cluster.groups[static_cast<std::size_t>(g)].gpu);
    }
    return names;
  }
  if (col == "partition") return e.partition;
  if (col == "estimated time (s/step)") return number(e.step_s);
  if (col == "pipeline time") return number(e.pipeline_s);
  if (col == "DP all-reduce time") return number(e.dp_sync_s);
  if (col == "Emb layer all-reduce time") return number(e.embedding_sync_s);
  if (col == "is_oom") return e.oom;
  if (col == "gpumem") return number(e.gpumem_gib);
  if (col == "train_cost") return number(e.train_cost_usd);
  if (col == "price_per_step") return number(e.price_per_step_usd);
  if (col == "exp_partition") return exp_partition(e.partition);
  if (col == "pareto") return r.on_front;
  if (col == "rank") return r.rank;
  if (col == "real_rank") return r.real_rank;
  return node_count(r, col);
}

} // namespace

void write_json(std::ostream& out, const std::vector<RankedRow>& rows,
                const std::vector<std::string>& type_names, const CsvOptions& options) {
  const auto columns = csv_columns(type_names, options);
  if (rows.empty()) {
    out << "[]\n";
    return;
  }
  out << "[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const auto& col : columns) {
      object[col] = json_value(rows[i], col);
    }
    if (!rows[i].run->profile_source.empty()) {
      object["profile_source"] = rows[i].run->profile_source;
    }
    out << "  " << object.dump() << (i + 1 < rows.size() ? ",\n" : "\n");
  }
  out << "]\n";
}

std::vector<std::string> table_columns(const std::vector<std::string>& type_names) {
  std::vector<std::string> cols = {"rank", "real_rank", "m", "mbs", "tp", "pp", "dp", "dp method"};
  cols.insert(cols.end(), type_names.begin(), type_names.end());
  for (const char* c : {"s/step", "pipeline s", "DP all-reduce s", "Emb all-reduce s",
                        "gpumem GiB", "is_oom", "node placement", "exp_partition", "partition",
                        "train_cost $", "price_per_step $"}) {
    cols.emplace_back(c);
  }
  return cols;
}

namespace {

/// The cells of one table row, in table_columns order.
std::vector<std::string> table_cells(const RankedRow& r, const std::vector<std::string>& type_names) {
  const ResultRow& row = *r.row;
  const DesignPoint& p = row.point;
  const Estimate& e = row.estimate;
  std::vector<std::string> cells = {std::to_string(r.rank),
                                    std::to_string(r.real_rank),
                                    std::to_string(p.num_micro_batches),
                                    std::to_string(p.mbs),
                                    std::to_string(p.tp),
                                    std::to_string(p.pp),
                                    std::to_string(p.dp),
                                    to_string(p.method)};
  for (const auto& name : type_names) {
    cells.push_back(std::to_string(node_count(r, name)));
  }
  cells.push_back(fmt::format("{:.4f}", e.step_s));
  cells.push_back(fmt::format("{:.4f}", e.pipeline_s));
  cells.push_back(fmt::format("{:.4f}", e.dp_sync_s));
  cells.push_back(fmt::format("{:.4f}", e.embedding_sync_s));
  cells.push_back(fmt::format("{:.2f}", e.gpumem_gib));
  cells.emplace_back(e.oom ? "True" : "False");
  cells.push_back(compress_placement(r.run->cluster, placement_of(r)));
  cells.push_back(exp_partition(e.partition));
  cells.push_back(fmt::format("[{}]", fmt::join(e.partition, ",")));
  cells.push_back(fmt::format("{:.0f}", e.train_cost_usd));
  cells.push_back(fmt::format("{:.5f}", e.price_per_step_usd));
  return cells;
}

/// Text columns are left-aligned; the rest are numbers.
bool is_text_column(const std::string& header) {
  return header == "dp method" || header == "is_oom" || header == "node placement" ||
         header == "exp_partition" || header == "partition";
}

} // namespace

void write_table(std::ostream& out, const std::vector<RankedRow>& rows,
                 const std::vector<std::string>& type_names) {
  const auto headers = table_columns(type_names);
  std::vector<std::size_t> width(headers.size());
  for (std::size_t c = 0; c < headers.size(); ++c) {
    width[c] = headers[c].size();
  }
  for (const RankedRow& r : rows) {
    const auto cells = table_cells(r, type_names);
    for (std::size_t c = 0; c < cells.size(); ++c) {
      width[c] = std::max(width[c], cells[c].size());
    }
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      if (c > 0) {
        text += "  ";
      }
      if (is_text_column(headers[c])) {
        text += last ? cells[c] : fmt::format("{:<{}}", cells[c], width[c]);
      } else {
        text += fmt::format("{:>{}}", cells[c], width[c]);
      }
    }
    while (!text.empty() && text.back() == ' ') {
      text.pop_back();
    }
    out << text << '\n';
  };
  line(headers);
  for (const RankedRow& r : rows) {
    line(table_cells(r, type_names));
  }
}

} // namespace zerosearch
