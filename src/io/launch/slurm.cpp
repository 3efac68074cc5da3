// A Slurm batch script that runs the first launcher once per node; each node finds its rank
// from the hostfile, since Slurm does not keep the order of --nodelist (docs/launch.md).
#include <set>

#include <fmt/format.h>

#include "writer.hpp"

namespace zerosearch::launch {

namespace {

std::string refusal(const Facts& f) {
  return f.primary_launcher.empty() ? "no launcher to run" : std::string();
}

void rules(const Facts&) {}

void files(const Facts& f, Output& out) {
  std::set<std::string> types;
  for (int n = 0; n < f.nodes; ++n) {
    types.insert(f.cluster.groups[static_cast<std::size_t>(f.plan.placement[static_cast<std::size_t>(n)])].gpu);
  }
  std::string text = "#!/bin/bash\n# zerosearch plan: " + plan_line(f) + "\n";
  text += "# Slurm does not keep the order of --nodelist: each task looks its host name up in the\n"
          "# hostfile, whose line order is the plan's stage order (see " + f.primary_launcher + ").\n";
  text += "# Submit from the framework's checkout (the launcher runs pretrain_gpt.py or\n"
          "# torchtitan from there), or set MEGATRON_LM / MEGATRON_DS to it; PLAN_DIR (default:\n"
          "# this script's folder, else the submit folder) holds the plan's files.\n";
  if (types.size() > 1) {
    text += "# Node types in different partitions: use a heterogeneous job instead (one component\n"
            "# per type, `#SBATCH hetjob` between them, `srun --het-group=0,1`); the lookup is the same.\n";
  }
  text += "#SBATCH --job-name=zerosearch-plan\n";
  text += fmt::format("#SBATCH --nodes={}\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node={}\n",
                      f.nodes, f.gpus_per_node);
  text += "#SBATCH --exclusive\n";
  text += "#SBATCH --nodelist=" + join(f.hosts, ",") + "\n";
  text += "set -euo pipefail\n";
  text += "PLAN_DIR=${PLAN_DIR:-$SLURM_SUBMIT_DIR}\n";
  text += "export MEGATRON_LM=${MEGATRON_LM:-$SLURM_SUBMIT_DIR} MEGATRON_DS=${MEGATRON_DS:-$SLURM_SUBMIT_DIR}\n";
  text += "# The launcher sets CUDA_DEVICE_MAX_CONNECTIONS as its framework needs.\n";
  text += "srun --ntasks-per-node=1 \"$PLAN_DIR/" + f.primary_launcher + "\"\n";
  out.add("slurm.sbatch", text, true,
          fmt::format("Slurm batch script running `{}` once per node (submit it from the "
                      "framework's checkout, or set MEGATRON_LM / MEGATRON_DS)",
                      f.primary_launcher));
}

} // namespace

const Writer& slurm_writer() {
  static const Writer w{"slurm", "Slurm >= 20.02 (sbatch, srun)", refusal, rules, files};
  return w;
}

} // namespace zerosearch::launch
