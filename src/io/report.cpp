#include "zerosearch/io/report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace zerosearch {

std::string python_float(double v) {
  if (std::isnan(v)) {
    return "nan";
  }
  if (std::isinf(v)) {
    return v > 0 ? "inf" : "-inf";
  }
  if (v == 0.0) {
    return std::signbit(v) ? "-0.0" : "0.0";
  }
  // Shortest round-trip digits in scientific form: d.ddde[+-]X
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
  const int decpt = exponent + 1; // value = 0.DIGITS * 10^decpt
  const int nd = static_cast<int>(digits.size());
  std::string out;
  if (decpt <= -4 || decpt > 16) {
    out = digits.substr(0, 1);
    if (nd > 1) {
      out += "." + digits.substr(1);
    }
    out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
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

std::string python_int_list(const std::vector<int>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

std::string exp_partition(const std::vector<int>& partition) {
  std::string out = std::to_string(partition.front() - 1);
  for (std::size_t i = 1; i + 1 < partition.size(); ++i) {
    out += "-" + std::to_string(partition[i]);
  }
  out += "-" + std::to_string(partition.back() - 1);
  return out;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) {
    return text;
  }
  std::string out = "\"";
  for (const char c : text) {
    out += c;
    if (c == '"') {
      out += '"';
    }
  }
  return out + "\"";
}

std::vector<std::string> csv_columns(const std::vector<std::string>& type_names,
                                     const CsvOptions& options) {
  std::vector<std::string> cols;
  if (options.pretty) {
    cols = {"rank", "real_rank", "m", "mbs", "tp", "pp", "dp", "dp method"};
    cols.insert(cols.end(), type_names.begin(), type_names.end());
    for (const char* c : {"estimated time (s/step)", "pipeline time", "DP all-reduce time",
                          "Emb layer all-reduce time", "gpumem", "is_oom", "node placement",
                          "exp_partition", "partition", "train_cost", "price_per_step"}) {
      cols.emplace_back(c);
    }
    if (options.pareto_column) {
      cols.emplace_back("pareto");
    }
    return cols;
  }
  cols = {"m",
          "mbs",
          "tp",
          "pp",
          "dp",
          "dp method",
          "overlap_comm",
          "node placement",
          "partition",
          "estimated time (s/step)",
          "pipeline time",
          "DP all-reduce time",
          "Emb layer all-reduce time",
          "is_oom",
          "gpumem",
          "train_cost",
          "price_per_step",
          "exp_partition"};
  cols.insert(cols.end(), type_names.begin(), type_names.end());
  cols.emplace_back("rank");
  cols.emplace_back("real_rank");
  if (options.pareto_column) {
    cols.emplace_back("pareto");
  }
  return cols;
}

void write_csv(std::ostream& out, const std::vector<RankedRow>& rows,
               const std::vector<std::string>& type_names, const CsvOptions& options) {
  const auto columns = csv_columns(type_names, options);
  std::string line;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    line += (i ? "," : "") + csv_field(columns[i]);
  }
  out << line << '\n';
  std::vector<std::string> names;
  for (const auto& r : rows) {
    const ResultRow& row = *r.row;
    const Estimate& e = row.estimate;
    const DesignPoint& p = row.point;
    const Cluster& cluster = r.run->cluster;
    const std::string placement =
        placement_to_python(cluster, r.run->placements[static_cast<std::size_t>(row.placement)]);
    const auto value = [&](const std::string& col) -> std::string {
      if (col == "m") return std::to_string(p.num_micro_batches);
      if (col == "mbs") return std::to_string(p.mbs);
      if (col == "tp") return std::to_string(p.tp);
      if (col == "pp") return std::to_string(p.pp);
      if (col == "dp") return std::to_string(p.dp);
      if (col == "dp method") return to_string(p.method);
      if (col == "overlap_comm") return "False";
      if (col == "node placement") return placement;
      if (col == "partition") return python_int_list(e.partition);
      if (col == "estimated time (s/step)") return python_float(e.step_s);
      if (col == "pipeline time") return python_float(e.pipeline_s);
      if (col == "DP all-reduce time") return python_float(e.dp_sync_s);
      if (col == "Emb layer all-reduce time") return python_float(e.embedding_sync_s);
      if (col == "is_oom") return e.oom ? "True" : "False";
      if (col == "gpumem") return python_float(e.gpumem_gib);
      if (col == "train_cost") return python_float(e.train_cost_usd);
      if (col == "price_per_step") return python_float(e.price_per_step_usd);
      if (col == "exp_partition") return exp_partition(e.partition);
      if (col == "rank") return std::to_string(r.rank);
      if (col == "real_rank") return std::to_string(r.real_rank);
      if (col == "pareto") return r.on_front ? "True" : "False";
      for (const auto& g : cluster.groups) {
        if (g.gpu == col) return std::to_string(g.count);
      }
      return "0";
    };
    line.clear();
    for (std::size_t i = 0; i < columns.size(); ++i) {
      line += (i ? "," : "") + csv_field(value(columns[i]));
    }
    out << line << '\n';
  }
}

} // namespace zerosearch
