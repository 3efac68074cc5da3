#pragma once
// Ranking of result rows by step time (docs/model.md §5).
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/core/hardware.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/model/run_cost.hpp"
#include "zerosearch/search/search.hpp"

namespace zerosearch {

/// A native run's step-time interval for one framework family: the ratios measured / predicted
/// that bound the given share of published runs of its regime (io/uncertainty.hpp), and what
/// they rest on. low = high = 0: no interval.
struct StepSpread {
  double low = 0, high = 0;
  /// "80 % of similar published runs", "80 % of published runs on A100-80GB (its regime ...
  /// has 3 runs)", or why there is none.
  std::string basis;
};

/// Memory a GPU keeps free besides what the estimate counts (--memory_margin): a share of
/// its memory and/or GiB.
struct MemoryMargin {
  double percent = 10.0;
  double gib = 0.0;
  /// The margin on a GPU of `memory_gib`, GiB.
  [[nodiscard]] double of(double memory_gib) const noexcept {
    return memory_gib * percent / 100.0 + gib;
  }
};

/// What the throughput columns of a run's rows need (seq_len, tokens per step, tokens/s per
/// GPU, MFU): the same for every row of the run.
struct RunThroughput {
  /// Tokens per sequence, and per step (global batch x seq_len).
  std::int64_t seq_len = 0;
  std::int64_t tokens_per_step = 0;
  /// Model FLOPs of one step: Megatron-LM's num_floating_point_operations (forward and
  /// backward GEMMs, training_flops_per_sequence) x global batch; recomputation not counted.
  double model_flops_per_step = 0.0;
  /// GPUs of the cluster, and the sum of their dense peaks in `peak_dtype`, FLOP/s (0 when a
  /// GPU of the cluster has no such figure in the catalog: MFU is then unknown).
  int gpus = 0;
  double peak_flops = 0.0;
  /// "bf16" when every GPU has a bf16 peak, else "fp16" (V100, T4); MFU is against it whatever
  /// dtype a native row trains in, as published runs report it.
  std::string peak_dtype;

  /// Tokens per second per GPU at `step_s` seconds per step.
  [[nodiscard]] double tokens_per_gpu_s(double step_s) const noexcept;
  /// Model FLOPs utilisation at `step_s`, in percent; NaN when the peak is unknown.
  [[nodiscard]] double mfu_percent(double step_s) const noexcept;
};

/// The throughput figures of a search of `ctx` (its model, sequence length, batch and cluster),
/// the GPUs' peaks from `hardware`.
[[nodiscard]] RunThroughput run_throughput(const EstimateContext& ctx,
                                           const HardwareCatalog& hardware);

/// The rows of one cluster composition (one run of the search), with what names them.
struct RunResult {
  Cluster cluster;
  PlacementSet placements;
  /// The rows the search kept, in enumeration order.
  std::vector<ResultRow> rows;
  /// Rows the search left out (--feasible) that rank before kept rows: they count in ranks.
  std::vector<LeftOutTime> left_out;
  /// The fastest OOM rows, in rank order, when the search kept them apart (RowFilter::oom_top).
  std::vector<ResultRow> oom_rows;
  /// The figures of every row that fits, in row order, when the search kept them
  /// (RowFilter::points: a sweep's chart).
  std::vector<RowPoint> points;
  /// Every estimate of the run, kept or not, and how many of them are OOM (SearchResult's).
  std::uint64_t estimates = 0;
  std::uint64_t oom = 0;
  /// Where the per-layer profiles came from (profile_source_text); a field of JSON rows.
  std::string profile_source;
  /// The model that estimated the rows; native rows carry more columns (columns.hpp).
  Estimator estimator = Estimator::zerosearch;
  /// Native runs: the step-time interval per framework family of a row's data-parallel method
  /// (step_spread_index), set by the CLI from profiledb/uncertainty.json; empty otherwise.
  std::array<StepSpread, 3> step_spread{};
  /// Tokens and FLOPs of one step, and the cluster's peak: the throughput columns.
  RunThroughput throughput;
  /// A row that fits with more than this peak GPU memory is "within margin": the smallest,
  /// over the run's node types, of memory limit minus --memory_margin (exact for one node
  /// type; for a mix it can mark a row whose fullest stage sits on a larger GPU).
  double margin_limit_gib = std::numeric_limits<double>::infinity();
  MemoryMargin memory_margin;
  /// Native runs: --overlap_grad_reduce as given (unset: each framework's default).
  std::optional<bool> overlap_grad_reduce;
  /// Native runs: --master_weights (false: pure 16-bit training); true otherwise.
  bool master_weights = true;
  /// --tokens / --steps: the cluster's prices, power and failure rates and the run's settings
  /// (search/run_cost_rows.hpp); empty: no run columns.
  std::optional<RunCostSpec> run_cost;
};

/// The index into RunResult::step_spread of a method's framework family (the native model's,
/// docs/native.md section 4): 0 megatron (dp), 1 deepspeed (zero0-3), 2 fsdp.
[[nodiscard]] constexpr std::size_t step_spread_index(DpMethod m) noexcept {
  return m == DpMethod::dp ? 0 : m == DpMethod::fsdp ? 2 : 1;
}

/// Whether a row's gradient reduction overlaps backward (the overlap_comm column): the
/// original's False for its rows; for native rows true with ZeRO-3 and FSDP (always), else
/// --overlap_grad_reduce or the framework's default.
[[nodiscard]] bool overlaps_comm(const RunResult& run, DpMethod method) noexcept;

/// "fits", "within margin" (fits, but not with the --memory_margin kept free) or "OOM".
[[nodiscard]] const char* memory_fit(const RunResult& run, const Estimate& e) noexcept;

/// A result row with its ranks (docs/model.md §5).
struct RankedRow {
  const RunResult* run = nullptr;
  const ResultRow* row = nullptr;
  /// 1-based rank by step time, ties share the lowest rank.
  int rank = 0;
  /// The same among non-OOM rows; 0 for OOM rows.
  int real_rank = 0;
  /// On the front of price per step against step time (set by mark_pareto_front).
  bool on_front = false;
  /// Placements the row stands for: the row's own count (ResultRow::placements), or after
  /// distinct_rows the rows it collapsed.
  /// (uint32, in the padding after on_front: ranked rows take no more memory.)
  std::uint32_t placements = 1;
};

/// All rows of all runs, sorted by step time (stable: enumeration order breaks ties), with
/// rank and real_rank assigned. A row standing for several placements counts as that many
/// rows in the ranks of the rows after it, and so do the runs' left-out rows.
[[nodiscard]] std::vector<RankedRow> rank_results(const std::vector<RunResult>& runs);

/// The distinct rows of `ranked`: rows of one run and design point with the same estimate
/// (same_estimate) collapse into the first of them, which stands for the placements of all
/// (RankedRow::placements) and keeps its rank. Order is kept.
[[nodiscard]] std::vector<RankedRow> distinct_rows(const std::vector<RankedRow>& ranked);

} // namespace zerosearch
