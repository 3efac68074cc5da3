#pragma once
// Short human-readable descriptions shared by the modes' reports.
#include <string>

#include "zerosearch/cluster.hpp"

namespace zerosearch::cli {

/// "3 x A10 + 5 x A6000"
[[nodiscard]] std::string cluster_text(const Cluster& c);

/// Runs of equal node types: "A10x2 A6000x5 A10x1".
[[nodiscard]] std::string placement_text(const Cluster& c, const Placement& p);

} // namespace zerosearch::cli
