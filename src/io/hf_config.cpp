#include "zerosearch/io/hf_config.hpp"
#include "zerosearch/io/model_json.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "zerosearch/io/json_util.hpp"
#include "zerosearch/core/error.hpp"

namespace zerosearch {

namespace {

using json_util::Json;

constexpr std::array<std::string_view, 9> kModelTypes = {
    "gpt2",  "gpt_neox",  "llama",     "mistral",    "mixtral",
    "qwen2", "qwen2_moe", "qwen3_moe", "deepseek_v3"};

/// Reads config.json fields with messages that name the file, the field and the bad value.
class Fields {
public:
  Fields(const Json& doc, std::string origin, std::string type)
      : doc_(doc), origin_(std::move(origin)), type_(std::move(type)) {}

  [[nodiscard]] const std::string& origin() const noexcept { return origin_; }

  /// A field that is absent or null reads as nothing.
  [[nodiscard]] const Json* find(const std::string& key) const {
    const auto it = doc_.find(key);
    return it == doc_.end() || it->is_null() ? nullptr : &*it;
  }

  [[nodiscard]] std::int64_t positive(const std::string& key) const {
    const Json* v = find(key);
    if (v == nullptr) {
      const bool is_null = doc_.contains(key);
      throw InputError(fmt::format("{}: {} key '{}' (model_type {})", origin_,
                                   is_null ? "null" : "missing", key, type_));
    }
    return positive_value(key, *v);
  }

  [[nodiscard]] std::optional<std::int64_t> optional_positive(const std::string& key) const {
    const Json* v = find(key);
    if (v == nullptr) {
      return std::nullopt;
    }
    return positive_value(key, *v);
  }

  [[nodiscard]] bool flag(const std::string& key, bool fallback) const {
    const Json* v = find(key);
    if (v == nullptr) {
      return fallback;
    }
    if (!v->is_boolean()) {
      throw InputError(
          fmt::format("{}: '{}' must be true or false, not {}", origin_, key, v->dump()));
    }
    return v->get<bool>();
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: {}", origin_, what));
  }

private:
  std::int64_t positive_value(const std::string& key, const Json& v) const {
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) {
      throw InputError(
          fmt::format("{}: '{}' must be a positive integer, not {}", origin_, key, v.dump()));
    }
    return v.get<std::int64_t>();
  }

