#include <catch2/catch.hpp>

#include <string>

#include "zerosearch/io/model_json.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/core/model.hpp"

using namespace zerosearch;

namespace {

const char* const kModel = R"({"hidden_size": 1600, "sequence_length": 1024, "num_layers": 48,
  "num_layers_from_cli": true, "vocab_size": 50257, "num_attention_heads": 16,
  "ffn_hidden_size": 6400, "memory_formula": "gpt")";

std::string catalog(const std::string& model_extra = "") {
  return std::string(R"({"format": "zerosearch-models/1", "models": {"gpt": )") + kModel +
         model_extra + "}}}";
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_model_catalog(text, "models.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("the shipped model catalog loads", "[model]") {
  const ModelCatalog c = load_model_catalog(ZEROSEARCH_TEST_PROFILEDB "/models.json");
  CHECK(c.find("llama2_13B").num_layers == 40);
  CHECK(c.find("gpt2XL").num_layers_from_cli);
  CHECK(c.names() == "gpt2XL, llama2_13B");
}

TEST_CASE("an unknown model lists the known ones", "[model]") {
  const ModelCatalog c = parse_model_catalog(catalog(), "models.json");
  CHECK_THROWS_WITH(c.find("gpt3"), "unknown model 'gpt3' (known: gpt)");
}

TEST_CASE("model catalog errors name the file, model and key", "[model]") {
  CHECK(error_of(catalog(", \"rope\": 1")) ==
        "models.json: model 'gpt': unknown key 'rope' (allowed: hidden_size, sequence_length, "
        "num_layers, num_layers_from_cli, vocab_size, num_attention_heads, ffn_hidden_size, "
        "memory_formula)");
  CHECK(error_of(R"({"format": "zerosearch-models/2", "models": {}})") ==
        "models.json: 'format' must be \"zerosearch-models/1\"");
  CHECK(error_of(R"({"format": "zerosearch-models/1", "models": {}})") == "models.json: no models");
  CHECK(error_of(R"({"format": "zerosearch-models/1"})") == "models.json: missing key 'models'");
  CHECK(error_of(R"({"format": "zerosearch-models/1", "models": {"m": {"hidden_size": -5}}})") ==
        "models.json: model 'm': 'hidden_size' must be a positive integer");
  CHECK(error_of(R"({"format": "zerosearch-models/1", "models": {"m": {"hidden_size": 1.5}}})") ==
        "models.json: model 'm': 'hidden_size' must be a positive integer");
  CHECK(error_of("{\n\"format\": \"zerosearch-models/1\",\n\"models\": {,}}") ==
        "models.json:3: malformed JSON: syntax error while parsing object key - unexpected ','; "
        "expected string literal");
}

TEST_CASE("a missing model catalog file is named", "[model]") {
  CHECK_THROWS_WITH(load_model_catalog(ZEROSEARCH_TEST_DATA "/no_models/models.json"),
                    "model catalog '" ZEROSEARCH_TEST_DATA
                    "/no_models/models.json' does not exist or is not a file");
}
