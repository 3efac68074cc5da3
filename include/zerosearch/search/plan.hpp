#pragma once
// Turns validated user choices and the loaded data into a search: the estimate context, the
// data-parallel methods and tensor-parallel degrees that have profiles, and notes on what was
// left out. Throws InputError on any choice the data cannot serve.
#include <cstdint>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/search/enumerate.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/core/hardware.hpp"
#include "zerosearch/core/model.hpp"
#include "zerosearch/core/profile.hpp"

namespace zerosearch {

struct PlanInput {
  std::string model;
  /// Overrides the model's layer count when the model takes it from the command line.
  int custom_num_layers = 48;
  Cluster cluster;
  std::string bandwidth_set = "ib";
  Framework framework = Framework::automatic;
  int global_batch = 64;
  int precision_bits = 16;
  std::int64_t iterations = 12'500'000;
  PartitionMethod partition_method = PartitionMethod::minmax;
  std::uint64_t seed = 0;
};

struct Catalogs {
  ModelCatalog models;
  HardwareCatalog hardware;
  ProfileDb profiles;
};

struct SearchPlan {
  EstimateContext context;
  /// Methods in search order, each with the tp degrees it is searched at.
  std::vector<DpMethod> methods;
  std::vector<std::vector<int>> tp_degrees;
  /// One line each: what was left out and why.
  std::vector<std::string> notes;

  [[nodiscard]] std::vector<DesignPoint> design_points() const;
};

/// The methods --framework names, in the original's order (automatic: docs/model.md §6.1).
[[nodiscard]] SearchPlan make_plan(const PlanInput& in, const Catalogs& catalogs);

} // namespace zerosearch
