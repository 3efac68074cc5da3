#pragma once
// The CLI's modes. Each returns the exit code and throws InputError on bad input.
#include <string>

#include "options.hpp"

namespace zerosearch::cli {

/// The default: search every design point on every placement, rank, report.
int run_search_mode(const Options& o, const char* argv0);

/// --pareto: every composition of the two node types up to --num_node each, ranked together,
/// with the price/step-time front marked, limits answered (--max_step_time,
/// --max_price_per_step, --budget) and an optional SVG chart (--plot).
int run_pareto_mode(const Options& o, const char* argv0);

/// --exhaustive: one design point given on the command line, with its per-stage detail.
int run_exhaustive_mode(const Options& o, const char* argv0);

/// --search_space: design points per (method, tp, pp, dp) and the total; no estimates.
int run_search_space_mode(const Options& o, const char* argv0);

/// `list models` / `list gpus` (or --list WHAT): the built-in models and the GPU catalog with
/// their key figures.
int run_list_mode(const std::string& what, const Options& o, const char* argv0);

/// --write_profile FILE: the analytic profile of --type on the first --node_type.
int run_write_profile_mode(const Options& o, const char* argv0);

} // namespace zerosearch::cli
