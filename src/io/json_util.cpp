#include "zerosearch/io/json_util.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/json_fast.hpp"

namespace zerosearch::json_util {

std::string read_file(const std::filesystem::path& file, std::string_view what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw InputError(fmt::format("{} '{}' does not exist or is not a file", what, file.string()));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw InputError(fmt::format("cannot read {} '{}'", what, file.string()));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    throw InputError(fmt::format("cannot read {} '{}'", what, file.string()));
  }
  return buffer.str();
}

Json parse(const std::string& text, const std::string& origin) {
  // The fast reader gives nlohmann's value; what it leaves (every error among it) nlohmann
  // parses again, for its value or its error message.
  if (Json fast; json_fast::parse(text, fast)) {
    return fast;
  }
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    const auto end = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const auto line = 1 + std::count(text.begin(),
                                     text.begin() + static_cast<std::ptrdiff_t>(end), '\n');
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line 3, column 5: ";
    // keep the part after the last ": " that precedes the description.
    if (const auto pos = what.find("syntax error"); pos != std::string::npos) {
      what = what.substr(pos);
    } else if (const auto colon = what.rfind("]: "); colon != std::string::npos) {
      what = what.substr(colon + 3);
    }
    throw InputError(fmt::format("{}:{}: malformed JSON: {}", origin, line, what));
  } catch (const Json::exception& e) {
    // A number too large for a double ("number overflow parsing '1e999'") is reported without
    // a position; find the number's line from its text.
    std::string what = e.what();
    if (const auto colon = what.find("] "); colon != std::string::npos) {
      what = what.substr(colon + 2);
    }
    std::size_t line = 1;
    const auto open = what.find('\'');
    const auto close = what.rfind('\'');
    if (open != std::string::npos && close > open + 1) {
      const auto at = text.find(what.substr(open + 1, close - open - 1));
      if (at != std::string::npos) {
        line += static_cast<std::size_t>(
            std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
      }
    }
    throw InputError(fmt::format("{}:{}: malformed JSON: {}", origin, line, what));
  }
}

void require_object(const Json& j, const std::string& where) {
  if (!j.is_object()) {
    throw InputError(fmt::format("{}: expected a JSON object", where));
  }
}

void reject_unknown_keys(const Json& j, std::initializer_list<std::string_view> allowed,
                         const std::string& where) {
  for (const auto& item : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      std::string list;
      for (const auto a : allowed) {
        list += list.empty() ? "" : ", ";
        list += a;
      }
      throw InputError(fmt::format("{}: unknown key '{}' (allowed: {})", where, item.key(), list));
    }
  }
}

const Json& field(const Json& j, const std::string& key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end()) {
    throw InputError(fmt::format("{}: missing key '{}'", where, key));
  }
  return *it;
}

std::string get_string(const Json& j, const std::string& key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_string()) {
    throw InputError(fmt::format("{}: '{}' must be a string", where, key));
  }
  return v.get<std::string>();
}

bool get_bool(const Json& j, const std::string& key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_boolean()) {
    throw InputError(fmt::format("{}: '{}' must be true or false", where, key));
  }
  return v.get<bool>();
}

std::int64_t get_positive_int(const Json& j, const std::string& key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) {
    throw InputError(fmt::format("{}: '{}' must be a positive integer", where, key));
  }
  return v.get<std::int64_t>();
}

double get_positive_number(const Json& j, const std::string& key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > 0.0)) {
    throw InputError(fmt::format("{}: '{}' must be a positive number, not {}", where, key, v.dump()));
  }
  return v.get<double>();
}

double number_value(const Json& j, const std::string& where) {
  if (!j.is_number()) {
    throw InputError(fmt::format("{} must be a number, not {}", where, j.dump()));
  }
  const double x = j.get<double>();
  if (!std::isfinite(x) || x < 0.0) {
    throw InputError(fmt::format("{} must be a finite number >= 0, not {}", where, j.dump()));
  }
  return x;
}

const Json& with_renamed_key(const Json& j, const std::string& key, const std::string& old_key,
                             const std::string& where, Json& renamed) {
  if (!j.is_object() || !j.contains(old_key)) {
    return j;
  }
  if (j.contains(key)) {
    throw InputError(fmt::format("{}: give '{}' or its old name '{}', not both", where, key,
                                 old_key));
  }
  renamed = j;
  renamed[key] = renamed.at(old_key);
  renamed.erase(old_key);
  return renamed;
}

} // namespace zerosearch::json_util
