#pragma once
// Loader of the model catalog (profiledb/models.json; docs/profiledb.md).
#include <filesystem>
#include <string>

#include "zerosearch/core/model.hpp"

namespace zerosearch {

/// Checks a model's figures against each other (heads divisible by key/value heads, MoE fields
/// present together, sizes within what the estimators count in 64 bits). `where` names the
/// file and model in the message. Throws InputError.
void check_model(const ModelSpec& m, const std::string& where);

/// Parses models.json text; `origin` names the file in error messages. Throws InputError.
[[nodiscard]] ModelCatalog parse_model_catalog(const std::string& text, const std::string& origin);
/// Reads and parses a models.json file. Throws InputError.
[[nodiscard]] ModelCatalog load_model_catalog(const std::filesystem::path& file);

/// Parses one model object in the catalog's format (the value of a "models" entry, plus an
/// optional "name"); `default_name` is used when it has none. Throws InputError.
[[nodiscard]] ModelSpec parse_model_object(const std::string& text, const std::string& origin,
                                           const std::string& default_name);

} // namespace zerosearch
