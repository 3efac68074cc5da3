#include <catch2/catch.hpp>

#include <string>

#include "zerosearch/io/model_json.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/core/model.hpp"

using namespace zerosearch;

namespace {

const char* const kModel = R"({"hidden_size": 1600, "sequence_length": 1024, "num_layers": 48,
  "num_layers_from_cli": true, "vocab_size": 50257, "num_attention_heads": 16,
  "ffn_hidden_size": 6400, "memory_formula": "gpt", "architecture": "gpt2",
  "num_key_value_heads": 16, "head_dim": 100, "gated_mlp": false, "tied_embeddings": true,
  "norm": "layernorm", "qkv_bias": true, "attention_output_bias": true, "mlp_bias": true,
  "learned_position_embeddings": true, "max_position_embeddings": 1024)";

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
  CHECK(c.names() == "deepseek_v3, gpt2XL, gpt3_175B, llama2_13B, llama2_70B, llama2_7B, "
                     "llama3_405B, llama3_70B, llama3_8B, mistral_7B, mixtral_8x22B, "
                     "mixtral_8x7B, qwen2.5_72B, qwen2.5_7B, qwen3_235B_A22B, qwen3_30B_A3B");
}

TEST_CASE("an unknown model lists the known ones", "[model]") {
  const ModelCatalog c = parse_model_catalog(catalog(), "models.json");
  CHECK_THROWS_WITH(c.find("gpt3"), "unknown model 'gpt3' (known: gpt)");
}

TEST_CASE("model catalog errors name the file, model and key", "[model]") {
  CHECK(error_of(catalog(", \"rope\": 1")) ==
        "models.json: model 'gpt': unknown key 'rope' (allowed: hidden_size, sequence_length, "
        "num_layers, num_layers_from_cli, vocab_size, num_attention_heads, ffn_hidden_size, "
        "memory_formula, architecture, num_key_value_heads, head_dim, gated_mlp, num_experts, "
        "experts_per_token, moe_ffn_hidden_size, shared_expert_ffn_hidden_size, "
        "tied_embeddings, norm, qkv_bias, attention_output_bias, mlp_bias, "
        "learned_position_embeddings, max_position_embeddings, sliding_window, "
        "parallel_residual, source, first_k_dense_layers, shared_expert_gate, router_bias, "
        "capacity_factor, q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, "
        "v_head_dim, qk_norm)");
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

TEST_CASE("the original two models keep their figures", "[model]") {
  const ModelCatalog c = load_model_catalog(ZEROSEARCH_TEST_PROFILEDB "/models.json");
  const ModelSpec& llama = c.find("llama2_13B");
  CHECK(llama.hidden_size == 5120);
  CHECK(llama.sequence_length == 4096);
  CHECK(llama.num_layers == 40);
  CHECK_FALSE(llama.num_layers_from_cli);
  CHECK(llama.vocab_size == 32000);
  CHECK(llama.num_attention_heads == 40);
  CHECK(llama.ffn_hidden_size == 13824);
  CHECK(llama.memory_formula == MemoryFormula::llama);
  const ModelSpec& gpt = c.find("gpt2XL");
  CHECK(gpt.hidden_size == 1600);
  CHECK(gpt.sequence_length == 1024);
  CHECK(gpt.num_layers == 48);
  CHECK(gpt.num_layers_from_cli);
  CHECK(gpt.vocab_size == 50257);
  CHECK(gpt.num_attention_heads == 16);
  CHECK(gpt.ffn_hidden_size == 6400);
  CHECK(gpt.memory_formula == MemoryFormula::gpt);
}

TEST_CASE("model figures that contradict each other are refused", "[model]") {
  ModelSpec m = load_model_catalog(ZEROSEARCH_TEST_PROFILEDB "/models.json").find("llama3_8B");
  m.num_key_value_heads = 5;
  CHECK_THROWS_WITH(check_model(m, "x"),
                    "x: 'num_key_value_heads' 5 does not divide 'num_attention_heads' 32");
  m.num_key_value_heads = 8;
  m.experts_per_token = 2;
  CHECK_THROWS_WITH(check_model(m, "x"),
                    "x: 'experts_per_token', 'moe_ffn_hidden_size' and "
                    "'shared_expert_ffn_hidden_size' need 'num_experts' > 0");
  m.num_experts = 8;
  m.experts_per_token = 9;
  CHECK_THROWS_WITH(check_model(m, "x"), "x: 'experts_per_token' 9 must be from 1 to "
                                         "'num_experts' 8");
  m.experts_per_token = 2;
  CHECK_THROWS_WITH(check_model(m, "x"), "x: 'moe_ffn_hidden_size' must be a positive integer "
                                         "when 'num_experts' is 8");
  m.moe_ffn_hidden_size = 14336;
  CHECK_NOTHROW(check_model(m, "x"));
  m.hidden_size = 1 << 21;
  CHECK_THROWS_WITH(check_model(m, "x"), "x: 'hidden_size' 2097152 is above the limit of 1048576");
}
