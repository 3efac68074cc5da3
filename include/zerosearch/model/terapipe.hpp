#pragma once
// Token-level pipelining (TeraPipe, Li et al., ICML 2021): each training sequence is cut into
// token slices that enter the pipeline one after another. This file holds the pure parts:
// the cost of a slice on one stage, the optimal slicing by dynamic programming, and the
// simulation of the token-level pipeline (docs/model.md, "TeraPipe").
#include <cstdint>
#include <vector>

#include "zerosearch/model/schedule.hpp"

namespace zerosearch {

/// Forward time of a slice of `l` tokens that follows `c` earlier tokens of the same sequence,
/// on one pipeline stage: fixed + per_token * l + per_token_pair * l * (c + (l + 1) / 2).
/// The last term is causal attention over the slice's own and all earlier tokens; the rest
/// (GEMMs, element-wise work) grows with l alone; `fixed_s` is what makes tiny slices slow
/// (kernel launches, per-slice communication set-up). Backward = backward_factor x forward.
struct SliceCost {
  double fixed_s = 0.0;
  double per_token_s = 0.0;
  double per_token_pair_s = 0.0;
  double backward_factor = 2.0;

  [[nodiscard]] double forward_s(std::int64_t l, std::int64_t c) const noexcept {
    const double ld = static_cast<double>(l);
    return fixed_s + per_token_s * ld +
           per_token_pair_s * ld * (static_cast<double>(c) + (ld + 1.0) / 2.0);
  }
  [[nodiscard]] double backward_s(std::int64_t l, std::int64_t c) const noexcept {
    return backward_factor * forward_s(l, c);
  }
};

/// A slicing: the slice lengths in tokens, in sequence order, summing to the sequence length.
using Slicing = std::vector<std::int64_t>;

/// The token-level pipeline of one step on one data-parallel replica: `micro_batches`
/// sequences (or micro-batches of sequences) each cut by `slicing`, through stages that take
/// `stages[j]` per slice and `link_s[j]` to pass a slice's activations from stage j to j+1
/// (and its gradient back). Forward of slice k on stage j waits for slice k on stage j-1 and
/// slice k-1 on stage j; all forwards, then all backwards in reverse (as GPipe with slices as
/// units). Returns the time at which stage 0 ends its last backward.
struct TokenPipeline {
  std::vector<SliceCost> stages;
  /// Per boundary j -> j+1 (stages.size() - 1 entries), seconds per slice token.
  std::vector<double> link_s_per_token;
  int micro_batches = 1;
};
/// With `schedule`, also fills it with every pass as drawn (io/timeline's
/// token_pipeline_schedule): one event per unit (micro-batch x slice, `micro_batch` being the
/// unit) and stage, and stage_end_s[j], the end of stage j's last backward.
double simulate_token_pipeline(const TokenPipeline& pipe, const Slicing& slicing,
                               PipelineSchedule* schedule);
[[nodiscard]] inline double simulate_token_pipeline(const TokenPipeline& pipe,
                                                    const Slicing& slicing) {
  return simulate_token_pipeline(pipe, slicing, nullptr);
}

/// TeraPipe's objective for `stages` identical stages: micro_batches x (sum of slice forward +
/// backward times) + (stages - 1) x (the largest slice's forward + backward time).
[[nodiscard]] double terapipe_objective(const SliceCost& cost, int stages, int micro_batches,
                                        const Slicing& slicing);

/// The slicing of `seq_len` tokens, in multiples of `quantum` tokens (the last slice takes
/// the remainder), that minimises terapipe_objective: TeraPipe's dynamic programme, which
/// enumerates the bound on the largest slice time and, for each, finds the least total time
/// of slices within it. Preconditions: seq_len >= 1, quantum >= 1, stages >= 1.
[[nodiscard]] Slicing optimal_slicing(const SliceCost& cost, int stages, int micro_batches,
                                      std::int64_t seq_len, std::int64_t quantum);

} // namespace zerosearch
