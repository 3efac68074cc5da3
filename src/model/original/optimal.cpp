#include "zerosearch/model/optimal.hpp"

#include "zerosearch/model/pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

namespace zerosearch {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Compute time of every run of layers on each stage's GPU type, summed in layer order from
/// the run's first layer exactly as stage_times() sums a stage, and the memory reach of every
/// stage from every first layer.
class Segments {
public:
  Segments(const StepModel& m, const StageMemoryTable& memory)
      : n_(m.layers()), stages_(m.stages()) {
    const auto n = static_cast<std::size_t>(n_);
    type_of_.resize(static_cast<std::size_t>(stages_));
    reach_of_.resize(static_cast<std::size_t>(stages_));
    for (int s = 0; s < stages_; ++s) {
      const std::vector<double>* costs = m.problem.stage_layer_costs[static_cast<std::size_t>(s)];
      const auto it = std::find(costs_.begin(), costs_.end(), costs);
      type_of_[static_cast<std::size_t>(s)] = static_cast<std::size_t>(it - costs_.begin());
      if (it == costs_.end()) {
        costs_.push_back(costs);
        std::vector<double> sums(n * (n + 1), 0.0);
        for (std::size_t i = 0; i < n; ++i) {
          double acc = 0.0;
          for (std::size_t j = i + 1; j <= n; ++j) {
            acc += (*costs)[j - 1];
            sums[i * (n + 1) + j] = acc;
          }
        }
        sums_.push_back(std::move(sums));
      }
      const float limit = m.stage_limit_gib[static_cast<std::size_t>(s)];
      const auto lit = std::find(limits_.begin(), limits_.end(), limit);
      reach_of_[static_cast<std::size_t>(s)] = static_cast<std::size_t>(lit - limits_.begin());
      if (lit == limits_.end()) {
        limits_.push_back(limit);
        std::vector<int> reach(n);
        for (int i = 0; i < n_; ++i) {
          reach[static_cast<std::size_t>(i)] = memory.max_layers(i, limit);
        }
        reach_.push_back(std::move(reach));
      }
    }
  }

