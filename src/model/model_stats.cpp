#include "zerosearch/model/model_stats.hpp"

#include <algorithm>

namespace zerosearch {

namespace {

/// Parameters of one norm layer: a weight per channel, and a bias for LayerNorm.
std::int64_t norm_parameters(const ModelSpec& m) noexcept {
  return m.norm == Norm::layernorm ? 2 * m.hidden_size : m.hidden_size;
}

/// One MLP of width f: up (and gate) projections h -> f, down projection f -> h, biases.
std::int64_t mlp_block(const ModelSpec& m, std::int64_t f) noexcept {
  const std::int64_t in_matrices = m.gated_mlp ? 2 : 1;
  std::int64_t p = (in_matrices + 1) * m.hidden_size * f;
  if (m.mlp_bias) {
    p += in_matrices * f + m.hidden_size;
  }
  return p;
}

std::int64_t moe_mlp(const ModelSpec& m, std::int64_t experts) noexcept {
  return experts * mlp_block(m, m.moe_ffn_hidden_size) + moe_dense_mlp_parameters(m);
}

/// Multi-head latent attention (DeepSeek-V2/V3, modeling_deepseek.py): q_a_proj h x q_lora,
/// its RMSNorm, q_b_proj q_lora x heads*(nope+rope) (or q_proj h x heads*(nope+rope) without a
/// q LoRA), kv_a_proj_with_mqa h x (kv_lora + rope), its RMSNorm, kv_b_proj kv_lora x
/// heads*(nope+v), o_proj heads*v x h. No biases.
std::int64_t mla_parameters(const ModelSpec& m) noexcept {
  const std::int64_t h = m.hidden_size;
  const std::int64_t heads = m.num_attention_heads;
  const std::int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
  const std::int64_t q = m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank +
                                                 m.q_lora_rank * heads * qk
                                           : h * heads * qk;
  const std::int64_t kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank +
                          m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim);
  return q + kv + heads * m.v_head_dim * h;
}

} // namespace

std::int64_t expert_parameters(const ModelSpec& m) noexcept {
  return m.is_moe() ? m.num_experts * mlp_block(m, m.moe_ffn_hidden_size) : 0;
}

std::int64_t moe_dense_mlp_parameters(const ModelSpec& m) noexcept {
  if (!m.is_moe()) return 0;
  std::int64_t p = m.hidden_size * m.num_experts; // router: hidden -> experts, no bias
  if (m.router_bias) {
    p += m.num_experts; // DeepSeek-V3's e_score_correction_bias
  }
  if (m.shared_expert_ffn_hidden_size > 0) {
    // the shared expert(s), plus qwen2_moe's sigmoid gate (hidden -> 1, no bias)
    p += mlp_block(m, m.shared_expert_ffn_hidden_size) + (m.shared_expert_gate ? m.hidden_size : 0);
  }
  return p;
}

std::int64_t attention_parameters(const ModelSpec& m) noexcept {
  if (m.is_mla()) {
    return mla_parameters(m);
  }
  const std::int64_t q = m.num_attention_heads * m.head_dim;
  const std::int64_t kv = m.num_key_value_heads * m.head_dim;
  std::int64_t p = m.hidden_size * (q + 2 * kv) + q * m.hidden_size;
  if (m.qkv_bias) {
    p += q + 2 * kv;
  }
  if (m.attention_output_bias) {
    p += m.hidden_size;
  }
  if (m.qk_norm) {
    p += 2 * m.head_dim; // Qwen3: RMSNorm of q and of k per head, shared over heads
  }
  return p;
}

std::int64_t mlp_parameters(const ModelSpec& m) noexcept {
  return m.is_moe() ? moe_mlp(m, m.num_experts) : mlp_block(m, m.ffn_hidden_size);
}

std::int64_t active_mlp_parameters(const ModelSpec& m) noexcept {
  return m.is_moe() ? moe_mlp(m, m.experts_per_token) : mlp_block(m, m.ffn_hidden_size);
}

std::int64_t layer_parameters(const ModelSpec& m) noexcept {
  return attention_parameters(m) + mlp_parameters(m) + 2 * norm_parameters(m);
}

std::int64_t active_layer_parameters(const ModelSpec& m) noexcept {
  return attention_parameters(m) + active_mlp_parameters(m) + 2 * norm_parameters(m);
}

std::int64_t dense_layer_parameters(const ModelSpec& m) noexcept {
  return attention_parameters(m) + mlp_block(m, m.ffn_hidden_size) + 2 * norm_parameters(m);
}

std::int64_t layer_parameters_at(const ModelSpec& m, std::int64_t i) noexcept {
  return m.is_moe_layer(i) ? layer_parameters(m) : dense_layer_parameters(m);
}

