#include "zerosearch/core/dp_method.hpp"

#include <array>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"

namespace zerosearch {

namespace {

// docs/model.md §2 (order, tp and pp rules) and §4.1 (compute factors: backward = 2x forward under
// Megatron-LM, 3x under DeepSpeed, and ZeRO-3's parameter gathers as 1.6x on top).
constexpr std::array<DpMethodInfo, 6> kDpMethods{{
    {DpMethod::dp, "dp", Flavour::megatron, 3.0, ForwardShare::third, true, true, false,
     "Megatron-LM data parallelism: gradients all-reduced, every rank holds all states"},
    {DpMethod::fsdp, "fsdp", Flavour::megatron, 3.0, ForwardShare::third, true, true, false,
     "PyTorch FSDP under Megatron-LM: optimizer states and gradients sharded"},
    {DpMethod::zero0, "zero0", Flavour::deepspeed, 4.0, ForwardShare::quarter, true, true, true,
     "DeepSpeed without ZeRO sharding: gradients all-reduced"},
    {DpMethod::zero1, "zero1", Flavour::deepspeed, 4.0, ForwardShare::quarter, true, true, true,
     "DeepSpeed ZeRO-1: optimizer states sharded"},
    {DpMethod::zero2, "zero2", Flavour::deepspeed, 4.0, ForwardShare::third, true, false, false,
     "DeepSpeed ZeRO-2: optimizer states and gradients sharded (no pipeline)"},
    {DpMethod::zero3, "zero3", Flavour::deepspeed, (1.0 * 1.6) * 4.0, ForwardShare::third, false,
     false, false, "DeepSpeed ZeRO-3: parameters sharded too (no tensor or pipeline parallelism)"},
}};

} // namespace

std::span<const DpMethodInfo> dp_methods() noexcept { return kDpMethods; }

const DpMethodInfo& info(DpMethod m) noexcept {
  return kDpMethods[static_cast<std::size_t>(m)];
}

const char* to_string(DpMethod m) noexcept { return info(m).name; }

Flavour flavour_of(DpMethod m) noexcept { return info(m).flavour; }

const char* to_string(Flavour f) noexcept {
  return f == Flavour::megatron ? "megatron" : "deepspeed";
}

std::string dp_method_names() {
  std::string out;
  for (const DpMethodInfo& m : kDpMethods) {
    out += out.empty() ? "" : ", ";
    out += m.name;
  }
  return out;
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
