#pragma once
// The shape every text option of the command line shares: a flag, the RawOptions (or
// RunCostRaw) member CLI11 writes its text into, the name of its value in --help, its help
// line and its --help group. options.cpp and run_cost_options.cpp list their options as rows of
// this table instead of repeating add_option(...)->type_name(...)->group(...).
#include <span>
#include <string>

#include <CLI/CLI.hpp>

namespace zerosearch::cli {

/// One text option of `Raw` (RawOptions, RunCostRaw).
template <typename Raw> struct TextOption {
  const char* flag;
  std::string Raw::*value;
  /// The value's name in --help: "N", "FILE", "on|off".
  const char* type_name;
  std::string help;
};

/// Registers `options` on `app`, in order, in the --help group `group`; CLI11 writes each
/// option's text into its member of `raw`.
template <typename Raw>
void add_text_options(CLI::App& app, Raw& raw, const std::string& group,
                      std::span<const TextOption<Raw>> options) {
  for (const TextOption<Raw>& o : options) {
    app.add_option(o.flag, raw.*o.value, o.help)->type_name(o.type_name)->group(group);
  }
}

} // namespace zerosearch::cli