std::int64_t moe_layers_in(const ModelSpec& m, std::int64_t first, std::int64_t count) noexcept {
  if (!m.is_moe() || count <= 0) return 0;
  const std::int64_t begin = std::max(first, m.first_k_dense_layers);
  const std::int64_t end = first + count;
  return std::max<std::int64_t>(0, end - begin);
}

std::int64_t embedding_parameters(const ModelSpec& m) noexcept {
  std::int64_t p = m.vocab_size * m.hidden_size;
  if (m.learned_position_embeddings) {
    p += m.max_position_embeddings * m.hidden_size;
  }
  return p;
}

std::int64_t post_process_parameters(const ModelSpec& m) noexcept {
  return norm_parameters(m) + (m.tied_embeddings ? 0 : m.vocab_size * m.hidden_size);
}

std::int64_t total_parameters(const ModelSpec& m) noexcept {
  const std::int64_t moe = m.moe_layers();
  return embedding_parameters(m) + moe * layer_parameters(m) +
         (m.num_layers - moe) * dense_layer_parameters(m) + post_process_parameters(m);
}

std::int64_t active_parameters(const ModelSpec& m) noexcept {
  const std::int64_t moe = m.moe_layers();
  return embedding_parameters(m) + moe * active_layer_parameters(m) +
         (m.num_layers - moe) * dense_layer_parameters(m) + post_process_parameters(m);
}

std::int64_t megatron_padded_vocab(std::int64_t vocab, std::int64_t tp,
                                   std::int64_t divisible_by) noexcept {
  const std::int64_t multiple = divisible_by * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

// Megatron-LM, megatron/training/training.py, num_floating_point_operations() ->
// transformer_flops() (read at commit 001b00c2734d8f0fad096fe48a382fedf755d321): the total is
//   b*s*[ 3*2*h*( f*m*dense_layers + (f_e*k*m + f_sh*m)*moe_layers )
//         + L * 3*2*( h*(q + k + v) + q*s/2*2 + q*h ) + 3*2*h*V_padded ]
// with m = 3 for SwiGLU else 2. The factor 3 is forward + weight gradient + input gradient;
// dividing it out leaves the forward pass computed here. Megatron counts every layer dense
// when num_experts is unset and MoE otherwise (moe_layer_freq 1), as ModelSpec does.
double forward_flops_per_sequence(const ModelSpec& m, std::int64_t seq_len,
                                  std::int64_t padded_vocab) noexcept {
  const double h = static_cast<double>(m.hidden_size);
  const double s = static_cast<double>(seq_len);
  const double q = static_cast<double>(m.num_attention_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_key_value_heads * m.head_dim);
  const double ffn_factor = m.gated_mlp ? 3.0 : 2.0;
  const double dense_mlp = h * ffn_factor * static_cast<double>(m.ffn_hidden_size);
  const double moe_mlp =
      h * ffn_factor *
      static_cast<double>(m.moe_ffn_hidden_size * m.experts_per_token +
                          m.shared_expert_ffn_hidden_size);
  double attention = h * (q + 2.0 * kv) + q * s + q * h;
  if (m.is_mla()) {
    // Megatron-LM's multi_latent_attention branch of transformer_flops (same commit): the
    // LoRA projections with their norms, the rotary key, the output projection, and the core
    // attention over the causal half (heads x (nope + rope) for QK^T, heads x v for PV).
    const double heads = static_cast<double>(m.num_attention_heads);
    const double qk = static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim);
    const double v = static_cast<double>(m.v_head_dim);
    const double ql = static_cast<double>(m.q_lora_rank);
    const double kvl = static_cast<double>(m.kv_lora_rank);
    const double rope = static_cast<double>(m.qk_rope_head_dim);
    const double q_term = m.q_lora_rank > 0 ? ql * (h + heads * qk + 1.0) : h * heads * qk;
    attention = q_term + kvl * (h + heads * (static_cast<double>(m.qk_nope_head_dim) + v) + 1.0) +
                h * rope + heads * v * h + s * heads * qk / 2.0 + s * heads * v / 2.0;
  }
  const double moe_layers = static_cast<double>(m.moe_layers());
  const double dense_layers = static_cast<double>(m.num_layers) - moe_layers;
  const double per_token = static_cast<double>(m.num_layers) * attention +
                           dense_layers * dense_mlp + moe_layers * moe_mlp +
                           h * static_cast<double>(padded_vocab);
  return 2.0 * s * per_token;
}

double forward_flops_per_sequence(const ModelSpec& m) noexcept {
  return forward_flops_per_sequence(m, m.sequence_length, megatron_padded_vocab(m.vocab_size));
}

double training_flops_per_sequence(const ModelSpec& m, std::int64_t seq_len,
                                   std::int64_t padded_vocab) noexcept {
  return 3.0 * forward_flops_per_sequence(m, seq_len, padded_vocab);
}

} // namespace zerosearch
