#pragma once
// The model catalog (profiledb/models.json): architecture figures the estimator needs.
#include <cstdint>
#include <string>
#include <vector>

namespace zerosearch {

/// Which family of activation/parameter formulas the memory model uses.
enum class MemoryFormula { llama, gpt };

struct ModelSpec {
  std::string name;
  std::int64_t hidden_size = 0;
  std::int64_t sequence_length = 0;
  /// Transformer layers; the pipeline has num_layers + 2 entries (embedding, post_process).
  std::int64_t num_layers = 0;
  /// When true, --custom_num_layer overrides num_layers (the original's gpt2XL).
  bool num_layers_from_cli = false;
  std::int64_t vocab_size = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t ffn_hidden_size = 0;
  MemoryFormula memory_formula = MemoryFormula::llama;
  // Architecture details the analytic profiles need (issue 9). The loader fills gated_mlp
  // from memory_formula when models.json leaves it out (llama: SwiGLU, gpt: GeLU).
  /// Key/value heads (GQA); 0 = num_attention_heads.
  std::int64_t num_key_value_heads = 0;
  /// Per-head width; 0 = hidden_size / num_attention_heads.
  std::int64_t head_dim = 0;
  /// SwiGLU/GeGLU MLP (three matrices) instead of two.
  bool gated_mlp = true;
  /// Mixture of experts: 0 = dense MLP.
  std::int64_t num_experts = 0;
  std::int64_t experts_per_token = 0;
  std::int64_t moe_ffn_hidden_size = 0;
  std::int64_t shared_expert_ffn_hidden_size = 0;

  [[nodiscard]] int pipeline_layers() const noexcept { return static_cast<int>(num_layers) + 2; }
};

struct ModelCatalog {
  std::vector<ModelSpec> models;
  /// Throws InputError listing the known names when `name` is not in the catalog.
  [[nodiscard]] const ModelSpec& find(const std::string& name) const;
  [[nodiscard]] std::string names() const;
};

} // namespace zerosearch
