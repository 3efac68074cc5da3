#include "zerosearch/search/search.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "zerosearch/search/partition_choice.hpp"

namespace zerosearch {

bool same_estimate(const Estimate& a, const Estimate& b) noexcept {
  const auto same = [](double x, double y) {
    return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y);
  };
  return a.oom == b.oom && same(a.step_s, b.step_s) && same(a.pipeline_s, b.pipeline_s) &&
         same(a.dp_sync_s, b.dp_sync_s) && same(a.embedding_sync_s, b.embedding_sync_s) &&
         same(a.gpumem_gib, b.gpumem_gib) && same(a.price_per_step_usd, b.price_per_step_usd) &&
         same(a.train_cost_usd, b.train_cost_usd) && a.partition == b.partition &&
         a.slices == b.slices && a.peak_memory == b.peak_memory;
}

std::size_t estimate_hash(const Estimate& e) noexcept {
  std::uint64_t h = e.oom ? 0x9e3779b97f4a7c15ULL : 0;
  const auto mix = [&h](std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  for (const double v : {e.step_s, e.pipeline_s, e.dp_sync_s, e.embedding_sync_s, e.gpumem_gib,
                         e.price_per_step_usd, e.train_cost_usd}) {
    mix(std::bit_cast<std::uint64_t>(v));
  }
  for (const int v : e.partition) {
    mix(static_cast<std::uint64_t>(v));
  }
  return static_cast<std::size_t>(h);
}

namespace {

/// A kept row and its place in enumeration order (point * placements + placement).
struct Keyed {
  std::uint64_t key = 0;
  ResultRow row;
};

/// Rank order: step time, then enumeration order (the stable sort of rank_results).
bool before(double a_s, std::uint64_t a_key, double b_s, std::uint64_t b_key) noexcept {
  return a_s < b_s || (!(b_s < a_s) && a_key < b_key);
}

bool before(const Keyed& a, const Keyed& b) noexcept {
  return before(a.row.estimate.step_s, a.key, b.row.estimate.step_s, b.key);
}

/// Sorts by step time and merges equal times; drops times >= `limit`.
void compact(std::vector<LeftOutTime>& times, double limit) {
  std::sort(times.begin(), times.end(),
            [](const LeftOutTime& a, const LeftOutTime& b) { return a.step_s < b.step_s; });
  std::size_t n = 0;
  for (const LeftOutTime& t : times) {
    if (!(t.step_s < limit)) {
      break;
    }
    if (n > 0 && times[n - 1].step_s == t.step_s) {
      times[n - 1].rows += t.rows;
    } else {
      times[n++] = t;
    }
  }
  times.resize(n);
}

/// The rows that fit and that no other offered row beats on both step time and price per
/// step (RowFilter::front), by step time. No row of it beats another, so prices fall as step
/// times rise, and rows of equal step time have equal prices.
class FrontRows {
public:
  /// Whether a row of step time `s` and price `p` would be on the front: no row has
  /// (step, price) <= (s, p) with one of them smaller.
  [[nodiscard]] bool admits(double s, double p) const noexcept {
    const auto it = std::upper_bound(rows_.begin(), rows_.end(), s, [](double t, const Keyed& r) {
      return t < r.row.estimate.step_s;
    });
    if (it == rows_.begin()) {
      return true;
    }
    // The cheapest row at most as slow: the last one.
    const Estimate& q = std::prev(it)->row.estimate;
    return p < q.price_per_step_usd || (p == q.price_per_step_usd && q.step_s == s);
  }

  /// Adds a row that admits() accepts and drops the rows it beats.
  void add(Keyed k) {
    const double s = k.row.estimate.step_s;
    const double p = k.row.estimate.price_per_step_usd;
    auto lo = std::lower_bound(rows_.begin(), rows_.end(), s, [](const Keyed& r, double t) {
      return r.row.estimate.step_s < t;
    });
    auto mid = lo;
    while (mid != rows_.end() && mid->row.estimate.step_s == s) {
      ++mid;
    }
    // Rows of the same step time share one price: dearer ones are beaten, equal ones stay.
    if (lo != mid && lo->row.estimate.price_per_step_usd > p) {
      mid = rows_.erase(lo, mid);
    }
    // Slower rows are beaten when they are not cheaper.
    auto hi = mid;
    while (hi != rows_.end() && !(hi->row.estimate.price_per_step_usd < p)) {
      ++hi;
    }
    mid = rows_.erase(mid, hi);
    rows_.insert(mid, std::move(k));
  }

  /// Offers a row: kept when on the front.
  void offer(Keyed k) {
    if (admits(k.row.estimate.step_s, k.row.estimate.price_per_step_usd)) {
      add(std::move(k));
    }
  }

  [[nodiscard]] std::vector<Keyed>& rows() noexcept { return rows_; }

private:
  std::vector<Keyed> rows_;
};

/// What one worker keeps of a filtered search.
struct WorkerRows {
  /// With top: a max-heap in rank order (front: the last kept row); without: every kept row.
  std::vector<Keyed> kept;
  /// With RowFilter::front: the front of the rows offered to this worker.
  FrontRows front;
  /// With RowFilter::points: the figures of the rows that fit offered to this worker.
  std::vector<RowPoint> points;
  /// With RowFilter::oom_top: the fastest OOM rows, a max-heap in rank order.
  std::vector<Keyed> oom_kept;
  std::vector<LeftOutTime> left_out;
  std::size_t left_out_compacted = 0;
  std::uint64_t estimates = 0;
  std::uint64_t oom = 0;
};

/// One estimate of a design point and the placements that give it.
struct Group {
  Estimate estimate;
  int first = 0;
  std::uint32_t count = 0;
};

/// The native estimator's groups of one design point: placements whose stages run on the
/// same node types with the same node crossings share an estimate.
void native_groups(const EstimateContext& ctx, const DesignPoint& p, const PlacementSet& placements,
                   Placement& placement, std::vector<Group>& groups,
                   std::vector<std::uint32_t>& group_of) {
  const NativeContext& n = *ctx.native;
  std::vector<NativePlacement> seen;
  for (std::size_t k = 0; k < placements.size(); ++k) {
    placements.get(k, placement);
    NativePlacement where = native_placement(n, p, placement);
    const auto it = std::find(seen.begin(), seen.end(), where);
    if (it != seen.end()) {
      const auto g = static_cast<std::uint32_t>(it - seen.begin());
      group_of[k] = g;
      ++groups[g].count;
      continue;
    }
    group_of[k] = static_cast<std::uint32_t>(groups.size());
    groups.push_back(Group{to_estimate(ctx, native_estimate(n, p, where)), static_cast<int>(k), 1});
    seen.push_back(std::move(where));
  }
}

/// Merges groups of different features that still give the same estimate into `distinct`, the
/// first placement standing for all.
void merge_same_estimates(std::vector<Group>& groups, std::vector<Group>& distinct) {
  distinct.clear();
  std::unordered_multimap<std::size_t, std::uint32_t> by_hash;
  for (Group& g : groups) {
    const std::size_t h = estimate_hash(g.estimate);
    const auto [lo, hi] = by_hash.equal_range(h);
    auto it = lo;
    while (it != hi && !same_estimate(distinct[it->second].estimate, g.estimate)) {
      ++it;
    }
    if (it == hi) {
      by_hash.emplace(h, static_cast<std::uint32_t>(distinct.size()));
      distinct.push_back(std::move(g));
    } else {
      distinct[it->second].count += g.count;
    }
  }
}

/// A filtered search's step for point `p`: counts its rows and keeps those `keep` selects in
/// `mine`. `candidates` are the point's distinct rows (keep.distinct) or its groups, whose
/// placements `group_of` gives; `base_key` is the point's first place in enumeration order.
void offer_rows(const RowFilter& keep, const DesignPoint& p, std::uint64_t base_key,
                const std::vector<Group>& candidates, const std::vector<std::uint32_t>& group_of,
                WorkerRows& mine) {
  // Keeps the row in `heap` (a max-heap in rank order) when it is among the `limit` first.
  const auto offer_to = [&](std::vector<Keyed>& heap, std::size_t limit, const Group& g, int k,
                            std::uint32_t count) {
    const std::uint64_t key = base_key + static_cast<std::uint64_t>(k);
    if (limit == 0) {
      heap.push_back(Keyed{key, ResultRow{p, k, count, g.estimate}});
      return;
    }
    if (heap.size() == limit) {
      const Keyed& last = heap.front();
      if (!before(g.estimate.step_s, key, last.row.estimate.step_s, last.key)) {
        return;
      }
      std::pop_heap(heap.begin(), heap.end(),
                    [](const Keyed& a, const Keyed& b) { return before(a, b); });
      heap.back() = Keyed{key, ResultRow{p, k, count, g.estimate}};
    } else {
      heap.push_back(Keyed{key, ResultRow{p, k, count, g.estimate}});
    }
    std::push_heap(heap.begin(), heap.end(),
                   [](const Keyed& a, const Keyed& b) { return before(a, b); });
  };
  const auto offer = [&](const Group& g, int k, std::uint32_t count) {
    offer_to(mine.kept, keep.top, g, k, count);
    if (keep.oom_top != 0 && g.estimate.oom) {
      offer_to(mine.oom_kept, keep.oom_top, g, k, count);
    }
    if (keep.points && !g.estimate.oom) {
      mine.points.push_back(RowPoint{g.estimate.step_s, g.estimate.price_per_step_usd,
                                     base_key + static_cast<std::uint64_t>(k)});
    }
    if (keep.front && !g.estimate.oom &&
        mine.front.admits(g.estimate.step_s, g.estimate.price_per_step_usd)) {
      mine.front.add(Keyed{base_key + static_cast<std::uint64_t>(k),
                           ResultRow{p, k, count, g.estimate}});
    }
  };
  for (const Group& g : candidates) {
    mine.estimates += g.count;
    if (g.estimate.oom) {
      mine.oom += g.count;
      if (keep.feasible_only) {
        mine.left_out.push_back(LeftOutTime{g.estimate.step_s, g.count});
        if (keep.distinct && keep.oom_top != 0) {
          offer_to(mine.oom_kept, keep.oom_top, g, g.first, g.count);
        }
        continue;
      }
    }
    if (keep.distinct) {
      offer(g, g.first, g.count);
    }
  }
  if (!keep.distinct) {
    for (std::size_t k = 0; k < group_of.size(); ++k) {
      const Group& g = candidates[group_of[k]];
      if (!(keep.feasible_only && g.estimate.oom)) {
        offer(g, static_cast<int>(k), 1);
      } else if (keep.oom_top != 0) {
        offer_to(mine.oom_kept, keep.oom_top, g, static_cast<int>(k), 1);
      }
    }
  }
}

/// The search's work units (see search()): the points the zerosearch estimator gives the same
/// pipeline on every placement (same_pipeline) when the partition is minmax's, which does not
/// depend on the data-parallel method; each other point alone. Results do not depend on the
/// order in which the workers take the units.
std::vector<std::vector<std::size_t>> pipeline_units(const EstimateContext& ctx,
                                                     const std::vector<DesignPoint>& points) {
  std::vector<std::vector<std::size_t>> units;
  const bool share = ctx.estimator == Estimator::zerosearch;
  // Points with the same pipeline: by (tp, dp, pp, mbs), then checked in full.
  std::unordered_multimap<std::uint64_t, std::size_t> unit_of;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const DesignPoint& p = points[i];
    if (!share || (ctx.partition_method != PartitionMethod::minmax && p.pp != 1)) {
      units.push_back({i});
      continue;
    }
    const std::uint64_t key = (static_cast<std::uint64_t>(p.tp) * 0x9e3779b1U) ^
                              (static_cast<std::uint64_t>(p.dp) << 20) ^
                              (static_cast<std::uint64_t>(p.pp) << 40) ^
                              (static_cast<std::uint64_t>(p.mbs) << 52);
    const auto [lo, hi] = unit_of.equal_range(key);
    auto it = lo;
    while (it != hi && !same_pipeline(points[units[it->second].front()], p)) {
      ++it;
    }
    if (it == hi) {
      unit_of.emplace(key, units.size());
      units.push_back({i});
    } else {
      units[it->second].push_back(i);
    }
  }
  // Longest first, so that no worker is left with a long unit at the end: a unit's time grows
  // with its 1F1B simulations (pp * m passes each) and placement features (pp stages each).
  const auto cost = [&points](const std::vector<std::size_t>& unit) {
    const DesignPoint& p = points[unit.front()];
    return static_cast<std::uint64_t>(p.pp) *
           static_cast<std::uint64_t>(p.num_micro_batches + p.pp);
  };
  std::stable_sort(units.begin(), units.end(),
                   [&cost](const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
                     return cost(a) > cost(b);
                   });
  return units;
}

/// The zerosearch estimator's groups of each point of `unit`: placements with the same
/// features share an estimate. The points of a unit share the layer costs, the features, the
/// chosen partition and the pipeline's stage ends of each placement (pipeline_units), so
/// those are computed once; `groups[j]` gets point unit[j]'s estimates, and group_of maps each
/// placement to its group (the same index in every point).
void unit_estimates(const EstimateContext& ctx, const std::vector<DesignPoint>& points,
                    const std::vector<std::size_t>& unit, const PlacementSet& placements,
                    OptimalMemo* shared_optimal, Placement& placement,
                    std::vector<std::vector<Group>>& groups, std::vector<std::uint32_t>& group_of) {
  const DesignPoint& first = points[unit.front()];
  const LayerCosts costs = layer_costs(ctx, first);
  // Placements with the same features get the same estimate: compute each once.
  std::unordered_map<PlacementFeatures, std::uint32_t, PlacementFeaturesHash> seen;
  // The point's memory table, shared by the searching partitioners, and the search's
  // optimal_partition results (`shared_optimal`, for points that pose the same problem).
  PartitionMemo memo(shared_optimal);
  for (std::size_t k = 0; k < placements.size(); ++k) {
    placements.get(k, placement);
    PlacementFeatures features = placement_features(ctx, first, placement);
    const auto it = seen.find(features);
    if (it != seen.end()) {
      group_of[k] = it->second;
      for (std::size_t j = 0; j < unit.size(); ++j) {
        ++groups[j][it->second].count;
      }
      continue;
    }
    const auto g = static_cast<std::uint32_t>(groups[0].size());
    if (unit.size() == 1) {
      groups[0].push_back(Group{choose_and_estimate(ctx, first, costs, features, &memo),
                                static_cast<int>(k), 1});
    } else {
      const StepModel model = step_model(ctx, first, costs, features);
      const PartitionResult part = choose_partition(ctx, first, features.stage_gpu, model);
      const std::vector<double> ends = model.pipeline_ends(part.times);
      groups[0].push_back(Group{evaluate_pipeline(ctx, first, model, features.stage_gpu, part, ends),
                                static_cast<int>(k), 1});
      for (std::size_t j = 1; j < unit.size(); ++j) {
        const DesignPoint& p = points[unit[j]];
        groups[j].push_back(Group{evaluate_pipeline(ctx, p, step_model(ctx, p, costs, features),
                                                    features.stage_gpu, part, ends),
                                  static_cast<int>(k), 1});
      }
    }
    seen.emplace(std::move(features), g);
    group_of[k] = g;
  }
}
} // namespace

