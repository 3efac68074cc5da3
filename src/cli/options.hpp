#pragma once
// Command-line options: the original's flags, names and defaults, plus the port's own.
// parse_options reads the command line into RawOptions (text, as CLI11 hands it over) and
// validate_options turns that into Options (numbers, enums, lists) in one place, right after
// parsing: every flag has one range, checked once, and every later step reads typed values.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/io/report_format.hpp"
#include "zerosearch/model/estimate.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/search/ranking.hpp"
#include "run_cost_options.hpp"

namespace zerosearch::cli {

/// The flags as given, before validation: text, and which flags were given.
struct RawOptions {
  std::vector<std::string> node_types;        // --node_type (default A10)
  std::vector<std::string> node_type_counts;  // --node_type_num_node
  std::string num_node = "8";
  std::string model = "llama2_13B";           // --type: a built-in name or a model file
  std::string seq_len;                        // --seq_len N; empty: the model's
  std::string gpu_per_node = "4";
  std::string custom_gbs = "64";
  std::string custom_num_layer = "48";
  std::string precision = "16";
  std::string iter = "12500000";
  bool pareto = false;
  std::string add_exp_name;
  bool exhaustive = false;
  std::string comm_type = "ib";
  std::string framework = "default";
  bool record = false;
  bool pretty = false;
  bool search_space = false;
  std::string search_method = "minmax";
  std::string profiledb_path;
  std::string hardware;
  std::string calibration;
  std::vector<std::string> inter_node_Gbitps;
  std::vector<std::string> intra_node_Gbitps;
  std::string profile_source = "auto";
  std::string write_profile;
  std::string output;
  std::string threads = "0";
  std::string format;
  std::string top;
  bool feasible = false;
  bool include_oom = false;
  std::string memory_margin;                  // --memory_margin "10%" or GiB; empty: 10 %
  bool distinct = false;
  bool quiet = false;
  std::string dp_method;
  std::string tp, pp, dp, mbs;
  std::string partition;
  std::string placement;
  std::string max_step_time;
  std::string max_price_per_step;
  std::string budget;
  std::string plot;
  std::string emit;
  std::string rank;
  std::string timeline;
  std::string html;
  // Native estimator: comma-separated lists of values to search.
  std::string estimator;
  std::string recompute;
  std::string offload;
  std::string virtual_stages;
  std::string dtype;
  std::string schedule;
  std::string host_memory_gib;
  std::string framework_overhead_gib;
  std::string sequence_parallel;
  std::string flash_attention;
  std::string attention_kernel;
  std::string fp8_recipe;
  std::string overlap_grad_reduce;
  std::string fused_loss;
  std::string cp_kv_repeat;
  std::string fused_layers;
  std::string layer_impl;
  std::string fused_softmax_check;
  std::string zero3_impl;
  std::string grad_reduce_fp32;
  std::string grad_accum_fp32;
  std::string tp_comm_overlap;
  std::string ep;                             // issue 27: expert parallelism
  std::string etp;
  std::string moe_imbalance;
  std::string moe_a2a_overlap;                // --moe_a2a_overlap on|off
  std::string moe_dispatcher;                 // --moe_dispatcher alltoall|deepep|hybridep
  std::string cp;                             // --cp, one degree or a list
  std::string cp_comm;                        // --cp_comm ring|a2a, one or a list
  std::string master_weights;                 // --master_weights on|off (issue 23)
  std::string pipeline_layout;                // --pipeline_layout, Megatron's syntax (issue 27)
  std::string recompute_modules;              // --recompute_modules, Megatron's names (issue 27)
  std::string seed = "0";
  std::string list;                           // `list models|gpus` or --list
  bool no_clobber = false;
  /// --tokens, --steps, --pricing, ... (run_cost_options.hpp).
  RunCostRaw run_cost;
  // Which flags were given (flags that do not apply to a mode are errors or notes).
  bool num_node_given = false;
  bool gpu_per_node_given = false;
  bool custom_num_layer_given = false;
  bool output_given = false;                  // -o, even with an empty value
  bool comm_type_given = false;
  bool seed_given = false;
  bool node_type_counts_given = false;
  std::vector<std::string> command_line;
};

/// The ranges of the numeric flags: one per flag, used by validation and the help text.
inline constexpr long long kMaxNodes = 1'000'000;          // --num_node, --node_type_num_node
inline constexpr long long kMaxGpusPerNode = 1024;         // --gpu_per_node
inline constexpr long long kMaxSequenceLength = 16'777'216; // --seq_len
inline constexpr long long kMaxGlobalBatch = 1'000'000'000; // --custom_gbs
inline constexpr long long kMaxCustomLayers = 100'000;     // --custom_num_layer
inline constexpr long long kMaxPrecisionBits = 64;         // --precision
inline constexpr long long kMaxThreads = 1024;             // -j/--threads
inline constexpr long long kMaxDegree = 1'000'000;         // --tp --pp --dp --mbs
inline constexpr long long kMaxRank = 1'000'000'000;       // --rank
inline constexpr long long kMaxVirtualStages = 1024;       // --virtual_stages
inline constexpr long long kMaxExpertDegree = 16384;       // --ep --etp (num_experts' limit)
/// The largest cluster the CLI accepts: 2^24 GPUs, far beyond any real machine, so that node
/// and GPU counts stay well inside int.
inline constexpr long long kMaxClusterGpus = 16'777'216;
/// A mode limit, not a range of --num_node: --pareto plans (N+1)^2 - 1 compositions of up to
/// N nodes of each type before its size check can refuse the sweep, so N stays at most 1000
/// (a million plans).
inline constexpr int kMaxParetoNodesPerType = 1000;

/// What --format asks for on standard output.
/// --format: one of the report formats (io/report_format.hpp, kReportFormats).
using Format = ReportFormat;

/// The flags, validated: numbers in range, names parsed, modes consistent.
struct Options {
  // Modes. --search_space combines with --pareto (the sweep's size); the others exclude each
  // other.
  bool pareto = false;
  bool exhaustive = false;
  bool search_space = false;
  std::string write_profile;                  // --write_profile FILE; empty: not this mode
  std::string list;                           // `list WHAT` / --list WHAT; empty: not this mode

