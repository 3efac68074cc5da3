#pragma once
// Short human-readable descriptions shared by the modes' reports.
#include <string>

#include "zerosearch/core/cluster.hpp"

namespace zerosearch::cli {

/// "3 x A10 + 5 x A6000"
[[nodiscard]] std::string cluster_text(const Cluster& c);

/// "1 micro-batch", "16 micro-batches"
[[nodiscard]] std::string micro_batches_text(int n);

} // namespace zerosearch::cli
