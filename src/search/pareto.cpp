#include "zerosearch/search/pareto.hpp"

#include <algorithm>
#include <limits>

namespace zerosearch {

std::vector<Cluster> pareto_compositions(const std::string& first, const std::string& second,
                                         int bound, int gpus_per_node) {
  std::vector<Cluster> out;
  for (int a = 0; a <= bound; ++a) {
    for (int b = 0; b <= bound; ++b) {
      if (a == 0 && b == 0) {
        continue;
      }
      Cluster c;
      c.groups = {NodeGroup{first, b}, NodeGroup{second, a}};
      c.gpus_per_node = gpus_per_node;
      c.node_order = {1, 0};
      out.push_back(std::move(c));
    }
  }
  return out;
}

namespace {

double step_of(const RankedRow& r) { return r.row->estimate.step_s; }
double price_of(const RankedRow& r) { return r.row->estimate.price_per_step_usd; }
bool feasible(const RankedRow& r) { return !r.row->estimate.oom; }

/// The best feasible row by (primary, secondary), first in row order on a full tie, among
/// those `admit` accepts.
template <class Admit, class Key>
std::optional<std::size_t> best_row(const std::vector<RankedRow>& rows, Admit admit, Key key) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!feasible(rows[i]) || !admit(rows[i])) {
      continue;
    }
    if (!best || key(rows[i]) < key(rows[*best])) {
      best = i;
    }
  }
  return best;
}

} // namespace

void mark_pareto_front(std::vector<RankedRow>& rows) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].on_front = false;
    if (feasible(rows[i])) {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (step_of(rows[a]) != step_of(rows[b])) {
      return step_of(rows[a]) < step_of(rows[b]);
    }
    return price_of(rows[a]) < price_of(rows[b]);
  });
  // Sweep by step time: a group of equal step times puts its cheapest rows on the front when
  // they are cheaper than every faster row.
  double cheapest_faster = std::numeric_limits<double>::infinity();
  std::size_t i = 0;
  while (i < order.size()) {
    std::size_t j = i;
    while (j < order.size() && step_of(rows[order[j]]) == step_of(rows[order[i]])) {
      ++j;
    }
    const double group_min = price_of(rows[order[i]]);
    if (group_min < cheapest_faster) {
      for (std::size_t k = i; k < j && price_of(rows[order[k]]) == group_min; ++k) {
        rows[order[k]].on_front = true;
      }
      cheapest_faster = group_min;
    }
    i = j;
  }
}

std::optional<std::size_t> cheapest_within_time(const std::vector<RankedRow>& rows,
                                                double max_step_s) {
  return best_row(
      rows, [&](const RankedRow& r) { return step_of(r) <= max_step_s; },
      [](const RankedRow& r) { return std::pair{price_of(r), step_of(r)}; });
}

std::optional<std::size_t> fastest_within_price(const std::vector<RankedRow>& rows,
                                                double max_price_usd) {
  return best_row(
      rows, [&](const RankedRow& r) { return price_of(r) <= max_price_usd; },
      [](const RankedRow& r) { return std::pair{step_of(r), price_of(r)}; });
}

std::optional<std::size_t> fastest_within_budget(const std::vector<RankedRow>& rows,
                                                 double budget_usd) {
  return best_row(
      rows, [&](const RankedRow& r) { return r.row->estimate.train_cost_usd <= budget_usd; },
      [](const RankedRow& r) { return std::pair{step_of(r), price_of(r)}; });
}

} // namespace zerosearch
