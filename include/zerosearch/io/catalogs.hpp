#pragma once
// Reads a profiledb folder: models.json, hardware.json and profiles/ (docs/profiledb.md).
#include <filesystem>

#include "zerosearch/search/plan.hpp"

namespace zerosearch {

/// Loads models.json, hardware.json and profiles/ from a profiledb folder. Throws InputError.
[[nodiscard]] Catalogs load_catalogs(const std::filesystem::path& profiledb);

} // namespace zerosearch
