#pragma once
// Command-line options: the original's flags, names and defaults, plus the port's own.
#include <optional>
#include <string>
#include <vector>

namespace zerosearch::cli {

struct Options {
  std::vector<std::string> node_types;        // --node_type (default A10)
  std::vector<std::string> node_type_counts;  // --node_type_num_node, validated later
  std::string num_node = "8";
  bool num_node_given = false;
  std::string model = "llama2_13B";           // --type: a built-in name or a model file
  std::string seq_len;                        // --seq_len N; empty: the model's
  std::string gpu_per_node = "4";
  std::string custom_gbs = "64";
  std::string custom_num_layer = "48";
  bool custom_num_layer_given = false;
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
  std::string profiledb_path;                 // empty: find it
  std::string hardware;                       // --hardware FILE merged over hardware.json
  std::string calibration;                    // --calibration FILE merged over calibration.json
  std::vector<std::string> inter_node_gbps;   // --inter_node_gbps X [X ...]
  std::vector<std::string> intra_node_gbps;   // --intra_node_gbps X [X ...]
  std::string profile_source = "auto";        // --profile_source measured|analytic|auto
  std::string write_profile;                  // --write_profile FILE
  std::string output;                         // -o/--output, "-" for stdout
  std::string threads = "0";

  // Output selection (issue 3).
  std::string format;                         // --format csv|json|table; empty: summary
  std::string top;                            // --top N; empty: all rows
  bool feasible = false;                      // --feasible: drop OOM rows
  bool distinct = false;                      // --distinct: CSV and JSON rows collapsed too
  bool quiet = false;                         // -q/--quiet

  // One design point (--exhaustive).
  std::string dp_method;                      // --dp_method
  std::string tp, pp, dp, mbs;                // --tp --pp --dp --mbs
  std::string partition;                      // --partition 5,4,6,...
  std::string placement;                      // --placement A10,A10,A6000,...

  // Pareto sweep constraints and chart.
  std::string max_step_time;                  // --max_step_time S
  std::string max_price_per_step;             // --max_price_per_step P
  std::string budget;                         // --budget USD (train_cost)
  std::string plot;                           // --plot FILE.svg

  // Plan outputs (issue 11): launch files, timeline, HTML report.
  std::string emit;                           // --emit DIR
  std::string rank;                           // --rank N (position in the ranked rows)
  std::string timeline;                       // --timeline FILE.svg
  std::string html;                           // --html FILE

  // Genetic partitioner.
  std::string seed = "0";                     // --seed
  // Which flags were given (flags that do not apply to a mode are errors or notes).
  bool output_given = false;                  // -o, even with an empty value
  bool comm_type_given = false;
  bool seed_given = false;
  bool node_type_counts_given = false;
  bool no_clobber = false;                    // --no_clobber: never replace an existing file
  /// The command line as given, for the sidecar of every CSV written.
  std::vector<std::string> command_line;
};

/// Outcome of parsing: either options to run with, or an exit code (after --help/--version).
struct ParseResult {
  std::optional<Options> options;
  int exit_code = 0;
};

/// Parses argv. Prints --help/--version text itself. Throws InputError on a bad command line.
[[nodiscard]] ParseResult parse_options(int argc, const char* const* argv);

/// A whole decimal number within [min, max], or InputError naming the flag and the range.
[[nodiscard]] long long parse_int(const std::string& flag, const std::string& text, long long min,
                                  long long max);

} // namespace zerosearch::cli
