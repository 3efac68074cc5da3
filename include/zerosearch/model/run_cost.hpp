#pragma once
// Time, money and energy of a whole training run (docs/run_cost.md): the failure-free compute
// time of N steps, stretched by failures, checkpoints and restarts (Young/Daly), priced per
// GPU-hour and powered between idle and TDP. Pure functions of plain structs.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace zerosearch {

/// Which catalog price a run pays per GPU-hour (--pricing).
enum class Pricing : std::uint8_t { on_demand, reserved, spot };
[[nodiscard]] const char* to_string(Pricing p) noexcept;
/// "on_demand", "reserved" or "spot"; empty otherwise.
[[nodiscard]] std::optional<Pricing> parse_pricing(std::string_view text) noexcept;

/// Young's first-order optimal checkpoint interval sqrt(2 C M), seconds of compute between
/// checkpoints; `checkpoint_s` C and `mtbf_s` M > 0.
[[nodiscard]] double young_interval_s(double checkpoint_s, double mtbf_s) noexcept;
/// Daly's higher-order optimum (Daly 2006, FGCS 22(3), eq. 37):
/// sqrt(2CM) [1 + sqrt(C/2M)/3 + (C/2M)/9] - C for C < 2M, else M.
[[nodiscard]] double daly_interval_s(double checkpoint_s, double mtbf_s) noexcept;
/// Daly's expected wall time of `solve_s` seconds of work checkpointed every `interval_s`
/// seconds of work, with exponential failures of mean `mtbf_s`, checkpoint `checkpoint_s` and
/// restart `restart_s` (Daly 2006, eq. 20): M e^(R/M) (e^((tau+C)/M) - 1) T_s / tau.
[[nodiscard]] double expected_wall_s(double solve_s, double interval_s, double checkpoint_s,
                                     double restart_s, double mtbf_s) noexcept;

/// One node type of a run's cluster, with its catalog figures at the chosen pricing.
struct RunCostGroup {
  int nodes = 0;
  int gpus = 0;
  /// $ per GPU-hour at the run's pricing.
  double usd_per_gpu_hour = 0.0;
  /// Board power at full load (TDP) and idle, W; tdp_w 0: unknown (energy is then NaN).
  double tdp_w = 0.0;
  double idle_w = 0.0;
  /// Unexpected interruptions per GPU-hour (hardware and software), the catalog's or the flag's.
  double failures_per_gpu_hour = 0.0;
};

/// The settings of a run that are the same for every plan of it (the flags).
struct RunCostSettings {
  /// Steps of the whole run (--steps, or --tokens / tokens per step rounded up).
  std::int64_t steps = 0;
  /// Bytes of one checkpoint: the model's weights and optimizer state, each shard once.
  double checkpoint_bytes = 0.0;
  /// Write bandwidth of checkpoint storage per node, GB/s (10^9 bytes/s).
  double storage_GBps_per_node = 1.0;
  /// Time from a failure to training again (detect, reschedule, load the checkpoint), s.
  double restart_s = 600.0;
  /// Spot preemptions per node-hour (0 unless --pricing spot).
  double preemptions_per_node_hour = 0.0;
  /// Per-GPU power cap, W; empty: none.
  std::optional<double> power_cap_w;
  /// Power of a node besides its GPUs (CPUs, memory, NICs, fans), W.
  double node_overhead_w = 0.0;
  /// Power usage effectiveness of the facility (>= 1).
  double pue = 1.0;
  /// $ per kWh of facility energy; empty: no energy cost.
  std::optional<double> usd_per_kwh;
};

/// The whole run of one plan.
struct RunCost {
  /// The step time after a power cap (the estimate's when uncapped), s; and the throughput
  /// factor the cap leaves (1 without one).
  double step_s = 0.0;
  double cap_throughput = 1.0;
  /// Failure-free compute time of every step, s.
  double solve_s = 0.0;
  /// Mean time between interruptions of the whole cluster (failures and preemptions), s.
  double mtbf_s = 0.0;
  /// Time to write one checkpoint, s; the interval of work between two (Daly), s.
  double checkpoint_s = 0.0;
  double interval_s = 0.0;
  /// Expected wall-clock time of the run with failures, checkpoints and restarts, s.
  double wall_s = 0.0;
  /// solve_s / wall_s: the effective training time fraction (goodput).
  double effective_fraction = 1.0;
  double gpu_hours = 0.0;
  double usd = 0.0;
  /// Average draw of one GPU while training (the cap's when it binds), W, per group.
  std::vector<double> gpu_power_w;
  /// Facility power of the cluster (GPUs, node overhead, PUE), W; energy over wall_s, MWh;
  /// NaN when a GPU's power is unknown.
  double facility_power_w = 0.0;
  double energy_mwh = 0.0;
  /// Energy cost, $; NaN without a price per kWh.
  double energy_usd = 0.0;
  [[nodiscard]] double days() const noexcept { return wall_s / 86400.0; }
};

/// A run's node types and settings: the same for every plan of one cluster.
struct RunCostSpec {
  std::vector<RunCostGroup> groups;
  RunCostSettings settings;
};

/// A GPU's draw at utilisation `utilisation` (0..1, the plan's MFU): idle + (TDP - idle) u.
[[nodiscard]] double gpu_power_w(double tdp_w, double idle_w, double utilisation) noexcept;

/// The throughput a per-GPU cap of `cap_w` leaves a GPU that would draw `draw_w` uncapped:
/// 1 when the cap does not bind, else (cap - idle) / (draw - idle) (clock, and the step's
/// compute, proportional to the power above idle; docs/run_cost.md). `cap_w` > `idle_w`.
[[nodiscard]] double cap_throughput(double cap_w, double draw_w, double idle_w) noexcept;

/// The whole run of a plan of step time `step_s` (uncapped) and model FLOPs utilisation
/// `mfu` (0..1; NaN: energy unknown) on `groups`.
/// `writer_nodes`: nodes whose GPUs hold distinct shards of the checkpoint and write them in
/// parallel (checkpoint_writer_nodes); 0 = every node of the cluster.
[[nodiscard]] RunCost run_cost(const std::vector<RunCostGroup>& groups,
                               const RunCostSettings& settings, double step_s,
                               double mfu, int writer_nodes = 0) noexcept;

/// Nodes that write a plan's checkpoint: every GPU holds a distinct shard when the optimizer
/// states are sharded over the data-parallel ranks (ZeRO 1-3, FSDP: `shard_level` >= 1); with
/// replicated states (plain DP, ZeRO-0) one replica, its tp x pp GPUs, writes (Megatron-LM's
/// and DeepSpeed's checkpoints: data-parallel rank 0 saves), on ceil(tp pp / gpus_per_node)
/// nodes, never more than `nodes`.
[[nodiscard]] int checkpoint_writer_nodes(int shard_level, int tp, int pp, int gpus_per_node,
                                          int nodes) noexcept;

} // namespace zerosearch
