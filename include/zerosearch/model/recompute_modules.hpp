#pragma once
// Megatron-Core's selective recompute of named modules (--recompute_modules; Megatron-LM
// --recompute-granularity selective --recompute-modules ...; docs/native.md §2.7).

#include <cstdint>
#include <string>

namespace zerosearch {

struct AnalyticLayerTimes;
struct ModelSpec;

/// One of Megatron-Core's TransformerConfig.recompute_modules names, as a bit.
enum class RecomputeModule : std::uint8_t {
  core_attn = 1,       ///< the attention core (QK^T, softmax, PV)
  moe_act = 2,         ///< the routed experts' activation function
  layernorm = 4,       ///< the input and pre-MLP norms
  mla_up_proj = 8,     ///< MLA's q and kv up-projections (and their RoPE)
  mlp = 16,            ///< a dense layer's whole MLP (not an MoE layer's)
  moe = 32,            ///< an MoE layer's whole MoE block (router, dispatch, experts, combine)
  shared_experts = 64, ///< an MoE layer's shared experts
};

/// A set of modules; Megatron's default is core_attn alone.
struct RecomputeModules {
  std::uint8_t bits = static_cast<std::uint8_t>(RecomputeModule::core_attn);
  [[nodiscard]] bool has(RecomputeModule m) const noexcept {
    return (bits & static_cast<std::uint8_t>(m)) != 0;
  }
  [[nodiscard]] bool is_default() const noexcept {
    return bits == static_cast<std::uint8_t>(RecomputeModule::core_attn);
  }
  friend bool operator==(RecomputeModules a, RecomputeModules b) noexcept {
    return a.bits == b.bits;
  }
};

/// Parses a comma list of Megatron's names (core_attn, moe_act, layernorm, mla_up_proj, mlp,
/// moe, shared_experts). Throws InputError naming the bad entry and the names allowed.
[[nodiscard]] RecomputeModules parse_recompute_modules(const std::string& text);

/// The forward time selective recompute of `mods` reruns in one layer of `m` whose times are
/// `t` (each module's part of t.layer.forward_s): "mlp" reruns a dense layer's MLP only, "moe"
/// an MoE layer's whole block (its shared experts and activation included, not counted twice);
/// mla_up_proj is nothing on a model without MLA.
[[nodiscard]] double modules_recompute_s(const AnalyticLayerTimes& t, RecomputeModules mods,
                                         const ModelSpec& m) noexcept;

/// Why Megatron-LM refuses `mods` on model `m` (TransformerConfig.__post_init__ at NVIDIA/
/// Megatron-LM d98e8a64, megatron/core/transformer/transformer_config.py): mla_up_proj "is only
/// supported with multi_latent_attention", moe_act "only with moe_grouped_gemm" (an MoE
/// model's experts; its launch files set --moe-grouped-gemm for MoE models only), naming the
/// module and the names allowed for `m`; or an empty string.
[[nodiscard]] std::string recompute_modules_model_reason(RecomputeModules mods, const ModelSpec& m);

/// The set as Megatron's names, in the order above, separated by `sep`.
[[nodiscard]] std::string to_string(RecomputeModules m, const char* sep = ",");

} // namespace zerosearch
