#include "zerosearch/search.hpp"

#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace zerosearch {

std::vector<ResultRow> run_search(const EstimateContext& ctx, const std::vector<DesignPoint>& points,
                                  const std::vector<Placement>& placements,
                                  const SearchOptions& options) {
  const std::size_t per_point = placements.size();
  const std::size_t total = points.size() * per_point;
  std::vector<ResultRow> rows(total);
  std::atomic<std::size_t> next_point{0};
  std::atomic<std::size_t> done{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;

  bool report_inline = false;
  const auto work = [&] {
    try {
      for (std::size_t i = next_point.fetch_add(1); i < points.size(); i = next_point.fetch_add(1)) {
        const DesignPoint& p = points[i];
        const LayerCosts costs = layer_costs(ctx, p);
        // Placements with the same features get the same estimate: compute each once.
        std::unordered_map<PlacementFeatures, std::size_t, PlacementFeaturesHash> seen;
        PartitionMemo memo; // this point's memory table, shared by the searching partitioners
        for (std::size_t k = 0; k < per_point; ++k) {
          ResultRow& row = rows[i * per_point + k];
          row.point = p;
          row.placement = static_cast<int>(k);
          PlacementFeatures features = placement_features(ctx, p, placements[k]);
          const auto it = seen.find(features);
          if (it != seen.end()) {
            row.estimate = rows[i * per_point + it->second].estimate;
          } else {
            row.estimate = estimate(ctx, p, costs, features, {}, nullptr, &memo);
            seen.emplace(std::move(features), k);
          }
        }
        done.fetch_add(per_point, std::memory_order_relaxed);
        if (report_inline && options.on_progress && i % 16 == 0) {
          options.on_progress(SearchProgress{done.load(std::memory_order_relaxed), total});
        }
      }
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) {
        failure = std::current_exception();
      }
      next_point.store(points.size());
    }
  };

  unsigned threads = options.threads != 0 ? options.threads : std::thread::hardware_concurrency();
  threads = std::max(1U, std::min<unsigned>(threads, static_cast<unsigned>(points.size())));
  // Small searches finish before a thread would start; run them inline.
  if (total < 256) {
    threads = 1;
  }
  if (threads == 1) {
    report_inline = true;
    work();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back(work);
    }
    // The calling thread only reports progress while the pool works.
    while (options.on_progress && done.load(std::memory_order_relaxed) < total) {
      options.on_progress(SearchProgress{done.load(std::memory_order_relaxed), total});
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const std::lock_guard lock(failure_mutex);
      if (failure) {
        break;
      }
    }
    for (auto& th : pool) {
      th.join();
    }
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
  if (options.on_progress) {
    options.on_progress(SearchProgress{total, total});
  }
  return rows;
}

} // namespace zerosearch
