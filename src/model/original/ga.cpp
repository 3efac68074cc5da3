#include "zerosearch/model/ga.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace zerosearch {

namespace {

std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

/// xoshiro256**: a small, fast generator whose output is the same on every platform (unlike
/// the standard distributions).
class Rng {
public:
  explicit Rng(std::uint64_t seed) noexcept {
    for (auto& w : s_) {
      w = splitmix64(seed);
    }
  }
  std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17U;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, n), n >= 1, without modulo bias.
  int below(int n) noexcept {
    const auto un = static_cast<std::uint64_t>(n);
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % un;
    std::uint64_t x = next();
    while (x >= limit) {
      x = next();
    }
    return static_cast<int>(x % un);
  }
  /// True with probability p.
  bool chance(double p) noexcept {
    return static_cast<double>(next() >> 11U) * 0x1.0p-53 < p;
  }

private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept {
    return (x << static_cast<unsigned>(k)) | (x >> static_cast<unsigned>(64 - k));
  }
  std::uint64_t s_[4]{};
};

/// Feasible before infeasible; then step time (feasible) or memory overflow in GiB (not).
struct Fitness {
  bool fits = false;
  double value = 0.0;
};

bool better(const Fitness& a, const Fitness& b) noexcept {
  if (a.fits != b.fits) {
    return a.fits;
  }
  return a.value < b.value;
}

struct Individual {
  std::vector<int> partition;
  Fitness fitness;
};

/// Strict order: fitness, then the partition itself, so that sorting is deterministic.
bool ranks_before(const Individual& a, const Individual& b) noexcept {
  if (better(a.fitness, b.fitness)) {
    return true;
  }
  if (better(b.fitness, a.fitness)) {
    return false;
  }
  return a.partition < b.partition;
}

class Evaluator {
public:
  Evaluator(const StepModel& m, const StageMemoryTable& memory) : m_(m), memory_(memory) {}
  Fitness operator()(const std::vector<int>& partition) {
    const auto it = cache_.find(partition);
    if (it != cache_.end()) {
      return it->second;
    }
    Fitness f;
    double overflow = 0.0;
    int first = 0;
    for (std::size_t s = 0; s < partition.size(); ++s) {
      const double over = static_cast<double>(memory_.gib(first, partition[s])) -
                          static_cast<double>(m_.stage_limit_gib[s]);
      overflow = std::max(overflow, over);
      first += partition[s];
    }
    f.fits = m_.fits(partition, memory_);
    f.value = f.fits ? m_.step_s(partition) : overflow;
    cache_.emplace(partition, f);
    return f;
  }

private:
  const StepModel& m_;
  const StageMemoryTable& memory_;
  std::map<std::vector<int>, Fitness> cache_;
};

/// Stage boundaries (layer index where each stage after the first begins) and back.
std::vector<int> cuts_of(const std::vector<int>& partition) {
  std::vector<int> cuts;
  int at = 0;
  for (std::size_t s = 0; s + 1 < partition.size(); ++s) {
    at += partition[s];
    cuts.push_back(at);
  }
  return cuts;
}

std::vector<int> partition_of(const std::vector<int>& cuts, int layers) {
  std::vector<int> out;
  int prev = 0;
  for (const int c : cuts) {
    out.push_back(c - prev);
    prev = c;
  }
  out.push_back(layers - prev);
  return out;
}

/// Brings a sorted set of distinct cut positions in 1..layers-1 to exactly `want` entries by
/// dropping random ones or adding random absent positions.
void repair(std::vector<int>& cuts, std::size_t want, int layers, Rng& rng) {
  while (cuts.size() > want) {
    cuts.erase(cuts.begin() + rng.below(static_cast<int>(cuts.size())));
  }
  while (cuts.size() < want) {
    const int c = 1 + rng.below(layers - 1);
    const auto it = std::lower_bound(cuts.begin(), cuts.end(), c);
    if (it == cuts.end() || *it != c) {
      cuts.insert(it, c);
    }
  }
}

std::vector<int> random_partition(int stages, int layers, Rng& rng) {
  std::vector<int> pos(static_cast<std::size_t>(layers - 1));
  std::iota(pos.begin(), pos.end(), 1);
  for (int k = 0; k < stages - 1; ++k) {
    const int pick = k + rng.below(layers - 1 - k);
    std::swap(pos[static_cast<std::size_t>(k)], pos[static_cast<std::size_t>(pick)]);
  }
  pos.resize(static_cast<std::size_t>(stages - 1));
  std::sort(pos.begin(), pos.end());
  return partition_of(pos, layers);
}

