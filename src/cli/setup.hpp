#pragma once
// Shared wiring of the CLI modes: from options to data, cluster and plan inputs.
#include <filesystem>
#include <string>

#include "options.hpp"
#include "zerosearch/cluster.hpp"
#include "zerosearch/plan.hpp"

namespace zerosearch::cli {

/// --profiledb_path, else next to an installed binary (../share/zerosearch/profiledb), else a
/// profiledb/ beside the binary, else the source tree the binary was built from.
[[nodiscard]] std::filesystem::path find_profiledb(const Options& o, const char* argv0);

/// The cluster of --node_type / --node_type_num_node / --num_node / --gpu_per_node. For
/// --pareto only the GPUs per node are set (and the two node types checked).
[[nodiscard]] Cluster make_cluster(const Options& o);

/// Validated plan inputs for `cluster`. Throws InputError naming the bad flag.
[[nodiscard]] PlanInput make_plan_input(const Options& o, const Cluster& cluster);

/// The original's --record file name (SPEC 5), without the logs/ folder.
[[nodiscard]] std::string record_name(const Options& o, const Cluster& cluster);

} // namespace zerosearch::cli
