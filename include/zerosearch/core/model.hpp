#pragma once
// The model catalog (profiledb/models.json): architecture figures the estimator needs.
#include <cstdint>
#include <string>
#include <vector>

namespace zerosearch {

/// Which family of activation/parameter formulas the memory model uses.
enum class MemoryFormula { llama, gpt };

/// Normalisation layer: RMSNorm has a weight per channel, LayerNorm a weight and a bias.
enum class Norm { rmsnorm, layernorm };

/// The architectures a model may declare: Hugging Face model_type values, plus "gpt3".
inline constexpr const char* kArchitectures[] = {"gpt2",      "gpt3",      "gpt_neox",
                                                 "llama",     "mistral",   "mixtral",
                                                 "qwen2",     "qwen2_moe", "qwen3_moe",
                                                 "deepseek_v3"};

struct ModelSpec {
  std::string name;
  std::int64_t hidden_size = 0;
  /// Training sequence length in tokens (--seq_len overrides it).
  std::int64_t sequence_length = 0;
  /// Transformer layers; the pipeline has num_layers + 2 entries (embedding, post_process).
  std::int64_t num_layers = 0;
  /// When true, --custom_num_layer overrides num_layers (the original's gpt2XL).
  bool num_layers_from_cli = false;
  std::int64_t vocab_size = 0;
  std::int64_t num_attention_heads = 0;
  /// FFN width of a dense layer (for an MoE model: as its config states it).
  std::int64_t ffn_hidden_size = 0;
  MemoryFormula memory_formula = MemoryFormula::llama;
  // Architecture (issue 9): what a parameter count and an analytic estimate need.
  /// Hugging Face model_type (one of kArchitectures).
  std::string architecture;
  /// Key/value heads: == num_attention_heads for multi-head attention, fewer for GQA.
  std::int64_t num_key_value_heads = 0;
  /// Channels per attention head (Megatron's kv_channels); usually hidden / heads.
  std::int64_t head_dim = 0;
  /// SwiGLU-style MLP (gate, up, down: three matrices) instead of two.
  bool gated_mlp = false;
  /// Routed experts per MoE layer; 0 = dense model. Every layer is an MoE layer when > 0.
  std::int64_t num_experts = 0;
  /// Experts each token is routed to (top-k); 0 for a dense model.
  std::int64_t experts_per_token = 0;
  /// FFN width of one routed expert; 0 for a dense model.
  std::int64_t moe_ffn_hidden_size = 0;
  /// FFN width of the shared expert(s), all of them together (qwen2_moe: one expert with a
  /// one-output gate; deepseek_v3: n_shared_experts x moe_intermediate_size); 0 = none.
  std::int64_t shared_expert_ffn_hidden_size = 0;
  // Issue 27: fine-grained MoE (DeepSeek-V3, Qwen3-MoE) and multi-head latent attention.
  /// The first k layers are dense (ffn_hidden_size wide), the rest MoE (DeepSeek's
  /// first_k_dense_replace; Megatron-LM's --moe-layer-freq [0]*k+[1]*(L-k)). 0: every layer MoE.
  std::int64_t first_k_dense_layers = 0;
  /// The shared expert's output is scaled by a sigmoid gate (hidden -> 1): qwen2_moe has it,
  /// deepseek_v3 does not.
  bool shared_expert_gate = true;
  /// The router has a per-expert score bias (DeepSeek-V3's e_score_correction_bias,
  /// auxiliary-loss-free balancing): num_experts parameters per MoE layer.
  bool router_bias = false;
  /// Expert capacity factor (GShard/Switch): each expert takes at most capacity x tokens x
  /// top-k / experts tokens, the rest dropped; 0 = dropless (Megatron-LM's default).
  double capacity_factor = 0.0;
  /// Multi-head latent attention (DeepSeek-V2/V3) when kv_lora_rank > 0: queries through a
  /// q_lora_rank bottleneck (0: a plain h x heads*(nope+rope) projection), keys and values
  /// through a kv_lora_rank latent plus a shared qk_rope_head_dim rotary key.
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  /// RMSNorm of q and k per head (Qwen3: q_norm, k_norm, head_dim weights each).
  bool qk_norm = false;
  /// The LM head reuses the token-embedding matrix.
  bool tied_embeddings = false;
  Norm norm = Norm::rmsnorm;
  /// Biases on the query, key and value projections.
  bool qkv_bias = false;
  /// Bias on the attention output projection.
  bool attention_output_bias = false;
  /// Biases on the MLP (and expert) projections.
  bool mlp_bias = false;
  /// Learned absolute position embeddings (max_position_embeddings x hidden); else rotary.
  bool learned_position_embeddings = false;
  /// The longest sequence the model accepts (positions table or RoPE context).
  std::int64_t max_position_embeddings = 0;
  /// Sliding-window attention width in tokens; 0 = full causal attention.
  std::int64_t sliding_window = 0;
  /// Attention and MLP read the same layer input (GPT-NeoX, GPT-J); no parameter change.
  bool parallel_residual = false;
  /// Where the figures come from (a config.json address, a paper); informative only.
  std::string source;

  [[nodiscard]] int pipeline_layers() const noexcept { return static_cast<int>(num_layers) + 2; }
  [[nodiscard]] bool is_moe() const noexcept { return num_experts > 0; }
  /// GPT-2/GPT-3 layers (learned positions, LayerNorm, GeLU, biases, dropout), as opposed to the
  /// Llama family's (RoPE, RMSNorm, no biases) that the native model prices otherwise.
  [[nodiscard]] bool is_gpt_family() const noexcept {
    return architecture == "gpt2" || architecture == "gpt3";
  }
  /// Multi-head latent attention (DeepSeek-V2/V3).
  [[nodiscard]] bool is_mla() const noexcept { return kv_lora_rank > 0; }
  /// Transformer layers with routed experts (all but the first_k_dense_layers of an MoE model).
  [[nodiscard]] std::int64_t moe_layers() const noexcept {
    return is_moe() ? num_layers - first_k_dense_layers : 0;
  }
  /// Whether layer i (0-based) is an MoE layer.
  [[nodiscard]] bool is_moe_layer(std::int64_t i) const noexcept {
    return is_moe() && i >= first_k_dense_layers;
  }
};

struct ModelCatalog {
  std::vector<ModelSpec> models;
  /// Throws InputError listing the known names when `name` is not in the catalog.
  [[nodiscard]] const ModelSpec& find(const std::string& name) const;
  [[nodiscard]] bool contains(const std::string& name) const noexcept;
  [[nodiscard]] std::string names() const;
};

} // namespace zerosearch
