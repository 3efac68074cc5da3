#pragma once
// Turns validated user choices and the loaded data into a search: the estimate context, the
// data-parallel methods and tensor-parallel degrees that have profiles, and notes on what was
// left out. Throws InputError on any choice the data cannot serve.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/search/enumerate.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/model/estimator_ops.hpp"
#include "zerosearch/core/hardware.hpp"
#include "zerosearch/core/model.hpp"
#include "zerosearch/core/profile.hpp"
#include "zerosearch/model/analytic_profile.hpp"

namespace zerosearch {

/// Where per-layer profiles come from (--profile_source).
enum class ProfileSource { measured, analytic, automatic };
[[nodiscard]] const char* to_string(ProfileSource s) noexcept;
/// Throws InputError listing measured, analytic, auto.
[[nodiscard]] ProfileSource parse_profile_source(const std::string& text);

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
  /// automatic: a node type with a measured profile of the model uses only measured ones;
  /// one without gets analytic profiles of both flavours.
  ProfileSource profile_source = ProfileSource::automatic;
  /// Link overrides in Gbit/s: empty, one value for every node type, or one per node type.
  std::vector<double> inter_node_Gbitps;
  std::vector<double> intra_node_Gbitps;
  /// --estimator; empty: zerosearch when every node type has a measured profile of the model
  /// (or --profile_source analytic asks for the original's formulas on analytic profiles),
  /// native otherwise.
  std::optional<Estimator> estimator;
  /// The native estimator's search dimensions; empty: the defaults (docs/native.md §5).
  std::vector<Recompute> recompute;
  std::vector<Offload> offload;
  std::vector<int> virtual_stages;
  std::vector<Dtype> dtypes;
  std::vector<Schedule> schedules;
  /// Expert parallelism (MoE models, native estimator): empty takes the defaults.
  std::vector<int> ep;
  std::vector<int> etp;
  NativeSettings native;
  /// Context-parallel degrees and exchanges (--cp, --cp_comm); empty: the defaults
  /// (default_cp_degrees of the sequence; ring and a2a).
  std::vector<int> cp;
  std::vector<CpComm> cp_comm;
};

struct Catalogs {
  ModelCatalog models;
  HardwareCatalog hardware;
  ProfileDb profiles;
  /// Fitted analytic parameters by GPU name (profiledb/calibration.json); others use priors.
  std::map<std::string, AnalyticCalibration> calibrations;
};

/// The analytic parameters of `gpu`: its fit when there is one, else its class prior.
[[nodiscard]] AnalyticCalibration calibration_for(const Catalogs& catalogs, const GpuSpec& gpu);

/// "measured", "analytic (calibrated)", ... when every node type agrees, else
/// "mixed: A10 measured, A100 analytic (calibrated)".
[[nodiscard]] std::string profile_source_text(const EstimateContext& ctx);

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
  /// Native estimator: the values of each dimension the search takes (one each otherwise).
  std::vector<Recompute> recompute{Recompute::none};
  std::vector<Offload> offload{Offload::none};
  std::vector<int> virtual_stages{1};
  std::vector<Dtype> dtypes{Dtype::bf16};
  std::vector<Schedule> schedules{Schedule::one_f_one_b, Schedule::interleaved};
  /// Expert-parallel degrees (MoE models): ep, and etp where 0 stands for the point's tp.
  std::vector<int> ep{1};
  std::vector<int> etp{1};
  /// Context-parallel degrees (tp x cp x dp x pp GPUs) and exchanges (native only).
  std::vector<int> cp{1};
  std::vector<CpComm> cp_comm{CpComm::ring};

  [[nodiscard]] std::vector<DesignPoint> design_points() const;

private:
  /// The native points of one enumerated point `base` at context-parallel degree `cp_degree`.
  void add_native_points(const DesignPoint& base, int cp_degree, const std::vector<CpComm>& comms,
                         const StagesOf<NativeEstimator>& all_types, std::vector<DesignPoint>& out) const;
};

/// The plan of `in`: the model (plan_model), per node type its memory limit, links
/// (node_links), price and profiles (add_node_profiles, check_profile_layers), then the
/// methods --framework names in the original's order (methods_for_framework, automatic:
/// docs/model.md §6.1) and their tp degrees (add_tp_degrees). Throws InputError.
[[nodiscard]] SearchPlan make_plan(const PlanInput& in, const Catalogs& catalogs);

// The steps of make_plan, in order; each throws InputError on what the data cannot serve.

/// The model `in` names: its file's model (whose name must not be a catalog name, so that it
/// never picks up another model's measured profiles), else the catalog's.
[[nodiscard]] const ModelSpec& base_model(const PlanInput& in, const ModelCatalog& models);

/// `base` with --seq_len and, for a model that takes it, --custom_num_layer applied; a warning
/// when the sequence is longer than the model's positions.
[[nodiscard]] ModelSpec plan_model(const ModelSpec& base, const PlanInput& in,
                                   std::vector<std::string>& warnings);

/// --inter_node_gbps / --intra_node_gbps: none, one, or one per node type of `in.cluster`.
void check_link_overrides(const PlanInput& in);

/// The links of node type `g` (float32): the bandwidth set's, else the GPU's defaults, each
/// replaced by an override in Gbit/s. Throws when neither exists and no overrides cover it.
[[nodiscard]] LinkF32 node_links(const PlanInput& in, const BandwidthSet& links,
                                 const GpuSpec& gpu, std::size_t g);

/// The profiles of node type `g` in `ctx` (whose model and cluster are set): the measured
/// ones, or analytic ones (generated, with a note) as --profile_source asks; and its slowness.
void add_node_profiles(EstimateContext& ctx, std::size_t g, const GpuSpec& gpu,
                       const PlanInput& in, const Catalogs& catalogs,
                       std::vector<std::string>& notes);

/// Every profile of node type `g` has the model's pipeline layers (transformer layers + 2).
void check_profile_layers(const EstimateContext& ctx, std::size_t g);

/// The methods `framework` asks for that the profiles of `ctx` serve, in the table's order,
/// with notes on the methods --framework default leaves out. Throws when a method asked for
/// explicitly has no profile, naming the missing files.
[[nodiscard]] std::vector<DpMethod> methods_for_framework(const EstimateContext& ctx,
                                                          Framework framework,
                                                          std::vector<std::string>& notes);

/// Appends to plan.methods and plan.tp_degrees each of `wanted` with the divisors of the GPUs
/// per node that every present node type profiles (a note for each tp left out). Throws when
/// no method keeps a degree.
void add_tp_degrees(SearchPlan& plan, const std::vector<DpMethod>& wanted);

} // namespace zerosearch