  // Cluster and model.
  std::vector<std::string> node_types;        // at least one; two with --pareto
  /// Node count of each node type (--node_type_num_node, or --num_node for one type). With
  /// --pareto: empty (the sweep makes the counts); with --write_profile: the first type only.
  std::vector<int> node_counts;
  int num_node = 8;                           // --num_node; with --pareto the bound per type
  bool num_node_given = false;
  /// --gpu_per_node; when not given, the catalog's node size of the GPU (4 for the original's
  /// entries): apply_gpu_per_node_default.
  int gpu_per_node = 4;
  bool gpu_per_node_given = false;
  /// The summary's line on a default gpu_per_node other than 4; empty otherwise.
  std::string gpu_per_node_note;
  /// The hardware catalog (hardware.json with --hardware merged) when
  /// apply_gpu_per_node_default read it, so the run does not read it again; null otherwise.
  std::shared_ptr<const HardwareCatalog> loaded_hardware;
  std::string model = "llama2_13B";           // --type: a built-in name or a model file
  std::int64_t seq_len = 0;                   // 0: the model's
  int custom_gbs = 64;
  int custom_num_layer = 48;
  bool custom_num_layer_given = false;
  int precision = 16;
  std::int64_t iter = 12'500'000;
  std::string comm_type = "ib";
  bool comm_type_given = false;
  std::string profiledb_path;                 // empty: find it
  std::string hardware;                       // --hardware FILE merged over hardware.json
  std::string calibration;                    // --calibration FILE
  std::vector<double> inter_node_Gbitps;        // Gbit/s, each > 0
  std::vector<double> intra_node_Gbitps;
  ProfileSource profile_source = ProfileSource::automatic;

  // Search.
  Framework framework = Framework::automatic;
  PartitionMethod search_method = PartitionMethod::minmax;
  std::uint64_t seed = 0;
  unsigned threads = 0;                       // 0: one per core

