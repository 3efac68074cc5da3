#include "zerosearch/search/search.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "zerosearch/model/estimator_ops.hpp"
#include "zerosearch/search/partition_choice.hpp"
#include "zerosearch/search/search_steps.hpp"

namespace zerosearch {

bool same_estimate(const Estimate& a, const Estimate& b) noexcept {
  const auto same = [](double x, double y) {
    return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y);
  };
  return a.oom == b.oom && same(a.step_s, b.step_s) && same(a.pipeline_s, b.pipeline_s) &&
         same(a.dp_sync_s, b.dp_sync_s) && same(a.embedding_sync_s, b.embedding_sync_s) &&
         same(a.gpumem_gib, b.gpumem_gib) && same(a.price_per_step_usd, b.price_per_step_usd) &&
         same(a.train_cost_usd, b.train_cost_usd) && a.partition == b.partition &&
         a.native.slices == b.native.slices && a.native.peak_memory == b.native.peak_memory;
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

namespace search_steps {

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

} // namespace

/// What one worker keeps of a filtered search.
struct RowKeeper::Worker {
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
  /// Estimates left unfinished (PlacementGroup::pruned).
  std::uint64_t pruned = 0;
  /// Scratch: the distinct groups of the point taken last.
  std::vector<PlacementGroup> distinct;
};

namespace {

/// A filtered search's step for point `p`: counts its rows and keeps those `keep` selects in
/// `mine`. `candidates` are the point's distinct rows (keep.distinct) or its groups, whose
/// placements `group_of` gives; `base_key` is the point's first place in enumeration order.
void offer_rows(const RowFilter& keep, const DesignPoint& p, std::uint64_t base_key,
                const std::vector<PlacementGroup>& candidates,
                const std::vector<std::uint32_t>& group_of, RowKeeper::Worker& mine) {
  // Keeps the row in `heap` (a max-heap in rank order) when it is among the `limit` first.
  const auto offer_to = [&](std::vector<Keyed>& heap, std::size_t limit, const PlacementGroup& g,
                            int k, std::uint32_t count) {
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
  const auto offer = [&](const PlacementGroup& g, int k, std::uint32_t count) {
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
  for (const PlacementGroup& g : candidates) {
    mine.estimates += g.count;
    if (g.estimate.oom) {
      mine.oom += g.count;
    }
    if (g.pruned) {
      // Past every limit of prune_limits: it would be neither kept nor left out.
      mine.pruned += g.count;
      continue;
    }
    if (g.estimate.oom) {
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
      const PlacementGroup& g = candidates[group_of[k]];
      if (g.pruned) {
        continue;
      }
      if (!(keep.feasible_only && g.estimate.oom)) {
        offer(g, static_cast<int>(k), 1);
      } else if (keep.oom_top != 0) {
        offer_to(mine.oom_kept, keep.oom_top, g, static_cast<int>(k), 1);
      }
    }
  }
}

} // namespace

void merge_same_estimates(std::vector<PlacementGroup>& groups,
                          std::vector<PlacementGroup>& distinct) {
  distinct.clear();
  if (groups.size() == 1) {
    // One group (a point whose placements all give one estimate): nothing to merge.
    distinct.push_back(std::move(groups.front()));
    return;
  }
  std::unordered_multimap<std::size_t, std::uint32_t> by_hash;
  for (PlacementGroup& g : groups) {
    const std::size_t h = estimate_hash(g.estimate);
    const auto [lo, hi] = by_hash.equal_range(h);
    auto it = lo;
    while (it != hi && (distinct[it->second].pruned != g.pruned ||
                        !same_estimate(distinct[it->second].estimate, g.estimate))) {
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

std::vector<std::vector<std::size_t>> work_units(const EstimateContext& ctx,
                                                 const std::vector<DesignPoint>& points) {
  std::vector<std::vector<std::size_t>> units;
  const bool share = estimator_info(ctx.estimator).shares_pipelines;
  // Points with the same pipeline: by (tp, dp, pp, mbs), then checked in full.
  std::unordered_multimap<std::uint64_t, std::size_t> unit_of;
  // The native estimator's split-schedule points (pp > 1) of one configuration (every field
  // but the schedule equal: same_configuration) share their layer times, partitions and
  // stage costs (native_estimates): one unit per configuration.
  const bool configs = estimator_info(ctx.estimator).shares_configurations;
  // By key in an open-addressed table of (key, unit), grown by doubling (a hash map allocated
  // a node per configuration); a configuration is in one unit only, so the order in which
  // equal keys are probed does not matter. The slot: the top bits of key times an odd
  // constant (they depend on all of key's bits).
  constexpr std::size_t kEmpty = static_cast<std::size_t>(-1);
  std::vector<std::pair<std::uint64_t, std::size_t>> config_unit;
  std::size_t n_configs = 0;
  int config_shift = 64;
  const auto config_slot = [&](std::uint64_t key) {
    return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ULL) >> config_shift);
  };
  const auto grow_configs = [&] {
    std::vector<std::pair<std::uint64_t, std::size_t>> old(
        std::max<std::size_t>(64, 2 * config_unit.size()), {0, kEmpty});
    old.swap(config_unit);
    config_shift = 64 - std::countr_zero(config_unit.size());
    const std::size_t mask = config_unit.size() - 1;
    for (const auto& e : old) {
      if (e.second == kEmpty) continue;
      std::size_t slot = config_slot(e.first);
      while (config_unit[slot].second != kEmpty) slot = (slot + 1) & mask;
      config_unit[slot] = e;
    }
  };
  for (std::size_t i = 0; i < points.size(); ++i) {
    const DesignPoint& p = points[i];
    if (configs && is_split_schedule(p.schedule) && p.pp > 1) {
      DesignPoint q = p;
      q.schedule = Schedule::one_f_one_b;
      const std::uint64_t key = (static_cast<std::uint64_t>(q.tp) * 0x9e3779b1U) ^
                                (static_cast<std::uint64_t>(q.dp) << 16) ^
                                (static_cast<std::uint64_t>(q.pp) << 28) ^
                                (static_cast<std::uint64_t>(q.mbs) << 40) ^
                                (static_cast<std::uint64_t>(q.method) << 52) ^
                                (static_cast<std::uint64_t>(q.recompute) << 56) ^
                                (static_cast<std::uint64_t>(q.offload) << 60) ^
                                (static_cast<std::uint64_t>(q.cp) * 0x85ebca6bU) ^
                                (static_cast<std::uint64_t>(q.ep) * 0xc2b2ae35U) ^
                                (static_cast<std::uint64_t>(q.etp) << 8);
      if (2 * (n_configs + 1) > config_unit.size()) grow_configs();
      const std::size_t mask = config_unit.size() - 1;
      std::size_t slot = config_slot(key);
      while (config_unit[slot].second != kEmpty &&
             !(config_unit[slot].first == key &&
               same_configuration(points[units[config_unit[slot].second].front()], p))) {
        slot = (slot + 1) & mask;
      }
      if (config_unit[slot].second == kEmpty) {
        config_unit[slot] = {key, units.size()};
        ++n_configs;
        units.emplace_back().reserve(5); // one allocation for the split schedules there are
        units.back().push_back(i);
      } else {
        units[config_unit[slot].second].push_back(i);
      }
      continue;
    }
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
  // But the split schedules' points (simulated pass by pass) after all others: the rows kept
  // by then bound which of their simulations can be skipped (RowKeeper::prune_limits).
  const auto simulated = [&points](const std::vector<std::size_t>& unit) {
    const DesignPoint& p = points[unit.front()];
    return is_split_schedule(p.schedule) && p.pp > 1;
  };
  // Among equal costs, the points of one (schedule, pp, micro-batches) one after another:
  // they share a compiled order, which stays in the worker's cache (cached_pipe_graph).
  const auto order = [&points](const std::vector<std::size_t>& unit) {
    const DesignPoint& p = points[unit.front()];
    return std::tuple(p.pp, p.num_micro_batches, static_cast<int>(p.schedule));
  };
  // Sorted by these keys, computed once per unit (the same stable order as comparing the units).
  struct Key {
    bool simulated;
    std::uint64_t cost;
    std::tuple<int, int, int> order;
    std::size_t unit;
  };
  std::vector<Key> keys;
  keys.reserve(units.size());
  for (std::size_t u = 0; u < units.size(); ++u) {
    keys.push_back(Key{simulated(units[u]), cost(units[u]), order(units[u]), u});
  }
  std::stable_sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.simulated != b.simulated) return b.simulated;
    return a.cost != b.cost ? a.cost > b.cost : a.order < b.order;
  });
  std::vector<std::vector<std::size_t>> sorted;
  sorted.reserve(units.size());
  for (const Key& k : keys) sorted.push_back(std::move(units[k.unit]));
  return sorted;
}

namespace {
/// Sizes `out` for a unit of `n` points on `per_point` placements, its groups empty.
void start_unit(UnitEstimates& out, std::size_t n, std::size_t per_point) {
  out.groups.resize(std::max(out.groups.size(), n));
  for (std::size_t j = 0; j < n; ++j) {
    out.groups[j].clear();
  }
  out.group_of.resize(per_point);
}
} // namespace

void estimate_unit(NativeEstimator e, const EstimateContext& ctx,
                   const std::vector<DesignPoint>& points, const std::vector<std::size_t>& unit,
                   const PlacementSet& placements, OptimalMemo* /*shared_optimal*/,
                   UnitEstimates& out) {
  start_unit(out, unit.size(), placements.size());
  // A unit is one point, or the split-schedule points of one configuration (work_units),
  // which share the placement (it depends on tp, cp, dp and pp only) and, through
  // native_estimates, the layer times, partitions and stage costs.
  const DesignPoint& p = points[unit.front()];
  out.unit_points.clear();
  for (const std::size_t i : unit) out.unit_points.push_back(&points[i]);
  // The distinct placements' stages (stages_of), in buffers kept from earlier units: no
  // allocation once they are large enough.
  std::vector<StagesOf<NativeEstimator>>& seen = out.native_seen;
  std::size_t& n_seen = out.native_seen_n;
  n_seen = 0;
  StagesOf<NativeEstimator>& where = out.native_where;
  for (std::size_t k = 0; k < placements.size(); ++k) {
    placements.get(k, out.placement);
    stages_of_into(e, ctx, p, out.placement, where);
    const auto end = seen.begin() + static_cast<std::ptrdiff_t>(n_seen);
    const auto it = std::find(seen.begin(), end, where);
    if (it != end) {
      const auto g = static_cast<std::uint32_t>(it - seen.begin());
      out.group_of[k] = g;
      for (std::size_t j = 0; j < unit.size(); ++j) {
        ++out.groups[j][g].count;
      }
      continue;
    }
    out.group_of[k] = static_cast<std::uint32_t>(out.groups[0].size());
    if (unit.size() == 1 && k == 0 && out.keep_share != nullptr) {
      // A 1F1B point whose configuration's split schedules run later: what its estimate on
      // the first placement computes is kept for them (native_estimate_keeping, bit for bit
      // estimate_at's).
      bool pruned = false;
      out.groups[0].push_back(PlacementGroup{
          estimate_at_keeping(e, ctx, p, where, out.prune, pruned, *out.keep_share),
          static_cast<int>(k), 1, pruned});
    } else if (unit.size() == 1) {
      // A braced list evaluates in order: `pruned` is read after estimate_at set it.
      bool pruned = false;
      out.groups[0].push_back(PlacementGroup{estimate_at(e, ctx, p, where, out.prune, pruned),
                                             static_cast<int>(k), 1, pruned});
    } else {
      if (k == 0 && out.seed_share != nullptr) {
        // The same placement as the configuration's 1F1B point's first: its estimate's layer
        // times, partition, constants and stage cores seed these.
        estimates_at(e, ctx, out.unit_points, where, out.prune, out.native, out.seed_share);
      } else {
        estimates_at(e, ctx, out.unit_points, where, out.prune, out.native);
      }
      for (std::size_t j = 0; j < unit.size(); ++j) {
        const NativeEstimate& est = out.native[j];
        if (est.pruned) {
          // Only its OOM flag counts (offer_rows): the rest of the row is not made.
          Estimate bare;
          bare.oom = est.oom;
          bare.step_s = est.step_s;
          out.groups[j].push_back(PlacementGroup{std::move(bare), static_cast<int>(k), 1, true});
          continue;
        }
        out.groups[j].push_back(
            PlacementGroup{to_estimate(ctx, est), static_cast<int>(k), 1, est.pruned});
      }
    }
    if (n_seen == seen.size()) seen.emplace_back();
    std::swap(seen[n_seen], where); // `where` takes that entry's old buffers, rewritten next
    ++n_seen;
  }
}

void estimate_unit(OriginalEstimator e, const EstimateContext& ctx,
                   const std::vector<DesignPoint>& points, const std::vector<std::size_t>& unit,
                   const PlacementSet& placements, OptimalMemo* shared_optimal,
                   UnitEstimates& out) {
  start_unit(out, unit.size(), placements.size());
  std::vector<std::vector<PlacementGroup>>& groups = out.groups;
  const DesignPoint& first = points[unit.front()];
  const LayerCosts costs = layer_costs(ctx, first);
  // Placements with the same features get the same estimate: compute each once.
  std::unordered_map<PlacementFeatures, std::uint32_t, PlacementFeaturesHash> seen;
  // The point's memory table, shared by the searching partitioners, and the search's
  // optimal_partition results (`shared_optimal`, for points that pose the same problem).
  PartitionMemo memo(shared_optimal);
  for (std::size_t k = 0; k < placements.size(); ++k) {
    placements.get(k, out.placement);
    StagesOf<OriginalEstimator> features = stages_of(e, ctx, first, out.placement);
    const auto it = seen.find(features);
    if (it != seen.end()) {
      out.group_of[k] = it->second;
      for (std::size_t j = 0; j < unit.size(); ++j) {
        ++groups[j][it->second].count;
      }
      continue;
    }
    const auto g = static_cast<std::uint32_t>(groups[0].size());
    if (unit.size() == 1) {
      groups[0].push_back(PlacementGroup{choose_and_estimate(ctx, first, costs, features, &memo),
                                         static_cast<int>(k), 1});
    } else {
      const StepModel model = step_model(ctx, first, costs, features);
      const PartitionResult part = choose_partition(ctx, first, features.stage_gpu, model);
      const std::vector<double> ends = model.pipeline_ends(part.times);
      groups[0].push_back(
          PlacementGroup{evaluate_pipeline(ctx, first, model, features.stage_gpu, part, ends),
                         static_cast<int>(k), 1});
      for (std::size_t j = 1; j < unit.size(); ++j) {
        const DesignPoint& p = points[unit[j]];
        groups[j].push_back(PlacementGroup{evaluate_pipeline(ctx, p, step_model(ctx, p, costs, features),
                                                             features.stage_gpu, part, ends),
                                           static_cast<int>(k), 1});
      }
    }
    seen.emplace(std::move(features), g);
    out.group_of[k] = g;
  }
}

unsigned search_threads(unsigned requested, std::size_t units, std::size_t total) noexcept {
  unsigned threads = requested != 0 ? requested : std::thread::hardware_concurrency();
  threads = std::max(1U, std::min<unsigned>(threads, static_cast<unsigned>(units)));
  // Small searches finish before a thread would start; run them inline.
  if (total < 256) {
    threads = 1;
  }
  return threads;
}

void run_parallel(std::size_t units, unsigned threads, std::size_t total,
                  const std::function<void(const SearchProgress&)>& on_progress,
                  const std::function<std::size_t(std::size_t unit, unsigned worker)>& work) {
  threads = std::max(1U, threads);
  std::atomic<std::size_t> next_unit{0};
  std::atomic<std::size_t> done{0};
  std::exception_ptr failure;
  // Guards `failure` and `workers_left`; `finished` is signalled when the last worker stops.
  std::mutex state_mutex;
  std::condition_variable finished;
  unsigned workers_left = 0;
  const bool report_inline = threads == 1;

  const auto worker = [&](unsigned w) {
    try {
      for (std::size_t u = next_unit.fetch_add(1); u < units; u = next_unit.fetch_add(1)) {
        done.fetch_add(work(u, w), std::memory_order_relaxed);
        if (report_inline && on_progress && u % 16 == 0) {
          on_progress(SearchProgress{done.load(std::memory_order_relaxed), total});
        }
      }
    } catch (...) {
      const std::lock_guard lock(state_mutex);
      if (!failure) {
        failure = std::current_exception();
      }
      next_unit.store(units);
    }
    const std::lock_guard lock(state_mutex);
    if (workers_left > 0 && --workers_left == 0) {
      finished.notify_all();
    }
  };

  if (threads == 1) {
    worker(0);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    workers_left = threads;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back(worker, t);
    }
    // The calling thread reports progress every 100 ms while the pool works, and returns as
    // soon as the last worker stops (not at the next tick).
    if (on_progress) {
      std::unique_lock lock(state_mutex);
      while (!finished.wait_for(lock, std::chrono::milliseconds(100),
                                [&] { return workers_left == 0; })) {
        lock.unlock();
        on_progress(SearchProgress{done.load(std::memory_order_relaxed), total});
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
}

RowKeeper::RowKeeper(const RowFilter& keep, std::size_t points, std::size_t per_point,
                     unsigned workers)
    : keep_(keep), per_point_(per_point), total_(points * per_point),
      keep_all_(!keep.feasible_only && keep.top == 0), workers_(std::max(1U, workers)) {
  // Every row: one slot per row, or per point for distinct rows (written by whichever worker
  // takes the point, so the result does not depend on the thread count).
  if (keep_all_ && !keep_.distinct) {
    result_.rows.resize(total_);
  }
  distinct_rows_.resize(keep_all_ && keep_.distinct ? points : 0);
}

RowKeeper::~RowKeeper() = default;

void RowKeeper::take(unsigned worker, std::size_t i, const DesignPoint& p,
                     std::vector<PlacementGroup>& groups,
                     const std::vector<std::uint32_t>& group_of) {
  const std::uint64_t base_key = static_cast<std::uint64_t>(i) * per_point_;
  if (keep_all_ && !keep_.distinct) {
    for (std::size_t k = 0; k < per_point_; ++k) {
      ResultRow& row = result_.rows[base_key + k];
      row.point = p;
      row.placement = static_cast<int>(k);
      row.estimate = groups[group_of[k]].estimate;
    }
    return;
  }
  Worker& mine = workers_[worker];
  if (keep_.distinct) {
    merge_same_estimates(groups, mine.distinct);
  }
  if (keep_all_) {
    auto& out = distinct_rows_[i];
    for (const PlacementGroup& g : mine.distinct) {
      out.push_back(ResultRow{p, g.first, g.count, g.estimate});
    }
    return;
  }
  // A filtered search: count every row, keep the candidates.
  offer_rows(keep_, p, base_key, keep_.distinct ? mine.distinct : groups, group_of, mine);
  if (mine.left_out.size() > 2 * mine.left_out_compacted + 4096) {
    // Times at or past this worker's last kept row cannot rank before a kept row.
    const bool full = keep_.top != 0 && mine.kept.size() == keep_.top;
    compact(mine.left_out, full ? mine.kept.front().row.estimate.step_s : HUGE_VAL);
    mine.left_out_compacted = mine.left_out.size();
  }
}

bool RowKeeper::can_prune() const noexcept {
  return !(keep_all_ || keep_.top == 0 || keep_.front || keep_.points);
}

NativePruning RowKeeper::prune_limits(unsigned worker) const {
  if (!can_prune()) {
    return {};
  }
  const Worker& mine = workers_[worker];
  if (mine.kept.size() < keep_.top) {
    return {};
  }
  // Rows past the worker's last kept row rank after `top` rows (the search's last kept row is
  // no later), and OOM rows left out past it are dropped from the ranks (compact).
  NativePruning limits;
  limits.fits_above = mine.kept.front().row.estimate.step_s;
  limits.oom_above = limits.fits_above;
  if (keep_.oom_top != 0) {
    limits.oom_above = mine.oom_kept.size() < keep_.oom_top
                           ? HUGE_VAL
                           : std::max(limits.oom_above, mine.oom_kept.front().row.estimate.step_s);
  }
  return limits;
}

SearchResult RowKeeper::finish() {
  SearchResult result = std::move(result_);
  result_ = {};
  const RowFilter& keep = keep_;
  if (keep_all_) {
    result.estimates = total_;
    if (keep.distinct) {
      for (auto& rows : distinct_rows_) {
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
    return result;
  }
  // Merge the workers: the `top` first rows of all in rank order, then enumeration order.
  std::vector<Keyed> kept;
  std::vector<Keyed> oom_kept;
  std::vector<Keyed> front_offers;
  for (Worker& w : workers_) {
    result.points.insert(result.points.end(), w.points.begin(), w.points.end());
    front_offers.insert(front_offers.end(), std::make_move_iterator(w.front.rows().begin()),
                        std::make_move_iterator(w.front.rows().end()));
    result.estimates += w.estimates;
    result.oom += w.oom;
    result.pruned += w.pruned;
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
  std::sort(kept.begin(), kept.end(), [](const Keyed& a, const Keyed& b) { return a.key < b.key; });
  std::sort(result.points.begin(), result.points.end(),
            [](const RowPoint& a, const RowPoint& b) { return a.key < b.key; });
  result.rows.reserve(kept.size());
  for (Keyed& k : kept) {
    result.rows.push_back(std::move(k.row));
  }
  return result;
}

} // namespace search_steps

namespace search_steps {
namespace {

/// Whether `unit` holds split-schedule points (work_units puts them last).
bool simulated_unit(const std::vector<DesignPoint>& points, const std::vector<std::size_t>& unit) {
  const DesignPoint& p = points[unit.front()];
  return is_split_schedule(p.schedule) && p.pp > 1;
}

/// Sorts units[from, end) (split-schedule units) by the fastest row of their configuration's
/// other points, `fastest` per point (HUGE_VAL: none, last); stable, so equal keys keep
/// work_units' order.
/// With `seed_of` (sized to the points), also the configuration's 1F1B point (one chunk per
/// rank) for each split unit's first point, where it has rows (else left as it was).
void order_simulated_units(const std::vector<DesignPoint>& points,
                           std::vector<std::vector<std::size_t>>& units, std::size_t from,
                           const std::vector<double>& fastest, std::vector<std::size_t>* seed_of) {
  if (from >= units.size()) return;
  // The fastest row of each configuration's other points (1F1B, interleaved), by a hash of
  // the fields same_configuration compares, then checked in full.
  const auto hash = [](const DesignPoint& p) {
    return (static_cast<std::uint64_t>(p.tp) * 0x9e3779b1U) ^
           (static_cast<std::uint64_t>(p.dp) << 16) ^ (static_cast<std::uint64_t>(p.pp) << 28) ^
           (static_cast<std::uint64_t>(p.mbs) << 40) ^
           (static_cast<std::uint64_t>(p.method) << 52) ^
           (static_cast<std::uint64_t>(p.recompute) << 56) ^
           (static_cast<std::uint64_t>(p.offload) << 60) ^
           (static_cast<std::uint64_t>(p.cp) * 0x85ebca6bU) ^
           (static_cast<std::uint64_t>(p.ep) * 0xc2b2ae35U) ^ (static_cast<std::uint64_t>(p.etp) << 8);
  };
  // In one sorted array (one allocation; a hash map allocated a node per point): the order
  // among equal hashes does not matter (a minimum, and one 1F1B point per configuration).
  std::vector<std::pair<std::uint64_t, std::size_t>> others;
  for (std::size_t u = 0; u < from; ++u) {
    for (const std::size_t i : units[u]) {
      if (fastest[i] != HUGE_VAL) others.emplace_back(hash(points[i]), i);
    }
  }
  std::sort(others.begin(), others.end());
  std::vector<std::pair<double, std::size_t>> keyed;
  keyed.reserve(units.size() - from);
  for (std::size_t u = from; u < units.size(); ++u) {
    const DesignPoint& p = points[units[u].front()];
    double key = HUGE_VAL;
    const std::uint64_t h = hash(p);
    auto it = std::lower_bound(others.begin(), others.end(),
                               std::pair<std::uint64_t, std::size_t>(h, 0));
    for (; it != others.end() && it->first == h; ++it) {
      const DesignPoint& q = points[it->second];
      if (same_configuration(q, p)) {
        key = std::min(key, fastest[it->second]);
        if (seed_of != nullptr && q.schedule == Schedule::one_f_one_b && q.virtual_stages == 1) {
          (*seed_of)[units[u].front()] = it->second;
        }
      }
    }
    keyed.emplace_back(key, u - from);
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::vector<std::size_t>> sorted;
  sorted.reserve(keyed.size());
  for (const auto& k : keyed) sorted.push_back(std::move(units[from + k.second]));
  std::move(sorted.begin(), sorted.end(), units.begin() + static_cast<std::ptrdiff_t>(from));
}

} // namespace
} // namespace search_steps

SearchResult search(const EstimateContext& ctx, const std::vector<DesignPoint>& points,
                    const PlacementSet& placements, const SearchOptions& options) {
  using namespace search_steps;
  const std::size_t per_point = placements.size();
  const std::size_t total = points.size() * per_point;
  // 1. The work units: points whose pipeline the estimator shares go together.
  std::vector<std::vector<std::size_t>> units = work_units(ctx, points);
  const unsigned threads = search_threads(options.threads, units.size(), total);
  // 4. The row policy, fed by the workers.
  RowKeeper keeper(options.keep, points.size(), per_point, threads);
  // optimal_partition's results, for the design points that pose the same pipeline problem
  // (ZeRO 2 and 3 with one replica): exact, whichever worker computes them first.
  OptimalMemo optimal_memo;
  OptimalMemo* const shared_optimal =
      ctx.partition_method == PartitionMethod::optimal ? &optimal_memo : nullptr;
  // Under pruning, the split schedules' units (work_units puts them last) run after the
  // others have finished, fastest configuration first (order_simulated_units), so that the
  // limits of prune_limits are tight before most of them run. The result does not depend on
  // the order.
  std::size_t split_from = units.size();
  if (options.prune && keeper.can_prune()) {
    while (split_from > 0 && simulated_unit(points, units[split_from - 1])) --split_from;
  }
  const bool two_phases = split_from > 0 && split_from < units.size();
  // Per point of the first phase: its fastest row (the key of order_simulated_units).
  std::vector<double> fastest(two_phases ? points.size() : 0, HUGE_VAL);
  // The native estimator's configurations: what a 1F1B point's estimate computed that its
  // split schedules' (run in the second phase) would compute again (NativeConfigShare), per
  // 1F1B point, and the 1F1B point of each split unit's first point.
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  const bool share_configs = two_phases && estimator_info(ctx.estimator).shares_configurations;
  std::vector<NativeConfigSharePtr> shares(share_configs ? points.size() : 0);
  std::vector<std::size_t> seed_of(share_configs ? points.size() : 0, kNone);
  bool second_phase = false;
  // 2 and 3. Each unit's estimates, by the estimator's own code (chosen once here), on the
  // worker threads.
  visit_estimator(ctx.estimator, [&](auto estimator) {
    std::vector<UnitEstimates> scratch(threads);
    std::size_t offset = 0; // the units of the phases before, into `units`
    std::size_t done_before = 0;
    const auto phase = [&](std::size_t n) {
      std::function<void(const SearchProgress&)> progress;
      if (options.on_progress) {
        progress = [&](const SearchProgress& at) {
          options.on_progress(SearchProgress{done_before + at.done, total});
        };
      }
      run_parallel(n, threads, total, progress,
                   [&](std::size_t u, unsigned w) -> std::size_t {
                     const std::vector<std::size_t>& unit = units[offset + u];
                     UnitEstimates& mine = scratch[w];
                     mine.prune = options.prune ? keeper.prune_limits(w) : NativePruning{};
                     mine.keep_share = nullptr;
                     mine.seed_share = nullptr;
                     if (share_configs) {
                       const DesignPoint& p = points[unit.front()];
                       if (!second_phase && unit.size() == 1 && p.pp > 1 &&
                           p.schedule == Schedule::one_f_one_b && p.virtual_stages == 1) {
                         mine.keep_share = &shares[unit.front()];
                       } else if (second_phase && seed_of[unit.front()] != kNone) {
                         mine.seed_share = shares[seed_of[unit.front()]].get();
                       }
                     }
                     estimate_unit(estimator, ctx, points, unit, placements, shared_optimal, mine);
                     if (mine.seed_share != nullptr) shares[seed_of[unit.front()]].reset();
                     for (std::size_t j = 0; j < unit.size(); ++j) {
                       if (!fastest.empty()) {
                         for (const PlacementGroup& g : mine.groups[j]) {
                           fastest[unit[j]] = std::min(fastest[unit[j]], g.estimate.step_s);
                         }
                       }
                       keeper.take(w, unit[j], points[unit[j]], mine.groups[j], mine.group_of);
                     }
                     return per_point * unit.size();
                   });
      offset += n;
      for (std::size_t u = offset - n; u < offset; ++u) done_before += per_point * units[u].size();
    };
    if (two_phases) {
      phase(split_from);
      order_simulated_units(points, units, split_from, fastest, share_configs ? &seed_of : nullptr);
      fastest.clear();
      second_phase = true;
      phase(units.size() - split_from);
    } else {
      phase(units.size());
    }
  });
  SearchResult result = keeper.finish();
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
