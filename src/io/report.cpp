#include "zerosearch/io/report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace zerosearch {

namespace {

char* copy_text(char* out, std::string_view text) noexcept {
  std::memcpy(out, text.data(), text.size());
  return out + text.size();
}

char* fill(char* out, std::size_t n, char c) noexcept {
  std::memset(out, c, n);
  return out + n;
}

} // namespace

char* write_python_float(char* out, double v) noexcept {
  if (std::isnan(v)) {
    return copy_text(out, "nan");
  }
  if (std::isinf(v)) {
    return copy_text(out, v > 0 ? "inf" : "-inf");
  }
  if (v == 0.0) {
    return copy_text(out, std::signbit(v) ? "-0.0" : "0.0");
  }
  // Shortest round-trip digits in scientific form, "-d.ddde-XX": the digits Python's repr uses
  // (both are the shortest string that reads back as v, ties to the nearest of them).
  char sci[40];
  const char* const sci_end = std::to_chars(sci, sci + sizeof sci, v,
                                            std::chars_format::scientific).ptr;
  const char* p = sci;
  if (*p == '-') {
    *out++ = '-';
    ++p;
  }
  char digits[24];
  int nd = 0;
  for (; *p != 'e'; ++p) {
    if (*p != '.') {
      digits[nd++] = *p;
    }
  }
  ++p; // 'e'
  const bool negative_exponent = *p == '-';
  ++p; // sign
  int exponent = 0;
  for (; p != sci_end; ++p) {
    exponent = exponent * 10 + (*p - '0');
  }
  if (negative_exponent) {
    exponent = -exponent;
  }
  const int decpt = exponent + 1; // value = 0.DIGITS * 10^decpt
  const auto n = static_cast<std::size_t>(nd);
  if (decpt <= -4 || decpt > 16) {
    // Python's repr switches to exponent form outside 1e-4 <= |v| < 1e16: "1.5e-07", "1e+16".
    *out++ = digits[0];
    if (nd > 1) {
      *out++ = '.';
      out = copy_text(out, std::string_view(digits + 1, n - 1));
    }
    *out++ = 'e';
    *out++ = exponent < 0 ? '-' : '+';
    const int e = exponent < 0 ? -exponent : exponent;
    if (e < 10) {
      *out++ = '0';
    }
    return std::to_chars(out, out + 4, e).ptr;
  }
  if (decpt <= 0) {
    out = copy_text(out, "0.");
    out = fill(out, static_cast<std::size_t>(-decpt), '0');
    return copy_text(out, std::string_view(digits, n));
  }
  const auto point = static_cast<std::size_t>(decpt);
  if (point >= n) {
    out = copy_text(out, std::string_view(digits, n));
    out = fill(out, point - n, '0');
    return copy_text(out, ".0");
  }
  out = copy_text(out, std::string_view(digits, point));
  *out++ = '.';
  return copy_text(out, std::string_view(digits + point, n - point));
}

void append_python_float(std::string& out, double v) {
  char buf[kPythonFloatMaxChars];
  out.append(buf, write_python_float(buf, v));
}

std::string python_float(double v) {
  char buf[kPythonFloatMaxChars];
  return std::string(buf, write_python_float(buf, v));
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

void append_csv_field(std::string& out, std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
    out += text;
    return;
  }
  out += '"';
  for (const char c : text) {
    out += c;
    if (c == '"') {
      out += '"';
    }
  }
  out += '"';
}

std::string csv_field(const std::string& text) {
  std::string out;
  append_csv_field(out, text);
  return out;
}

std::vector<std::string> csv_columns(const std::vector<std::string>& type_names,
                                     const CsvOptions& options) {
  std::vector<std::string> names;
  for (const Column& c : csv_layout(type_names, options)) {
    names.push_back(c.name());
  }
  return names;
}

void write_csv(std::ostream& out, const std::vector<RankedRow>& rows,
               const std::vector<std::string>& type_names, const CsvOptions& options) {
  CsvOptions with_native = options;
  with_native.native = options.native || has_native_rows(rows);
  // The throughput columns only where the CSV is not the original's format.
  with_native.throughput = options.throughput || with_native.native || options.distinct;
  with_native.run_cost = options.run_cost || has_run_cost_rows(rows);
  const std::vector<Column> columns = csv_layout(type_names, with_native);
  std::string header;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    header += i ? "," : "";
    header += csv_field(columns[i].name());
  }
  header += '\n';
  // Rows are written cell by cell into each chunk's buffer, with no string per cell.
  write_rows(
      out, header, rows.size(),
      [&](CellWriter& cells, std::size_t i, RowBuffer& buffer) {
        const RankedRow& r = rows[i];
        char* p = buffer.reserve(cells.max_row_size(columns, r));
        for (std::size_t c = 0; c < columns.size(); ++c) {
          if (c) {
            *p++ = ',';
          }
          p = cells.write(p, columns[c], r);
        }
        *p++ = '\n';
        buffer.commit(p);
      },
      options.threads, rows.empty() ? 0 : CellWriter().max_row_size(columns, rows.front()));
}

} // namespace zerosearch