  // Output.
  std::optional<Format> format;               // empty: the summary
  std::optional<std::size_t> top;             // >= 1; empty: all rows
  bool feasible = false;
  /// --include_oom: OOM rows count in --top and the summary (the old meaning of --top).
  bool include_oom = false;
  /// --memory_margin: memory each GPU keeps free (CUDA context, NCCL buffers, allocator
  /// fragmentation), as a percentage of its memory or in GiB. It marks the plans that fit
  /// only within it ("within margin"); it changes no estimate, rank or OOM flag.
  MemoryMargin memory_margin;
  bool distinct = false;                      // --distinct: CSV and JSON rows collapsed too
  bool pretty = false;
  bool quiet = false;
  bool record = false;
  std::string add_exp_name;                   // a part of a file name
  std::string output;                         // -o FILE, "-" for standard output
  bool no_clobber = false;

  // --exhaustive: one design point (num_micro_batches set; checked against the model later).
  DesignPoint point;
  std::vector<int> partition;                 // --partition, pp entries >= 1; empty: chosen
  std::string partition_text;                 // as given, for messages
  std::optional<Placement> placement;         // --placement; empty: the first placement

  // --pareto.
  std::optional<double> max_step_time;        // seconds
  std::optional<double> max_price_per_step;   // USD
  std::optional<double> budget;               // USD
  std::string plot;                           // --plot FILE.svg

  // Plan outputs.
  std::string emit;                           // --emit DIR
  std::optional<std::size_t> rank;            // --rank N, 1-based
  std::string timeline;                       // --timeline FILE
  std::string html;                           // --html FILE

  // Native estimator (docs/native.md): empty lists take the defaults.
  std::optional<Estimator> estimator;         // --estimator; a native-only flag implies native
  std::vector<Recompute> recompute;
  std::vector<Offload> offload;
  std::vector<int> virtual_stages;
  std::vector<Dtype> dtypes;
  std::vector<Schedule> schedules;
  /// --ep, --etp (MoE models): empty takes the defaults (docs/native.md §5).
  std::vector<int> ep;
  std::vector<int> etp;
  NativeSettings native;
  std::vector<int> cp;                        // --cp (docs/native.md §2.4, §5)
  std::vector<CpComm> cp_comm;                // --cp_comm

  /// The whole run (--tokens, --steps, ...): run_cost_options.hpp.
  RunCostOptions run_cost;

  /// Flags the original accepted and ignored where they do not apply: one line each.
  std::vector<std::string> notes;
  /// The command line as given, for the sidecar of every CSV written.
  std::vector<std::string> command_line;
};

/// Outcome of parsing: either options to run with, or an exit code (after --help/--version).
struct ParseResult {
  std::optional<Options> options;
  int exit_code = 0;
};

/// Parses argv and validates it (validate_options). Prints --help/--version text itself.
/// Throws InputError on a bad command line.
[[nodiscard]] ParseResult parse_options(int argc, const char* const* argv);

/// The flag a mistyped `flag` most likely means: a known alias (--model: --type, --num_nodes:
/// --num_node), else the one of `flags` at most 2 edits away once '-' reads as '_' ("--node-type":
/// --node_type); empty when none is close.
[[nodiscard]] std::string suggest_flag(const std::string& flag,
                                       const std::vector<std::string>& flags);

/// Every check of the flags that needs no file: types and ranges, names of methods and
/// formats, flags that do not apply to the mode, the cluster's shape and size, the explicit
/// design point's values. Throws InputError naming the flag, the value and what is allowed.
[[nodiscard]] Options validate_options(const RawOptions& raw);

/// The cluster of the options: node_types with node_counts and gpu_per_node (for --pareto
/// only the GPUs per node: the sweep makes the groups).
[[nodiscard]] Cluster cluster_of(const Options& o);

/// A whole decimal number within [min, max], or InputError naming the flag and the range.
[[nodiscard]] long long parse_int(const std::string& flag, const std::string& text, long long min,
                                  long long max);

/// A decimal number > 0 (e.g. "30", "0.25", "1e6"), or InputError naming the flag.
[[nodiscard]] double parse_positive_real(const std::string& flag, const std::string& text);

} // namespace zerosearch::cli
