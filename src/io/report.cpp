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
  const std::vector<Column> columns = csv_layout(type_names, with_native);
  std::string buffer;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    buffer += i ? "," : "";
    buffer += csv_field(columns[i].name());
  }
  buffer += '\n';
  // Rows go out in blocks of about 1 MiB: one buffer, no string per cell.
  constexpr std::size_t kFlushBytes = std::size_t{1} << 20;
  for (const RankedRow& r : rows) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (i) {
        buffer += ',';
      }
      append_csv_cell(buffer, columns[i], r);
    }
    buffer += '\n';
    if (buffer.size() >= kFlushBytes) {
      out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      buffer.clear();
    }
  }
  out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
}

} // namespace zerosearch
