#include "zerosearch/search/search_size.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/search/ranking.hpp"
#include "zerosearch/search/search.hpp"

namespace zerosearch {

namespace {

// CPU cost model of one estimate, fitted on single-threaded runs of run_search (llama2_13B and
// gpt2XL, 8 to 4096 nodes, global batch 64 to 1048576), within about 2x: a fixed part
// (partitioner, memory model), a part per GPU of the cluster (the pipeline-link and ring
// scans) and a part per simulated stage and micro-batch of the 1F1B schedule, twice as
// expensive once the simulation's event times no longer fit in the cache.
constexpr double kRowCpuS = 2.5e-6;
constexpr double kGpuCpuS = 4.5e-9;
constexpr double kCellCpuS = 45e-9;
constexpr double kCellUncachedCpuS = 90e-9;
constexpr double kCachedSimulationBytes = 2.0 * 1024 * 1024;

/// The 1F1B simulation keeps eight float64 event times per stage and micro-batch.
constexpr double kSimulationBytes = 8.0 * sizeof(double);

/// A glibc malloc chunk for `n` requested bytes.
constexpr std::uint64_t heap_chunk(std::uint64_t n) noexcept {
  return n == 0 ? 0 : std::max<std::uint64_t>(32, (n + 8 + 15) / 16 * 16);
}

std::uint64_t saturate(double x) noexcept {
  constexpr auto top = std::numeric_limits<std::uint64_t>::max();
  return x >= static_cast<double>(top) ? top : static_cast<std::uint64_t>(x);
}

std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) noexcept {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max()
                                                           : a + b;
}

std::string hours(double s) {
  return s < 3600.0 ? fmt::format("{:.0f} CPU-minutes", std::ceil(s / 60.0))
                    : fmt::format("{:.0f} CPU-hours", std::ceil(s / 3600.0));
}

} // namespace

SearchSize& SearchSize::operator+=(const SearchSize& other) noexcept {
  design_points = add_sat(design_points, other.design_points);
  placements = add_sat(placements, other.placements);
  estimates = add_sat(estimates, other.estimates);
  rows_bytes = add_sat(rows_bytes, other.rows_bytes);
  if (other.scratch_bytes > scratch_bytes) {
    scratch_bytes = other.scratch_bytes;
    scratch_pp = other.scratch_pp;
    scratch_micro_batches = other.scratch_micro_batches;
  }
  cpu_s += other.cpu_s;
  max_pp = std::max(max_pp, other.max_pp);
  kept_rows = add_sat(kept_rows, other.kept_rows);
  return *this;
}

void SearchSize::keep_top(std::uint64_t top, unsigned threads) noexcept {
  if (top == 0) {
    return;
  }
  const std::uint64_t workers = std::max(1U, threads);
  const std::uint64_t rows = add_sat(saturate(static_cast<double>(top) * static_cast<double>(workers + 1)),
                                     saturate(static_cast<double>(placements) * static_cast<double>(workers)));
  if (rows >= estimates) {
    return;
  }
  kept_rows = rows;
  rows_bytes = std::min(rows_bytes, saturate(static_cast<double>(rows) *
                                             static_cast<double>(row_bytes(max_pp))));
}

std::uint64_t SearchSize::memory_bytes(unsigned threads) const noexcept {
  return add_sat(rows_bytes, saturate(static_cast<double>(scratch_bytes) * std::max(1U, threads)));
}

std::uint64_t placement_count(const Cluster& cluster) noexcept {
  return cluster.types_present() <= 1 ? 1 : static_cast<std::uint64_t>(cluster.num_nodes());
}

std::uint64_t row_bytes(int pp) noexcept {
  // The ranking holds one RankedRow per row, the row selection of the output another.
  return sizeof(ResultRow) + 2 * sizeof(RankedRow) +
         heap_chunk(static_cast<std::uint64_t>(std::max(pp, 0)) * sizeof(int));
}

