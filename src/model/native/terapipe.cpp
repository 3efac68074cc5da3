#include "zerosearch/model/terapipe.hpp"

#include <algorithm>
#include <limits>

namespace zerosearch {

double simulate_token_pipeline(const TokenPipeline& pipe, const Slicing& slicing,
                               PipelineSchedule* schedule) {
  const std::size_t stages = pipe.stages.size();
  const std::size_t slices = slicing.size();
  const std::size_t units = slices * static_cast<std::size_t>(std::max(pipe.micro_batches, 1));
  if (schedule != nullptr) {
    schedule->events.clear();
    schedule->stage_end_s.assign(stages, 0.0);
  }
  if (stages == 0 || slices == 0) {
    return 0.0;
  }
  if (schedule != nullptr) {
    schedule->events.reserve(2 * units * stages);
  }
  const auto record = [&](ScheduleEventKind kind, std::size_t j, std::size_t u, double start,
                          double end) {
    if (schedule != nullptr) {
      schedule->events.push_back(
          {kind, static_cast<int>(j), static_cast<int>(u), start, end});
    }
  };
  // Slice k of every micro-batch has the same length and context.
  std::vector<std::int64_t> context(slices, 0);
  for (std::size_t k = 1; k < slices; ++k) {
    context[k] = context[k - 1] + slicing[k - 1];
  }
  const auto link = [&](std::size_t j, std::size_t k) {
    return j < pipe.link_s_per_token.size()
               ? pipe.link_s_per_token[j] * static_cast<double>(slicing[k])
               : 0.0;
  };
  // Forwards: unit u (micro-batch u / slices, slice u % slices) in order on every stage.
  std::vector<double> prev(units, 0.0);
  std::vector<double> cur(units, 0.0);
  std::vector<double> forward_end(stages, 0.0);
  for (std::size_t j = 0; j < stages; ++j) {
    double free_at = 0.0;
    for (std::size_t u = 0; u < units; ++u) {
      const std::size_t k = u % slices;
      const double ready = j == 0 ? 0.0 : prev[u] + link(j - 1, k);
      const double start = std::max(free_at, ready);
      free_at = start + pipe.stages[j].forward_s(slicing[k], context[k]);
      record(ScheduleEventKind::forward, j, u, start, free_at);
      cur[u] = free_at;
    }
    forward_end[j] = free_at;
    std::swap(prev, cur);
  }
  // Backwards in reverse unit order: a slice's gradient needs the later slices' (they attend
  // to its tokens), and the stage above's gradient of the same slice.
  std::vector<double> above(units, 0.0);
  for (std::size_t jj = stages; jj-- > 0;) {
    double free_at = forward_end[jj];
    for (std::size_t u = units; u-- > 0;) {
      const std::size_t k = u % slices;
      const double ready = jj + 1 == stages ? 0.0 : above[u] + link(jj, k);
      const double start = std::max(free_at, ready);
      free_at = start + pipe.stages[jj].backward_s(slicing[k], context[k]);
      record(ScheduleEventKind::backward, jj, u, start, free_at);
      cur[u] = free_at;
    }
    if (schedule != nullptr) {
      schedule->stage_end_s[jj] = free_at;
    }
    std::swap(above, cur);
  }
  return above[0];
}

double terapipe_objective(const SliceCost& cost, int stages, int micro_batches,
                          const Slicing& slicing) {
  double sum = 0.0;
  double largest = 0.0;
  std::int64_t c = 0;
  for (const std::int64_t l : slicing) {
    const double t = cost.forward_s(l, c) + cost.backward_s(l, c);
    sum += t;
    largest = std::max(largest, t);
    c += l;
  }
  return static_cast<double>(micro_batches) * sum + static_cast<double>(stages - 1) * largest;
}

Slicing optimal_slicing(const SliceCost& cost, int stages, int micro_batches,
                        std::int64_t seq_len, std::int64_t quantum) {
  // Boundary positions: multiples of the quantum, then the sequence's end.
  std::vector<std::int64_t> pos;
  for (std::int64_t p = 0; p < seq_len; p += quantum) {
    pos.push_back(p);
  }
  pos.push_back(seq_len);
  const std::size_t n = pos.size() - 1;
  if (n <= 1) {
    return Slicing{seq_len};
  }
  // t[i][j]: forward + backward of the slice from boundary i to boundary j.
  std::vector<double> t((n + 1) * (n + 1), 0.0);
  const auto at = [&](std::size_t i, std::size_t j) -> double& { return t[i * (n + 1) + j]; };
  std::vector<double> candidates;
  candidates.reserve(n * (n + 1) / 2);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j <= n; ++j) {
      const std::int64_t l = pos[j] - pos[i];
      at(i, j) = cost.forward_s(l, pos[i]) + cost.backward_s(l, pos[i]);
      candidates.push_back(at(i, j));
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> best_sum(n + 1, 0.0);
  std::vector<std::size_t> from(n + 1);
  // Least total slice time with every slice within `bound`; fills `from` for the slicing.
  const auto least_sum = [&](double bound) {
    for (std::size_t j = 1; j <= n; ++j) {
      best_sum[j] = kInf;
      for (std::size_t i = 0; i < j; ++i) {
        const double tij = at(i, j);
        if (tij <= bound && best_sum[i] + tij < best_sum[j]) {
          best_sum[j] = best_sum[i] + tij;
          from[j] = i;
        }
      }
    }
    return best_sum[n];
  };
  const auto slicing_from = [&] {
    Slicing s;
    std::size_t j = n;
    while (j > 0) {
      const std::size_t i = from[j];
      s.push_back(pos[j] - pos[i]);
      j = i;
    }
    std::reverse(s.begin(), s.end());
    return s;
  };

  const double m = static_cast<double>(micro_batches);
  const double k = static_cast<double>(stages - 1);
  // No bound at all gives the least possible sum: a lower bound for every candidate.
  const double unbounded_sum = least_sum(kInf);
  double best = kInf;
  Slicing best_slicing;
  for (const double bound : candidates) {
    if (m * unbounded_sum + k * bound >= best) {
      break; // candidates ascend: none after this one can win
    }
    const double sum = least_sum(bound);
    if (sum == kInf) {
      continue;
    }
    // The largest slice of this slicing may be below the bound; the objective uses its own.
    const Slicing s = slicing_from();
    const double value = terapipe_objective(cost, stages, micro_batches, s);
    if (value < best) {
      best = value;
      best_slicing = s;
    }
  }
  return best_slicing;
}

} // namespace zerosearch