  /// Compute seconds of layers [i, j) on stage s's GPU type.
  [[nodiscard]] double comp(int s, int i, int j) const noexcept {
    const auto n = static_cast<std::size_t>(n_);
    return sums_[type_of_[static_cast<std::size_t>(s)]][static_cast<std::size_t>(i) * (n + 1) +
                                                         static_cast<std::size_t>(j)];
  }
  /// The last layer end j (exclusive) stage s may take from layer i: memory and at least one
  /// layer for each later stage. Below i + 1 when none.
  [[nodiscard]] int last_end(int s, int i) const noexcept {
    const int mem = reach_[reach_of_[static_cast<std::size_t>(s)]][static_cast<std::size_t>(i)];
    const int room = n_ - (stages_ - s - 1);
    return std::min(i + mem, room);
  }
  [[nodiscard]] int layers() const noexcept { return n_; }
  [[nodiscard]] int stages() const noexcept { return stages_; }
  /// Appends what the search reads of the costs and memory to `key` (OptimalMemo): each GPU
  /// type's layer costs, each memory limit's reach from every layer, and each stage's two.
  void append_key(std::vector<double>& key) const {
    key.push_back(static_cast<double>(costs_.size()));
    for (const std::vector<double>* costs : costs_) {
      key.insert(key.end(), costs->begin(), costs->end());
    }
    key.push_back(static_cast<double>(reach_.size()));
    for (const std::vector<int>& reach : reach_) {
      key.insert(key.end(), reach.begin(), reach.end());
    }
    for (int s = 0; s < stages_; ++s) {
      key.push_back(static_cast<double>(type_of_[static_cast<std::size_t>(s)]));
      key.push_back(static_cast<double>(reach_of_[static_cast<std::size_t>(s)]));
    }
  }

private:
  int n_;
  int stages_;
  std::vector<const std::vector<double>*> costs_;
  std::vector<std::vector<double>> sums_;
  std::vector<std::size_t> type_of_;
  std::vector<float> limits_;
  std::vector<std::vector<int>> reach_;
  std::vector<std::size_t> reach_of_;
};

/// The link time middle stage s carries (StageTimes::comm_s).
double carried_link(const StepModel& m, int s) {
  return (s == 0 || s == m.stages() - 1) ? 0.0 : m.problem.link_s[static_cast<std::size_t>(s - 1)];
}

/// Lower bounds on the pipeline time (stage 0's last backward) of the 1F1B schedule as
/// functions of the stage compute times C_0..C_{pp-1}, each with the sends it must cross:
///   chain:   T = C_0 + ... + C_{pp-1}: one micro-batch goes forward and back through all stages
///   reach b: C_0 + ... + C_{b-1} + coef_b C_b: micro-batch 0 reaches stage b, which then runs
///            its passes (coef_b = m when its warm-up leaves it a steady phase, so that its 2m
///            passes run one at a time; else fwd + m bwd shares), and micro-batch m-1 returns
///   bump b:  T + bump_b C_b: stage b's first backward waits for micro-batch 0's round trip
///            beyond b; after it starts, b still runs all m backward passes and the forward
///            passes that follow in its steady phase, one at a time.
/// Forward and backward shares are 1/3 and 2/3 of a stage's compute (ZeRO 0/1: 1/4 and 3/4).
/// With `every_send`, the terms also count the sends that hold up stage 0 and the last stage
/// once per micro-batch (their own link time, L0 and L1): stage 0 waits for each warm-up
/// forward's send before its next forward (reach 0: + w_0 L0 when it has a steady phase;
/// else bump 0 may instead be (m-1) (fwd + L0): its m forwards and sends, then micro-batch m-1
/// goes down and back), and the last stage waits for each backward's send before its next
/// forward (reach pp-1: + (m-1) L1); stage pp-2, with a steady phase, waits for the last
/// stage's send before each backward (reach pp-2: + m L1, bump pp-2: + (m-1) L1); stage 1's warm-up forwards each
/// wait for stage 0's send (reach 1: + (w_1 - 1) L0 with a steady phase; else bump 1 may be
/// (m-1) (fwd + L0)). And the pivot paths: a stage s >= 1 with a steady phase runs its
/// backward 0 right after its forward w_s, and a stage c < s runs its forwards 0..w_s one
/// after another in its warm-up; so micro-batch 0 reaches c, which runs those w_s + 1
/// forwards, w_s goes down to s, whose backward 0 goes up to a stage b <= s, which runs its
/// backward passes (and the forwards between them) as in the bump-b term, then up:
///   C_0 + ... + C_s + L0 + w_s (fwd_c (+ L0 for c <= 1)) + bump_b C_b;
/// or s first runs its steady pairs, and micro-batch m-1-w_s goes up to a stage b < s, which
/// runs its last w_s + 1 backward passes one after another:
///   C_0 + ... + C_s + L0 + w_s (fwd_c (+ L0 for c <= 1) + bwd_b) + (m-1-w_s) C_s.
/// Without `every_send`, the terms are those the search orders its children by (which fixes
/// which of equally fast partitions it returns).
class PipelineBound {
public:
  PipelineBound(const StepModel& m, bool every_send) {
    const int pp = m.stages();
    const double parts = m.share == ForwardShare::quarter ? 4.0 : 3.0;
    const double fwbw = parts - 1.0;
    const double mb = static_cast<double>(m.micro_batches);
    coef_.resize(static_cast<std::size_t>(pp));
    bump_.resize(static_cast<std::size_t>(pp));
    extra_.resize(static_cast<std::size_t>(pp));
    alt_bump_.assign(static_cast<std::size_t>(pp), 0.0);
    alt_bump_extra_.assign(static_cast<std::size_t>(pp), 0.0);
    bump_extra_.assign(static_cast<std::size_t>(pp), 0.0);
    const double first_link = m.problem.link_s.front();
    const double last_link = m.problem.link_s.back();
    for (int b = 0; b < pp; ++b) {
      const int warm = std::min(pp - b - 1, m.micro_batches);
      const bool steady = warm < m.micro_batches;
      const auto u = static_cast<std::size_t>(b);
      coef_[u] = steady ? mb : (1.0 + fwbw * mb) / parts;
      bump_[u] = ((mb - 1.0) * fwbw + std::max(m.micro_batches - warm - 1, 0)) / parts;
      extra_[u] = (b >= 1 ? first_link : 0.0) + (b == pp - 1 ? last_link : 0.0);
      if (!every_send) {
        continue;
      }
      if (b == 0 && steady) {
        extra_[u] += static_cast<double>(warm) * first_link;
      } else if (b == 0) {
        alt_bump_[u] = (mb - 1.0) / parts;
        alt_bump_extra_[u] = (mb - 1.0) * first_link;
      }
      if (b == pp - 1) {
        extra_[u] += (mb - 1.0) * last_link;
      }
      if (b == pp - 2 && steady) {
        extra_[u] += mb * last_link;
        bump_extra_[u] = (mb - 1.0) * last_link;
      }
      if (b == 1 && pp >= 3 && steady) {
        extra_[u] += static_cast<double>(warm - 1) * first_link;
      } else if (b == 1 && pp >= 3) {
        alt_bump_[u] = (mb - 1.0) / parts;
        alt_bump_extra_[u] = (mb - 1.0) * first_link;
      }
    }
    if (every_send) {
      pivot_warm_.resize(static_cast<std::size_t>(pp));
      for (int s = 0; s < pp; ++s) {
        const int warm = std::min(pp - s - 1, m.micro_batches);
        pivot_warm_[static_cast<std::size_t>(s)] = (s >= 1 && warm < m.micro_batches) ? warm : -1;
      }
      fwd_share_ = 1.0 / parts;
      bwd_share_ = fwbw / parts;
      later_ = mb - 1.0;
      first_link_ = first_link;
    }
    chain_extra_ = first_link + last_link;
  }

