#pragma once
// One estimate (docs/model.md §4): step time, its parts, peak memory and cost of a design point on
// a placement with a given layer partition. Pure functions of the inputs below; nothing here
// reads files or prints. Which partition a point gets is the search's choice
// (search/partition_choice.hpp).
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/model/comm.hpp"
#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/core/model.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/model/partition.hpp"
#include "zerosearch/core/profile.hpp"
#include "zerosearch/model/step_model.hpp"

namespace zerosearch {

/// How the search chooses the layer partition (search/partition_choice.hpp).
enum class PartitionMethod { minmax, ga, optimal };
[[nodiscard]] const char* to_string(PartitionMethod m) noexcept;
/// Throws InputError listing minmax, ga, optimal.
[[nodiscard]] PartitionMethod parse_partition_method(const std::string& text);

/// Everything an estimate needs that does not change from one design point to the next.
struct EstimateContext {
  ModelSpec model;
  Cluster cluster;
  /// Per node-type index: link bandwidths (float32, as the original).
  std::vector<LinkF32> links;
  /// Per node-type index: GPU memory limit in GiB (float32, as the original compares).
  std::vector<float> memory_limit_gib;
  /// Per node-type index: the profile for each flavour (nullptr when absent).
  std::vector<const GpuProfile*> megatron_profiles;
  std::vector<const GpuProfile*> deepspeed_profiles;
  /// Per node-type index: where its profiles come from, "measured", "analytic (calibrated)"
  /// or "analytic (uncalibrated)".
  std::vector<std::string> profile_source;
  /// Analytic profiles generated for this search (the pointers above point into them).
  std::vector<std::shared_ptr<const GpuProfile>> generated_profiles;
  /// Per node-type index: larger = slower (profiled transformer time at the smallest tp).
  std::vector<double> slowness;
  /// Sum over node types of price per hour / 3600 * node count: $ per second of the cluster.
  double price_per_s_usd = 0.0;
  int global_batch = 64;
  int precision_bits = 16;
  std::int64_t iterations = 12'500'000;
  PartitionMethod partition_method = PartitionMethod::minmax;
  /// Seed of the genetic partitioner (--search_method ga).
  std::uint64_t seed = 0;
  /// Which model computes the estimates; with native, `native` holds its data and the
  /// profiles above may be absent.
  Estimator estimator = Estimator::zerosearch;
  /// The native estimator's data, set by set_estimator_data and read only in src/model/:
  /// search/, io/ and cli/ ask model/estimator_ops.hpp (tests/check_layers.cmake checks it).
  std::shared_ptr<const NativeContext> native;
};

/// The profile serving method `m` on node type `g`, or nullptr.
[[nodiscard]] const GpuProfile* profile_for(const EstimateContext& ctx, int g, DpMethod m) noexcept;

/// Per-layer compute cost (seconds) of each node type for one design point: profile time at
/// this tp, times 4 (ZeRO 0-2), 6.4 (ZeRO 3) or 3 (dp, fsdp), times mbs (the embedding and
/// post_process too unless the profile's ends are per micro-batch). The original averages
/// these over dp identical rows with torch.mean; that summation is reproduced bit for bit
/// (torch_mean_column, core/parity.hpp).
struct LayerCosts {
  /// per node-type index (empty vector for a type with no nodes)
  std::vector<std::vector<double>> by_type;
};
/// Throws InputError when a present node type has no profile for the method or tp.
[[nodiscard]] LayerCosts layer_costs(const EstimateContext& ctx, const DesignPoint& p);

/// What only the native estimator fills in an Estimate (all zero / empty from the zerosearch
/// estimator); the outputs show it in the native columns only. Floats keep rows small (outputs
/// only). The slices come first so the floats end the type: Estimate places its next member in
/// the floats' tail padding.
struct NativeBreakdown {
  /// Token slices per sequence of a terapipe plan, in tokens (empty otherwise).
  std::vector<std::int32_t> slices;
  /// The memory of the fullest stage by component, GiB: weights, gradients, optimizer states,
  /// activations, buffers, overhead (NativeMemory's order).
  std::array<float, 6> peak_memory{};
  /// The slowest stage's optimizer step and offload per step, seconds.
  float optimizer_s = 0.0F;
  float offload_s = 0.0F;
  /// Host memory per node for offloaded states, GiB.
  float host_gib_per_node = 0.0F;
  /// One micro-batch's MoE token dispatch and combine (NativeStage::moe_comm_s), on the stage
  /// with the most, seconds (--exhaustive prints every stage's).
  float a2a_s = 0.0F;
  /// One micro-batch's exposed context-parallel exchange (NativeStage::cp_comm_s), forward +
  /// backward, on the stage with the most, seconds (0 without cp).
  float cp_s = 0.0F;
};

struct Estimate {
  std::vector<int> partition;
  /// estimated time (s/step): the slowest stage's end plus data-parallel time, plus embedding
  /// sync (float32 in the original, so a float32 value).
  double step_s = 0.0;
  /// Stage 0's end of the last backward pass.
  double pipeline_s = 0.0;
  double dp_sync_s = 0.0;
  double embedding_sync_s = 0.0;
  double gpumem_gib = 0.0;
  double price_per_step_usd = 0.0;
  double train_cost_usd = 0.0;
  /// Native estimator only (docs/native.md). [[no_unique_address]]: `oom` below sits in its
  /// tail padding, so a row keeps its 152 bytes.
  [[no_unique_address]] NativeBreakdown native;
  bool oom = false;
};
static_assert(sizeof(Estimate) <= 152, "a result row's Estimate grew (docs/performance.md)");

/// Per-stage detail of one estimate, for --exhaustive reports.
struct EstimateDetail {
  std::vector<int> stage_gpu;
  StageTimes times;
  std::vector<double> stage_end_s;
  std::vector<float> link_s;
  /// Every stage's memory figure and its GPU's limit, GiB.
  std::vector<float> stage_mem_gib;
  std::vector<float> stage_limit_gib;
};

/// Everything an estimate needs from the placement. Two placements with equal features get
/// the same estimate, which lets the search evaluate each distinct one once.
struct PlacementFeatures {
  /// Node-type index each pipeline stage runs on.
  std::vector<int> stage_gpu;
  /// Pipeline link time of each stage boundary, seconds (float32, as the original).
  std::vector<float> link_s;
  /// Stage 0's data-parallel ring bandwidth, bit/s.
  float ring_bits_per_s = 0.0F;
  /// Embedding all-reduce time, seconds.
  float embedding_sync_s = 0.0F;

