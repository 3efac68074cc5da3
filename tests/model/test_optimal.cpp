#include <catch2/catch.hpp>

#include "fixtures.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <limits>
#include <random>

#include "zerosearch/model/estimate.hpp"
#include "zerosearch/model/optimal.hpp"
#include "zerosearch/search/plan.hpp"

using namespace zerosearch;

namespace {

/// Every partition of `layers` into `stages` parts of at least one layer.
void for_each_partition(int layers, int stages, const std::function<void(const std::vector<int>&)>& f) {
  std::vector<int> p;
  std::function<void(int, int)> rec = [&](int left, int s) {
    if (s == stages - 1) {
      p.push_back(left);
      f(p);
      p.pop_back();
      return;
    }
    for (int c = 1; c <= left - (stages - s - 1); ++c) {
      p.push_back(c);
      rec(left - c, s + 1);
      p.pop_back();
    }
  };
  rec(layers, 0);
}

double bottleneck(const StepModel& m, const std::vector<int>& p) {
  const StageTimes t = stage_times(m.problem, p);
  double worst = 0.0;
  for (std::size_t s = 0; s < p.size(); ++s) {
    worst = std::max(worst, t.stage_time(s));
  }
  return worst;
}

/// A small random problem: two GPU types with random per-layer costs, random stage types, link
/// times, micro-batches and forward share, and memory limits that rule some stages out.
struct Synthetic {
  ModelSpec spec;
  DesignPoint point;
  std::vector<std::vector<double>> costs;
  std::unique_ptr<StageMemoryTable> table;
  StepModel model;

  Synthetic(std::mt19937& rng, int stages, int transformer_layers) {
    spec.name = "synthetic";
    spec.hidden_size = 64;
    spec.sequence_length = 32;
    spec.num_layers = transformer_layers;
    spec.vocab_size = 500;
    spec.num_attention_heads = 4;
    spec.ffn_hidden_size = 128;
    const int n = spec.pipeline_layers();
    std::uniform_real_distribution<double> cost(0.05, 1.0);
    std::uniform_real_distribution<double> link(0.0, 0.3);
    std::uniform_int_distribution<int> coin(0, 1);
    const int mbs[] = {1, 2, 3, 4, 6, 8, 12};
    point.method = coin(rng) != 0 ? DpMethod::zero1 : DpMethod::zero2;
    point.tp = 1;
    point.dp = 2;
    point.pp = stages;
    point.mbs = 1;
    point.num_micro_batches = mbs[std::uniform_int_distribution<int>(0, 6)(rng)];
    costs.assign(2, std::vector<double>(static_cast<std::size_t>(n)));
    for (auto& type : costs) {
      for (auto& c : type) {
        c = cost(rng);
      }
    }
    table = std::make_unique<StageMemoryTable>(spec, point, 4, 64);
    // Limits between the figures of a run of 2 and of n/2 layers: some stages do not fit.
    const float lo = table->gib(1, 2);
    const float hi = table->gib(0, std::max(2, n / 2));
    std::uniform_real_distribution<float> limit(lo, hi);
    const float limits[] = {limit(rng), limit(rng)};
    for (int s = 0; s < stages; ++s) {
      const int g = coin(rng);
      model.problem.stage_layer_costs.push_back(&costs[static_cast<std::size_t>(g)]);
      model.stage_limit_gib.push_back(limits[g]);
    }
    for (int j = 0; j + 1 < stages; ++j) {
      model.problem.link_s.push_back(link(rng));
    }
    model.micro_batches = point.num_micro_batches;
    model.micro_batches_f32 = static_cast<float>(point.num_micro_batches);
    model.share = coin(rng) != 0 ? ForwardShare::quarter : ForwardShare::third;
    model.method = point.method;
    model.dp = 2;
    model.hidden = 64.0F;
    model.vocab = 500.0F;
    model.ring_bits_per_s = 1e6F;
    model.embedding_sync_s = 0.01F;
  }
};

/// The estimate context of llama2_13B with -f d on a cluster.
SearchPlan llama_plan(std::vector<NodeGroup> groups, PartitionMethod method = PartitionMethod::minmax) {
  return test::llama_deepspeed_plan(std::move(groups), method);
}

} // namespace

