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

std::string micro_batches_text(int n) {
  return std::to_string(n) + (n == 1 ? " micro-batch" : " micro-batches");
}

} // namespace zerosearch::cli
