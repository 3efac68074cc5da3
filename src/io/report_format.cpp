#include "zerosearch/io/report_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zerosearch/core/error.hpp"

namespace zerosearch {

std::string report_format_names(const char* last) {
  std::vector<const char*> names;
  for (const ReportFormatInfo& f : kReportFormats) {
    if (f.name != nullptr) names.push_back(f.name);
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += i == 0 ? "" : i + 1 == names.size() ? last : ", ";
    out += names[i];
  }
  return out;
}

ReportFormat parse_report_format(const std::string& text) {
  for (const ReportFormatInfo& f : kReportFormats) {
    if (f.name != nullptr && text == f.name) return f.id;
  }
  throw InputError(
      fmt::format("unknown --format '{}' (allowed: {})", text, report_format_names()));
}

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
  // One object per row, as nlohmann's dump() of {key: json_cell(...)} writes it, but written
  // straight into each chunk's buffer (CellWriter::write_json, write_rows).
  CsvOptions with_native = options;
  with_native.native = options.native || has_native_rows(rows);
  with_native.throughput = true;
  with_native.run_cost = options.run_cost || has_run_cost_rows(rows);
  const std::vector<Column> layout = csv_layout(type_names, with_native);
  std::vector<std::string> keys;
  for (const Column& c : layout) {
    keys.push_back(json_string(c.name()) + ':');
  }
  const std::string source_key = json_string("profile_source") + ':';
  // Each run's profile_source member, written after the columns.
  std::unordered_map<const RunResult*, std::string> sources;
  for (const RankedRow& r : rows) {
    if (sources.find(r.run) == sources.end()) {
      sources.emplace(r.run, r.run->profile_source.empty()
                                 ? std::string()
                                 : source_key + json_string(r.run->profile_source));
    }
  }
  write_rows(
      out, "[\n", rows.size(),
      [&](CellWriter& cells, std::size_t i, RowBuffer& buffer) {
        const RankedRow& r = rows[i];
        const std::string& source = sources.find(r.run)->second;
        char* p = buffer.reserve(cells.max_row_size(layout, r) + source.size() + 16);
        *p++ = ' ';
        *p++ = ' ';
        *p++ = '{';
        for (std::size_t c = 0; c < layout.size(); ++c) {
          if (c) {
            *p++ = ',';
          }
          std::memcpy(p, keys[c].data(), keys[c].size());
          p += keys[c].size();
          p = cells.write_json(p, layout[c], r);
        }
        if (!source.empty()) {
          *p++ = ',';
          std::memcpy(p, source.data(), source.size());
          p += source.size();
        }
        *p++ = '}';
        if (i + 1 < rows.size()) {
          *p++ = ',';
        }
        *p++ = '\n';
        buffer.commit(p);
      },
      options.threads, CellWriter().max_row_size(layout, rows.front()));
  out << "]\n";
}

void write_table(std::ostream& out, const std::vector<RankedRow>& rows,
                 const std::vector<std::string>& type_names, bool distinct, bool numbered) {
  write_table(out, rows,
              table_layout(type_names, distinct, has_native_rows(rows), has_run_cost_rows(rows)),
              numbered);
}

void write_table(std::ostream& out, const std::vector<RankedRow>& rows,
                 const std::vector<Column>& layout, bool numbered) {
  // Two passes over the cells, each written into one reused string: the column widths, then
  // the lines, padded (text left-aligned, numbers right-aligned, no trailing spaces) into a
  // buffer that goes out in blocks of about 1 MiB.
  constexpr std::size_t kFlushBytes = std::size_t{1} << 20;
  std::vector<std::size_t> width(layout.size());
  for (std::size_t c = 0; c < layout.size(); ++c) {
    width[c] = layout[c].table_header().size();
  }
  std::string cell;
  for (const RankedRow& r : rows) {
    for (std::size_t c = 0; c < layout.size(); ++c) {
      cell.clear();
      append_table_cell(cell, layout[c], r);
      width[c] = std::max(width[c], cell.size());
    }
  }
  std::string text;
  // The `#` column: right-aligned positions from 1.
  const std::size_t number_width = std::max<std::size_t>(1, fmt::formatted_size("{}", rows.size()));
  const auto put_number = [&](std::string_view value) {
    if (numbered) {
      text.append(number_width > value.size() ? number_width - value.size() : 0, ' ');
      text += value;
      text += "  ";
    }
  };
  const auto put = [&](std::size_t c, std::string_view value) {
    const std::size_t pad = width[c] > value.size() ? width[c] - value.size() : 0;
    if (c > 0) {
      text += "  ";
    }
    if (!layout[c].def->text) {
      text.append(pad, ' ');
      text += value;
    } else {
      text += value;
      if (c + 1 < layout.size()) {
        text.append(pad, ' ');
      }
    }
  };
  const auto end_line = [&] {
    while (!text.empty() && text.back() == ' ') {
      text.pop_back();
    }
    text += '\n';
    if (text.size() >= kFlushBytes) {
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      text.clear();
    }
  };
  put_number("#");
  for (std::size_t c = 0; c < layout.size(); ++c) {
    put(c, layout[c].table_header());
  }
  end_line();
  std::string number;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const RankedRow& r = rows[i];
    if (numbered) {
      number.clear();
      fmt::format_to(std::back_inserter(number), "{}", i + 1);
      put_number(number);
    }
    for (std::size_t c = 0; c < layout.size(); ++c) {
      cell.clear();
      append_table_cell(cell, layout[c], r);
      put(c, cell);
    }
    end_line();
  }
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

} // namespace zerosearch
