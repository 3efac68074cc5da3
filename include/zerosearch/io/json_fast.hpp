#pragma once
// A fast reader for the data files' JSON (profiledb/*.json, --hardware, --calibration), giving
// the same nlohmann::json value as nlohmann::json::parse. nlohmann's lexer costs about 70
// instructions a byte (it copies every byte twice, for the token and for its error message);
// the data files, whose figures carry their sources as text, are 100 KB read by every search
// (docs/performance.md, "Reading the data files"). This reader scans a string's plain bytes in
// one loop and builds the same DOM.
//
// It reads only what it is sure to read as nlohmann does: valid JSON whose strings are ASCII
// with the simple escapes (\" \\ \/ \b \f \n \r \t), numbers within a double's range, nesting
// at most kMaxDepth deep. On anything else -- every syntax error, a byte >= 0x80, a \u escape,
// a byte-order mark, a number that overflows -- it returns false and the caller parses the text
// with nlohmann, which gives the value or the error message (json_util::parse). Errors are
// therefore nlohmann's, word for word, with their line numbers.
#include <string_view>

#include <nlohmann/json.hpp>

namespace zerosearch::json_fast {

/// Deeper nesting is left to nlohmann.
inline constexpr int kMaxDepth = 256;

/// Parses `text` into `out` and returns true, or returns false (and leaves `out` unspecified)
/// when the text is not JSON this reader reads (see above). When it returns true, `out` equals
/// nlohmann::json::parse(text), number types (unsigned, integer, float) included.
[[nodiscard]] bool parse(std::string_view text, nlohmann::json& out);

} // namespace zerosearch::json_fast
