#include "zerosearch/io/model_json.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "zerosearch/io/json_util.hpp"
#include "zerosearch/core/error.hpp"

namespace zerosearch {

namespace {

std::string architecture_list() {
  std::string out;
  for (const char* a : kArchitectures) {
    out += out.empty() ? "" : ", ";
    out += a;
  }
  return out;
}

/// A whole number >= 0 (the MoE and window fields, where 0 means "none").
std::int64_t get_count(const json_util::Json& j, const std::string& key, const std::string& where) {
  const auto& v = json_util::field(j, key, where);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
    throw InputError(fmt::format("{}: '{}' must be a whole number >= 0, not {}", where, key,
                                 v.dump()));
  }
  return v.get<std::int64_t>();
}

/// An optional count: absent means 0.
std::int64_t get_optional_count(const json_util::Json& j, const std::string& key,
                                const std::string& where) {
  return j.contains(key) ? get_count(j, key, where) : 0;
}

// Issue 27's optional keys (docs/models.md): fine-grained MoE and multi-head latent attention.
#define MOE_MLA_KEYS                                                                            \
  "first_k_dense_layers", "shared_expert_gate", "router_bias", "capacity_factor", "q_lora_rank", \
      "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "qk_norm"

ModelSpec model_from_json(const json_util::Json& m, const std::string& name,
                          const std::string& where, bool name_key_allowed) {
  using namespace json_util;
  require_object(m, where);
  if (name_key_allowed) {
    reject_unknown_keys(
        m,
        {"name", "hidden_size", "sequence_length", "num_layers", "num_layers_from_cli",
         "vocab_size", "num_attention_heads", "ffn_hidden_size", "memory_formula",
         "architecture", "num_key_value_heads", "head_dim", "gated_mlp", "num_experts",
         "experts_per_token", "moe_ffn_hidden_size", "shared_expert_ffn_hidden_size",
         "tied_embeddings", "norm", "qkv_bias", "attention_output_bias", "mlp_bias",
         "learned_position_embeddings", "max_position_embeddings", "sliding_window",
         "parallel_residual", "source", MOE_MLA_KEYS},
        where);
  } else {
    reject_unknown_keys(
        m,
        {"hidden_size", "sequence_length", "num_layers", "num_layers_from_cli", "vocab_size",
         "num_attention_heads", "ffn_hidden_size", "memory_formula", "architecture",
         "num_key_value_heads", "head_dim", "gated_mlp", "num_experts", "experts_per_token",
         "moe_ffn_hidden_size", "shared_expert_ffn_hidden_size", "tied_embeddings", "norm",
         "qkv_bias", "attention_output_bias", "mlp_bias", "learned_position_embeddings",
         "max_position_embeddings", "sliding_window", "parallel_residual", "source",
         MOE_MLA_KEYS},
        where);
  }
  ModelSpec spec;
  spec.name = name;
  spec.hidden_size = get_positive_int(m, "hidden_size", where);
  spec.sequence_length = get_positive_int(m, "sequence_length", where);
  spec.num_layers = get_positive_int(m, "num_layers", where);
  spec.num_layers_from_cli = get_bool(m, "num_layers_from_cli", where);
  spec.vocab_size = get_positive_int(m, "vocab_size", where);
  spec.num_attention_heads = get_positive_int(m, "num_attention_heads", where);
  spec.ffn_hidden_size = get_positive_int(m, "ffn_hidden_size", where);
  const std::string formula = get_string(m, "memory_formula", where);
  if (formula == "llama") {
    spec.memory_formula = MemoryFormula::llama;
  } else if (formula == "gpt") {
    spec.memory_formula = MemoryFormula::gpt;
  } else {
    throw InputError(
        fmt::format("{}: unknown memory_formula '{}' (allowed: llama, gpt)", where, formula));
  }

  spec.architecture = get_string(m, "architecture", where);
  if (std::find_if(std::begin(kArchitectures), std::end(kArchitectures), [&](const char* a) {
        return spec.architecture == a;
      }) == std::end(kArchitectures)) {
    throw InputError(fmt::format("{}: unknown architecture '{}' (allowed: {})", where,
                                 spec.architecture, architecture_list()));
  }
  spec.num_key_value_heads = get_positive_int(m, "num_key_value_heads", where);
  spec.head_dim = get_positive_int(m, "head_dim", where);
  spec.gated_mlp = get_bool(m, "gated_mlp", where);
  spec.num_experts = get_optional_count(m, "num_experts", where);
  spec.experts_per_token = get_optional_count(m, "experts_per_token", where);
  spec.moe_ffn_hidden_size = get_optional_count(m, "moe_ffn_hidden_size", where);
  spec.shared_expert_ffn_hidden_size = get_optional_count(m, "shared_expert_ffn_hidden_size", where);
  spec.tied_embeddings = get_bool(m, "tied_embeddings", where);
  const std::string norm = get_string(m, "norm", where);
  if (norm == "rmsnorm") {
    spec.norm = Norm::rmsnorm;
  } else if (norm == "layernorm") {
    spec.norm = Norm::layernorm;
  } else {
    throw InputError(
        fmt::format("{}: unknown norm '{}' (allowed: rmsnorm, layernorm)", where, norm));
  }
  spec.qkv_bias = get_bool(m, "qkv_bias", where);
  spec.attention_output_bias = get_bool(m, "attention_output_bias", where);
  spec.mlp_bias = get_bool(m, "mlp_bias", where);
  spec.learned_position_embeddings = get_bool(m, "learned_position_embeddings", where);
  spec.max_position_embeddings = get_positive_int(m, "max_position_embeddings", where);
  spec.sliding_window = get_optional_count(m, "sliding_window", where);
  spec.parallel_residual = m.contains("parallel_residual") && get_bool(m, "parallel_residual", where);
  spec.source = m.contains("source") ? get_string(m, "source", where) : std::string();
  spec.first_k_dense_layers = get_optional_count(m, "first_k_dense_layers", where);
  spec.shared_expert_gate = !m.contains("shared_expert_gate") || get_bool(m, "shared_expert_gate", where);
  spec.router_bias = m.contains("router_bias") && get_bool(m, "router_bias", where);
  if (m.contains("capacity_factor")) {
    const auto& v = field(m, "capacity_factor", where);
    if (!v.is_number() || !(v.get<double>() >= 0.0) || !std::isfinite(v.get<double>())) {
      throw InputError(fmt::format("{}: 'capacity_factor' must be a number >= 0 (0: dropless), "
                                   "not {}",
                                   where, v.dump()));
    }
    spec.capacity_factor = v.get<double>();
  }
  spec.q_lora_rank = get_optional_count(m, "q_lora_rank", where);
  spec.kv_lora_rank = get_optional_count(m, "kv_lora_rank", where);
  spec.qk_rope_head_dim = get_optional_count(m, "qk_rope_head_dim", where);
  spec.qk_nope_head_dim = get_optional_count(m, "qk_nope_head_dim", where);
  spec.v_head_dim = get_optional_count(m, "v_head_dim", where);
  spec.qk_norm = m.contains("qk_norm") && get_bool(m, "qk_norm", where);
  check_model(spec, where);
  return spec;
}

} // namespace

