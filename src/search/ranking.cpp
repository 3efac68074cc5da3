#include "zerosearch/search/ranking.hpp"

#include <algorithm>

namespace zerosearch {

std::vector<RankedRow> rank_results(const std::vector<RunResult>& runs) {
  std::vector<RankedRow> out;
  std::size_t n = 0;
  for (const auto& run : runs) {
    n += run.rows.size();
  }
  out.reserve(n);
  for (const auto& run : runs) {
    for (const auto& row : run.rows) {
      out.push_back(RankedRow{&run, &row, 0, 0});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const RankedRow& a, const RankedRow& b) {
    return a.row->estimate.step_s < b.row->estimate.step_s;
  });
  // pandas rank(method='min'): 1 + the number of strictly smaller values.
  int feasible_seen = 0;
  double last_time = 0.0;
  double last_feasible_time = 0.0;
  int last_rank = 0;
  int last_real_rank = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double t = out[i].row->estimate.step_s;
    out[i].rank = (i > 0 && t == last_time) ? last_rank : static_cast<int>(i) + 1;
    last_rank = out[i].rank;
    last_time = t;
    if (!out[i].row->estimate.oom) {
      out[i].real_rank =
          (feasible_seen > 0 && t == last_feasible_time) ? last_real_rank : feasible_seen + 1;
      last_real_rank = out[i].real_rank;
      last_feasible_time = t;
      ++feasible_seen;
    }
  }
  return out;
}

} // namespace zerosearch
