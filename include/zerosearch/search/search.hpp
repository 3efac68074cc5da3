#pragma once
// The search: every design point on every placement, estimated in parallel.
#include <atomic>
#include <cstddef>
#include <functional>
#include <vector>

#include "zerosearch/model/estimate.hpp"

namespace zerosearch {

struct ResultRow {
  DesignPoint point;
  /// Index into the placements list the search was given.
  int placement = 0;
  Estimate estimate;
};

struct SearchProgress {
  std::size_t done = 0;
  std::size_t total = 0;
};

struct SearchOptions {
  /// Worker threads; 0 means one per hardware thread.
  unsigned threads = 0;
  /// Called from the calling thread every few milliseconds while the search runs (may be empty).
  std::function<void(const SearchProgress&)> on_progress;
};

/// Estimates every point on every placement. Rows come back in enumeration order (point-major,
/// then placement), independent of the thread count.
[[nodiscard]] std::vector<ResultRow> run_search(const EstimateContext& ctx,
                                                const std::vector<DesignPoint>& points,
                                                const std::vector<Placement>& placements,
                                                const SearchOptions& options = {});

} // namespace zerosearch
