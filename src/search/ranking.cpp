#include "zerosearch/search/ranking.hpp"

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace zerosearch {

std::vector<RankedRow> rank_results(const std::vector<RunResult>& runs) {
  std::vector<RankedRow> out;
  std::size_t n = 0;
  std::vector<LeftOutTime> left_out;
  for (const auto& run : runs) {
    n += run.rows.size();
    left_out.insert(left_out.end(), run.left_out.begin(), run.left_out.end());
  }
  std::sort(left_out.begin(), left_out.end(),
            [](const LeftOutTime& a, const LeftOutTime& b) { return a.step_s < b.step_s; });
  out.reserve(n);
  for (const auto& run : runs) {
    for (const auto& row : run.rows) {
      out.push_back(RankedRow{&run, &row, 0, 0, false, row.placements});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const RankedRow& a, const RankedRow& b) {
    return a.row->estimate.step_s < b.row->estimate.step_s;
  });
  // pandas rank(method='min'): 1 + the number of strictly smaller values, each row counted
  // as the placements it stands for, left-out (OOM) rows included.
  std::uint64_t before = 0;          // rows (weighted) ranked so far
  std::uint64_t feasible_before = 0; // of which fit in memory
  std::uint64_t left_out_before = 0; // left-out rows faster than the current time
  std::size_t next_left_out = 0;
  double last_time = 0.0;
  double last_feasible_time = 0.0;
  int last_rank = 0;
  int last_real_rank = 0;
  bool any_feasible = false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double t = out[i].row->estimate.step_s;
    while (next_left_out < left_out.size() && left_out[next_left_out].step_s < t) {
      left_out_before += left_out[next_left_out++].rows;
    }
    out[i].rank = (i > 0 && t == last_time) ? last_rank
                                            : static_cast<int>(before + left_out_before) + 1;
    last_rank = out[i].rank;
    last_time = t;
    if (!out[i].row->estimate.oom) {
      out[i].real_rank = (any_feasible && t == last_feasible_time)
                             ? last_real_rank
                             : static_cast<int>(feasible_before) + 1;
      last_real_rank = out[i].real_rank;
      last_feasible_time = t;
      any_feasible = true;
      feasible_before += out[i].placements;
    }
    before += out[i].placements;
  }
  return out;
}

std::vector<RankedRow> distinct_rows(const std::vector<RankedRow>& ranked) {
  struct Key {
    const RankedRow* r;
  };
  struct Hash {
    std::size_t operator()(const Key& k) const noexcept {
      const DesignPoint& p = k.r->row->point;
      std::size_t h = estimate_hash(k.r->row->estimate);
      for (const long long v : {static_cast<long long>(p.method), static_cast<long long>(p.tp),
                                static_cast<long long>(p.dp), static_cast<long long>(p.pp),
                                static_cast<long long>(p.mbs)}) {
        h ^= static_cast<std::size_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      }
      return h ^ std::hash<const void*>()(k.r->run);
    }
  };
  struct Equal {
    bool operator()(const Key& a, const Key& b) const noexcept {
      const DesignPoint& p = a.r->row->point;
      const DesignPoint& q = b.r->row->point;
      return a.r->run == b.r->run && p.method == q.method && p.tp == q.tp && p.dp == q.dp &&
             p.pp == q.pp && p.mbs == q.mbs &&
             same_estimate(a.r->row->estimate, b.r->row->estimate);
    }
  };
  std::vector<RankedRow> out;
  std::unordered_map<Key, std::size_t, Hash, Equal> first;
  for (const RankedRow& r : ranked) {
    const auto [it, added] = first.emplace(Key{&r}, out.size());
    if (added) {
      out.push_back(r);
    } else {
      out[it->second].placements += r.placements;
    }
  }
  return out;
}

} // namespace zerosearch
