#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/json_fast.hpp"
#include "zerosearch/io/json_util.hpp"

#include "json_same.hpp"

using namespace zerosearch;
using Json = nlohmann::json;

namespace {

/// What the fast reader must never do: accept a text nlohmann rejects, or read a value other
/// than nlohmann's. Returns whether the fast reader read it.
bool fast_agrees(const std::string& text) {
  Json fast;
  const bool ok = json_fast::parse(text, fast);
  if (!ok) {
    return false;
  }
  Json ref;
  try {
    ref = Json::parse(text);
  } catch (const Json::exception& e) {
    FAIL_CHECK("fast reader accepted what nlohmann rejects (" << e.what() << "): " << text);
    return true;
  }
  if (!zerosearch::testing::same_json(fast, ref)) {
    FAIL_CHECK("fast reader read " << fast.dump() << ", nlohmann " << ref.dump() << ": "
                                   << text);
  }
  return true;
}

std::vector<std::filesystem::path> data_files() {
  const std::filesystem::path db = ZEROSEARCH_TEST_PROFILEDB;
  std::vector<std::filesystem::path> files{db / "hardware.json", db / "models.json",
                                           db / "calibration.json", db / "uncertainty.json"};
  for (const auto& e : std::filesystem::directory_iterator(db / "profiles")) {
    files.push_back(e.path());
  }
  return files;
}

} // namespace

TEST_CASE("json_fast reads every data file as nlohmann does", "[json_fast]") {
  for (const auto& f : data_files()) {
    INFO(f.string());
    const std::string text = json_util::read_file(f, "data file");
    // The data files are the fast reader's case: none may fall back to nlohmann.
    CHECK(fast_agrees(text));
  }
}

TEST_CASE("json_fast types numbers as nlohmann does", "[json_fast]") {
  for (const char* t :
       {"0", "-0", "7", "-7", "0.5", "-0.0", "1e3", "1E+3", "2e-3", "1.5e300", "-1.5e-300",
        "18446744073709551615", "18446744073709551616", "-9223372036854775808",
        "-9223372036854775809", "123456789012345678901234567890", "4.9e-324", "2.5e-324",
        "1e-400", "0.1000000000000000055511151231257827021181583404541015625",
        "2.2250738585072011e-308", "9007199254740993", "1.7976931348623157e308", "[1,-1,1.0]"}) {
    INFO(t);
    CHECK(fast_agrees(t));
  }
  // Overflow is nlohmann's error to report.
  Json out;
  CHECK_FALSE(json_fast::parse("1e400", out));
  CHECK_FALSE(json_fast::parse("[-1e999]", out));
}

TEST_CASE("json_fast leaves to nlohmann what it does not read", "[json_fast]") {
  Json out;
  for (const char* t :
       {"", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{'a':1}", "01", "1.", ".5", "-",
        "+1", "1e", "1e+", "tru", "truex", "nul", "NaN", "Infinity", "[1 2]", "{} {}",
        "\"\\u00e9\"", "\"\\x\"", "\"a\tb\"", "\"abc", "\xEF\xBB\xBF{}", "\"\xC3\xA9\"", "// c\n{}",
        "{\"a\":1}\n\x01", "[\"a\\\"]"}) {
    INFO(t);
    CHECK_FALSE(json_fast::parse(t, out));
  }
  std::string deep(json_fast::kMaxDepth + 1, '[');
  deep += std::string(json_fast::kMaxDepth + 1, ']');
  CHECK_FALSE(json_fast::parse(deep, out));
  // What it leaves still reads through json_util::parse: nlohmann's value ...
  CHECK(json_util::parse("\"\\u00e9\"", "f.json") == Json("\xC3\xA9"));
  CHECK(json_util::parse(deep, "f.json").is_array());
  // ... or nlohmann's error, with the file and line.
  try {
    (void)json_util::parse("{\n\"a\": 1,\n}", "f.json");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).rfind("f.json:3: malformed JSON: syntax error", 0) == 0);
  }
}

TEST_CASE("json_fast agrees with nlohmann on mutated data files", "[json_fast]") {
  // Differential fuzzing, deterministic: bytes of the data files' own text replaced, inserted
  // or deleted, from an alphabet of JSON's structure, escapes, digits and odd bytes. Whatever
  // the fast reader accepts nlohmann must accept with the same value.
  std::vector<std::string> seeds;
  for (const auto& f : data_files()) {
    const std::string text = json_util::read_file(f, "data file");
    // Short windows keep each case cheap and make mutations hit structure often.
    for (std::size_t at = 0; at + 200 < text.size(); at += 997) {
      std::size_t open = text.find('{', at);
      if (open == std::string::npos) {
        break;
      }
      const std::size_t close = text.find('}', open);
      if (close != std::string::npos && close - open < 600) {
        seeds.push_back(text.substr(open, close - open + 1));
      }
    }
  }
  seeds.push_back(R"({"a": [1, -2, 3.5e-2, true, false, null, "x\"y\\z\/\b\f\n\r\t"], "b": {}})");
  seeds.push_back(R"([0, -0, 1E5, 12345678901234567890, -1.0e+2, [], [[]], {"k": {"k": 1}}])");
  REQUIRE(seeds.size() >= 20);
  const std::string alphabet = "{}[]:,\"\\/ \t\n\r0123456789-+.eEtrufalsn\x01\x7f\x80\xc3\xa9u";
  std::mt19937 rng(23);
  int accepted = 0;
  int refused = 0;
  for (int i = 0; i < 40000; ++i) {
    std::string t = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !t.empty(); ++e) {
      const std::size_t at = rng() % t.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
      case 0: t[at] = c; break;
      case 1: t.insert(t.begin() + static_cast<std::ptrdiff_t>(at), c); break;
      default: t.erase(at, 1); break;
      }
    }
    (fast_agrees(t) ? accepted : refused) += 1;
  }
  // Both paths were exercised.
  CHECK(accepted > 1000);
  CHECK(refused > 1000);
}

TEST_CASE("json_fast reads random numbers to the same double as nlohmann", "[json_fast]") {
  std::mt19937_64 rng(2023);
  for (int i = 0; i < 20000; ++i) {
    std::string t = rng() % 2 ? "-" : "";
    const int digits = 1 + static_cast<int>(rng() % 25);
    t += static_cast<char>('1' + rng() % 9);
    for (int d = 1; d < digits; ++d) {
      t += static_cast<char>('0' + rng() % 10);
    }
    if (rng() % 2) {
      t.insert(t.size() - static_cast<std::size_t>(rng() % static_cast<unsigned>(digits)), ".");
      if (t.back() == '.') {
        t += '0';
      }
    }
    if (rng() % 2) {
      t += 'e' + std::to_string(static_cast<int>(rng() % 660) - 340);
    }
    INFO(t);
    Json fast;
    if (json_fast::parse(t, fast)) {
      const Json ref = Json::parse(t);
      CHECK(zerosearch::testing::same_json(fast, ref));
    } else {
      // Only overflow is left to nlohmann here.
      CHECK_THROWS_AS(Json::parse(t), Json::out_of_range);
    }
  }
}
