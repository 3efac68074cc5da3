// Megatron-Core's selective recompute of named modules (docs/native.md §2.7).
#include "zerosearch/model/recompute_modules.hpp"

#include <array>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/core/model.hpp"
#include "zerosearch/model/analytic_profile.hpp"

namespace zerosearch {

namespace {

constexpr std::array<std::pair<std::string_view, RecomputeModule>, 7> kNames{{
    {"core_attn", RecomputeModule::core_attn},
    {"moe_act", RecomputeModule::moe_act},
    {"layernorm", RecomputeModule::layernorm},
    {"mla_up_proj", RecomputeModule::mla_up_proj},
    {"mlp", RecomputeModule::mlp},
    {"moe", RecomputeModule::moe},
    {"shared_experts", RecomputeModule::shared_experts},
}};

constexpr const char* kAllowed =
    "core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts";

} // namespace

RecomputeModules parse_recompute_modules(const std::string& text) {
  RecomputeModules out;
  out.bits = 0;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = text.find(',', at);
    const std::string_view item =
        std::string_view(text).substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    bool found = false;
    for (const auto& [name, bit] : kNames) {
      if (item == name) {
        if (out.has(bit)) {
          throw InputError(
              fmt::format("--recompute_modules '{}': '{}' is listed twice", text, item));
        }
        out.bits = static_cast<std::uint8_t>(out.bits | static_cast<std::uint8_t>(bit));
        found = true;
      }
    }
    if (!found) {
      throw InputError(fmt::format("--recompute_modules '{}': unknown module '{}' (allowed: {})",
                                   text, item, kAllowed));
    }
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

double modules_recompute_s(const AnalyticLayerTimes& t, RecomputeModules mods,
                           const ModelSpec& m) noexcept {
  using M = RecomputeModule;
  const bool moe_layer = m.is_moe();
  double s = 0.0;
  if (mods.has(M::core_attn)) s += t.attention_forward_s;
  if (mods.has(M::layernorm)) s += t.norm_forward_s;
  if (mods.has(M::mla_up_proj)) s += t.mla_up_proj_forward_s;
  if (moe_layer && mods.has(M::moe)) {
    s += t.mlp_forward_s;
  } else if (moe_layer) {
    if (mods.has(M::moe_act)) s += t.moe_act_forward_s;
    if (mods.has(M::shared_experts)) s += t.shared_experts_forward_s;
  } else if (mods.has(M::mlp)) {
    s += t.mlp_forward_s;
  }
  return s;
}

std::string recompute_modules_model_reason(RecomputeModules mods, const ModelSpec& m) {
  using M = RecomputeModule;
  const auto allowed = [&] {
    std::string out;
    for (const auto& [name, bit] : kNames) {
      if ((bit == M::mla_up_proj && !m.is_mla()) || (bit == M::moe_act && !m.is_moe())) continue;
      if (!out.empty()) out += ", ";
      out += name;
    }
    return out;
  };
  if (mods.has(M::mla_up_proj) && !m.is_mla()) {
    return fmt::format("--recompute_modules '{}': mla_up_proj needs multi-head latent attention, "
                       "which {} has not (Megatron-LM: only supported with "
                       "multi_latent_attention); allowed for {}: {}",
                       to_string(mods), m.name, m.name, allowed());
  }
  if (mods.has(M::moe_act) && !m.is_moe()) {
    return fmt::format("--recompute_modules '{}': moe_act needs an MoE model's grouped GEMM, which "
                       "{} (dense) has not (Megatron-LM: only supported with moe_grouped_gemm); "
                       "allowed for {}: {}",
                       to_string(mods), m.name, m.name, allowed());
  }
  return {};
}

std::string to_string(RecomputeModules m, const char* sep) {
  std::string out;
  for (const auto& [name, bit] : kNames) {
    if (!m.has(bit)) continue;
    if (!out.empty()) out += sep;
    out += name;
  }
  return out;
}

} // namespace zerosearch