  /// The reach-b term, with `before` = C_0 + ... + C_{b-1}.
  [[nodiscard]] double reach(int b, double before, double comp) const noexcept {
    const auto u = static_cast<std::size_t>(b);
    return before + coef_[u] * comp + extra_[u];
  }
  /// The bump-b term (to add to the chain).
  [[nodiscard]] double bump(int b, double comp) const noexcept {
    const auto u = static_cast<std::size_t>(b);
    return std::max(bump_[u] * comp + bump_extra_[u], alt_bump_[u] * comp + alt_bump_extra_[u]);
  }
  [[nodiscard]] double chain_extra() const noexcept { return chain_extra_; }
  /// True when stage s ends pivot paths.
  [[nodiscard]] bool pivot(int s) const noexcept {
    return !pivot_warm_.empty() && pivot_warm_[static_cast<std::size_t>(s)] >= 0;
  }
  /// Stage c's forward share, with the send that holds it up (c <= 1), for the pivot paths.
  [[nodiscard]] double pivot_fwd(int c, double comp) const noexcept {
    return fwd_share_ * comp + (c <= 1 ? first_link_ : 0.0);
  }
  /// The bump-b term without the alternative terms (the part of the pivot paths at stage b).
  [[nodiscard]] double plain_bump(int b, double comp) const noexcept {
    const auto u = static_cast<std::size_t>(b);
    return bump_[u] * comp + bump_extra_[u];
  }
  /// The pivot paths through stage s (compute comp), with `through` = C_0 + ... + C_s, the
  /// largest pivot_fwd and compute of the stages before s and the largest plain_bump of the
  /// stages up to s.
  [[nodiscard]] double pivot_path(int s, double comp, double through, double max_fwd,
                                  double max_comp, double max_bump) const noexcept {
    const auto warm = static_cast<double>(pivot_warm_[static_cast<std::size_t>(s)]);
    const double base = through + first_link_ + warm * max_fwd;
    return std::max(base + max_bump,
                    base + warm * bwd_share_ * max_comp + (later_ - warm) * comp);
  }

private:
  std::vector<double> coef_;
  std::vector<double> bump_;
  std::vector<double> extra_;
  std::vector<double> alt_bump_;
  std::vector<double> alt_bump_extra_;
  std::vector<double> bump_extra_;
  double chain_extra_ = 0.0;
  /// w_s of the stages that end pivot paths, else -1 (empty: none).
  std::vector<int> pivot_warm_;
  double fwd_share_ = 0.0;
  double bwd_share_ = 0.0;
  double later_ = 0.0;
  double first_link_ = 0.0;
};

/// Least values, over the fitting ways to give layers [i, n) to stages s..pp-1, of the bounds
/// measured from stage s (the compute of stages before s is added by the caller):
/// chain[s][i] of the chain alone, all[s][i] of the largest of every bound (its bump terms use
/// chain[.] for the chain, which keeps it a lower bound). +inf when no way fits.
struct TailBounds {
  std::vector<std::vector<double>> chain;
  std::vector<std::vector<double>> all;
};

TailBounds tail_bounds(const Segments& seg, const PipelineBound& pb) {
  const int pp = seg.stages();
  const int n = seg.layers();
  const auto rows = static_cast<std::size_t>(pp) + 1;
  const std::vector<double> inf_row(static_cast<std::size_t>(n) + 1, kInf);
  TailBounds t{std::vector<std::vector<double>>(rows, inf_row),
               std::vector<std::vector<double>>(rows, inf_row)};
  t.chain[static_cast<std::size_t>(pp)][static_cast<std::size_t>(n)] = pb.chain_extra();
  t.all[static_cast<std::size_t>(pp)][static_cast<std::size_t>(n)] = pb.chain_extra();
  for (int s = pp - 1; s >= 0; --s) {
    const auto u = static_cast<std::size_t>(s);
    for (int i = s; i <= n - (pp - s); ++i) {
      double chain = kInf;
      double all = kInf;
      const int last = seg.last_end(s, i);
      const int first_end = s == pp - 1 ? n : i + 1;
      for (int j = first_end; j <= last; ++j) {
        const auto v = static_cast<std::size_t>(j);
        if (t.chain[u + 1][v] == kInf) {
          continue;
        }
        const double c = seg.comp(s, i, j);
        chain = std::min(chain, c + t.chain[u + 1][v]);
        all = std::min(all, std::max({pb.reach(s, 0.0, c), c + t.all[u + 1][v],
                                      c + pb.bump(s, c) + t.chain[u + 1][v]}));
      }
      t.chain[u][static_cast<std::size_t>(i)] = chain;
      t.all[u][static_cast<std::size_t>(i)] = all;
    }
  }
  return t;
}

/// The step time (a float32 value) that a pipeline lower bound implies, rounded down a little
/// for the float64 summation differences between the bound and the simulation.
/// `dp_sync_s` is the data-parallel time for the layers of stage 0.
double step_bound(const StepModel& m, double pipeline_bound, float dp_sync_s) {
  if (pipeline_bound == kInf) {
    return kInf;
  }
  const float pipe = static_cast<float>(pipeline_bound * (1.0 - 1e-9));
  const float with_dp = pipe + dp_sync_s;
  return static_cast<double>(with_dp + m.embedding_sync_s);
}

/// The bound of the stages fixed so far: their compute, largest reach term and largest bump.
struct Prefix {
  double before = 0.0;
  double reach = 0.0;
  double bump = 0.0;
  /// The same under the ordering terms (PipelineBound without every_send).
  double key_reach = 0.0;
  double key_bump = 0.0;
  /// The largest pivot_fwd, compute and plain_bump of the stages fixed so far.
  double max_fwd = 0.0;
  double max_comp = 0.0;
  double max_plain_bump = 0.0;
};

/// `fixed` followed by stage s with compute c (the bound terms; key terms by the caller).
[[gnu::always_inline]] inline Prefix extend(const PipelineBound& pb, const Prefix& fixed, int s,
                                              double c) {
  Prefix next = fixed;
  next.before = fixed.before + c;
  next.reach = std::max(fixed.reach, pb.reach(s, fixed.before, c));
  next.bump = std::max(fixed.bump, pb.bump(s, c));
  next.max_fwd = std::max(fixed.max_fwd, pb.pivot_fwd(s, c));
  next.max_comp = std::max(fixed.max_comp, c);
  next.max_plain_bump = std::max(fixed.max_plain_bump, pb.plain_bump(s, c));
  if (pb.pivot(s)) {
    next.reach = std::max(next.reach, pb.pivot_path(s, c, next.before, fixed.max_fwd,
                                                    fixed.max_comp, next.max_plain_bump));
  }
  return next;
}

/// The pipeline bound of partitions starting with `fixed` whose next stage s starts at layer i.
double pipeline_bound(const TailBounds& tail, const Prefix& fixed, std::size_t s, int i) {
  const auto v = static_cast<std::size_t>(i);
  return std::max({fixed.reach, fixed.before + tail.all[s][v],
                   fixed.before + tail.chain[s][v] + fixed.bump});
}
/// The same under the ordering terms.
double key_pipeline_bound(const TailBounds& tail, const Prefix& fixed, std::size_t s, int i) {
  const auto v = static_cast<std::size_t>(i);
  return std::max({fixed.key_reach, fixed.before + tail.all[s][v],
                   fixed.before + tail.chain[s][v] + fixed.key_bump});
}

/// A child of a partial partition: stage s ends at layer `end`, with its bound and the key
/// it is visited by (the bound under the ordering terms).
struct Child {
  double bound;
  double key;
  int end;
  Prefix prefix;
};

struct Search {
  const StepModel& model;
  const Segments& seg;
  const PipelineBound& pb;
  const TailBounds& tail;
  /// The ordering terms and their tail bounds.
  const PipelineBound& key_pb;
  const TailBounds& key_tail;
  OptimalStats& stats;
  std::int64_t node_budget;
  /// Data-parallel time by the layers of stage 0 (it depends on nothing else).
  std::vector<float> dp_by_first;
  double best_s;
  std::vector<int> best;
  std::vector<int> current;
  bool complete = true;