TEST_CASE("optimal and the least bottleneck equal brute force on small problems", "[optimal]") {
  std::mt19937 rng(20240601);
  int with_fit = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int stages = std::uniform_int_distribution<int>(2, 5)(rng);
    const int layers = std::uniform_int_distribution<int>(stages, 9)(rng);
    Synthetic syn(rng, stages, layers);
    const StepModel& m = syn.model;
    const StageMemoryTable& table = *syn.table;
    double best_step = std::numeric_limits<double>::infinity();
    double best_bottleneck = std::numeric_limits<double>::infinity();
    for_each_partition(m.layers(), stages, [&](const std::vector<int>& p) {
      if (m.fits(p, table)) {
        best_step = std::min(best_step, m.step_s(p));
        best_bottleneck = std::min(best_bottleneck, bottleneck(m, p));
      }
    });
    const auto opt = optimal_partition(m, table, std::numeric_limits<double>::infinity());
    const auto mb = min_bottleneck_partition(m, table);
    INFO("trial " << trial << ", " << stages << " stages, " << m.layers() << " layers, m "
                  << m.micro_batches);
    if (best_step == std::numeric_limits<double>::infinity()) {
      CHECK_FALSE(opt);
      CHECK_FALSE(mb);
      continue;
    }
    ++with_fit;
    REQUIRE(opt);
    CHECK(valid_partition(*opt, stages, m.layers()));
    CHECK(m.fits(*opt, table));
    CHECK(m.step_s(*opt) == best_step);
    REQUIRE(mb);
    CHECK(m.fits(*mb, table));
    CHECK(bottleneck(m, *mb) == best_bottleneck);
    // Asked to beat the optimum itself, it finds nothing.
    CHECK_FALSE(optimal_partition(m, table, best_step));
  }
  CHECK(with_fit > 200); // the limits leave most problems solvable, not all
}

TEST_CASE("the lower bound never exceeds the simulated step time", "[optimal]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 150; ++trial) {
    const int stages = std::uniform_int_distribution<int>(2, 5)(rng);
    Synthetic syn(rng, stages, std::uniform_int_distribution<int>(stages, 8)(rng));
    const StepModel& m = syn.model;
    const StageMemoryTable& table = *syn.table;
    const double root = step_lower_bound(m, table, {});
    for_each_partition(m.layers(), stages, [&](const std::vector<int>& p) {
      if (!m.fits(p, table)) {
        CHECK(step_lower_bound(m, table, p) == std::numeric_limits<double>::infinity());
        return;
      }
      const double t = m.step_s(p);
      CHECK(root <= t);
      for (std::size_t k = 1; k <= p.size(); ++k) {
        CHECK(step_lower_bound(m, table, std::vector<int>(p.begin(), p.begin() + static_cast<long>(k))) <= t);
      }
    });
  }
}

TEST_CASE("the lower bound holds on deeper synthetic pipelines (pivot paths, sends)", "[optimal]") {
  // Up to 12 stages with up to 12 micro-batches: stages with and without a steady phase, the
  // terms that count stage 0's and the last stage's sends once per micro-batch, and the pivot
  // paths through steady stages. Random partitions, every prefix.
  std::mt19937 rng(99);
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int stages = std::uniform_int_distribution<int>(6, 12)(rng);
    Synthetic syn(rng, stages, std::uniform_int_distribution<int>(stages, 16)(rng));
    const StepModel& m = syn.model;
    const StageMemoryTable& table = *syn.table;
    for (int draw = 0; draw < 20; ++draw) {
      std::vector<int> cut(static_cast<std::size_t>(m.layers() - 1));
      std::iota(cut.begin(), cut.end(), 1);
      std::shuffle(cut.begin(), cut.end(), rng);
      cut.resize(static_cast<std::size_t>(stages - 1));
      std::sort(cut.begin(), cut.end());
      std::vector<int> part;
      int prev = 0;
      for (const int c : cut) {
        part.push_back(c - prev);
        prev = c;
      }
      part.push_back(m.layers() - prev);
      if (!m.fits(part, table)) {
        continue;
      }
      const double t = m.step_s(part);
      for (std::size_t k = 0; k <= part.size(); ++k) {
        CHECK(step_lower_bound(m, table, std::vector<int>(part.begin(), part.begin() + static_cast<long>(k))) <= t);
      }
      ++checked;
    }
  }
  CHECK(checked > 500);
}

