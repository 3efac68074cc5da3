#pragma once
// The size of a search before it runs: how many estimates, how much memory its rows and its
// largest pipeline simulation take, and how much CPU time it needs. The CLI refuses a search
// above SearchLimits instead of running out of memory or running for days.
#include <cstdint>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/search/enumerate.hpp"

namespace zerosearch {

struct SearchSize {
  std::uint64_t design_points = 0;
  /// Placements per design point (summed over runs when sizes are added).
  std::uint64_t placements = 0;
  /// One result row per estimate; a search that keeps every row holds and ranks them all.
  std::uint64_t estimates = 0;
  /// Memory of the rows, their ranking and the placement lists, bytes.
  std::uint64_t rows_bytes = 0;
  /// The deepest pipeline of the design points (the largest row).
  int max_pp = 0;
  /// Set by keep_top: the search keeps at most this many rows (0: every row).
  std::uint64_t kept_rows = 0;
  /// Scratch memory of the largest single estimate (its 1F1B simulation), bytes per worker.
  std::uint64_t scratch_bytes = 0;
  /// The largest simulation's shape, for messages.
  int scratch_pp = 0;
  int scratch_micro_batches = 0;
  /// CPU time the search needs, seconds: a model fitted on a 2020s x86 core, within about 2x.
  double cpu_s = 0.0;

  /// Sizes of several runs kept together (e.g. the compositions of a Pareto sweep).
  SearchSize& operator+=(const SearchSize& other) noexcept;
  /// Memory with `threads` workers simulating at once, bytes.
  [[nodiscard]] std::uint64_t memory_bytes(unsigned threads) const noexcept;
  /// A search that keeps only its `top` first rows (RowFilter::top, streaming) with up to
  /// `threads` workers: each worker's best, the merged best and one design point's placement
  /// groups per worker, instead of every row.
  void keep_top(std::uint64_t top, unsigned threads) noexcept;
};

/// The number of placements `placements(cluster)` returns, without building them.
[[nodiscard]] std::uint64_t placement_count(const Cluster& cluster) noexcept;

/// Bytes one result row costs while the search runs and is ranked: the row, its entries in the
/// ranking and in the output's row selection, and its partition vector on the heap (malloc
/// chunk included).
[[nodiscard]] std::uint64_t row_bytes(int pp) noexcept;

/// The size of searching `points` on every placement of `cluster`.
[[nodiscard]] SearchSize measure_search(const Cluster& cluster,
                                        const std::vector<DesignPoint>& points) noexcept;

struct SearchLimits {
  /// 16 GiB: room for the rows, the output and the system on a 24 GiB machine.
  std::uint64_t max_memory_bytes = std::uint64_t{16} << 30;
  /// 8 CPU-hours: about 4 hours on 2 cores, half an hour on 16.
  double max_cpu_s = 8 * 3600.0;
};

/// Throws InputError, naming the limit and what to change, when the search with one worker
/// needs more memory or CPU time than `limits` allow.
void check_search_size(const SearchSize& size, const SearchLimits& limits = {});

/// The most workers (at most `threads`, at least 1) whose simulations fit in the memory
/// limit beside the rows.
[[nodiscard]] unsigned threads_within_limit(const SearchSize& size, unsigned threads,
                                            const SearchLimits& limits = {}) noexcept;

/// Bytes as "1.5 GiB", "340 MiB", "12 KiB", "100 B".
[[nodiscard]] std::string format_bytes(std::uint64_t bytes);

} // namespace zerosearch
