#pragma once
// Launch files for one plan (issues 11, 24; docs/launch.md): a registry of per-framework writers
// (DeepSpeed config, Megatron-DeepSpeed, Megatron-LM, torchtitan, Slurm; src/io/launch/), a
// hostfile in stage order and PLAN.md. Every fact is read from a table: the method table's
// launch column (LaunchTraits), the model's ModelSpec, the GPUs' GpuSpec. Facts about the
// frameworks (keys, flags, rank order, what each rejects) come from docs/launch.md, which cites
// their sources.
#include <filesystem>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/core/hardware.hpp"
#include "zerosearch/model/estimate.hpp"

namespace zerosearch {

/// One plan to launch: the design point on a placement, and its estimate (with its partition
/// in pipeline layers: the embedding counts as a layer of stage 0, post_process of the last).
struct LaunchPlan {
  const EstimateContext* ctx = nullptr;
  DesignPoint point;
  Placement placement;
  Estimate estimate;
  /// "rank 3 of 159" or "--exhaustive": where the plan came from, for PLAN.md.
  std::string origin;
  /// The GPU catalog: the precision written follows each GPU's GpuSpec (bf16 support).
  const HardwareCatalog* hardware = nullptr;
  /// The command line that reproduces the plan's search (for PLAN.md's native comparison),
  /// e.g. "--node_type A10 --num_node 8 --type llama2_13B"; empty: PLAN.md rebuilds it.
  std::string command;
};

/// One launch target of the registry: its name and the framework versions it writes for.
struct LaunchTarget {
  const char* name;
  const char* versions;
};
/// The registry, in writing order: deepspeed, megatron_deepspeed, megatron_lm, torchtitan, slurm.
[[nodiscard]] std::vector<LaunchTarget> launch_targets();

struct LaunchFile {
  std::string name;
  std::string text;
  bool executable = false;
};

/// Transformer layers per stage: the partition without the embedding (stage 0) and
/// post_process (last stage). Precondition: a valid partition.
[[nodiscard]] std::vector<int> transformer_layers_per_stage(const std::vector<int>& partition);

/// Megatron-LM's --pipeline-model-parallel-layout for `partition`, e.g. "Et*4|t*6|t*3L".
[[nodiscard]] std::string megatron_layout(const std::vector<int>& partition);

/// The transformer layers per stage Megatron-DeepSpeed builds (partition_method
/// 'type:transformer'): equal counts, the first num_layers % pp stages one more.
[[nodiscard]] std::vector<int> deepspeed_default_split(int num_layers, int pp);

/// Placeholder host names of the nodes in rank order: "<type>-nodeNN", numbered per type.
[[nodiscard]] std::vector<std::string> placeholder_hosts(const Cluster& cluster,
                                                         const Placement& placement);

/// The targets that write files for `plan` (names), and why each other target does not.
struct LaunchChoice {
  std::vector<std::string> written;
  std::vector<std::pair<std::string, std::string>> refused; // target, reason
};
[[nodiscard]] LaunchChoice launch_choice(const LaunchPlan& plan);

/// Every file for `plan`. Throws InputError, naming the framework's rule, when a framework would
/// reject the plan (ZeRO-2/3 with a pipeline, a tp that does not divide the heads or the
/// key/value heads, a plan that does not fit in memory) or when no framework can run it.
[[nodiscard]] std::vector<LaunchFile> launch_files(const LaunchPlan& plan);

/// Every file name launch_files may produce, for the folder check.
[[nodiscard]] const std::vector<std::string>& launch_file_names();

/// Throws InputError unless `dir` is missing, an empty folder, or a folder holding only files
/// named in launch_file_names(). Creates nothing.
void check_launch_dir(const std::filesystem::path& dir);

/// Creates `dir` if missing, writes `files` (each through write_launch_file) and removes files
/// of launch_file_names() that this plan does not write, so the folder describes one plan.
void write_launch_files(const std::filesystem::path& dir, const std::vector<LaunchFile>& files);

/// Writes one file: through a temporary beside it, renamed over `path` when complete. The one
/// place --emit, --timeline and --html touch the disk. Throws InputError naming the path.
void write_launch_file(const std::filesystem::path& path, const std::string& text,
                       bool executable = false);

} // namespace zerosearch
