#pragma once
// Layer partition across pipeline stages and the per-stage times it implies (docs/model.md §4).
#include <vector>

namespace zerosearch {

/// Per-stage times for one partition. All seconds, doubles (as the original's stage times).
struct StageTimes {
  /// Compute time of each stage: its layers' costs summed in order.
  std::vector<double> comp_s;
  /// Forward send time (stage 0 only, else 0).
  std::vector<double> for_send_s;
  /// Backward send time (last stage only, else 0).
  std::vector<double> back_send_s;
  /// Link time carried as stage time by middle stages (else 0).
  std::vector<double> comm_s;

  /// comp + comm of stage s: the figure minmax balances.
  [[nodiscard]] double stage_time(std::size_t s) const noexcept { return comm_s[s] + comp_s[s]; }
};

/// Inputs of the partitioners: per-stage layer costs and the boundary link times.
struct PartitionProblem {
  /// stage_layer_costs[s] points at the per-layer compute costs (seconds, all layers) of the
  /// GPU type stage s runs on. Size pp.
  std::vector<const std::vector<double>*> stage_layer_costs;
  /// Link time of boundary j (pp-1 entries), seconds.
  std::vector<double> link_s;

  [[nodiscard]] int stages() const noexcept { return static_cast<int>(stage_layer_costs.size()); }
  [[nodiscard]] int layers() const noexcept {
    return static_cast<int>(stage_layer_costs.front()->size());
  }
};

/// Stage times of `partition` (layer counts per stage, summing to the layer count).
[[nodiscard]] StageTimes stage_times(const PartitionProblem& problem,
                                     const std::vector<int>& partition);
/// The same into `out`, reusing its storage (the partitioners call this in their loops).
void stage_times_into(const PartitionProblem& problem, const std::vector<int>& partition,
                      StageTimes& out);

struct PartitionResult {
  std::vector<int> partition;
  /// The times the schedule uses. For minmax these can be stale (the original's third stop).
  StageTimes times;
};

/// The original's minmax heuristic (src/pipe.py), rule for rule, including its stale times.
[[nodiscard]] PartitionResult minmax_partition(const PartitionProblem& problem);

/// The balanced starting partition: n / pp layers each, the remainder added last stage first.
[[nodiscard]] std::vector<int> initial_partition(int layers, int stages);

} // namespace zerosearch
