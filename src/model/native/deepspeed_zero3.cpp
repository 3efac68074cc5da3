#include "zerosearch/model/deepspeed_zero3.hpp"

#include <algorithm>
#include <array>

#include "zerosearch/core/model.hpp"
#include "zerosearch/model/moe_kernels.hpp"

namespace zerosearch {

namespace {

/// A sub-module of the layer: its weight's and its bias's elements (bias 0 without one).
struct Module {
  double weight = 0.0;
  double bias = 0.0;
};

int gathered_tensors(const Module& mod) noexcept {
  return (mod.weight >= kZero3PersistenceThreshold ? 1 : 0) +
         (mod.bias >= kZero3PersistenceThreshold ? 1 : 0);
}

double gathered_numel(const Module& mod) noexcept {
  return (mod.weight >= kZero3PersistenceThreshold ? mod.weight : 0.0) +
         (mod.bias >= kZero3PersistenceThreshold ? mod.bias : 0.0);
}

} // namespace

Zero3LayerCalls zero3_per_param_layer(const ModelSpec& m) noexcept {
  const double h = static_cast<double>(m.hidden_size);
  const double heads = static_cast<double>(std::max<std::int64_t>(1, m.num_attention_heads));
  const double kv = m.num_key_value_heads > 0 ? static_cast<double>(m.num_key_value_heads) : heads;
  const double d = m.head_dim > 0 ? static_cast<double>(m.head_dim) : h / heads;
  const double f = static_cast<double>(m.ffn_hidden_size);
  const double up = m.gated_mlp ? 2.0 : 1.0;
  const bool ln = m.norm == Norm::layernorm;
  const double qkv_out = (heads + 2.0 * kv) * d;
  // Forward order of the layer's sub-modules: norm, qkv, proj, norm, fc1, fc2.
  const std::array<Module, 6> mods{{{h, ln ? h : 0.0},
                                    {h * qkv_out, m.qkv_bias ? qkv_out : 0.0},
                                    {heads * d * h, m.attention_output_bias ? h : 0.0},
                                    {h, ln ? h : 0.0},
                                    {h * f * up, m.mlp_bias ? f * up : 0.0},
                                    {f * h, m.mlp_bias ? h : 0.0}}};
  Zero3LayerCalls c;
  for (std::size_t i = 0; i < mods.size(); ++i) {
    const Module& mod = mods[i];
    const int gathered = gathered_tensors(mod);
    c.gathers += gathered;
    c.gathered_elements += gathered_numel(mod);
    c.reduces += 1.0 + (mod.bias > 0 ? 1.0 : 0.0);
    c.elements += mod.weight + mod.bias;
    if (gathered == 0) continue;
    // The rerun forward fetches the sub-module, and its post-forward hook releases it unless
    // its next use (its backward) comes within kZero3MaxReuseDistance elements: the
    // sub-modules after it run in the rerun and again (reversed) in backward before it.
    double after = 0.0;
    for (std::size_t j = i + 1; j < mods.size(); ++j) after += mods[j].weight + mods[j].bias;
    if (2.0 * after >= kZero3MaxReuseDistance) {
      c.regathers += gathered;
      c.regathered_elements += gathered_numel(mod);
    }
  }
  return c;
}

double zero3_list_calls_s(double calls, double call_s, int ranks) noexcept {
  if (calls <= 0) return 0.0;
  return calls * (call_s + std::max(0, ranks) * kCudaLaunch_s);
}

} // namespace zerosearch
