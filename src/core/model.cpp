#include "zerosearch/core/model.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"

namespace zerosearch {

const ModelSpec& ModelCatalog::find(const std::string& name) const {
  for (const auto& m : models) {
    if (m.name == name) {
      return m;
    }
  }
  throw InputError(fmt::format("unknown model '{}' (known: {})", name, names()));
}

bool ModelCatalog::contains(const std::string& name) const noexcept {
  return std::any_of(models.begin(), models.end(),
                     [&name](const ModelSpec& m) { return m.name == name; });
}

std::string ModelCatalog::names() const {
  std::string out;
  for (const auto& m : models) {
    out += out.empty() ? "" : ", ";
    out += m.name;
  }
  return out;
}

} // namespace zerosearch