  // Reused storage: the children of each depth, and the inputs and ends of a simulation.
  std::vector<std::vector<Child>> children_at;
  std::vector<double> comp;
  std::vector<double> for_send;
  std::vector<double> back_send;
  std::vector<double> ends;
  /// By the layers of stage 0: the least pipeline time whose step bound reaches best_s
  /// (a simulation can stop once it is known to reach it), valid while stop_for == best_s.
  std::vector<double> stop_at;
  std::vector<double> stop_for;
  /// The leaves' simulations: consecutive leaves share their first stages, and so the warm-up
  /// events that depend on those stages only.
  std::optional<OneFOneBSequence> sequence;
  /// The events as a graph, for the longest path of each simulated leaf that does not win
  /// (built on first use). The paths learned so far are in the slots below: each is a lower
  /// bound on the pipeline time of every leaf, which rules partitions out unsimulated.
  std::optional<OneFOneBGraph> graph;
  /// kSlots paths, slot-minor (entry [x * kSlots + k] of slot k), so that one test covers
  /// them all: coef[s]: the coefficient of stage s's compute; constant: the sends (-infinity
  /// in an empty slot, which then rules nothing out); tail[s * (n + 1) + i]: the least of
  /// sum_{u >= s} coef[u] C_u over the fitting ways to give layers [i, n) to stages s..pp-1
  /// (+infinity when none fits); sums[s]: sum_{u < s} coef[u] comp[u] over the stages of the
  /// partial partition being visited (filled on entering depth s). `used`: when each slot last
  /// ruled something out (or was learned); the least recent is replaced.
  static constexpr std::size_t kSlots = 8;
  std::vector<double> path_coef;
  std::vector<double> path_constant;
  std::vector<double> path_tail;
  std::vector<double> path_sums;
  std::vector<std::int64_t> path_used;
  std::int64_t path_clock = 0;
  std::size_t path_count = 0;
  std::vector<double> path_scratch;

