#include "zerosearch/model/partition.hpp"

#include <algorithm>

namespace zerosearch {

StageTimes stage_times(const PartitionProblem& problem, const std::vector<int>& partition) {
  StageTimes t;
  stage_times_into(problem, partition, t);
  return t;
}

void stage_times_into(const PartitionProblem& problem, const std::vector<int>& partition,
                      StageTimes& t) {
  const std::size_t pp = partition.size();
  t.comp_s.assign(pp, 0.0);
  t.for_send_s.assign(pp, 0.0);
  t.back_send_s.assign(pp, 0.0);
  t.comm_s.assign(pp, 0.0);
  std::size_t first = 0;
  for (std::size_t s = 0; s < pp; ++s) {
    const auto& costs = *problem.stage_layer_costs[s];
    const std::size_t end = first + static_cast<std::size_t>(partition[s]);
    double sum = 0.0; // summed in layer order, like the original's Python sum()
    for (std::size_t layer = first; layer < end; ++layer) {
      sum += costs[layer];
    }
    t.comp_s[s] = sum;
    first = end;
    if (pp == 1) {
      break;
    }
    if (s == 0) {
      t.for_send_s[s] = problem.link_s[0];
    } else if (s == pp - 1) {
      t.back_send_s[s] = problem.link_s[s - 1];
    } else {
      t.comm_s[s] = problem.link_s[s - 1];
    }
  }
}

std::vector<int> initial_partition(int layers, int stages) {
  std::vector<int> part(static_cast<std::size_t>(stages), layers / stages);
  const int rest = layers % stages;
  for (int i = 0; i < rest; ++i) {
    // Python's part[i-1]: the last stage first, then the first ones.
    const int idx = (i - 1 + stages) % stages;
    part[static_cast<std::size_t>(idx)] += 1;
  }
  return part;
}

namespace {
void totals(const StageTimes& t, std::vector<double>& out) {
  out.resize(t.comp_s.size());
  for (std::size_t s = 0; s < out.size(); ++s) {
    out[s] = t.stage_time(s);
  }
}
} // namespace

PartitionResult minmax_partition(const PartitionProblem& problem) {
  const int pp = problem.stages();
  std::vector<int> part = initial_partition(problem.layers(), pp);
  std::vector<std::vector<int>> history{part};
  double last_max = 1e6;
  bool moved = false;
  std::size_t imax = 0;
  std::size_t imin = 0;
  StageTimes times;
  std::vector<double> tot;
  const auto undo = [&] {
    part[imax] += 1;
    part[imin] -= 1;
  };
  while (true) {
    stage_times_into(problem, part, times);
    totals(times, tot);
    const double mx = *std::max_element(tot.begin(), tot.end());
    if (mx > last_max && moved) {
      undo();
      stage_times_into(problem, part, times);
      break;
    }
    if (mx == last_max && moved &&
        std::find(history.begin(), history.end() - 1, part) != history.end() - 1) {
      undo();
      stage_times_into(problem, part, times);
      break;
    }
    last_max = mx;
    // First index of the max and of the min, as Python's list.index.
    imax = static_cast<std::size_t>(std::max_element(tot.begin(), tot.end()) - tot.begin());
    imin = static_cast<std::size_t>(std::min_element(tot.begin(), tot.end()) - tot.begin());
    if ((imax == 0 || imax == static_cast<std::size_t>(pp - 1)) && part[imax] == 2) {
      if (moved) {
        undo(); // the times are deliberately not recomputed (the original's behaviour)
      }
      break;
    }
    if (part[imax] > 1) {
      part[imax] -= 1;
      part[imin] += 1;
      moved = true;
      history.push_back(part);
    } else {
      break;
    }
  }
  return PartitionResult{std::move(part), std::move(times)};
}

} // namespace zerosearch