SearchResult search(const EstimateContext& ctx, const std::vector<DesignPoint>& points,
                    const PlacementSet& placements, const SearchOptions& options) {
  const RowFilter& keep = options.keep;
  const bool keep_all = !keep.feasible_only && keep.top == 0;
  const std::size_t per_point = placements.size();
  const std::size_t total = points.size() * per_point;
  SearchResult result;
  // Every row: one slot per row, or per point for distinct rows (written by whichever worker
  // takes the point, so the result does not depend on the thread count).
  if (keep_all && !keep.distinct) {
    result.rows.resize(total);
  }
  std::vector<std::vector<ResultRow>> distinct_rows(keep_all && keep.distinct ? points.size() : 0);

  // The work units: points the zerosearch estimator gives the same pipeline (same_pipeline)
  // under minmax go together, so that each placement's partition and 1F1B simulation are
  // computed once for all of them; every other point is a unit of its own.
  const std::vector<std::vector<std::size_t>> units = pipeline_units(ctx, points);

  unsigned threads = options.threads != 0 ? options.threads : std::thread::hardware_concurrency();
  threads = std::max(1U, std::min<unsigned>(threads, static_cast<unsigned>(units.size())));
  // Small searches finish before a thread would start; run them inline.
  if (total < 256) {
    threads = 1;
  }
  std::vector<WorkerRows> workers(threads);

  std::atomic<std::size_t> next_unit{0};
  std::atomic<std::size_t> done{0};
  std::exception_ptr failure;
  // Guards `failure` and `workers_left`; `finished` is signalled when the last worker stops.
  std::mutex state_mutex;
  std::condition_variable finished;
  unsigned workers_left = 0;

  // optimal_partition's results, for the design points that pose the same pipeline problem
  // (ZeRO 2 and 3 with one replica): exact, whichever worker computes them first.
  OptimalMemo optimal_memo;
  OptimalMemo* const shared_optimal =
      ctx.partition_method == PartitionMethod::optimal ? &optimal_memo : nullptr;

  bool report_inline = false;
  const auto work = [&](WorkerRows& mine) {
    try {
      Placement placement;
      // Per point of the unit: its groups; placements map to the same group in every point.
      std::vector<std::vector<Group>> unit_groups;
      std::vector<std::uint32_t> group_of(per_point);
      std::vector<std::uint32_t> distinct_of;
      std::vector<Group> distinct;
      for (std::size_t u = next_unit.fetch_add(1); u < units.size(); u = next_unit.fetch_add(1)) {
        const std::vector<std::size_t>& unit = units[u];
        unit_groups.resize(std::max(unit_groups.size(), unit.size()));
        for (std::size_t j = 0; j < unit.size(); ++j) {
          unit_groups[j].clear();
        }
        if (ctx.estimator == Estimator::native) {
          native_groups(ctx, points[unit[0]], placements, placement, unit_groups[0], group_of);
        } else {
          unit_estimates(ctx, points, unit, placements, shared_optimal, placement, unit_groups,
                         group_of);
        }
        for (std::size_t j = 0; j < unit.size(); ++j) {
          const std::size_t i = unit[j];
          const DesignPoint& p = points[i];
          std::vector<Group>& groups = unit_groups[j];
          const std::uint64_t base_key = static_cast<std::uint64_t>(i) * per_point;
          if (keep_all && !keep.distinct) {
            for (std::size_t k = 0; k < per_point; ++k) {
              ResultRow& row = result.rows[base_key + k];
              row.point = p;
              row.placement = static_cast<int>(k);
              row.estimate = groups[group_of[k]].estimate;
            }
          } else {
            if (keep.distinct) {
              merge_same_estimates(groups, distinct);
            }
            if (keep_all) {
              auto& out = distinct_rows[i];
              for (const Group& g : distinct) {
                out.push_back(ResultRow{p, g.first, g.count, g.estimate});
              }
            } else {
              // A filtered search: count every row, keep the candidates.
              offer_rows(keep, p, base_key, keep.distinct ? distinct : groups, group_of, mine);
              if (mine.left_out.size() > 2 * mine.left_out_compacted + 4096) {
                // Times at or past this worker's last kept row cannot rank before a kept row.
                const bool full = keep.top != 0 && mine.kept.size() == keep.top;
                compact(mine.left_out, full ? mine.kept.front().row.estimate.step_s : HUGE_VAL);
                mine.left_out_compacted = mine.left_out.size();
              }
            }
          }
        }
        done.fetch_add(per_point * unit.size(), std::memory_order_relaxed);
        if (report_inline && options.on_progress && u % 16 == 0) {
          options.on_progress(SearchProgress{done.load(std::memory_order_relaxed), total});
        }
      }
    } catch (...) {
      const std::lock_guard lock(state_mutex);
      if (!failure) {
        failure = std::current_exception();
      }
      next_unit.store(units.size());
    }
    const std::lock_guard lock(state_mutex);
    if (workers_left > 0 && --workers_left == 0) {
      finished.notify_all();
    }
  };

  if (threads == 1) {
    report_inline = true;
    work(workers[0]);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    workers_left = threads;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back(work, std::ref(workers[t]));
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

  if (keep_all) {
    result.estimates = total;
    if (keep.distinct) {
      for (auto& rows : distinct_rows) {
        result.rows.insert(result.rows.end(), std::make_move_iterator(rows.begin()),
                           std::make_move_iterator(rows.end()));
        rows = {};
      }
    }
    for (const ResultRow& r : result.rows) {
      result.oom += r.estimate.oom ? r.placements : 0;
    }
    if (keep.points) {
      // Every row is here, in enumeration order: the key keeps that order.
      for (std::size_t i = 0; i < result.rows.size(); ++i) {
        const Estimate& e = result.rows[i].estimate;
        if (!e.oom) {
          result.points.push_back(
              RowPoint{e.step_s, e.price_per_step_usd, static_cast<std::uint64_t>(i)});
        }
      }
    }
  } else {
    // Merge the workers: the `top` first rows of all in rank order, then enumeration order.
    std::vector<Keyed> kept;
    std::vector<Keyed> oom_kept;
    std::vector<Keyed> front_offers;
    for (WorkerRows& w : workers) {
      result.points.insert(result.points.end(), w.points.begin(), w.points.end());
      front_offers.insert(front_offers.end(), std::make_move_iterator(w.front.rows().begin()),
                          std::make_move_iterator(w.front.rows().end()));
      result.estimates += w.estimates;
      result.oom += w.oom;
      kept.insert(kept.end(), std::make_move_iterator(w.kept.begin()),
                  std::make_move_iterator(w.kept.end()));
      oom_kept.insert(oom_kept.end(), std::make_move_iterator(w.oom_kept.begin()),
                      std::make_move_iterator(w.oom_kept.end()));
      result.left_out.insert(result.left_out.end(), w.left_out.begin(), w.left_out.end());
      w = {};
    }
    if (keep.top != 0 && kept.size() > keep.top) {
      std::nth_element(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(keep.top - 1),
                       kept.end(), [](const Keyed& a, const Keyed& b) { return before(a, b); });
      kept.resize(keep.top);
    }
    std::sort(oom_kept.begin(), oom_kept.end(),
              [](const Keyed& a, const Keyed& b) { return before(a, b); });
    oom_kept.resize(std::min(oom_kept.size(), keep.oom_top));
    result.oom_rows.reserve(oom_kept.size());
    for (Keyed& k : oom_kept) {
      result.oom_rows.push_back(std::move(k.row));
    }
    double last_kept_s = -HUGE_VAL;
    for (const Keyed& k : kept) {
      last_kept_s = std::max(last_kept_s, k.row.estimate.step_s);
    }
    // Only left-out times below the last kept row's can rank before a kept row.
    compact(result.left_out, last_kept_s);
    // The front of all workers' fronts, and its rows that the fields above did not keep.
    FrontRows front;
    for (Keyed& k : front_offers) {
      front.offer(std::move(k));
    }
    if (!front.rows().empty()) {
      std::vector<std::uint64_t> kept_keys;
      kept_keys.reserve(kept.size());
      for (const Keyed& k : kept) {
        kept_keys.push_back(k.key);
      }
      std::sort(kept_keys.begin(), kept_keys.end());
      for (Keyed& k : front.rows()) {
        if (!std::binary_search(kept_keys.begin(), kept_keys.end(), k.key)) {
          kept.push_back(std::move(k));
        }
      }
    }
    std::sort(kept.begin(), kept.end(),
              [](const Keyed& a, const Keyed& b) { return a.key < b.key; });
    std::sort(result.points.begin(), result.points.end(),
              [](const RowPoint& a, const RowPoint& b) { return a.key < b.key; });
    result.rows.reserve(kept.size());
    for (Keyed& k : kept) {
      result.rows.push_back(std::move(k.row));
    }
  }
  if (options.on_progress) {
    options.on_progress(SearchProgress{total, total});
  }
  return result;
}

std::vector<ResultRow> run_search(const EstimateContext& ctx, const std::vector<DesignPoint>& points,
                                  const PlacementSet& placements, const SearchOptions& options) {
  SearchOptions all = options;
  all.keep = RowFilter{};
  return search(ctx, points, placements, all).rows;
}

} // namespace zerosearch
