#include "describe.hpp"

#include <fmt/format.h>

namespace zerosearch::cli {

std::string cluster_text(const Cluster& c) {
  std::string out;
  for (const auto& g : c.groups) {
    out += fmt::format("{}{} x {}", out.empty() ? "" : " + ", g.count, g.gpu);
  }
  return out;
}

std::string placement_text(const Cluster& c, const Placement& p) {
  std::string out;
  std::size_t i = 0;
  while (i < p.size()) {
    std::size_t j = i;
    while (j < p.size() && p[j] == p[i]) {
      ++j;
    }
    out += fmt::format("{}{}x{}", out.empty() ? "" : " ",
                       c.groups[static_cast<std::size_t>(p[i])].gpu, j - i);
    i = j;
  }
  return out;
}

} // namespace zerosearch::cli
