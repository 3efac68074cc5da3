#include <catch2/catch.hpp>

#include <string>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/hf_config.hpp"

using namespace zerosearch;

namespace {

const std::string kData = ZEROSEARCH_TEST_DATA;

std::string error_of(const std::string& file) {
  try {
    (void)load_model_file(file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string hf_error(const std::string& json) {
  try {
    (void)parse_hf_config(json, "config.json", "m");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

const char* const kLlama = R"({"model_type": "llama", "hidden_size": 4096,
  "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 11008,
  "vocab_size": 32000, "max_position_embeddings": 4096)";

} // namespace

TEST_CASE("type arguments with a slash or .json name files", "[hf_config]") {
  CHECK(names_model_file("models/config.json"));
  CHECK(names_model_file("my_model.json"));
  CHECK(names_model_file("./llama"));
  CHECK_FALSE(names_model_file("llama2_13B"));
  CHECK_FALSE(names_model_file("qwen2.5_7B"));
}

TEST_CASE("a config.json is named after its folder, other files after themselves",
          "[hf_config]") {
  CHECK(model_name_from_path("models/Meta-Llama-3-8B/config.json") == "Meta-Llama-3-8B");
  CHECK(model_name_from_path("models/my_model.json") == "my_model");
}

TEST_CASE("llama defaults: MHA, untied, no biases, SwiGLU by type", "[hf_config]") {
  const ModelSpec m = parse_hf_config(std::string(kLlama) + "}", "config.json", "m");
  CHECK(m.architecture == "llama");
  CHECK(m.num_key_value_heads == 32);
  CHECK(m.head_dim == 128);
  CHECK(m.gated_mlp);
  CHECK_FALSE(m.tied_embeddings);
  CHECK_FALSE(m.qkv_bias);
  CHECK(m.norm == Norm::rmsnorm);
  CHECK(m.memory_formula == MemoryFormula::llama);
  CHECK(m.sequence_length == 4096);
  CHECK_FALSE(m.num_layers_from_cli);
  // Gating comes from the model type, never from the FFN ratio: a 4h FFN stays gated.
  const ModelSpec wide = parse_hf_config(
      R"({"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 2,
          "num_attention_heads": 8, "intermediate_size": 4096, "vocab_size": 1000,
          "max_position_embeddings": 512})",
      "config.json", "m");
  CHECK(wide.gated_mlp);
  // attention_bias puts biases on q, k, v and o.
  const ModelSpec biased =
      parse_hf_config(std::string(kLlama) + R"(, "attention_bias": true})", "config.json", "m");
  CHECK(biased.qkv_bias);
  CHECK(biased.attention_output_bias);
}

TEST_CASE("Llama 3.1's rope_scaling gives the training sequence length", "[hf_config]") {
  const ModelSpec m = parse_hf_config(
      std::string(kLlama) + R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
        "original_max_position_embeddings": 2048}})",
      "config.json", "m");
  CHECK(m.max_position_embeddings == 4096);
  CHECK(m.sequence_length == 2048);
}

TEST_CASE("an explicit head_dim is kept even when hidden / heads differs", "[hf_config]") {
  const ModelSpec m =
      parse_hf_config(std::string(kLlama) + R"(, "head_dim": 64})", "config.json", "m");
  CHECK(m.head_dim == 64);
}

TEST_CASE("bad config.json files: one line naming the file, the field and the value",
          "[hf_config]") {
  const std::string bad = kData + "/hf_bad/";
  CHECK(error_of(bad + "hidden_not_divisible.json") ==
        bad + "hidden_not_divisible.json: 'hidden_size' 4100 is not divisible by "
              "'num_attention_heads' 32 and there is no 'head_dim'");
  CHECK(error_of(bad + "kv_heads_not_dividing.json") ==
        bad + "kv_heads_not_dividing.json: 'num_key_value_heads' 7 does not divide "
              "'num_attention_heads' 32");
  CHECK(error_of(bad + "unknown_model_type.json") ==
        bad + "unknown_model_type.json: unknown model_type 'bert' (supported: gpt2, gpt_neox, "
              "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3_moe, deepseek_v3)");
  CHECK(error_of(bad + "missing_layers.json") ==
        bad + "missing_layers.json: missing key 'num_hidden_layers' (model_type llama)");
  CHECK(error_of(bad + "hidden_is_a_string.json") ==
        bad + "hidden_is_a_string.json: 'hidden_size' must be a positive integer, not \"4096\"");
  CHECK(error_of(bad + "too_many_experts_per_token.json") ==
        bad + "too_many_experts_per_token.json: 'num_experts_per_tok' 9 is more than the 8 "
              "experts");
  CHECK(error_of(bad + "malformed.json") ==
        bad + "malformed.json:4: malformed JSON: syntax error while parsing object - unexpected "
              "string literal; expected '}'");
  CHECK(error_of(bad + "no_such_file.json") ==
        "model file '" + bad + "no_such_file.json' does not exist or is not a file");
  CHECK(hf_error(R"({"model_type": "llama", "hidden_size": null})") ==
        "config.json: null key 'hidden_size' (model_type llama)");
  CHECK(hf_error(R"({"hidden_size": 10})") == "config.json: missing key 'model_type'");
  CHECK(hf_error(R"({"model_type": "qwen2_moe", "hidden_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 100,
                     "max_position_embeddings": 128, "num_experts": 4,
                     "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                     "decoder_sparse_step": 2})") ==
        "config.json: 'decoder_sparse_step' 2 is not supported (only 1: every layer MoE)");
  CHECK(hf_error(R"({"model_type": "gpt_neox", "hidden_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "intermediate_size": 256, "vocab_size": 100,
                     "max_position_embeddings": 128, "rotary_pct": 1.5})") ==
        "config.json: 'rotary_pct' must be a number above 0 and at most 1, not 1.5");
}

TEST_CASE("a model file in the project's format", "[hf_config]") {
  const ModelSpec m = load_model_file(kData + "/model_files/tiny_llama.json");
  CHECK(m.name == "tiny-llama");
  CHECK(m.num_key_value_heads == 4);
  CHECK(m.sequence_length == 2048);
  const std::string bad = kData + "/hf_bad/";
  CHECK(error_of(bad + "model_missing_architecture.json") ==
        bad + "model_missing_architecture.json: missing key 'architecture'");
  CHECK(error_of(bad + "model_unknown_key.json").rfind(
            bad + "model_unknown_key.json: unknown key 'rope_theta' (allowed: name, hidden_size, ",
            0) == 0);
}
