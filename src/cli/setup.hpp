#pragma once
// Shared wiring of the CLI modes: from options to data, cluster and plan inputs.
#include <filesystem>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "options.hpp"
#include "zerosearch/core/cluster.hpp"
#include "zerosearch/search/plan.hpp"

namespace zerosearch::cli {

/// --profiledb_path, else next to an installed binary (../share/zerosearch/profiledb), else a
/// profiledb/ beside the binary, else the source tree the binary was built from.
[[nodiscard]] std::filesystem::path find_profiledb(const Options& o, const char* argv0);

/// The original's catalog entries (A10, A6000, A100, H100, RTX3090): their price is the
/// original's node price over its 4 GPUs (GpuSpec::price_source says so), kept for parity.
[[nodiscard]] bool original_entry(const GpuSpec& gpu) noexcept;

/// Without --gpu_per_node: the catalog's node size of the --node_type GPUs (the smallest when
/// they differ, with a note), 4 (the original's default) where a GPU is one of the original's
/// entries or has no node size. Leaves the options as they are when the catalog cannot be read
/// (the run reports that itself).
void apply_gpu_per_node_default(Options& o, const char* argv0);

/// For native runs: per node type, the catalog entry its name resolved to, with its price and
/// source, and the real parts an original's entry stands for (H100: H100-SXM, H100-PCIe).
[[nodiscard]] std::vector<std::string> gpu_entry_lines(const EstimateContext& ctx,
                                                       const HardwareCatalog& hardware);

/// What a run searched, for the sidecar of its CSV files: model, cluster, batch, framework,
/// search method, precision, links, profile database and profile source.
[[nodiscard]] nlohmann::ordered_json run_inputs(const Options& o, const SearchPlan& plan,
                                                const std::filesystem::path& profiledb);

/// The model of --type when it names a file (a Hugging Face config.json or a model JSON), else
/// nothing (a built-in name, looked up in the catalog later). Throws InputError.
[[nodiscard]] std::optional<ModelSpec> model_from_file(const Options& o);

/// Prints each warning as "zerosearch: warning: ..." on standard error, unless --quiet.
void print_warnings(const Options& o, const std::vector<std::string>& warnings);

/// The plan inputs of the options for `cluster` (one composition of a --pareto sweep, or
/// cluster_of(o)).
[[nodiscard]] PlanInput make_plan_input(const Options& o, const Cluster& cluster);

/// Checks options that need the loaded data: --custom_num_layer given for a model with a fixed
/// layer count must equal it. Throws InputError.
void check_plan(const Options& o, const SearchPlan& plan);

/// Why `plan` has no design point at all (the cluster is too large for the global batch and
/// the layer count), with what to change.
[[nodiscard]] std::string no_design_point_message(const SearchPlan& plan);

/// The original's --record file name (docs/model.md §5), without the logs/ folder.
[[nodiscard]] std::string record_name(const Options& o, const Cluster& cluster);

} // namespace zerosearch::cli
