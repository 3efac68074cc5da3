#pragma once
// Loader of the profile database (profiledb/profiles/*.json; docs/profiledb.md).
#include <filesystem>
#include <string>

#include "zerosearch/core/profile.hpp"

namespace zerosearch {

/// Parses one profile file's text. Throws InputError naming `origin` on any defect (malformed
/// JSON with its line, unknown keys, NaN, negative or missing times, ragged tp arrays).
[[nodiscard]] GpuProfile parse_profile(const std::string& text, const std::string& origin);
/// Loads every *.json below `dir` (the profiles folder). Throws InputError.
[[nodiscard]] ProfileDb load_profile_db(const std::filesystem::path& dir);

} // namespace zerosearch
