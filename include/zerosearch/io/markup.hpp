#pragma once
// Text escaped for HTML and SVG/XML: one function for the HTML report, the --plot chart and the
// --timeline SVG.
#include <string>
#include <string_view>

namespace zerosearch {

/// `text` with &, <, >, " and ' replaced by entities, safe in element content and in quoted
/// attribute values of HTML and XML alike (the apostrophe as &#39;, which HTML 4 knows too,
/// where &apos; is XML's and HTML 5's only). Other bytes, UTF-8 included, are kept.
[[nodiscard]] inline std::string escape_markup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

} // namespace zerosearch
