#pragma once
// Step-time intervals of the native estimator (issue 23): the 10th-90th percentile ratios of
// measured to predicted step time over the published runs of a regime (GPU x framework x
// scale), written by zerosearch_validate --write-intervals to profiledb/uncertainty.json
// (docs/validation.md). A regime with fewer than `min_runs` runs falls back to a coarser one
// and says so.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zerosearch {

/// One regime: "*" in a key = any. gpu is a catalog GPU name, gpu_class the catalog's class
/// (hbm-nvlink, hbm-pcie, gddr-pcie), framework a family (megatron, deepspeed, fsdp, other),
/// scale a GPU-count bucket (1-8, 9-64, 65-512, >512).
struct UncertaintyRegime {
  std::string gpu = "*", gpu_class = "*", framework = "*", scale = "*";
  int runs = 0;
  /// Percentile ratios measured / predicted (meaningful when runs >= min_runs).
  double low = 0, high = 0;
};

struct UncertaintyTable {
  /// The share of runs between low and high (0.8: 10th to 90th percentile).
  double coverage = 0.8;
  int min_runs = 10;
  std::vector<UncertaintyRegime> regimes;
};

/// A plan's regime and its interval.
struct StepInterval {
  /// A regime with at least min_runs runs was found (itself or a coarser one).
  bool found = false;
  double low = 0, high = 0;
  int coverage_percent = 80;
  /// Runs in the plan's own regime, and the regime used (as text: "similar published runs",
  /// "published runs on A100-80GB", ...), and the own regime's name ("A100-80GB x fsdp x 9-64").
  int own_runs = 0;
  std::string used, own;
  /// The fallback level: 0 = its own regime.
  int level = 0;
};

/// "1-8", "9-64", "65-512" or ">512".
[[nodiscard]] std::string scale_bucket(int num_gpus);
/// The framework family of a data-parallel method (the native model's framework,
/// docs/native.md §4): dp megatron, fsdp fsdp, zero0-3 deepspeed.
[[nodiscard]] std::string framework_family_of_method(const std::string& dp_method);

/// The regimes in the order of fallback: its own (gpu, framework, scale), then (gpu,
/// framework), (gpu), (gpu_class, framework), (gpu_class), all runs.
[[nodiscard]] std::vector<UncertaintyRegime> regime_levels(const std::string& gpu,
                                                           const std::string& gpu_class,
                                                           const std::string& framework,
                                                           const std::string& scale);

[[nodiscard]] StepInterval find_interval(const UncertaintyTable& table, const std::string& gpu,
                                         const std::string& gpu_class,
                                         const std::string& framework, const std::string& scale);

/// What an interval rests on: "80 % of similar published runs", "80 % of published runs on
/// A100-80GB; its regime A100-80GB x fsdp x 9-64 has 3 runs", or "fewer than 10 published runs
/// in its regime ...: no interval".
[[nodiscard]] std::string interval_basis(const StepInterval& i);

/// "29.3 s/step (80 % of similar published runs: 26-35 s)" for a step time, with the
/// fallback or the lack of an interval said.
[[nodiscard]] std::string interval_text(const StepInterval& i, double step_s);

[[nodiscard]] nlohmann::ordered_json to_json(const UncertaintyTable& t);
/// Throws InputError naming the file on a malformed table; a missing file is an empty table.
[[nodiscard]] UncertaintyTable load_uncertainty(const std::filesystem::path& file);

} // namespace zerosearch
