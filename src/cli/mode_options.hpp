#pragma once
// Validation of the flags that belong to one mode (--exhaustive, --pareto, --search_space).
#include <optional>
#include <string>
#include <vector>

#include "options.hpp"
#include "zerosearch/core/cluster.hpp"
#include "zerosearch/search/enumerate.hpp"

namespace zerosearch::cli {

/// Checks that every flag given applies to the chosen mode: an error naming the flag and the
/// mode where zerosearch added the flag, a note (returned, one line each) where the original
/// accepted it and ignored it. Also checks --add_exp_name, a part of a file name.
[[nodiscard]] std::vector<std::string> check_mode_flags(const Options& o);

/// A decimal number > 0 (e.g. "30", "0.25", "1e6"), or InputError naming the flag.
[[nodiscard]] double parse_positive_real(const std::string& flag, const std::string& text);

/// The design point of --dp_method --tp --pp --dp --mbs (all required) for a cluster of
/// `world_size` GPUs: InputError naming a missing flag, a bad value, or why the point is not
/// valid (docs/model.md §2 rules).
[[nodiscard]] DesignPoint parse_design_point(const Options& o, int world_size, int global_batch,
                                             int num_layers, int gpus_per_node);

/// --partition "5,4,6,..." for `pp` stages over `layers` pipeline layers (transformer layers + 2):
/// each entry a whole number >= 1, pp entries, summing to `layers`. InputError otherwise.
[[nodiscard]] std::vector<int> parse_partition(const std::string& text, int pp, int layers);

/// --placement "A10,A10,A6000,..." on `cluster`: one node type per node, using exactly the
/// cluster's node counts. InputError otherwise.
[[nodiscard]] Placement parse_placement(const std::string& text, const Cluster& cluster);

} // namespace zerosearch::cli
