#include "zerosearch/io/model_json.hpp"

#include <fmt/format.h>

#include "zerosearch/io/json_util.hpp"
#include "zerosearch/core/error.hpp"

namespace zerosearch {

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
    const std::string where = fmt::format("{}: model '{}'", origin, name);
    require_object(m, where);
    reject_unknown_keys(m,
                        {"hidden_size", "sequence_length", "num_layers", "num_layers_from_cli",
                         "vocab_size", "num_attention_heads", "ffn_hidden_size",
                         "memory_formula"},
                        where);
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
    // Until models.json carries the architecture (issue 9), the formula family implies it.
    spec.gated_mlp = spec.memory_formula == MemoryFormula::llama;
    catalog.models.push_back(std::move(spec));
  }
  if (catalog.models.empty()) {
    throw InputError(fmt::format("{}: no models", origin));
  }
  return catalog;
}

ModelCatalog load_model_catalog(const std::filesystem::path& file) {
  return parse_model_catalog(json_util::read_file(file, "model catalog"), file.string());
}

} // namespace zerosearch
