#pragma once
// Strict JSON reading for the catalogs and profiles: parse errors carry the file and line,
// unknown keys are rejected, every field is read with its type checked.
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace zerosearch::json_util {

using Json = nlohmann::json;

/// Reads a whole file. Throws InputError naming the file when it cannot be read.
[[nodiscard]] std::string read_file(const std::filesystem::path& file, std::string_view what);

/// Parses `text`; on a syntax error throws InputError "<origin>:<line>: malformed JSON: ...".
[[nodiscard]] Json parse(const std::string& text, const std::string& origin);

/// Throws InputError unless `j` is an object.
void require_object(const Json& j, const std::string& where);
/// Throws InputError naming the first key of `j` not in `allowed`.
void reject_unknown_keys(const Json& j, std::initializer_list<std::string_view> allowed,
                         const std::string& where);

/// Typed field readers: throw InputError "<where>: missing key 'k'" or "... 'k' must be ...".
[[nodiscard]] const Json& field(const Json& j, const std::string& key, const std::string& where);
[[nodiscard]] std::string get_string(const Json& j, const std::string& key, const std::string& where);
[[nodiscard]] bool get_bool(const Json& j, const std::string& key, const std::string& where);
[[nodiscard]] std::int64_t get_positive_int(const Json& j, const std::string& key,
                                            const std::string& where);
/// A finite number > 0.
[[nodiscard]] double get_positive_number(const Json& j, const std::string& key,
                                         const std::string& where);
/// A finite number >= 0.
[[nodiscard]] double number_value(const Json& j, const std::string& where);

/// `j` with its key `old_key` renamed to `key`: a catalog key renamed (docs/hardware.md, "Old key
/// names") is still read under its old name. Throws InputError when `j` has both. `j` itself
/// (not a copy) when it is not an object or lacks `old_key`; else the renamed copy, kept in
/// `renamed`.
[[nodiscard]] const Json& with_renamed_key(const Json& j, const std::string& key,
                                           const std::string& old_key, const std::string& where,
                                           Json& renamed);

} // namespace zerosearch::json_util
