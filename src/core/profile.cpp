#include "zerosearch/core/profile.hpp"

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"

namespace zerosearch {

void ProfileDb::add(GpuProfile profile) {
  if (const auto* existing = find(profile.model, profile.gpu, profile.flavour)) {
    throw InputError(fmt::format("{}: duplicate profile for {} on {} ({}), also in {}",
                                 profile.origin, profile.model, profile.gpu,
                                 to_string(profile.flavour), existing->origin));
  }
  profiles_.push_back(std::move(profile));
}

const GpuProfile* ProfileDb::find(const std::string& model, const std::string& gpu,
                                  Flavour flavour) const noexcept {
  for (const auto& p : profiles_) {
    if (p.model == model && p.gpu == gpu && p.flavour == flavour) {
      return &p;
    }
  }
  return nullptr;
}

} // namespace zerosearch
