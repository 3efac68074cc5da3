#pragma once
// The original's CSV format and the Python formatting it needs (docs/model.md §5).
#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/io/columns.hpp"
#include "zerosearch/search/ranking.hpp"

namespace zerosearch {

/// Python's repr() of a float64: shortest round-trip digits, "0.0" style for integral values.
[[nodiscard]] std::string python_float(double v);
/// The most characters write_python_float writes ("-1.2345678901234567e-308" is 24).
inline constexpr std::size_t kPythonFloatMaxChars = 32;
/// python_float(v) written at `out` (room for kPythonFloatMaxChars); returns the end. No
/// allocation: the CSV writer's per-cell path.
char* write_python_float(char* out, double v) noexcept;
/// python_float(v) appended to `out`.
void append_python_float(std::string& out, double v);
/// "[6, 5, 5]"
[[nodiscard]] std::string python_int_list(const std::vector<int>& v);
/// "16-24": partition[0]-1, the middle entries, partition[-1]-1.
[[nodiscard]] std::string exp_partition(const std::vector<int>& partition);

/// The CSV header names, in the original's column order (or its --pretty order): csv_layout.
[[nodiscard]] std::vector<std::string> csv_columns(const std::vector<std::string>& type_names,
                                                   const CsvOptions& options = {});

/// Writes rows (ranked and sorted) in the original's CSV format, as pandas' to_csv writes it.
/// `type_names` are the node-count column names in command-line order; every run's cluster
/// must list its node types in that order.
void write_csv(std::ostream& out, const std::vector<RankedRow>& rows,
               const std::vector<std::string>& type_names, const CsvOptions& options = {});

/// A CSV field quoted as Python's csv module does with QUOTE_MINIMAL.
[[nodiscard]] std::string csv_field(const std::string& text);
/// The same, appended to `out`.
void append_csv_field(std::string& out, std::string_view text);

} // namespace zerosearch