  void prepare() {
    const auto pp = static_cast<std::size_t>(seg.stages());
    const auto n = static_cast<std::size_t>(seg.layers());
    children_at.assign(pp, {});
    for (auto& c : children_at) {
      c.reserve(n + 1);
    }
    comp.assign(pp, 0.0);
    // Only stage 0 sends forward and only the last stage sends backward (stage_times()).
    for_send.assign(pp, 0.0);
    back_send.assign(pp, 0.0);
    for_send[0] = model.problem.link_s.front();
    back_send[pp - 1] = model.problem.link_s[pp - 2];
    sequence.emplace(model.micro_batches, seg.stages(), for_send, back_send, model.share);
    ends.assign(pp, 0.0);
    stop_at.assign(n + 1, 0.0);
    stop_for.assign(n + 1, std::numeric_limits<double>::quiet_NaN());
    current.reserve(pp);
    path_coef.assign((pp + 1) * kSlots, 0.0);
    path_constant.assign(kSlots, -kInf);
    path_tail.assign((pp + 1) * (n + 1) * kSlots, 0.0);
    path_sums.assign((pp + 1) * kSlots, 0.0);
    path_used.assign(kSlots, 0);
    path_scratch.assign(pp, 0.0);
  }

  /// True when a known path shows that no fitting partition that starts with the s stages in
  /// `current` (compute comp[0..s-1]), stage s starting at layer i, beats best_s: the path's
  /// least value over them reaches the pipeline time from which the step time reaches best_s
  /// (stop_time). The margin covers the float64 rounding of the simulation's sums and of these
  /// (relative 1e-12 at most on these sizes). Also fills the paths' sums of depth s.
  bool subtree_ruled_out(int s, int i) {
    const auto su = static_cast<std::size_t>(s);
    double* sums = path_sums.data() + su * kSlots;
    const double* before = sums - kSlots;
    const double* coef = path_coef.data() + (su - 1) * kSlots;
    const double c = comp[su - 1];
    for (std::size_t k = 0; k < kSlots; ++k) {
      sums[k] = before[k] + coef[k] * c;
    }
    const double stop = stop_time(current[0]);
    if (stop == kInf) {
      return false;
    }
    const double* tail_at =
        path_tail.data() +
        (su * static_cast<std::size_t>(seg.layers() + 1) + static_cast<std::size_t>(i)) * kSlots;
    return reaches(sums, nullptr, 0.0, tail_at, stop);
  }

  /// The same for the child of the node at depth s whose stage s ends at layer j with compute
  /// c, given `stop` (stop_time of its stage 0).
  bool child_ruled_out(int s, int j, double c, double stop) {
    if (stop == kInf) {
      return false;
    }
    const auto su = static_cast<std::size_t>(s);
    const double* tail_at = path_tail.data() + ((su + 1) * static_cast<std::size_t>(seg.layers() + 1) +
                                                static_cast<std::size_t>(j)) *
                                                   kSlots;
    return reaches(path_sums.data() + su * kSlots, path_coef.data() + su * kSlots, c, tail_at,
                   stop);
  }

  /// True when, for some slot k, constant + sums + coef c + tail reaches `stop` (coef null:
  /// none); marks that slot used.
  bool reaches(const double* sums, const double* coef, double c, const double* tail_at,
               double stop) {
    const double* constant = path_constant.data();
    bool any = false;
    if (coef == nullptr) {
      for (std::size_t k = 0; k < kSlots; ++k) {
        any |= (constant[k] + sums[k] + tail_at[k]) * (1.0 - 1e-9) >= stop;
      }
    } else {
      for (std::size_t k = 0; k < kSlots; ++k) {
        any |= (constant[k] + sums[k] + coef[k] * c + tail_at[k]) * (1.0 - 1e-9) >= stop;
      }
    }
    if (any) {
      for (std::size_t k = 0; k < kSlots; ++k) {
        const double v = constant[k] + sums[k] + (coef == nullptr ? 0.0 : coef[k] * c) + tail_at[k];
        if (v * (1.0 - 1e-9) >= stop) {
          path_used[k] = ++path_clock;
          break;
        }
      }
    }
    return any;
  }

