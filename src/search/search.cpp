#include "zerosearch/search/search.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace zerosearch {

namespace {

/// One design point on every placement with the native estimator; placements whose stages
/// run on the same node types with the same node crossings share an estimate.
void estimate_native_point(const EstimateContext& ctx, const DesignPoint& p,
                           const std::vector<Placement>& placements, ResultRow* out) {
  const NativeContext& n = *ctx.native;
  std::vector<std::pair<NativePlacement, std::size_t>> seen;
  for (std::size_t k = 0; k < placements.size(); ++k) {
    ResultRow& row = out[k];
    row.point = p;
    row.placement = static_cast<int>(k);
    NativePlacement where = native_placement(n, p, placements[k]);
    const auto it = std::find_if(seen.begin(), seen.end(),
                                 [&](const auto& s) { return s.first == where; });
    if (it != seen.end()) {
      row.estimate = out[it->second].estimate;
      continue;
    }
    row.estimate = to_estimate(ctx, native_estimate(n, p, where));
    seen.emplace_back(std::move(where), k);
  }
}

} // namespace

std::vector<ResultRow> run_search(const EstimateContext& ctx, const std::vector<DesignPoint>& points,
                                  const std::vector<Placement>& placements,
                                  const SearchOptions& options) {
  const std::size_t per_point = placements.size();
  const std::size_t total = points.size() * per_point;
  std::vector<ResultRow> rows(total);
  std::atomic<std::size_t> next_point{0};
  std::atomic<std::size_t> done{0};
  std::exception_ptr failure;
  // Guards `failure` and `workers_left`; `finished` is signalled when the last worker stops.
  std::mutex state_mutex;
  std::condition_variable finished;
  unsigned workers_left = 0;

  bool report_inline = false;
  const auto work = [&] {
    try {
      for (std::size_t i = next_point.fetch_add(1); i < points.size(); i = next_point.fetch_add(1)) {
        const DesignPoint& p = points[i];
        if (ctx.estimator == Estimator::native) {
          estimate_native_point(ctx, p, placements, &rows[i * per_point]);
          done.fetch_add(per_point, std::memory_order_relaxed);
          continue;
        }
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
      const std::lock_guard lock(state_mutex);
      if (!failure) {
        failure = std::current_exception();
      }
      next_point.store(points.size());
    }
    const std::lock_guard lock(state_mutex);
    if (workers_left > 0 && --workers_left == 0) {
      finished.notify_all();
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
    workers_left = threads;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back(work);
    }
    // The calling thread reports progress every 100 ms while the pool works, and returns as
    // soon as the last worker stops (not at the next tick).
    if (options.on_progress) {
      std::unique_lock lock(state_mutex);
      while (!finished.wait_for(lock, std::chrono::milliseconds(100),
                                [&] { return workers_left == 0; })) {
        lock.unlock();
        options.on_progress(SearchProgress{done.load(std::memory_order_relaxed), total});
        lock.lock();
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