TEST_CASE("the lower bound holds on the real profiles, pp up to 32", "[optimal]") {
  const SearchPlan plan = llama_plan({{"A10", 3}, {"A6000", 5}});
  const auto places = placements(plan.context.cluster);
  std::mt19937 rng(11);
  for (const DesignPoint& p : plan.design_points()) {
    if (p.pp == 1) {
      continue;
    }
    const LayerCosts costs = layer_costs(plan.context, p);
    const StageMemoryTable table(plan.context.model, p, 4, 64);
    for (std::size_t k = 0; k < places.size(); k += 3) {
      const StepModel m = step_model(plan.context, p, costs, places[k]);
      for (int draw = 0; draw < 20; ++draw) {
        // A random partition: stage boundaries drawn without repetition.
        std::vector<int> cut(static_cast<std::size_t>(m.layers() - 1));
        std::iota(cut.begin(), cut.end(), 1);
        std::shuffle(cut.begin(), cut.end(), rng);
        cut.resize(static_cast<std::size_t>(p.pp - 1));
        std::sort(cut.begin(), cut.end());
        std::vector<int> part;
        int prev = 0;
        for (const int c : cut) {
          part.push_back(c - prev);
          prev = c;
        }
        part.push_back(m.layers() - prev);
        if (!m.fits(part, table)) {
          continue;
        }
        const double t = m.step_s(part);
        for (std::size_t j = 0; j <= part.size(); j += 4) {
          CHECK(step_lower_bound(m, table, std::vector<int>(part.begin(), part.begin() + static_cast<long>(j))) <= t);
        }
        CHECK(step_lower_bound(m, table, part) <= t);
      }
    }
  }
}

TEST_CASE("optimal equals brute force on real profiles (pp 2 and 4, every placement)", "[optimal]") {
  const SearchPlan plan = llama_plan({{"A10", 3}, {"A6000", 5}});
  const auto places = placements(plan.context.cluster);
  int checked = 0;
  for (const DesignPoint& p : plan.design_points()) {
    if (!(p.pp == 2 || (p.pp == 4 && p.mbs <= 2))) {
      continue;
    }
    const LayerCosts costs = layer_costs(plan.context, p);
    const StageMemoryTable table(plan.context.model, p, 4, 64);
    for (const Placement& place : places.to_vector()) {
      const StepModel m = step_model(plan.context, p, costs, place);
      double best = std::numeric_limits<double>::infinity();
      for_each_partition(m.layers(), p.pp, [&](const std::vector<int>& part) {
        if (m.fits(part, table)) {
          best = std::min(best, m.step_s(part));
        }
      });
      const auto opt = optimal_partition(m, table, std::numeric_limits<double>::infinity());
      INFO(to_string(p.method) << " tp " << p.tp << " pp " << p.pp << " dp " << p.dp << " mbs " << p.mbs);
      if (best == std::numeric_limits<double>::infinity()) {
        CHECK_FALSE(opt);
      } else {
        REQUIRE(opt);
        CHECK(m.step_s(*opt) == best);
        ++checked;
      }
    }
  }
  CHECK(checked >= 40);
}