  [[nodiscard]] bool operator==(const PlacementFeatures&) const = default;
};

/// Hash of the features, for memoizing estimates across placements.
struct PlacementFeaturesHash {
  [[nodiscard]] std::size_t operator()(const PlacementFeatures& f) const noexcept;
};

[[nodiscard]] PlacementFeatures placement_features(const EstimateContext& ctx, const DesignPoint& p,
                                                   const Placement& placement);

/// The step-time model of design point `p` from its placement's features.
[[nodiscard]] StepModel step_model(const EstimateContext& ctx, const DesignPoint& p,
                                   const LayerCosts& costs, const PlacementFeatures& features);

/// The step-time model of design point `p` on `placement` (everything but the partition).
/// `costs` must come from layer_costs(ctx, p) and outlive the model. `stage_gpu`, when given,
/// receives the GPU-type index of each stage.
[[nodiscard]] StepModel step_model(const EstimateContext& ctx, const DesignPoint& p,
                                   const LayerCosts& costs, const Placement& placement,
                                   std::vector<int>* stage_gpu = nullptr);

/// The native estimate of `p` on `placement` (docs/native.md) in the Estimate shape; `detail`,
/// when given, receives the per-stage breakdown. `partition` empty: native_partition.
/// Throws InputError when the point is invalid for the native model (native_invalid_reason).
[[nodiscard]] Estimate estimate_native(const EstimateContext& ctx, const DesignPoint& p,
                                       const Placement& placement,
                                       const std::vector<int>& partition = {},
                                       NativeEstimate* detail = nullptr);
/// The Estimate shape of a native estimate.
[[nodiscard]] Estimate to_estimate(const EstimateContext& ctx, const NativeEstimate& n);

/// The estimate of design point `p` with the partition `part` (and the stage times the schedule
/// uses) on a placement whose step-time model is `model` (step_model(ctx, p, costs, features))
/// and whose stages run on the node types `stage_gpu`: step time and its parts, the memory and
/// OOM of that partition, cost. part.partition must be valid (valid_partition). `detail`, when
/// given, receives the per-stage breakdown. The search chooses the partition
/// (search/partition_choice.hpp).
[[nodiscard]] Estimate evaluate_partition(const EstimateContext& ctx, const DesignPoint& p,
                                          const StepModel& model,
                                          const std::vector<int>& stage_gpu, PartitionResult part,
                                          EstimateDetail* detail = nullptr);

/// evaluate_partition with the pipeline's stage ends already known: `stage_end` must be
/// model.pipeline_ends(part.times), for instance that of a point with the same pipeline.
[[nodiscard]] Estimate evaluate_pipeline(const EstimateContext& ctx, const DesignPoint& p,
                                         const StepModel& model,
                                         const std::vector<int>& stage_gpu, PartitionResult part,
                                         std::vector<double> stage_end,
                                         EstimateDetail* detail = nullptr);

/// True when the zerosearch estimator gives design points `a` and `b` the same layer costs,
/// placement features, minmax partition and pipeline stage ends on every placement: they differ
/// at most in a data-parallel method with the same profiles, compute factor and forward share
/// (ZeRO 0 and 1; ZeRO 2 and 3). Their step times then differ only in the data-parallel sync,
/// and their memory by method.
[[nodiscard]] bool same_pipeline(const DesignPoint& a, const DesignPoint& b) noexcept;

/// Estimates design point `p` from its placement's features with `partition`; see the overload
/// below.
[[nodiscard]] Estimate estimate(const EstimateContext& ctx, const DesignPoint& p,
                                const LayerCosts& costs, const PlacementFeatures& features,
                                const std::vector<int>& partition,
                                EstimateDetail* detail = nullptr);

/// Estimates design point `p` on `placement` with the layer partition `partition`, as given.
/// `costs` must come from layer_costs(ctx, p). Throws InputError when `partition` is not pp
/// stages of at least one layer summing to the layer count.
[[nodiscard]] Estimate estimate(const EstimateContext& ctx, const DesignPoint& p,
                                const LayerCosts& costs, const Placement& placement,
                                const std::vector<int>& partition,
                                EstimateDetail* detail = nullptr);

} // namespace zerosearch