void check_model(const ModelSpec& m, const std::string& where) {
  // Bounds that keep every parameter and FLOP count of model_stats well inside 64 bits.
  const auto at_most = [&where](std::string_view key, std::int64_t v, std::int64_t max) {
    if (v > max) {
      throw InputError(fmt::format("{}: '{}' {} is above the limit of {}", where, key, v, max));
    }
  };
  at_most("hidden_size", m.hidden_size, 1 << 20);
  at_most("num_layers", m.num_layers, 100'000);
  at_most("vocab_size", m.vocab_size, 1 << 24);
  at_most("num_attention_heads", m.num_attention_heads, 1 << 16);
  at_most("head_dim", m.head_dim, 1 << 16);
  at_most("ffn_hidden_size", m.ffn_hidden_size, 1 << 24);
  at_most("moe_ffn_hidden_size", m.moe_ffn_hidden_size, 1 << 24);
  at_most("shared_expert_ffn_hidden_size", m.shared_expert_ffn_hidden_size, 1 << 24);
  at_most("num_experts", m.num_experts, 1 << 14);
  at_most("sequence_length", m.sequence_length, 1 << 24);
  at_most("max_position_embeddings", m.max_position_embeddings, 1 << 24);
  if (m.num_attention_heads % m.num_key_value_heads != 0) {
    throw InputError(fmt::format("{}: 'num_key_value_heads' {} does not divide "
                                 "'num_attention_heads' {}",
                                 where, m.num_key_value_heads, m.num_attention_heads));
  }
  if (m.num_experts == 0) {
    if (m.experts_per_token != 0 || m.moe_ffn_hidden_size != 0 ||
        m.shared_expert_ffn_hidden_size != 0) {
      throw InputError(fmt::format("{}: 'experts_per_token', 'moe_ffn_hidden_size' and "
                                   "'shared_expert_ffn_hidden_size' need 'num_experts' > 0",
                                   where));
    }
  } else {
    if (m.experts_per_token < 1 || m.experts_per_token > m.num_experts) {
      throw InputError(fmt::format("{}: 'experts_per_token' {} must be from 1 to 'num_experts' {}",
                                   where, m.experts_per_token, m.num_experts));
    }
    if (m.moe_ffn_hidden_size < 1) {
      throw InputError(fmt::format("{}: 'moe_ffn_hidden_size' must be a positive integer when "
                                   "'num_experts' is {}",
                                   where, m.num_experts));
    }
  }
  if (m.first_k_dense_layers > 0 && (m.num_experts == 0 || m.first_k_dense_layers >= m.num_layers)) {
    throw InputError(fmt::format("{}: 'first_k_dense_layers' {} needs 'num_experts' > 0 and must "
                                 "be below 'num_layers' {}",
                                 where, m.first_k_dense_layers, m.num_layers));
  }
  at_most("q_lora_rank", m.q_lora_rank, 1 << 20);
  at_most("kv_lora_rank", m.kv_lora_rank, 1 << 20);
  at_most("qk_rope_head_dim", m.qk_rope_head_dim, 1 << 16);
  at_most("qk_nope_head_dim", m.qk_nope_head_dim, 1 << 16);
  at_most("v_head_dim", m.v_head_dim, 1 << 16);
  if (m.kv_lora_rank > 0 && (m.qk_rope_head_dim < 1 || m.qk_nope_head_dim < 1 || m.v_head_dim < 1)) {
    throw InputError(fmt::format("{}: multi-head latent attention ('kv_lora_rank' {}) needs "
                                 "'qk_rope_head_dim', 'qk_nope_head_dim' and 'v_head_dim' > 0",
                                 where, m.kv_lora_rank));
  }
  if (m.kv_lora_rank == 0 && (m.q_lora_rank > 0 || m.qk_rope_head_dim > 0 ||
                              m.qk_nope_head_dim > 0 || m.v_head_dim > 0)) {
    throw InputError(fmt::format("{}: 'q_lora_rank', 'qk_rope_head_dim', 'qk_nope_head_dim' and "
                                 "'v_head_dim' need 'kv_lora_rank' > 0 (multi-head latent "
                                 "attention)",
                                 where));
  }
  // Total parameters in floating point, before anything counts them in 64-bit integers.
  const double h = static_cast<double>(m.hidden_size);
  const double mlp_width = static_cast<double>(
      m.ffn_hidden_size + m.num_experts * m.moe_ffn_hidden_size + m.shared_expert_ffn_hidden_size);
  const double attn = h * static_cast<double>(m.head_dim) *
                          static_cast<double>(2 * m.num_attention_heads + 2 * m.num_key_value_heads) +
                      static_cast<double>(m.q_lora_rank + m.kv_lora_rank) *
                          (h + static_cast<double>(m.num_attention_heads) *
                                   static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim +
                                                       m.v_head_dim)) +
                      h * static_cast<double>(m.num_attention_heads * m.v_head_dim);
  const double approx = static_cast<double>(m.num_layers) * (attn + 3.0 * h * mlp_width) +
                        2.0 * h * static_cast<double>(m.vocab_size + m.max_position_embeddings);
  if (!(approx < 1e18)) {
    throw InputError(fmt::format("{}: the model has about {:.3g} parameters, above the limit of "
                                 "1e18",
                                 where, approx));
  }
}