std::vector<int> crossover(const std::vector<int>& a, const std::vector<int>& b, int layers,
                           Rng& rng) {
  const int at = 1 + rng.below(layers - 1);
  std::vector<int> cuts;
  for (const int c : cuts_of(a)) {
    if (c < at) {
      cuts.push_back(c);
    }
  }
  for (const int c : cuts_of(b)) {
    if (c >= at) {
      cuts.push_back(c);
    }
  }
  repair(cuts, a.size() - 1, layers, rng);
  return partition_of(cuts, layers);
}

void mutate(std::vector<int>& p, Rng& rng) {
  const int moves = 1 + rng.below(3);
  for (int k = 0; k < moves; ++k) {
    const auto s = static_cast<std::size_t>(rng.below(static_cast<int>(p.size()) - 1));
    const bool right = rng.chance(0.5); // a layer from stage s to s+1, else back
    std::size_t from = right ? s : s + 1;
    std::size_t to = right ? s + 1 : s;
    if (p[from] == 1) {
      std::swap(from, to);
    }
    if (p[from] > 1) {
      --p[from];
      ++p[to];
    }
  }
}

} // namespace

std::uint64_t ga_point_seed(std::uint64_t seed, const DesignPoint& p) noexcept {
  std::uint64_t state = seed;
  std::uint64_t h = splitmix64(state);
  for (const int v : {static_cast<int>(p.method), p.tp, p.dp, p.pp, p.mbs}) {
    state = h ^ static_cast<std::uint64_t>(v);
    h = splitmix64(state);
  }
  return h;
}

std::vector<int> ga_partition(const StepModel& model, const StageMemoryTable& memory,
                              std::uint64_t seed,
                              const std::vector<std::vector<int>>& seeds, const GaParams& params) {
  const int stages = model.stages();
  const int layers = model.layers();
  Rng rng(seed);
  Evaluator evaluate(model, memory);
  const auto size = static_cast<std::size_t>(std::max(params.population, 2));

  std::vector<Individual> pop;
  const auto add = [&](std::vector<int> p) {
    for (const auto& ind : pop) {
      if (ind.partition == p) {
        return;
      }
    }
    const Fitness f = evaluate(p);
    pop.push_back(Individual{std::move(p), f});
  };
  add(initial_partition(layers, stages));
  for (const auto& s : seeds) {
    if (valid_partition(s, stages, layers) && pop.size() < size) {
      add(s);
    }
  }
  // Random individuals; small spaces may hold fewer distinct partitions than the population.
  for (std::size_t tries = 0; pop.size() < size && tries < 20 * size; ++tries) {
    add(random_partition(stages, layers, rng));
  }
  std::sort(pop.begin(), pop.end(), ranks_before);

  const auto pick = [&]() -> const Individual& {
    std::size_t best = static_cast<std::size_t>(rng.below(static_cast<int>(pop.size())));
    for (int k = 1; k < params.tournament; ++k) {
      const auto other = static_cast<std::size_t>(rng.below(static_cast<int>(pop.size())));
      best = std::min(best, other); // pop is sorted: the lower index ranks first
    }
    return pop[best];
  };

  int stall = 0;
  for (int gen = 0; gen < params.generations && stall < params.stall_generations; ++gen) {
    std::vector<Individual> next(pop.begin(),
                                 pop.begin() + std::min<std::ptrdiff_t>(
                                                   params.elites, static_cast<std::ptrdiff_t>(pop.size())));
    while (next.size() < size) {
      const Individual& a = pick();
      const Individual& b = pick();
      std::vector<int> child = rng.chance(params.crossover_rate)
                                   ? crossover(a.partition, b.partition, layers, rng)
                                   : a.partition;
      if (rng.chance(params.mutation_rate)) {
        mutate(child, rng);
      }
      const Fitness f = evaluate(child);
      next.push_back(Individual{std::move(child), f});
    }
    std::sort(next.begin(), next.end(), ranks_before);
    const bool improved = better(next.front().fitness, pop.front().fitness);
    stall = improved ? 0 : stall + 1;
    pop = std::move(next);
  }
  return pop.front().partition;
}

} // namespace zerosearch