SearchSize measure_search(const Cluster& cluster, const std::vector<DesignPoint>& points) noexcept {
  SearchSize size;
  const double nodes = static_cast<double>(std::max(cluster.num_nodes(), 0));
  const double gpus = nodes * cluster.gpus_per_node;
  const std::uint64_t per_point = placement_count(cluster);
  const double placements = static_cast<double>(per_point);
  size.design_points = points.size();
  size.placements = per_point;
  size.estimates = saturate(static_cast<double>(points.size()) * placements);
  double rows_bytes = placements * (sizeof(Placement) + static_cast<double>(heap_chunk(
                                                            saturate(nodes * sizeof(int)))));
  double cpu_s = 0.0;
  for (const DesignPoint& p : points) {
    size.max_pp = std::max(size.max_pp, p.pp);
    rows_bytes += placements * static_cast<double>(row_bytes(p.pp));
    double point_s = kRowCpuS + kGpuCpuS * gpus;
    if (p.pp > 1) {
      const double cells = static_cast<double>(p.pp) * p.num_micro_batches;
      point_s += cells * (kSimulationBytes * cells > kCachedSimulationBytes ? kCellUncachedCpuS
                                                                           : kCellCpuS);
      const std::uint64_t scratch = saturate(kSimulationBytes * cells);
      if (scratch > size.scratch_bytes) {
        size.scratch_bytes = scratch;
        size.scratch_pp = p.pp;
        size.scratch_micro_batches = p.num_micro_batches;
      }
    }
    cpu_s += placements * point_s;
  }
  size.rows_bytes = saturate(rows_bytes);
  size.cpu_s = cpu_s;
  return size;
}

std::string format_bytes(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (std::uint64_t{1} << 30)) {
    return fmt::format("{:.1f} GiB", b / static_cast<double>(std::uint64_t{1} << 30));
  }
  if (bytes >= (std::uint64_t{1} << 20)) {
    return fmt::format("{:.0f} MiB", b / static_cast<double>(std::uint64_t{1} << 20));
  }
  if (bytes >= 1024) {
    return fmt::format("{:.0f} KiB", b / 1024.0);
  }
  return fmt::format("{} B", bytes);
}

void check_search_size(const SearchSize& size, const SearchLimits& limits) {
  const auto plural = [](std::uint64_t n, const char* word) {
    return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
  };
  const std::string what =
      fmt::format("{} ({} x {})", plural(size.estimates, "estimate"),
                  plural(size.design_points, "design point"), plural(size.placements, "placement"));
  // --top N bounds the rows a search keeps, not the estimates it computes or its simulations.
  const char* cpu_advice = "--top and --feasible do not reduce it (every estimate is computed); "
                           "use fewer nodes or a smaller --custom_gbs";
  const bool rows_dominate = size.rows_bytes >= size.scratch_bytes;
  const char* memory_advice =
      size.kept_rows != 0 || !rows_dominate
          ? "use fewer nodes or a smaller --custom_gbs"
          : "--top N keeps only the N best rows while searching (not with a file of every "
            "placement: -o, --record); or use fewer nodes or a smaller --custom_gbs";
  if (size.memory_bytes(1) > limits.max_memory_bytes) {
    std::string parts = format_bytes(size.rows_bytes) +
                        (size.kept_rows != 0 ? " for the kept rows" : " of rows");
    if (size.scratch_bytes > 0) {
      parts += fmt::format(" + {} to simulate {} stages x {} micro-batches",
                           format_bytes(size.scratch_bytes), size.scratch_pp,
                           size.scratch_micro_batches);
    }
    throw InputError(fmt::format("search too large: {} need {} of memory ({}), above the limit "
                                 "of {}; {}",
                                 what, format_bytes(size.memory_bytes(1)), parts,
                                 format_bytes(limits.max_memory_bytes), memory_advice));
  }
  if (size.cpu_s > limits.max_cpu_s) {
    throw InputError(fmt::format("search too large: {} need about {}, above the limit of {}; {}",
                                 what, hours(size.cpu_s), hours(limits.max_cpu_s), cpu_advice));
  }
}

unsigned threads_within_limit(const SearchSize& size, unsigned threads,
                              const SearchLimits& limits) noexcept {
  unsigned t = std::max(1U, threads);
  while (t > 1 && size.memory_bytes(t) > limits.max_memory_bytes) {
    --t;
  }
  return t;
}

} // namespace zerosearch
