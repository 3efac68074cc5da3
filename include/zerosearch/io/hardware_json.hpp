#pragma once
// Loader of the hardware catalog (profiledb/hardware.json; docs/profiledb.md).
#include <filesystem>
#include <string>

#include "zerosearch/core/hardware.hpp"

namespace zerosearch {

/// Parses hardware.json text; `origin` names the file in error messages. Throws InputError.
[[nodiscard]] HardwareCatalog parse_hardware_catalog(const std::string& text,
                                                     const std::string& origin);
[[nodiscard]] HardwareCatalog load_hardware_catalog(const std::filesystem::path& file);

} // namespace zerosearch
