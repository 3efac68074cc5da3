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

/// hardware.json of a profiledb folder with `hardware_file` (--hardware, when not empty)
/// merged over it: the hardware part of load_catalogs. Throws InputError.
[[nodiscard]] HardwareCatalog load_hardware(const std::filesystem::path& profiledb,
                                            const std::filesystem::path& hardware_file = {});

/// load_catalogs with the hardware catalog already read (load_hardware): the command line reads
/// it once, for the default node size, and the search reuses it.
[[nodiscard]] Catalogs load_catalogs(const std::filesystem::path& profiledb,
                                     HardwareCatalog hardware,
                                     const std::filesystem::path& calibration_file = {});

} // namespace zerosearch
