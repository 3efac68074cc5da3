#pragma once
// The documented argument lists the launch files may use, as data, each with the source and
// version it was read from (docs/launch.md, research LAUNCH.md). The tests check that every
// flag and key written appears here.
#include <span>
#include <string>

namespace zerosearch {

struct ArgumentList {
  /// "Megatron-LM", "Megatron-DeepSpeed", "deepspeed launcher", "torchrun",
  /// "DeepSpeed JSON", "DeepSpeed JSON zero_optimization", "torchtitan TOML"
  const char* tool;
  /// Repository, commit and version the names were read from.
  const char* source;
  std::span<const char* const> names;
};

[[nodiscard]] std::span<const ArgumentList> argument_lists() noexcept;
/// The list of `tool`, or nullptr.
[[nodiscard]] const ArgumentList* argument_list(const std::string& tool) noexcept;
/// True when `name` is in the list of `tool`.
[[nodiscard]] bool documented_argument(const std::string& tool, const std::string& name) noexcept;

} // namespace zerosearch
