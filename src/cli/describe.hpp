#pragma once
// Short human-readable descriptions shared by the modes' reports.
#include <string>

#include "zerosearch/core/cluster.hpp"

namespace zerosearch::cli {

/// "3 x A10 + 5 x A6000"
[[nodiscard]] std::string cluster_text(const Cluster& c);

} // namespace zerosearch::cli
