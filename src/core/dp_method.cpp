#include "zerosearch/core/dp_method.hpp"

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"

namespace zerosearch {

const char* to_string(Flavour f) noexcept {
  return f == Flavour::megatron ? "megatron" : "deepspeed";
}

std::string dp_method_names() {
  return dp_method_names_where([](const DpMethodInfo&) { return true; });
}

std::string dp_method_names(Flavour f) {
  return dp_method_names_where([f](const DpMethodInfo& m) { return m.flavour == f; });
}

DpMethod parse_dp_method(const std::string& text) {
  for (const DpMethodInfo& m : kDpMethods) {
    if (text == m.name) {
      return m.id;
    }
  }
  throw InputError(fmt::format("unknown data-parallel method '{}' (allowed: {})", text,
                               dp_method_names()));
}

const char* to_string(Framework f) noexcept {
  switch (f) {
  case Framework::megatron: return "m";
  case Framework::deepspeed: return "d";
  case Framework::both: return "both";
  case Framework::automatic: return "default";
  }
  return "?";
}

Framework parse_framework(const std::string& text) {
  if (text == "m") return Framework::megatron;
  if (text == "d") return Framework::deepspeed;
  if (text == "both") return Framework::both;
  if (text == "default") return Framework::automatic;
  throw InputError(fmt::format(
      "unknown framework '{}' (allowed: m = Megatron-LM, d = DeepSpeed, both, default)", text));
}

} // namespace zerosearch
