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

void write_json(std::ostream& out, const std::vector<RankedRow>& rows,
                const std::vector<std::string>& type_names, const CsvOptions& options) {
  if (rows.empty()) {
    out << "[]\n";
    return;
  }
  const std::vector<Column> layout = csv_layout(type_names, options);
  out << "[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const Column& c : layout) {
      object[c.name()] = json_cell(c, rows[i]);
    }
    if (!rows[i].run->profile_source.empty()) {
      object["profile_source"] = rows[i].run->profile_source;
    }
    out << "  " << object.dump() << (i + 1 < rows.size() ? ",\n" : "\n");
  }
  out << "]\n";
}

std::vector<std::string> table_columns(const std::vector<std::string>& type_names) {
  std::vector<std::string> headers;
  for (const Column& c : table_layout(type_names)) {
    headers.push_back(c.table_header());
  }
  return headers;
}

void write_table(std::ostream& out, const std::vector<RankedRow>& rows,
                 const std::vector<std::string>& type_names, bool distinct) {
  write_table(out, rows, table_layout(type_names, distinct));
}

void write_table(std::ostream& out, const std::vector<RankedRow>& rows,
                 const std::vector<Column>& layout) {
  std::vector<std::string> headers;
  for (const Column& c : layout) {
    headers.push_back(c.table_header());
  }
  const auto cells_of = [&](const RankedRow& r) {
    std::vector<std::string> cells;
    cells.reserve(layout.size());
    for (const Column& c : layout) {
      cells.push_back(table_cell(c, r));
    }
    return cells;
  };
  std::vector<std::size_t> width(headers.size());
  for (std::size_t c = 0; c < headers.size(); ++c) {
    width[c] = headers[c].size();
  }
  for (const RankedRow& r : rows) {
    const auto cells = cells_of(r);
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
      if (layout[c].def->text) {
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
    line(cells_of(r));
  }
}

} // namespace zerosearch
