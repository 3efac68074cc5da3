#pragma once
// Loader of the model catalog (profiledb/models.json; docs/profiledb.md).
#include <filesystem>
#include <string>

#include "zerosearch/core/model.hpp"

namespace zerosearch {

/// Parses models.json text; `origin` names the file in error messages. Throws InputError.
[[nodiscard]] ModelCatalog parse_model_catalog(const std::string& text, const std::string& origin);
/// Reads and parses a models.json file. Throws InputError.
[[nodiscard]] ModelCatalog load_model_catalog(const std::filesystem::path& file);

} // namespace zerosearch
