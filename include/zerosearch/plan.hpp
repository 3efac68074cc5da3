#pragma once
// Turns validated user choices and the loaded data into a search: the estimate context, the
// data-parallel methods and tensor-parallel degrees that have profiles, and notes on what was
// left out. Throws InputError on any choice the data cannot serve.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerosearch/cluster.hpp"
#include "zerosearch/enumerate.hpp"
#include "zerosearch/estimate.hpp"
#include "zerosearch/hardware.hpp"
#include "zerosearch/model.hpp"
#include "zerosearch/profiledb.hpp"

namespace zerosearch {

struct PlanInput {
  /// A model of the catalog, by name (unused when model_spec is set).
  std::string model;
  /// A model read from a file (--type FILE), used instead of a catalog entry. Its name must not
  /// be a catalog name, so that it never picks up another model's measured profiles.
  std::optional<ModelSpec> model_spec;
  /// Training sequence length in tokens (--seq_len); 0 = the model's own.
  std::int64_t sequence_length = 0;
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
  /// One line each: inputs the plan accepts but the user should look at (a sequence longer
  /// than the model's positions, measured profiles taken at another sequence length).
  std::vector<std::string> warnings;

  [[nodiscard]] std::vector<DesignPoint> design_points() const;
};

/// The methods --framework names, in the original's order (automatic: SPEC deviation 1).
[[nodiscard]] SearchPlan make_plan(const PlanInput& in, const Catalogs& catalogs);

/// Loads models.json, hardware.json and profiles/ from a profiledb folder. Throws InputError.
[[nodiscard]] Catalogs load_catalogs(const std::filesystem::path& profiledb);

} // namespace zerosearch