  /// Adds the longest path of compute `comp` (the leaf in `current`) to the known paths.
  void learn_path() {
    std::size_t slot = path_count;
    if (path_count == kSlots) {
      slot = static_cast<std::size_t>(std::min_element(path_used.begin(), path_used.end()) -
                                      path_used.begin());
    } else {
      ++path_count;
    }
    path_used[slot] = ++path_clock;
    ++stats.paths;
    if (!graph) {
      // Built on first use: many searches learn no path.
      graph.emplace(model.micro_batches, seg.stages(), for_send.data(), back_send.data(),
                    model.share);
    }
    graph->critical_path(comp.data(), ends.data(), path_scratch.data(), &path_constant[slot]);
    const int pp = seg.stages();
    const int n = seg.layers();
    const auto ppu = static_cast<std::size_t>(pp);
    // Its sums over the leaf's stages, which the visits on the way to it share.
    path_sums[slot] = 0.0;
    for (std::size_t u = 0; u < ppu; ++u) {
      path_coef[u * kSlots + slot] = path_scratch[u];
      path_sums[(u + 1) * kSlots + slot] = path_sums[u * kSlots + slot] + path_scratch[u] * comp[u];
    }
    const auto row = static_cast<std::size_t>(n + 1);
    const auto tail_of = [&](int s, int i) -> double& {
      return path_tail[(static_cast<std::size_t>(s) * row + static_cast<std::size_t>(i)) * kSlots +
                       slot];
    };
    for (int s = 0; s <= pp; ++s) {
      for (int i = 0; i <= n; ++i) {
        tail_of(s, i) = kInf;
      }
    }
    tail_of(pp, n) = 0.0;
    for (int s = pp - 1; s >= 0; --s) {
      const double a = path_scratch[static_cast<std::size_t>(s)];
      for (int i = s; i <= n - (pp - s); ++i) {
        const int last = seg.last_end(s, i);
        const int first_end = s == pp - 1 ? n : i + 1;
        double least = kInf;
        for (int j = first_end; j <= last; ++j) {
          const double rest = tail_of(s + 1, j);
          if (rest != kInf) {
            least = std::min(least, a * seg.comp(s, i, j) + rest);
          }
        }
        tail_of(s, i) = least;
      }
    }
  }

  /// The least pipeline time L >= 0 with step_bound(L) >= best_s (step_bound is monotone in L).
  double stop_time(int first_layers) {
    const auto k = static_cast<std::size_t>(first_layers);
    if (stop_for[k] == best_s) {
      return stop_at[k];
    }
    const float dp_s = dp_by_first[k];
    double out = kInf;
    if (best_s != kInf) {
      // Binary search over the bit patterns of the non-negative doubles, which sort as numbers.
      std::uint64_t lo = 0;
      std::uint64_t hi = 0x7FF0000000000000ULL; // +infinity
      const auto value = [](std::uint64_t bits) {
        double d = 0.0;
        std::memcpy(&d, &bits, sizeof d);
        return d;
      };
      while (lo < hi) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        if (step_bound(model, value(mid), dp_s) >= best_s) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      out = value(lo);
    }
    stop_for[k] = best_s;
    stop_at[k] = out;
    return out;
  }

  /// The step time of the full partition in `current` (model.step_s), or +infinity once the
  /// simulation shows it cannot beat best_s.
  double step_of_current() {
    const int pp = seg.stages();
    int first = 0;
    for (int s = 0; s < pp; ++s) {
      const int end = first + current[static_cast<std::size_t>(s)];
      comp[static_cast<std::size_t>(s)] = seg.comp(s, first, end);
      first = end;
    }
    const double stop = stop_time(current[0]);
    ++stats.simulations;
    if (!sequence->simulate(comp.data(), stop, ends.data())) {
      learn_path();
      return kInf;
    }
    // As StepModel::step_from_times: each stage's end plus the data-parallel time in float32,
    // the first maximum, plus the embedding sync.
    const float dp_s = dp_by_first[static_cast<std::size_t>(current[0])];
    float slowest = 0.0F;
    for (std::size_t s = 0; s < ends.size(); ++s) {
      const float t = static_cast<float>(ends[s]) + dp_s;
      if (s == 0 || t > slowest) {
        slowest = t;
      }
    }
    return static_cast<double>(slowest + model.embedding_sync_s);
  }

