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

const char* to_string(Estimator e) noexcept {
  // Every value named: a new estimator fails to compile here (-Wswitch) until it has a name.
  switch (e) {
  case Estimator::zerosearch: return "zerosearch";
  case Estimator::native: return "native";
  }
  return "?";
}

Estimator parse_estimator(const std::string& text) {
  if (text == "zerosearch") return Estimator::zerosearch;
  if (text == "native") return Estimator::native;
  throw InputError(fmt::format("unknown estimator '{}' (allowed: zerosearch, native)", text));
}

const char* to_string(Recompute r) noexcept {
  switch (r) {
  case Recompute::none: return "none";
  case Recompute::selective: return "selective";
  case Recompute::full: return "full";
  }
  return "?";
}

Recompute parse_recompute(const std::string& text) {
  for (const Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    if (text == to_string(r)) return r;
  }
  throw InputError(fmt::format("unknown recompute mode '{}' (allowed: none, selective, full)",
                               text));
}

const char* to_string(Offload o) noexcept {
  switch (o) {
  case Offload::none: return "none";
  case Offload::optimizer: return "optimizer";
  case Offload::optimizer_params: return "optimizer+params";
  }
  return "?";
}

Offload parse_offload(const std::string& text) {
  for (const Offload o : {Offload::none, Offload::optimizer, Offload::optimizer_params}) {
    if (text == to_string(o)) return o;
  }
  throw InputError(fmt::format("unknown offload mode '{}' (allowed: none, optimizer, "
                               "optimizer+params)",
                               text));
}

const char* offload_unsupported(DpMethod m, Offload o) noexcept {
  // DeepSpeed: offload_optimizer needs ZeRO stage 1, 2 or 3; offload_param needs stage 3.
  static const std::string any = "offload needs a DeepSpeed ZeRO method (" +
      dp_method_names_where([](const DpMethodInfo& x) { return x.native.max_offload != Offload::none; }) + ")";
  static const std::string params = "offload of parameters needs " +
      dp_method_names_where([](const DpMethodInfo& x) { return x.native.max_offload == Offload::optimizer_params; });
  const Offload most = info(m).native.max_offload;
  if (o == Offload::none || o <= most) return nullptr;
  return most == Offload::none ? any.c_str() : params.c_str();
}

std::string schedule_names() {
  std::string out;
  for (const ScheduleInfo& s : kSchedules) {
    out += out.empty() ? "" : ", ";
    out += s.name;
  }
  return out;
}

Schedule parse_schedule(const std::string& text) {
  for (const ScheduleInfo& s : kSchedules) {
    if (text == s.name) return s.id;
  }
  throw InputError(fmt::format("unknown schedule '{}' (allowed: {})", text, schedule_names()));
}

Dtype parse_dtype(const std::string& text) {
  for (const Dtype d : {Dtype::bf16, Dtype::fp16, Dtype::fp32, Dtype::fp8}) {
    if (text == to_string(d)) return d;
  }
  throw InputError(fmt::format("unknown dtype '{}' (allowed: bf16, fp16, fp32, fp8)", text));
}

} // namespace zerosearch
