#pragma once
// --search_method optimal: the partition with the smallest simulated step time among those that
// fit in memory, found exactly (branch and bound over contiguous partitions, bounded below by
// dynamic programs over the per-stage GPU types).
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "zerosearch/model/step_model.hpp"

namespace zerosearch {

/// The exact minimum, over partitions whose every stage fits its GPU's memory, of the largest
/// stage time (compute of the stage's layers on its GPU type plus the link time a middle stage
/// carries: StageTimes::stage_time), by dynamic programming. Ties go to the partition that is
/// first in lexicographic order of (stage 0 count, stage 1 count, ...) smallest first. Nothing
/// when no partition fits. `memory`: the figures of the design point's runs of layers.
[[nodiscard]] std::optional<std::vector<int>> min_bottleneck_partition(
    const StepModel& model, const StageMemoryTable& memory);

/// A lower bound on model.step_s(p) for every partition p that starts with the stage counts of
/// `prefix` (empty: any partition); +infinity when no fitting partition starts so. Valid for
/// the 1F1B schedule: one micro-batch crosses every stage forward and back, and a stage whose
/// warm-up leaves it a steady phase runs its m forward and m backward passes one at a time.
[[nodiscard]] double step_lower_bound(const StepModel& model, const StageMemoryTable& memory,
                                      const std::vector<int>& prefix);

struct OptimalStats {
  /// Partial partitions visited and full partitions simulated.
  std::int64_t nodes = 0;
  std::int64_t simulations = 0;
  /// Partial and full partitions ruled out by a learned path, and the paths learned.
  std::int64_t ruled_out = 0;
  std::int64_t paths = 0;
  /// False when the node budget ran out before the search was complete.
  bool exact = true;
};

/// Partial partitions optimal_partition visits at most (a few seconds of search); none of the
/// shipped cases comes near it (the largest, 16 A10 + 16 A6000, needs under 400 000).
inline constexpr std::int64_t kOptimalNodeBudget = 5'000'000;

/// Results of optimal_partition kept for later calls with the same inputs, which then get them
/// without searching: every input the result depends on (layer costs of each stage's GPU type,
/// link times, micro-batches, forward share, the data-parallel time by stage 0's layers, the
/// embedding sync, what memory lets each stage take from each layer, to_beat_s, the node
/// budget) is the key, compared exactly. Such calls come in pairs in a search (ZeRO 2 and 3
/// with one data-parallel replica). Safe to share between threads; a result is handed out once
/// and then dropped; at most about kMaxMemoBytes of keys are kept.
class OptimalMemo {
public:
  static constexpr std::size_t kMaxMemoBytes = std::size_t{64} << 20;
  /// True, with the stored result for `key` moved into `result` and removed from the memo,
  /// when there is one.
  [[nodiscard]] bool take(const std::vector<double>& key, std::optional<std::vector<int>>& result);
  void store(std::vector<double> key, std::optional<std::vector<int>> result);
  /// Results handed out so far.
  [[nodiscard]] std::int64_t hits() const;

private:
  struct Entry {
    std::vector<double> key;
    std::optional<std::vector<int>> result;
  };
  mutable std::mutex mutex_;
  std::unordered_multimap<std::uint64_t, Entry> entries_;
  std::size_t bytes_ = 0;
  std::int64_t hits_ = 0;
};

/// The fitting partition with the smallest simulated step time (model.step_s), if one is
/// strictly faster than `to_beat_s` (pass +infinity to get the optimum whenever one fits).
/// Exact: partial partitions are pruned only when step_lower_bound shows they cannot beat the
/// best found. Should the search visit `node_budget` partial partitions, it stops with the best
/// found so far (stats->exact is then false). Among equal step times the first found wins: the least-bottleneck partition if
/// it is among them, else the first in the search order (a fixed order: children by the bound
/// of the original terms, then by fewer layers; pruning uses tighter terms, which changes what
/// is visited, not the order). Leaves are simulated only until they are known not to win, each
/// keeping the warm-up events of the stages it shares with the leaf before (OneFOneBSequence).
/// Each simulation that does not win teaches the search its longest path (OneFOneBGraph): a
/// lower bound on every partition's pipeline time, linear in the stage computes, which then
/// rules out, unsimulated, the leaves and partial partitions (with the least fitting rest) it
/// shows cannot win either; the 8 most recently useful paths are kept. This changes only what
/// is visited and simulated, never which partition wins.
/// `memory`: the figures of the design point's runs of layers; model.stages() >= 2. `memo`,
/// when given, is looked up first (stats then count nothing) and receives the result.
[[nodiscard]] std::optional<std::vector<int>> optimal_partition(
    const StepModel& model, const StageMemoryTable& memory, double to_beat_s, OptimalStats* stats = nullptr,
    std::int64_t node_budget = kOptimalNodeBudget, OptimalMemo* memo = nullptr);

} // namespace zerosearch