  void visit(int s, int i, const Prefix& fixed) {
    if (++stats.nodes > node_budget) {
      complete = false;
      return;
    }
    const int pp = seg.stages();
    const int n = seg.layers();
    if (s >= 1 && subtree_ruled_out(s, i)) {
      ++stats.ruled_out;
      return;
    }
    const int last = seg.last_end(s, i);
    if (s == pp - 1) {
      // The last stage takes the rest: one child at most, a leaf, with no order to keep (the
      // same tests as the loop below).
      if (last < n) {
        return;
      }
      const Prefix next = extend(pb, fixed, s, seg.comp(s, i, n));
      const float dp_s = dp_by_first[static_cast<std::size_t>(current[0])];
      if (step_bound(model, next.reach, dp_s) >= best_s ||
          step_bound(model, pipeline_bound(tail, next, static_cast<std::size_t>(s) + 1, n),
                     dp_s) >= best_s) {
        return;
      }
      current.push_back(n - i);
      const double t = step_of_current();
      if (t < best_s) {
        best_s = t;
        best = current;
      }
      current.pop_back();
      return;
    }
    const int first_end = i + 1;
    // Children with their bounds, most promising first by the ordering terms (ties: fewer
    // layers first), so that good partitions are found early and prune the rest. Only
    // partitions strictly faster than the best so far are looked for; the tighter bound prunes.
    std::vector<Child>& children = children_at[static_cast<std::size_t>(s)];
    children.clear();
    for (int j = first_end; j <= last; ++j) {
      const double c = seg.comp(s, i, j);
      Prefix next = extend(pb, fixed, s, c);
      next.key_reach = std::max(fixed.key_reach, key_pb.reach(s, fixed.before, c));
      next.key_bump = std::max(fixed.key_bump, key_pb.bump(s, c));
      const float dp_s = dp_by_first[static_cast<std::size_t>(s == 0 ? j : current[0])];
      // The reach terms fixed so far only grow with j: past the best, every larger j is too.
      if (step_bound(model, next.reach, dp_s) >= best_s) {
        break;
      }
      const double bound = step_bound(
          model, pipeline_bound(tail, next, static_cast<std::size_t>(s) + 1, j), dp_s);
      if (bound < best_s) {
        if (child_ruled_out(s, j, c, stop_time(s == 0 ? j : current[0]))) {
          ++stats.ruled_out;
          continue;
        }
        const double key = step_bound(
            model, key_pipeline_bound(key_tail, next, static_cast<std::size_t>(s) + 1, j), dp_s);
        // Insertion sort, stable: after every child with a key no larger.
        children.push_back(Child{bound, key, j, next});
        std::size_t k = children.size() - 1;
        while (k > 0 && children[k - 1].key > key) {
          std::swap(children[k - 1], children[k]);
          --k;
        }
      }
    }
    for (std::size_t c = 0; c < children.size(); ++c) {
      if (!complete) {
        return;
      }
      // Deeper visits use the other depths' lists only, so this one stays as it is.
      const Child& child = children[c];
      if (child.bound >= best_s) {
        continue;
      }
      current.push_back(child.end - i);
      comp[static_cast<std::size_t>(s)] = seg.comp(s, i, child.end);
      visit(s + 1, child.end, child.prefix);
      current.pop_back();
    }
  }
};

/// OptimalMemo's keys: hashed and compared by their bits (+0 and -0 differ; no NaN occurs).
std::uint64_t memo_hash(const std::vector<double>& key) noexcept {
  std::uint64_t h = 1469598103934665603ULL;
  for (const double d : key) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    h = (h ^ bits) * 1099511628211ULL;
    h ^= h >> 29;
  }
  return h;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) noexcept {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

} // namespace

std::optional<std::vector<int>> min_bottleneck_partition(const StepModel& model,
                                                         const StageMemoryTable& memory) {
  const Segments seg(model, memory);
  const int pp = seg.stages();
  const int n = seg.layers();
  // best[s][i]: least bottleneck of layers [i, n) on stages s..pp-1; choice: stage s's end.
  std::vector<std::vector<double>> best(static_cast<std::size_t>(pp) + 1,
                                        std::vector<double>(static_cast<std::size_t>(n) + 1, kInf));
  std::vector<std::vector<int>> choice(static_cast<std::size_t>(pp),
                                       std::vector<int>(static_cast<std::size_t>(n) + 1, -1));
  best[static_cast<std::size_t>(pp)][static_cast<std::size_t>(n)] = 0.0;
  for (int s = pp - 1; s >= 0; --s) {
    for (int i = s; i <= n - (pp - s); ++i) {
      const int last = seg.last_end(s, i);
      const int first_end = s == pp - 1 ? n : i + 1;
      double b = kInf;
      int arg = -1;
      for (int j = first_end; j <= last; ++j) {
        const double rest = best[static_cast<std::size_t>(s) + 1][static_cast<std::size_t>(j)];
        if (rest == kInf) {
          continue;
        }
        const double t = std::max(carried_link(model, s) + seg.comp(s, i, j), rest);
        if (t < b) {
          b = t;
          arg = j;
        }
      }
      best[static_cast<std::size_t>(s)][static_cast<std::size_t>(i)] = b;
      choice[static_cast<std::size_t>(s)][static_cast<std::size_t>(i)] = arg;
    }
  }
  if (best[0][0] == kInf) {
    return std::nullopt;
  }
  std::vector<int> out;
  int i = 0;
  for (int s = 0; s < pp; ++s) {
    const int j = choice[static_cast<std::size_t>(s)][static_cast<std::size_t>(i)];
    out.push_back(j - i);
    i = j;
  }
  return out;
}

