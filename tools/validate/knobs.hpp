// Tuned knobs (validation/tuned.json): the model's command-line parameters that were set, or
// chosen among alternatives, while looking at validation figures. Leave-one-source-out
// re-chooses each among its candidates without the held-out source group.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "validate/cases.hpp"

namespace zerosearch::validate {

struct Knob {
  /// The zerosearch flag, "--overlap_grad_reduce".
  std::string flag;
  std::vector<std::string> candidates;
  /// The value zerosearch ships (one of the candidates).
  std::string shipped;
  /// Row filters, each empty = any: frameworks (the corpus's framework column), catalog GPUs,
  /// dp methods; `unstated`: only rows whose corpus column of this name is empty.
  std::vector<std::string> frameworks, gpus, dp_methods;
  std::string unstated;
  /// Why it is a knob: where its shipped value came from.
  std::string why;
  [[nodiscard]] int shipped_index() const;
  [[nodiscard]] bool applies(const Case& c) const;
};

/// The knobs of a tuned.json ({"knobs": [...]}); a missing file is no knob.
std::vector<Knob> load_knobs(const std::filesystem::path& file);

} // namespace zerosearch::validate
