#include "zerosearch/io/json_fast.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace zerosearch::json_fast {

namespace {

using Json = nlohmann::json;

/// The bytes a string holds as they are: printable ASCII but the quote and the backslash.
struct PlainBytes {
  bool plain[256] = {};
  constexpr PlainBytes() {
    for (int c = 0x20; c < 0x80; ++c) {
      plain[c] = c != '"' && c != '\\';
    }
  }
};
constexpr PlainBytes kPlain;

bool is_plain(char c) { return kPlain.plain[static_cast<unsigned char>(c)]; }

/// A recursive-descent reader over [p, end). Every member returns false at the first byte it
/// does not accept; the caller then leaves the whole text to nlohmann.
class Reader {
public:
  Reader(const char* begin, const char* end) : p_(begin), end_(end) {}

  bool document(Json& out) {
    skip_whitespace();
    if (!value(out, 0)) {
      return false;
    }
    skip_whitespace();
    return p_ == end_;
  }

private:
  const char* p_;
  const char* end_;

  void skip_whitespace() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) {
      ++p_;
    }
  }

  bool value(Json& out, int depth) {
    if (p_ == end_) {
      return false;
    }
    switch (*p_) {
    case '{': return object(out, depth + 1);
    case '[': return array(out, depth + 1);
    case '"': {
      std::string s;
      if (!string(s)) {
        return false;
      }
      out = std::move(s);
      return true;
    }
    case 't': return literal("true", out, Json(true));
    case 'f': return literal("false", out, Json(false));
    case 'n': return literal("null", out, Json(nullptr));
    default: return number(out);
    }
  }

  bool literal(std::string_view word, Json& out, Json v) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() ||
        std::memcmp(p_, word.data(), word.size()) != 0) {
      return false;
    }
    p_ += word.size();
    out = std::move(v);
    return true;
  }

  bool object(Json& out, int depth) {
    if (depth > kMaxDepth) {
      return false;
    }
    ++p_; // '{'
    out = Json::object();
    auto& members = out.get_ref<Json::object_t&>();
    skip_whitespace();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    std::string key;
    while (true) {
      if (p_ == end_ || *p_ != '"' || !string(key)) {
        return false;
      }
      skip_whitespace();
      if (p_ == end_ || *p_ != ':') {
        return false;
      }
      ++p_;
      skip_whitespace();
      // A repeated key keeps its last value, as nlohmann's parser does.
      Json& slot = members[key];
      if (!value(slot, depth)) {
        return false;
      }
      skip_whitespace();
      if (p_ == end_) {
        return false;
      }
      if (*p_ == '}') {
        ++p_;
        return true;
      }
      if (*p_ != ',') {
        return false;
      }
      ++p_;
      skip_whitespace();
    }
  }

  bool array(Json& out, int depth) {
    if (depth > kMaxDepth) {
      return false;
    }
    ++p_; // '['
    out = Json::array();
    auto& items = out.get_ref<Json::array_t&>();
    skip_whitespace();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    while (true) {
      items.emplace_back();
      if (!value(items.back(), depth)) {
        return false;
      }
      skip_whitespace();
      if (p_ == end_) {
        return false;
      }
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      if (*p_ != ',') {
        return false;
      }
      ++p_;
      skip_whitespace();
    }
  }

  /// A string at p_ (its opening quote). ASCII only; \u escapes are left to nlohmann.
  bool string(std::string& out) {
    ++p_; // '"'
    out.clear();
    while (true) {
      const char* run = p_;
      while (end_ - p_ >= 4 && is_plain(p_[0]) && is_plain(p_[1]) && is_plain(p_[2]) &&
             is_plain(p_[3])) {
        p_ += 4;
      }
      while (p_ != end_ && is_plain(*p_)) {
        ++p_;
      }
      out.append(run, static_cast<std::size_t>(p_ - run));
      if (p_ == end_) {
        return false;
      }
      if (*p_ == '"') {
        ++p_;
        return true;
      }
      if (*p_ != '\\' || end_ - p_ < 2) {
        return false; // a control character, a byte >= 0x80, or a backslash at the end
      }
      switch (p_[1]) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      default: return false; // \u and invalid escapes
      }
      p_ += 2;
    }
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  void digits() {
    while (p_ != end_ && is_digit(*p_)) {
      ++p_;
    }
  }

  /// A number by JSON's grammar, typed as nlohmann types it: an integer without '-' is
  /// unsigned, with '-' signed, either one that does not fit 64 bits and any number with a
  /// fraction or exponent a double (std::strtod, as nlohmann converts it).
  bool number(Json& out) {
    const char* start = p_;
    const bool negative = *p_ == '-';
    if (negative) {
      ++p_;
    }
    if (p_ == end_ || !is_digit(*p_)) {
      return false;
    }
    if (*p_ == '0') {
      ++p_;
    } else {
      digits();
    }
    bool is_float = false;
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (p_ == end_ || !is_digit(*p_)) {
        return false;
      }
      digits();
      is_float = true;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) {
        ++p_;
      }
      if (p_ == end_ || !is_digit(*p_)) {
        return false;
      }
      digits();
      is_float = true;
    }
    if (!is_float) {
      if (negative) {
        std::int64_t v = 0;
        const auto r = std::from_chars(start, p_, v);
        if (r.ec == std::errc() && r.ptr == p_) {
          out = v;
          return true;
        }
      } else {
        std::uint64_t v = 0;
        const auto r = std::from_chars(start, p_, v);
        if (r.ec == std::errc() && r.ptr == p_) {
          out = v;
          return true;
        }
      }
    }
    // Correctly rounded, as glibc's strtod, which nlohmann calls, is: the same double. Out of
    // range (overflow, underflow) is left to strtod.
    double d = 0.0;
    if (const auto r = std::from_chars(start, p_, d); r.ec == std::errc() && r.ptr == p_) {
      out = d;
      return true;
    }
    // strtod needs a terminated copy: the text goes on after the number.
    const std::string token(start, p_);
    char* stop = nullptr;
    const double v = std::strtod(token.c_str(), &stop);
    if (stop != token.c_str() + token.size() || !std::isfinite(v)) {
      return false; // nlohmann reports the overflow
    }
    out = v;
    return true;
  }
};

} // namespace

bool parse(std::string_view text, nlohmann::json& out) {
  return Reader(text.data(), text.data() + text.size()).document(out);
}

} // namespace zerosearch::json_fast
