#pragma once

namespace zerosearch::cli {

/// The whole program: parse, search, report. Returns the exit code: 0 done, 2 bad input,
/// 1 internal failure. Errors are printed as one line "zerosearch: error: ..." on stderr.
int run(int argc, const char* const* argv);

} // namespace zerosearch::cli