  const Json& doc_;
  std::string origin_;
  std::string type_;
};

/// Heads, key/value heads and head size, shared by every model_type.
void read_attention(const Fields& f, ModelSpec& m, const char* heads_key) {
  m.num_attention_heads = f.positive(heads_key);
  m.num_key_value_heads = f.optional_positive("num_key_value_heads").value_or(m.num_attention_heads);
  if (m.num_key_value_heads > m.num_attention_heads ||
      m.num_attention_heads % m.num_key_value_heads != 0) {
    f.fail(fmt::format("'num_key_value_heads' {} does not divide '{}' {}", m.num_key_value_heads,
                       heads_key, m.num_attention_heads));
  }
}

/// head_dim when the config states it, else hidden / heads (which must divide).
void read_head_dim(const Fields& f, ModelSpec& m, const char* hidden_key, const char* heads_key,
                   bool may_state_head_dim) {
  if (may_state_head_dim) {
    if (const auto d = f.optional_positive("head_dim")) {
      m.head_dim = *d;
      return;
    }
  }
  if (m.hidden_size % m.num_attention_heads != 0) {
    f.fail(fmt::format("'{}' {} is not divisible by '{}' {}{}", hidden_key, m.hidden_size,
                       heads_key, m.num_attention_heads,
                       may_state_head_dim ? " and there is no 'head_dim'" : ""));
  }
  m.head_dim = m.hidden_size / m.num_attention_heads;
}

/// The RoPE context a model was trained at: rope_scaling.original_max_position_embeddings
/// (Llama 3.1) when present, else max_position_embeddings.
std::int64_t rope_training_length(const Fields& f, std::int64_t max_positions) {
  if (const Json* rs = f.find("rope_scaling"); rs != nullptr && rs->is_object()) {
    const auto it = rs->find("original_max_position_embeddings");
    if (it != rs->end() && it->is_number_integer() && it->get<std::int64_t>() > 0) {
      return std::min(it->get<std::int64_t>(), max_positions);
    }
  }
  return max_positions;
}

/// llama, mistral, mixtral, qwen2, qwen2_moe, qwen3_moe: pre-norm RMSNorm decoders with a SwiGLU MLP
/// (gate_proj, up_proj, down_proj in every Hugging Face implementation of these types).
void read_llama_family(const Fields& f, const std::string& type, ModelSpec& m) {
  m.hidden_size = f.positive("hidden_size");
  m.num_layers = f.positive("num_hidden_layers");
  read_attention(f, m, "num_attention_heads");
  read_head_dim(f, m, "hidden_size", "num_attention_heads", true);
  m.ffn_hidden_size = f.positive("intermediate_size");
  m.vocab_size = f.positive("vocab_size");
  m.max_position_embeddings = f.positive("max_position_embeddings");
  m.sequence_length = rope_training_length(f, m.max_position_embeddings);
  m.memory_formula = MemoryFormula::llama;
  m.gated_mlp = true;
  m.norm = Norm::rmsnorm;
  m.learned_position_embeddings = false;
  m.tied_embeddings = f.flag("tie_word_embeddings", false);
  if (type == "llama") {
    m.qkv_bias = f.flag("attention_bias", false);
    m.attention_output_bias = m.qkv_bias;
    m.mlp_bias = f.flag("mlp_bias", false);
  } else if (type == "qwen2" || type == "qwen2_moe") {
    m.qkv_bias = true;  // Qwen2 attention: q/k/v projections with bias, o_proj without
  } else if (type == "qwen3_moe") {
    // Qwen3MoeAttention: q/k/v/o with attention_bias (false in every released config), and an
    // RMSNorm of q and of k over head_dim (q_norm, k_norm).
    m.qkv_bias = f.flag("attention_bias", false);
    m.attention_output_bias = m.qkv_bias;
    m.qk_norm = true;
  }
  if (type == "mistral" || type == "mixtral") {
    m.sliding_window = f.optional_positive("sliding_window").value_or(0);
  } else if ((type == "qwen2" || type == "qwen2_moe" || type == "qwen3_moe") &&
             f.flag("use_sliding_window", false)) {
    m.sliding_window = f.optional_positive("sliding_window").value_or(0);
  }
  if (type == "mixtral") {
    m.num_experts = f.positive("num_local_experts");
    m.experts_per_token = f.positive("num_experts_per_tok");
    m.moe_ffn_hidden_size = m.ffn_hidden_size;
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    m.num_experts = f.positive("num_experts");
    m.experts_per_token = f.positive("num_experts_per_tok");
    m.moe_ffn_hidden_size = f.positive("moe_intermediate_size");
    m.shared_expert_ffn_hidden_size =
        type == "qwen2_moe" ? f.optional_positive("shared_expert_intermediate_size").value_or(0) : 0;
    // Only configs whose every layer is an MoE layer are supported.
    if (const auto step = f.optional_positive("decoder_sparse_step"); step && *step != 1) {
      f.fail(fmt::format("'decoder_sparse_step' {} is not supported (only 1: every layer MoE)",
                         *step));
    }
    if (const Json* only = f.find("mlp_only_layers");
        only != nullptr && !(only->is_array() && only->empty())) {
      f.fail(fmt::format("'mlp_only_layers' {} is not supported (only []: every layer MoE)",
                         only->dump()));
    }
  }
  if (m.num_experts > 0 && m.experts_per_token > m.num_experts) {
    f.fail(fmt::format("'num_experts_per_tok' {} is more than the {} experts",
                       m.experts_per_token, m.num_experts));
  }
}

/// deepseek_v3 (modeling_deepseek.py of deepseek-ai/DeepSeek-V3): multi-head latent attention,
/// the first first_k_dense_replace layers dense (intermediate_size), the rest MoE with
/// n_routed_experts of moe_intermediate_size, n_shared_experts beside them (no gate), a router
/// with a per-expert score bias (topk_method noaux_tc). The multi-token-prediction module
/// (num_nextn_predict_layers) is not part of the model (DeepSeek's 671B excludes it).
void read_deepseek_v3(const Fields& f, ModelSpec& m) {
  m.hidden_size = f.positive("hidden_size");
  m.num_layers = f.positive("num_hidden_layers");
  m.num_attention_heads = f.positive("num_attention_heads");
  m.num_key_value_heads = m.num_attention_heads; // MLA: every head has its own k and v
  m.q_lora_rank = f.optional_positive("q_lora_rank").value_or(0);
  m.kv_lora_rank = f.positive("kv_lora_rank");
  m.qk_rope_head_dim = f.positive("qk_rope_head_dim");
  m.qk_nope_head_dim = f.positive("qk_nope_head_dim");
  m.v_head_dim = f.positive("v_head_dim");
  m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim; // the query/key width of a head
  m.ffn_hidden_size = f.positive("intermediate_size");
  m.vocab_size = f.positive("vocab_size");
  m.max_position_embeddings = f.positive("max_position_embeddings");
  m.sequence_length = rope_training_length(f, m.max_position_embeddings);
  m.memory_formula = MemoryFormula::llama;
  m.gated_mlp = true;
  m.norm = Norm::rmsnorm;
  m.tied_embeddings = f.flag("tie_word_embeddings", false);
  m.qkv_bias = f.flag("attention_bias", false);
  m.num_experts = f.positive("n_routed_experts");
  m.experts_per_token = f.positive("num_experts_per_tok");
  m.moe_ffn_hidden_size = f.positive("moe_intermediate_size");
  m.shared_expert_ffn_hidden_size =
      f.optional_positive("n_shared_experts").value_or(0) * m.moe_ffn_hidden_size;
  m.shared_expert_gate = false;
  if (const Json* method = f.find("topk_method"); method != nullptr && method->is_string()) {
    m.router_bias = method->get<std::string>() == "noaux_tc";
  }
  if (const Json* k = f.find("first_k_dense_replace")) {
    if (!k->is_number_integer() || k->get<std::int64_t>() < 0) {
      f.fail(fmt::format("'first_k_dense_replace' must be a whole number >= 0, not {}", k->dump()));
    }
    m.first_k_dense_layers = k->get<std::int64_t>();
  }
  if (const auto freq = f.optional_positive("moe_layer_freq"); freq && *freq != 1) {
    f.fail(fmt::format("'moe_layer_freq' {} is not supported (only 1: every layer after "
                       "first_k_dense_replace MoE)",
                       *freq));
  }
  if (m.experts_per_token > m.num_experts) {
    f.fail(fmt::format("'num_experts_per_tok' {} is more than the {} experts",
                       m.experts_per_token, m.num_experts));
  }
}

/// gpt2: LayerNorm, learned positions, GeLU MLP, biases on every linear layer (Conv1D).
void read_gpt2(const Fields& f, ModelSpec& m) {
  m.hidden_size = f.positive("n_embd");
  m.num_layers = f.positive("n_layer");
  read_attention(f, m, "n_head");
  read_head_dim(f, m, "n_embd", "n_head", false);
  m.ffn_hidden_size = f.optional_positive("n_inner").value_or(4 * m.hidden_size);
  m.vocab_size = f.positive("vocab_size");
  m.max_position_embeddings = f.positive("n_positions");
  m.sequence_length = m.max_position_embeddings;
  m.memory_formula = MemoryFormula::gpt;
  m.gated_mlp = false;
  m.norm = Norm::layernorm;
  m.learned_position_embeddings = true;
  m.tied_embeddings = f.flag("tie_word_embeddings", true);
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = true;
}

/// gpt_neox: LayerNorm, rotary positions on rotary_pct of each head, GeLU MLP with biases.
void read_gpt_neox(const Fields& f, ModelSpec& m) {
  m.hidden_size = f.positive("hidden_size");
  m.num_layers = f.positive("num_hidden_layers");
  read_attention(f, m, "num_attention_heads");
  read_head_dim(f, m, "hidden_size", "num_attention_heads", false);
  m.ffn_hidden_size = f.positive("intermediate_size");
  m.vocab_size = f.positive("vocab_size");
  m.max_position_embeddings = f.positive("max_position_embeddings");
  m.sequence_length = m.max_position_embeddings;
  m.memory_formula = MemoryFormula::gpt;
  m.gated_mlp = false;
  m.norm = Norm::layernorm;
  m.learned_position_embeddings = false;
  m.tied_embeddings = f.flag("tie_word_embeddings", false);
  m.qkv_bias = m.attention_output_bias = f.flag("attention_bias", true);
  m.mlp_bias = true;
  m.parallel_residual = f.flag("use_parallel_residual", true);
  if (const Json* pct = f.find("rotary_pct")) {
    if (!pct->is_number() || !(pct->get<double>() > 0.0 && pct->get<double>() <= 1.0)) {
      f.fail(fmt::format("'rotary_pct' must be a number above 0 and at most 1, not {}",
                         pct->dump()));
    }
  }
}

} // namespace

