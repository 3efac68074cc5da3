#pragma once
// Launch files for one plan (issue 11; docs/launch.md): a DeepSpeed config, a hostfile in stage
// order, Megatron-DeepSpeed / Megatron-LM / torchtitan launch scripts, a Slurm script that fixes
// the node order, and PLAN.md. Facts about the frameworks (keys, flags, rank order, what each
// rejects) come from docs/launch.md, which cites their sources.
#include <filesystem>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/core/dp_method.hpp"
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
};

/// The framework that runs a row: DeepSpeed methods through Megatron-DeepSpeed, Megatron-LM
/// methods through Megatron-LM (and torchtitan as well).
enum class LaunchFramework { megatron_deepspeed, megatron_lm, torchtitan };

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

/// The frameworks whose files are written for `p`.
[[nodiscard]] std::vector<LaunchFramework> launch_frameworks(const DesignPoint& p);

/// Every file for `plan`. Throws InputError, naming the framework's rule, when a framework would
/// reject the plan (ZeRO-2/3 with a pipeline, a tp that does not divide the heads, too few
/// micro-batches for torchtitan's 1F1B, an MoE model, a plan that does not fit in memory).
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
