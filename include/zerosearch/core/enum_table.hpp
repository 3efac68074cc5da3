#pragma once
// The tables of facts keyed by an enum (kDpMethods, kSchedules, kReportFormats, kColumns): one
// row per enumerator, in the enum's order, so that info(value) is rows[value]; and the
// enumerator a flag's name table names.
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace zerosearch {

/// True when row i of `rows` has id i: for a static_assert beside each table.
template <typename Row, std::size_t N>
[[nodiscard]] constexpr bool rows_follow_enum(const std::array<Row, N>& rows) noexcept {
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<std::size_t>(rows[i].id) != i) return false;
  }
  return true;
}

/// The enumerator named `text` in `names` (a flag's names, one per enumerator in the enum's
/// order), or nullopt.
template <typename Enum, std::size_t N>
[[nodiscard]] constexpr std::optional<Enum> enum_named(const std::array<const char*, N>& names,
                                                       std::string_view text) noexcept {
  for (std::size_t i = 0; i < N; ++i) {
    if (text == names[i]) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

} // namespace zerosearch