std::string supported_model_types() {
  std::string out;
  for (const auto t : kModelTypes) {
    out += out.empty() ? "" : ", ";
    out += t;
  }
  return out;
}

ModelSpec parse_hf_config(const std::string& text, const std::string& origin,
                          const std::string& name) {
  const Json doc = json_util::parse(text, origin);
  json_util::require_object(doc, origin);
  const std::string type = json_util::get_string(doc, "model_type", origin);
  if (std::find(kModelTypes.begin(), kModelTypes.end(), type) == kModelTypes.end()) {
    throw InputError(fmt::format("{}: unknown model_type '{}' (supported: {})", origin, type,
                                 supported_model_types()));
  }
  const Fields f(doc, origin, type);
  ModelSpec m;
  m.name = name;
  m.architecture = type;
  m.source = origin;
  if (type == "gpt2") {
    read_gpt2(f, m);
  } else if (type == "gpt_neox") {
    read_gpt_neox(f, m);
  } else if (type == "deepseek_v3") {
    read_deepseek_v3(f, m);
  } else {
    read_llama_family(f, type, m);
  }
  check_model(m, origin);
  return m;
}

bool names_model_file(const std::string& type_arg) noexcept {
  constexpr std::string_view ext = ".json";
  return type_arg.find('/') != std::string::npos ||
         (type_arg.size() >= ext.size() &&
          type_arg.compare(type_arg.size() - ext.size(), ext.size(), ext) == 0);
}

std::string model_name_from_path(const std::filesystem::path& file) {
  if (file.filename() == "config.json") {
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::absolute(file, ec).parent_path();
    if (!ec && !dir.filename().empty()) {
      return dir.filename().string();
    }
  }
  return file.stem().string();
}

ModelSpec load_model_file(const std::filesystem::path& file) {
  const std::string origin = file.string();
  const std::string text = json_util::read_file(file, "model file");
  const Json doc = json_util::parse(text, origin);
  json_util::require_object(doc, origin);
  if (doc.contains("model_type")) {
    return parse_hf_config(text, origin, model_name_from_path(file));
  }
  return parse_model_object(text, origin, model_name_from_path(file));
}

} // namespace zerosearch
