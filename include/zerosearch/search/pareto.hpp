#pragma once
// Pareto sweeps (docs/model.md §5): the cluster compositions of two node types, the front of price
// per step against step time, and the plans that meet a time or price limit.
#include <optional>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/search/ranking.hpp"

namespace zerosearch {

/// The original's compositions of node types `first` (T0) and `second` (T1) with up to `bound`
/// nodes of each: for a in 0..bound, for b in 0..bound, skipping a = b = 0, a cluster of a T1
/// nodes followed by b T0 nodes. `groups` stays {T0: b, T1: a} (command-line order, for the
/// node-count columns); `node_order` puts T1 first.
[[nodiscard]] std::vector<Cluster> pareto_compositions(const std::string& first,
                                                       const std::string& second, int bound,
                                                       int gpus_per_node);

/// Sets `on_front` on the feasible (non-OOM) rows that no other feasible row beats on both
/// step time and price per step (at least as good on both, better on one). Rows equal on both
/// figures are all on the front or all off it.
void mark_pareto_front(std::vector<RankedRow>& rows);

/// The cheapest feasible row (price per step; then step time, then rank order) whose step time
/// is at most `max_step_s`, or nothing.
[[nodiscard]] std::optional<std::size_t> cheapest_within_time(const std::vector<RankedRow>& rows,
                                                              double max_step_s);

/// The fastest feasible row (step time; then price per step, then rank order) whose price per
/// step is at most `max_price_usd`, or nothing.
[[nodiscard]] std::optional<std::size_t> fastest_within_price(const std::vector<RankedRow>& rows,
                                                              double max_price_usd);

/// The fastest feasible row whose train_cost (price per step times --iter) is at most
/// `budget_usd`, or nothing.
[[nodiscard]] std::optional<std::size_t> fastest_within_budget(const std::vector<RankedRow>& rows,
                                                               double budget_usd);

} // namespace zerosearch
