#include <catch2/catch.hpp>

#include <string>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/profiledb.hpp"

using namespace zerosearch;

namespace {

/// A valid profile with `times` as its tp=1 entry (and its other fields overridable).
std::string profile(const std::string& times = "[0.1, 0.2, 0.3]",
                    const std::string& extra = "") {
  return R"({"model": "m", "gpu": "A10", "framework": "deepspeed", "ends_per_micro_batch": false,
  "sources": [], "layer_times_s": {"1": )" +
         times + "}" + extra + "}";
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_profile(text, "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("a valid profile parses", "[profiledb]") {
  const GpuProfile p = parse_profile(profile(), "p.json");
  CHECK(p.model == "m");
  CHECK(p.gpu == "A10");
  CHECK(p.flavour == Flavour::deepspeed);
  CHECK(p.layer_times_s.at(1) == std::vector<double>{0.1, 0.2, 0.3});
  CHECK(p.origin == "p.json");
}

TEST_CASE("malformed JSON names the file and line", "[profiledb]") {
  CHECK(error_of("{\n  \"model\": \"m\",\n  \"gpu\" \"A10\"\n}") ==
        "p.json:3: malformed JSON: syntax error while parsing object separator - unexpected "
        "string literal; expected ':'");
  CHECK(error_of("") == "p.json:1: malformed JSON: syntax error while parsing value - unexpected "
                        "end of input; expected '[', '{', or a literal");
  CHECK(error_of("{\"a\": [0.1,\nNaN]}") ==
        "p.json:2: malformed JSON: syntax error while parsing value - invalid literal; last "
        "read: '0.1,<U+000A>N'");
}

TEST_CASE("a number too large for a double is malformed JSON with its line", "[profiledb]") {
  CHECK(error_of("{\n\"layer_times_s\": {\"1\": [1e999]}}") ==
        "p.json:2: malformed JSON: number overflow parsing '1e999'");
}

TEST_CASE("negative, null and missing times are refused", "[profiledb]") {
  CHECK(error_of(profile("[0.1, -0.2, 0.3]")) ==
        "p.json: layer_times_s[\"1\"][1] must be a finite number >= 0, not -0.2");
  CHECK(error_of(profile("[0.1, null, 0.3]")) ==
        "p.json: layer_times_s[\"1\"][1] must be a number, not null");
  CHECK(error_of(profile("[0.1, \"0.2\", 0.3]")) ==
        "p.json: layer_times_s[\"1\"][1] must be a number, not \"0.2\"");
  CHECK(error_of(profile("[0.1, 0.2]")) ==
        "p.json: layer_times_s[\"1\"] must be an array of at least 3 layer times");
  CHECK(error_of(R"({"model": "m", "gpu": "A10", "framework": "deepspeed",
                     "ends_per_micro_batch": false})") == "p.json: missing key 'layer_times_s'");
  CHECK(error_of(R"({"model": "m", "gpu": "A10", "framework": "deepspeed",
                     "ends_per_micro_batch": false, "layer_times_s": {}})") ==
        "p.json: layer_times_s has no tensor-parallel degree");
}

TEST_CASE("tp degrees must agree on the layer count and be positive integers", "[profiledb]") {
  // Two arrays that disagree: no majority, both named.
  CHECK(error_of(profile("[0.1, 0.2, 0.3], \"2\": [0.1, 0.2, 0.3, 0.4]")) ==
        "p.json: the layer_times_s arrays disagree on the layer count (tp 1 has 3, tp 2 has 4)");
  // A broken tp-1 array is blamed, not the tp-2 array read after it.
  CHECK(error_of(profile("[0.1, 0.2, 0.3], \"2\": [0.1, 0.2, 0.3, 0.4], \"4\": [0.1, 0.2, 0.3, 0.4]")) ==
        "p.json: layer_times_s[\"1\"] has 3 layers but the other tp degrees have 4");
  CHECK(error_of(profile("[0.1, 0.2, 0.3], \"x\": [0.1, 0.2, 0.3]")) ==
        "p.json: layer_times_s key 'x' must be a tensor-parallel degree (a positive integer)");
  CHECK(error_of(profile("[0.1, 0.2, 0.3], \"0\": [0.1, 0.2, 0.3]")) ==
        "p.json: layer_times_s key '0' must be a tensor-parallel degree (a positive integer)");
}

TEST_CASE("unknown keys and wrong types are refused", "[profiledb]") {
  CHECK(error_of(profile("[0.1, 0.2, 0.3]", ", \"comment\": 1")) ==
        "p.json: unknown key 'comment' (allowed: model, gpu, framework, ends_per_micro_batch, "
        "sources, layer_times_s)");
  CHECK(error_of("[1, 2]") == "p.json: expected a JSON object");
  CHECK(error_of(R"({"model": 5})") == "p.json: 'model' must be a string");
  CHECK(error_of(R"({"model": "m", "gpu": "A10", "framework": "jax"})") ==
        "p.json: unknown framework 'jax' (allowed: megatron, deepspeed)");
  CHECK(error_of(R"({"model": "m", "gpu": "A10", "framework": "megatron",
                     "ends_per_micro_batch": 0})") ==
        "p.json: 'ends_per_micro_batch' must be true or false");
  CHECK(error_of(R"({"model": "m", "gpu": "A10", "framework": "megatron",
                     "ends_per_micro_batch": true, "sources": "a.npy"})") ==
        "p.json: 'sources' must be an array of file names");
}

TEST_CASE("a profile database refuses duplicates and missing folders", "[profiledb]") {
  ProfileDb db;
  db.add(parse_profile(profile(), "a.json"));
  CHECK_THROWS_WITH(db.add(parse_profile(profile(), "b.json")),
                    "b.json: duplicate profile for m on A10 (deepspeed), also in a.json");
  CHECK_THROWS_WITH(load_profile_db(ZEROSEARCH_TEST_DATA "/no_such_folder"),
                    "profile folder '" ZEROSEARCH_TEST_DATA
                    "/no_such_folder' does not exist or is not a folder");
  CHECK(load_profile_db(ZEROSEARCH_TEST_PROFILEDB "/profiles").all().size() == 4);
}