ModelCatalog parse_model_catalog(const std::string& text, const std::string& origin) {
  using namespace json_util;
  const Json doc = parse(text, origin);
  require_object(doc, origin);
  reject_unknown_keys(doc, {"format", "models"}, origin);
  if (get_string(doc, "format", origin) != "zerosearch-models/1") {
    throw InputError(fmt::format("{}: 'format' must be \"zerosearch-models/1\"", origin));
  }
  const Json& models = field(doc, "models", origin);
  require_object(models, origin + ": models");
  ModelCatalog catalog;
  for (const auto& [name, m] : models.items()) {
    catalog.models.push_back(
        model_from_json(m, name, fmt::format("{}: model '{}'", origin, name), false));
  }
  if (catalog.models.empty()) {
    throw InputError(fmt::format("{}: no models", origin));
  }
  return catalog;
}

ModelCatalog load_model_catalog(const std::filesystem::path& file) {
  return parse_model_catalog(json_util::read_file(file, "model catalog"), file.string());
}

ModelSpec parse_model_object(const std::string& text, const std::string& origin,
                             const std::string& default_name) {
  using namespace json_util;
  const Json doc = parse(text, origin);
  require_object(doc, origin);
  std::string name = default_name;
  if (doc.contains("name")) {
    name = get_string(doc, "name", origin);
    if (name.empty()) {
      throw InputError(fmt::format("{}: 'name' must not be empty", origin));
    }
  }
  return model_from_json(doc, name, origin, true);
}

} // namespace zerosearch
