#pragma once
// Test helper: two JSON values equal in type and value as io/json_fast promises them, for its
// unit test (tests/io/test_json_fast.cpp) and its fuzz target (tests/fuzz/fuzz_json_fast.cpp).
#include <cstddef>
#include <cstring>

#include <nlohmann/json.hpp>

namespace zerosearch::testing {

/// Equal values of equal types: unsigned 5, signed 5 and 5.0 differ, as do 0.0 and -0.0, and
/// object members must come in the same order.
inline bool same_json(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.type() != b.type()) {
    return false;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) {
      return false;
    }
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
      if (i.key() != j.key() || !same_json(i.value(), j.value())) {
        return false;
      }
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) {
      return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!same_json(a[i], b[i])) {
        return false;
      }
    }
    return true;
  }
  if (a.is_number_float()) {
    const double x = a.get<double>();
    const double y = b.get<double>();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return a == b;
}

} // namespace zerosearch::testing