TEST_CASE("a node budget keeps a valid best", "[optimal]") {
  const SearchPlan plan = llama_plan({{"A10", 3}, {"A6000", 5}}, PartitionMethod::optimal);
  const auto places = placements(plan.context.cluster);
  std::vector<DesignPoint> points;
  for (const DesignPoint& p : plan.design_points()) {
    if (p.pp == 8 || p.pp == 16) {
      points.push_back(p);
    }
  }
  // A tiny budget: not exact, but what it returns is a fitting partition no slower than the
  // least-bottleneck one it starts from.
  const DesignPoint& p = points.front();
  const LayerCosts costs = layer_costs(plan.context, p);
  const StageMemoryTable table(plan.context.model, p, 4, 64);
  const StepModel m = step_model(plan.context, p, costs, places[2]);
  OptimalStats full;
  OptimalStats cut;
  const auto best = optimal_partition(m, table, std::numeric_limits<double>::infinity(), &full);
  const auto quick = optimal_partition(m, table, std::numeric_limits<double>::infinity(), &cut, 3);
  CHECK(full.exact);
  CHECK_FALSE(cut.exact);
  REQUIRE(best);
  REQUIRE(quick);
  CHECK(m.fits(*quick, table));
  CHECK(m.step_s(*quick) >= m.step_s(*best));
  CHECK(m.step_s(*quick) <= m.step_s(*min_bottleneck_partition(m, table)));
}

TEST_CASE("OptimalMemo hands a result to the next call with the same inputs only", "[optimal]") {
  const SearchPlan plan = llama_plan({{"A10", 3}, {"A6000", 5}}, PartitionMethod::optimal);
  const auto places = placements(plan.context.cluster);
  std::optional<DesignPoint> point;
  for (const DesignPoint& p : plan.design_points()) {
    if (p.pp == 8 && !point) {
      point = p;
    }
  }
  REQUIRE(point);
  const LayerCosts costs = layer_costs(plan.context, *point);
  const StageMemoryTable table(plan.context.model, *point, 4, 64);
  const StepModel m = step_model(plan.context, *point, costs, places[2]);
  const double inf = std::numeric_limits<double>::infinity();
  const auto want = optimal_partition(m, table, inf);
  REQUIRE(want);
  OptimalMemo memo;
  OptimalStats first;
  CHECK(optimal_partition(m, table, inf, &first, kOptimalNodeBudget, &memo) == want);
  CHECK(first.nodes > 0);
  CHECK(memo.hits() == 0);
  // Another limit to beat is another problem: searched, not taken.
  const double slower = m.step_s(*want) * 2.0;
  CHECK(optimal_partition(m, table, slower, nullptr, kOptimalNodeBudget, &memo) == want);
  CHECK(memo.hits() == 0);
  // The same inputs again: a copy of the model whose GPU types' cost vectors are copies (one
  // per type, as a design point's layer costs are).
  std::vector<const std::vector<double>*> types;
  for (const std::vector<double>* c : m.problem.stage_layer_costs) {
    if (std::find(types.begin(), types.end(), c) == types.end()) {
      types.push_back(c);
    }
  }
  std::vector<std::vector<double>> copies;
  copies.reserve(types.size());
  for (const std::vector<double>* c : types) {
    copies.push_back(*c);
  }
  StepModel same = m;
  for (const std::vector<double>*& c : same.problem.stage_layer_costs) {
    c = &copies[static_cast<std::size_t>(std::find(types.begin(), types.end(), c) - types.begin())];
  }
  OptimalStats again;
  CHECK(optimal_partition(same, table, inf, &again, kOptimalNodeBudget, &memo) == want);
  CHECK(memo.hits() == 1);
  CHECK(again.nodes == 0);
  // Handed out once: a third call searches again.
  CHECK(optimal_partition(same, table, inf, nullptr, kOptimalNodeBudget, &memo) == want);
  CHECK(memo.hits() == 1);
  // A different link time is a different problem.
  StepModel other = m;
  other.problem.link_s.back() *= 1.5;
  const auto other_want = optimal_partition(other, table, inf);
  CHECK(optimal_partition(other, table, inf, nullptr, kOptimalNodeBudget, &memo) == other_want);
  CHECK(memo.hits() == 1);
}
