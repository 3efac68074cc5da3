#pragma once
// Test helper: splits one CSV line as Python's csv module writes it (QUOTE_MINIMAL), for the
// tools that read zerosearch's and the original's CSV files.
#include <string>
#include <vector>

namespace zerosearch::testing {

/// The fields of `line`; quoted fields lose their quotes, "" inside them becomes ". A carriage
/// return outside quotes is dropped.
inline std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

} // namespace zerosearch::testing
