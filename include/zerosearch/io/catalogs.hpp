#pragma once
// Reads a profiledb folder: models.json, hardware.json and profiles/ (docs/profiledb.md).
#include <filesystem>

#include "zerosearch/search/plan.hpp"

namespace zerosearch {

/// Loads models.json, hardware.json, calibration.json (optional) and profiles/ from a
/// profiledb folder, and merges `hardware_file` (--hardware, when not empty) over
/// hardware.json. Throws InputError.
/// `calibration_file` (--calibration, when not empty) is merged over calibration.json.
[[nodiscard]] Catalogs load_catalogs(const std::filesystem::path& profiledb,
                                     const std::filesystem::path& hardware_file = {},
                                     const std::filesystem::path& calibration_file = {});

} // namespace zerosearch