double step_lower_bound(const StepModel& model, const StageMemoryTable& memory,
                        const std::vector<int>& prefix) {
  const Segments seg(model, memory);
  const PipelineBound pb(model, true);
  const TailBounds tail = tail_bounds(seg, pb);
  Prefix fixed;
  int i = 0;
  for (std::size_t s = 0; s < prefix.size(); ++s) {
    const int j = i + prefix[s];
    if (prefix[s] < 1 || j > seg.last_end(static_cast<int>(s), i) ||
        (s + 1 == static_cast<std::size_t>(seg.stages()) && j != seg.layers())) {
      return kInf;
    }
    fixed = extend(pb, fixed, static_cast<int>(s), seg.comp(static_cast<int>(s), i, j));
    i = j;
  }
  // Stage 0's layers set the data-parallel time; unknown yet, it is at least that of one layer.
  return step_bound(model, pipeline_bound(tail, fixed, prefix.size(), i),
                    model.dp_sync_s(prefix.empty() ? 1 : prefix[0]));
}

bool OptimalMemo::take(const std::vector<double>& key, std::optional<std::vector<int>>& result) {
  const std::uint64_t h = memo_hash(key);
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto [lo, hi] = entries_.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    if (same_bits(it->second.key, key)) {
      result = std::move(it->second.result);
      bytes_ -= it->second.key.size() * sizeof(double);
      entries_.erase(it);
      ++hits_;
      return true;
    }
  }
  return false;
}

void OptimalMemo::store(std::vector<double> key, std::optional<std::vector<int>> result) {
  const std::uint64_t h = memo_hash(key);
  const std::size_t bytes = key.size() * sizeof(double);
  const std::lock_guard<std::mutex> lock(mutex_);
  if (bytes_ + bytes > kMaxMemoBytes) {
    return;
  }
  bytes_ += bytes;
  entries_.emplace(h, Entry{std::move(key), std::move(result)});
}

std::int64_t OptimalMemo::hits() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

std::optional<std::vector<int>> optimal_partition(const StepModel& model,
                                                  const StageMemoryTable& memory, double to_beat_s,
                                                  OptimalStats* stats, std::int64_t node_budget,
                                                  OptimalMemo* memo) {
  const Segments seg(model, memory);
  OptimalStats local;
  OptimalStats& st = stats != nullptr ? *stats : local;
  std::vector<float> dp_by_first(static_cast<std::size_t>(seg.layers()) + 1);
  for (int k = 1; k <= seg.layers(); ++k) {
    dp_by_first[static_cast<std::size_t>(k)] = model.dp_sync_s(k);
  }
  std::vector<double> key;
  if (memo != nullptr) {
    key = {static_cast<double>(seg.stages()), static_cast<double>(seg.layers()),
           static_cast<double>(model.micro_batches), static_cast<double>(model.share),
           static_cast<double>(model.embedding_sync_s), to_beat_s,
           static_cast<double>(node_budget)};
    seg.append_key(key);
    key.insert(key.end(), model.problem.link_s.begin(), model.problem.link_s.end());
    key.insert(key.end(), dp_by_first.begin(), dp_by_first.end());
    std::optional<std::vector<int>> known;
    if (memo->take(key, known)) {
      return known;
    }
  }
  const PipelineBound pb(model, true);
  const TailBounds tail = tail_bounds(seg, pb);
  const PipelineBound key_pb(model, false);
  const TailBounds key_tail = tail_bounds(seg, key_pb);
  Search search{model, seg, pb, tail, key_pb, key_tail, st, node_budget, std::move(dp_by_first), to_beat_s, {}, {}, true, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, 0, 0, {}};
  // The least-bottleneck partition is usually close to the optimum: start from it.
  if (const auto start = min_bottleneck_partition(model, memory)) {
    ++st.simulations;
    const double t = model.step_s(*start);
    if (t < search.best_s) {
      search.best_s = t;
      search.best = *start;
    }
  }
  search.prepare();
  search.visit(0, 0, Prefix{});
  st.exact = search.complete;
  std::optional<std::vector<int>> out;
  if (!search.best.empty()) {
    out = search.best;
  }
  if (memo != nullptr && search.complete) {
    memo->store(std::move(key), out);
  }
  return out;
}

} // namespace zerosearch
