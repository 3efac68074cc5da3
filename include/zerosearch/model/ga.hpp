#pragma once
// --search_method ga: a genetic algorithm over contiguous layer partitions that minimises the
// simulated step time (docs/model.md §6.5). Seeded and reproducible.
#include <cstdint>
#include <vector>

#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/model/step_model.hpp"

namespace zerosearch {

/// The GA's parameters (README "Modes" lists them). An individual is a partition: pp stage
/// counts, each >= 1, summing to the layer count; every operator keeps it so.
struct GaParams {
  /// Individuals per generation. The first ones are the balanced initial partition and the
  /// seeds given (e.g. minmax's partition); the rest are uniformly random partitions.
  int population = 24;
  /// Generations at most; the search stops earlier after `stall_generations` generations without
  /// a better best individual.
  int generations = 30;
  int stall_generations = 8;
  /// Parents are chosen by tournaments of this many individuals.
  int tournament = 3;
  /// The best individuals copied unchanged into the next generation.
  int elites = 2;
  /// Probability that a child is the crossover of two parents (else a copy of the first):
  /// stage boundaries taken from one parent before a random cut layer and from the other after
  /// it, then repaired so that every stage keeps at least one layer.
  double crossover_rate = 0.9;
  /// Probability that a child is mutated: 1 to 3 times, one layer moves across a random stage
  /// boundary.
  double mutation_rate = 0.6;
};

/// The best partition the GA finds: feasible (fits in memory) partitions rank by step time,
/// infeasible ones after them by how far their worst stage exceeds its limit (`memory`: the
/// figures of the design point's runs of layers). model.stages() >= 2. `seed` fixes every random
/// choice: the same seed and inputs give the same partition.
[[nodiscard]] std::vector<int> ga_partition(const StepModel& model, const StageMemoryTable& memory,
                                            std::uint64_t seed,
                                            const std::vector<std::vector<int>>& seeds,
                                            const GaParams& params = {});

/// The GA's seed for one design point: --seed mixed with the point, so that results do not
/// depend on the order (or thread) in which points are estimated.
[[nodiscard]] std::uint64_t ga_point_seed(std::uint64_t seed, const DesignPoint& p) noexcept;

} // namespace zerosearch
