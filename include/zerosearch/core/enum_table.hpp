#pragma once
// The tables of facts keyed by an enum (kDpMethods, kSchedules, kReportFormats, kColumns): one
// row per enumerator, in the enum's order, so that info(value) is rows[value].
#include <array>
#include <cstddef>

namespace zerosearch {

/// True when row i of `rows` has id i: for a static_assert beside each table.
template <typename Row, std::size_t N>
[[nodiscard]] constexpr bool rows_follow_enum(const std::array<Row, N>& rows) noexcept {
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<std::size_t>(rows[i].id) != i) return false;
  }
  return true;
}

} // namespace zerosearch
