#pragma once
// The CLI's modes. Each returns the exit code and throws InputError on bad input.
#include "options.hpp"

namespace zerosearch::cli {

/// The default: search every design point on every placement, rank, report.
int run_search_mode(const Options& o, const char* argv0);

} // namespace zerosearch::cli
