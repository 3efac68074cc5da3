#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

#include "zerosearch/io/model_json.hpp"
#include "zerosearch/io/hf_config.hpp"
#include "zerosearch/core/model.hpp"
#include "zerosearch/model/model_stats.hpp"

using namespace zerosearch;

namespace {

const ModelCatalog& catalog() {
  static const ModelCatalog c = load_model_catalog(ZEROSEARCH_TEST_PROFILEDB "/models.json");
  return c;
}

ModelSpec hf(const char* folder) {
  return load_model_file(std::string(ZEROSEARCH_TEST_DATA "/hf/") + folder + "/config.json");
}

/// `count` in units of 10^exponent, rounded half up as the published figures are.
std::int64_t rounded(std::int64_t count, int exponent) {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(count) / std::pow(10.0, exponent)));
}

} // namespace

// Published totals (Hugging Face num_parameters(), model cards) to the digits they are stated
// with. Each exact figure below is worked by hand in the comment above it:
// h hidden, a heads, g key/value heads, d head size, f FFN, V vocab, L layers.

TEST_CASE("Llama-2-13B has 13.016 B parameters, 317.2 M per layer", "[model_stats]") {
  const ModelSpec& m = catalog().find("llama2_13B");
  // attention 4*5120^2 = 104,857,600; SwiGLU 3*5120*13824 = 212,336,640; 2 RMSNorms 10,240
  CHECK(attention_parameters(m) == 104'857'600);
  CHECK(mlp_parameters(m) == 212'336'640);
  CHECK(layer_parameters(m) == 317'204'480);
  // 40 layers 12,688,179,200 + embedding 163,840,000 + final norm 5,120 + LM head 163,840,000
  CHECK(embedding_parameters(m) == 163'840'000);
  CHECK(post_process_parameters(m) == 163'845'120);
  CHECK(total_parameters(m) == 13'015'864'320);
  CHECK(rounded(total_parameters(m), 6) == 13'016);
  CHECK(active_parameters(m) == total_parameters(m));
}

TEST_CASE("Llama-3-8B has 8.030 B parameters (GQA, 128k vocabulary)", "[model_stats]") {
  const ModelSpec& m = catalog().find("llama3_8B");
  // attention 2*4096^2 + 2*4096*1024 = 41,943,040; SwiGLU 3*4096*14336 = 176,160,768;
  // norms 8,192 -> 218,112,000 per layer, x32 = 6,979,584,000;
  // embedding and head 2*128256*4096 = 1,050,673,152; final norm 4,096
  CHECK(layer_parameters(m) == 218'112'000);
  CHECK(total_parameters(m) == 8'030'261'248);
  CHECK(rounded(total_parameters(m), 6) == 8'030);
  // The same model from its Hugging Face config.json.
  const ModelSpec from_hf = hf("Meta-Llama-3-8B");
  CHECK(total_parameters(from_hf) == total_parameters(m));
  CHECK(forward_flops_per_sequence(from_hf) == forward_flops_per_sequence(m));
}

TEST_CASE("Mistral-7B has 7.242 B parameters", "[model_stats]") {
  const ModelSpec& m = catalog().find("mistral_7B");
  // 32 x 218,112,000 (as Llama-3-8B's layer) + 2*32000*4096 = 262,144,000 + 4,096
  CHECK(total_parameters(m) == 7'241'732'096);
  CHECK(rounded(total_parameters(m), 6) == 7'242);
  CHECK(m.sliding_window == 4096);
}

TEST_CASE("Mixtral-8x7B has 46.70 B parameters, 12.88 B active", "[model_stats]") {
  const ModelSpec& m = catalog().find("mixtral_8x7B");
  // experts 8 x 176,160,768 = 1,409,286,144; router 4096*8 = 32,768; attention 41,943,040;
  // norms 8,192 -> 1,451,270,144 per layer, x32 = 46,440,644,608; + 262,144,000 + 4,096
  CHECK(layer_parameters(m) == 1'451'270'144);
  CHECK(total_parameters(m) == 46'702'792'704);
  CHECK(rounded(total_parameters(m), 7) == 4'670);
  // active: 2 experts 352,321,536 + router + attention + norms = 394,305,536 per layer,
  // x32 = 12,617,777,152; + 262,144,000 + 4,096
  CHECK(active_layer_parameters(m) == 394'305'536);
  CHECK(active_parameters(m) == 12'879'925'248);
  CHECK(rounded(active_parameters(m), 7) == 1'288);
  // The Hugging Face config maps to the same model.
  const ModelSpec from_hf = hf("Mixtral-8x7B-v0.1");
  CHECK(from_hf.num_experts == 8);
  CHECK(from_hf.experts_per_token == 2);
  CHECK(total_parameters(from_hf) == total_parameters(m));
  CHECK(active_parameters(from_hf) == active_parameters(m));
}

TEST_CASE("Qwen2-7B from its config.json has 7.616 B parameters (q/k/v biases)", "[model_stats]") {
  const ModelSpec m = hf("Qwen2-7B");
  CHECK(m.name == "Qwen2-7B");
  CHECK(m.qkv_bias);
  CHECK_FALSE(m.attention_output_bias);
  CHECK(m.sliding_window == 0); // use_sliding_window: false
  // q and o 2*3584^2 = 25,690,112; k and v 2*3584*512 = 3,670,016; biases 3584 + 2*512 = 4,608
  // -> attention 29,364,736; SwiGLU 3*3584*18944 = 203,685,888; norms 7,168
  CHECK(attention_parameters(m) == 29'364'736);
  CHECK(layer_parameters(m) == 233'057'792);
  // x28 = 6,525,618,176; embedding and head 2*152064*3584 = 1,089,994,752; final norm 3,584
  CHECK(total_parameters(m) == 7'615'616'512);
  CHECK(rounded(total_parameters(m), 6) == 7'616);
  // Qwen2.5-7B has the same shape.
  CHECK(total_parameters(catalog().find("qwen2.5_7B")) == total_parameters(m));
}

TEST_CASE("GPT-2 XL has 1.558 B parameters (tied, learned positions, biases)", "[model_stats]") {
  const ModelSpec& m = catalog().find("gpt2XL");
  // attention 4*1600^2 + 4*1600 = 10,246,400; MLP 2*1600*6400 + 6400 + 1600 = 20,488,000;
  // 2 LayerNorms 6,400 -> 30,740,800 per layer, x48 = 1,475,558,400;
  // tokens 50257*1600 = 80,411,200 + positions 1024*1600 = 1,638,400; final LayerNorm 3,200
  CHECK(layer_parameters(m) == 30'740'800);
  CHECK(embedding_parameters(m) == 82'049'600);
  CHECK(post_process_parameters(m) == 3'200);
  CHECK(total_parameters(m) == 1'557'611'200);
  CHECK(rounded(total_parameters(m), 6) == 1'558);
  // Hugging Face's gpt2-xl states 25 heads of 64 where the original's entry has 16 of 100:
  // the projections are 1600 wide either way.
  const ModelSpec from_hf = hf("gpt2-xl");
  CHECK(from_hf.num_attention_heads == 25);
  CHECK(from_hf.head_dim == 64);
  CHECK(from_hf.ffn_hidden_size == 6400); // n_inner absent: 4 x n_embd
  CHECK(from_hf.tied_embeddings);
  CHECK(total_parameters(from_hf) == total_parameters(m));
}

TEST_CASE("GPT-NeoX-20B from its config.json has 20.55 B parameters", "[model_stats]") {
  const ModelSpec m = hf("gpt-neox-20b");
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.parallel_residual);
  // attention 4*6144^2 + 4*6144 = 151,019,520; MLP 2*6144*24576 + 24576 + 6144 = 302,020,608;
  // 2 LayerNorms 24,576 -> 453,064,704 per layer, x44 = 19,934,846,976;
  // embedding and head 2*50432*6144 = 619,708,416; final LayerNorm 12,288
  CHECK(layer_parameters(m) == 453'064'704);
  CHECK(total_parameters(m) == 20'554'567'680);
  CHECK(rounded(total_parameters(m), 7) == 2'055);
}

TEST_CASE("Qwen1.5-MoE-A2.7B: shared expert and its gate, 14.3 B total, 2.7 B active",
          "[model_stats]") {
  const ModelSpec m = hf("Qwen1.5-MoE-A2.7B");
  // attention 4*2048^2 + 3*2048 = 16,783,360; experts 60*3*2048*1408 = 519,045,120;
  // router 2048*60 = 122,880; shared expert 3*2048*5632 = 34,603,008 + gate 2,048; norms 4,096
  CHECK(layer_parameters(m) == 570'560'512);
  // x24 = 13,693,452,288; embedding and head 2*151936*2048 = 622,329,856; final norm 2,048
  CHECK(total_parameters(m) == 14'315'784'192);
  CHECK(rounded(total_parameters(m), 8) == 143);
  // active: 4 experts 34,603,008 -> 86,118,400 per layer, x24 = 2,066,841,600 (the model
  // card's "2.0 B non-embedding"), + 622,331,904
  CHECK(active_parameters(m) == 2'689'173'504);
  CHECK(rounded(active_parameters(m), 8) == 27);
}

TEST_CASE("every built-in model has a positive, self-consistent parameter count", "[model_stats]") {
  for (const ModelSpec& m : catalog().models) {
    INFO(m.name);
    CHECK(layer_parameters(m) > 0);
    CHECK(active_parameters(m) <= total_parameters(m));
    // Dense layers first (DeepSeek-V3) count as dense layers, the rest as MoE layers.
    CHECK(total_parameters(m) == embedding_parameters(m) + m.moe_layers() * layer_parameters(m) +
                                     (m.num_layers - m.moe_layers()) * dense_layer_parameters(m) +
                                     post_process_parameters(m));
    CHECK(!m.source.empty());
  }
  // Sizes the models are known by.
  CHECK(rounded(total_parameters(catalog().find("llama2_7B")), 6) == 6'738);
  CHECK(rounded(total_parameters(catalog().find("llama2_70B")), 6) == 68'977);
  CHECK(rounded(total_parameters(catalog().find("llama3_70B")), 6) == 70'554);
  CHECK(rounded(total_parameters(catalog().find("llama3_405B")), 6) == 405'853);
  CHECK(rounded(total_parameters(catalog().find("qwen2.5_72B")), 7) == 7'271);
  CHECK(rounded(total_parameters(catalog().find("gpt3_175B")), 9) == 175);
}

TEST_CASE("Megatron's vocabulary padding rounds up to 128 x tp", "[model_stats]") {
  CHECK(megatron_padded_vocab(32000) == 32000);
  CHECK(megatron_padded_vocab(50257) == 50304);
  CHECK(megatron_padded_vocab(50257, 8) == 51200);
  CHECK(megatron_padded_vocab(128256, 4) == 128512);
}

// Megatron-LM's num_floating_point_operations (megatron/training/training.py) for one
// sequence, divided by its forward+backward factor 3, worked by hand:
TEST_CASE("forward FLOPs of Llama-2-13B equal Megatron's formula", "[model_stats]") {
  const ModelSpec& m = catalog().find("llama2_13B");
  // s = 4096, h = 5120, q = k = v = 40*128 = 5120, f = 13824 (SwiGLU: x3), V = 32000 (a
  // multiple of 128: no padding). Per token and layer:
  //   MLP        h*f*3           = 212,336,640
  //   QKV        h*(q+k+v)       =  78,643,200
  //   core attn  q*s/2*2         =  20,971,520
  //   out proj   q*h             =  26,214,400   -> 338,165,760
  // x40 layers = 13,526,630,400, + logits h*V = 163,840,000 -> 13,690,470,400 per token;
  // forward = 2 (multiply-add) x s x 13,690,470,400 = 112,152,333,516,800 = 1.1215e14;
  // Megatron's training total is 3x: 336,457,000,550,400 = 3.3646e14.
  CHECK(forward_flops_per_sequence(m) == 112'152'333'516'800.0);
  CHECK(training_flops_per_sequence(m, 4096, 32000) == 336'457'000'550'400.0);
}

TEST_CASE("forward FLOPs of GPT-3 175B equal Megatron's formula", "[model_stats]") {
  const ModelSpec& m = catalog().find("gpt3_175B");
  // s = 2048, h = q = 12288, f = 4h = 49152 (GeLU: x2), V = 50257 padded to 50304. Per token
  // and layer:
  //   MLP        h*f*2           = 1,207,959,552
  //   QKV        h*3h            =   452,984,832
  //   core attn  q*s             =    25,165,824
  //   out proj   q*h             =   150,994,944   -> 1,837,105,152
  // x96 layers = 176,362,094,592, + logits 12288*50304 = 618,135,552 -> 176,980,230,144;
  // forward = 2 x 2048 x 176,980,230,144 = 724,911,022,669,824 = 7.249e14;
  // training (3x) = 2,174,733,068,009,472 = 2.175e15 (6N per token would give 2.146e15).
  CHECK(forward_flops_per_sequence(m) == 724'911'022'669'824.0);
  CHECK(training_flops_per_sequence(m, 2048, 50304) == 2'174'733'068'009'472.0);
}

TEST_CASE("MoE forward FLOPs count the top-k experts only", "[model_stats]") {
  const ModelSpec& m = catalog().find("mixtral_8x7B");
  // s = 32768; per token and layer: 2 experts 4096*14336*3*2 = 352,321,536; QKV
  // 4096*(4096+2*1024) = 25,165,824; core q*s = 134,217,728; out 16,777,216 -> 528,482,304;
  // x32 = 16,911,433,728 + logits 4096*32000 = 131,072,000 -> 17,042,505,728;
  // forward = 2 x 32768 x 17,042,505,728 = 1,116,897,655,390,208
  CHECK(forward_flops_per_sequence(m) == 1'116'897'655'390'208.0);
  // A property: more tokens per expert cost more, more experts at the same top-k do not.
  ModelSpec wider = m;
  wider.num_experts = 16;
  CHECK(forward_flops_per_sequence(wider) == forward_flops_per_sequence(m));
  CHECK(total_parameters(wider) > total_parameters(m));
}

// Issue 27: fine-grained MoE (dense layers first, shared experts without a gate, a router
// bias), multi-head latent attention, qk norms.

TEST_CASE("DeepSeek-V3 has 671.03 B parameters, 37.55 B active (MLA, 3 dense layers first)",
          "[model_stats][moe]") {
  const ModelSpec m = hf("DeepSeek-V3");
  // h 7168, 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64, v 128:
  // q_a 7168*1536 = 11,010,048 + norm 1,536; q_b 1536*128*192 = 37,748,736;
  // kv_a 7168*(512+64) = 4,128,768 + norm 512; kv_b 512*128*256 = 16,777,216;
  // o 128*128*7168 = 117,440,512; together 187,107,328
  CHECK(attention_parameters(m) == 187'107'328);
  // 256 experts of 3*7168*2048 = 44,040,192 each
  CHECK(expert_parameters(m) == 11'274'289'152);
  // router 7168*256 + its bias 256 + one shared expert 44,040,192, no gate
  CHECK(moe_dense_mlp_parameters(m) == 45'875'456);
  CHECK(layer_parameters(m) == 11'507'286'272);
  // a dense layer: attention + 3*7168*18432 = 396,361,728 + 2 norms 14,336
  CHECK(dense_layer_parameters(m) == 583'483'392);
  CHECK(layer_parameters_at(m, 2) == 583'483'392);
  CHECK(layer_parameters_at(m, 3) == 11'507'286'272);
  // 58 MoE + 3 dense layers + embedding and LM head 129280*7168 each + final norm
  CHECK(total_parameters(m) == 671'026'419'200);
  CHECK(rounded(total_parameters(m), 9) == 671);  // "671B total parameters" (arXiv:2412.19437)
  // active: 8 routed experts of the 256
  CHECK(active_parameters(m) == 37'552'297'472);
  CHECK(rounded(active_parameters(m), 9) == 38); // "37B activated": 37.55 B, MTP module left out
  CHECK(m.moe_layers() == 58);
  CHECK(moe_layers_in(m, 0, 4) == 1);
  CHECK(moe_layers_in(m, 3, 10) == 10);
  CHECK(moe_layers_in(m, 0, 3) == 0);
}

TEST_CASE("Qwen3-30B-A3B has 30.53 B parameters, 3.35 B active (qk norms, no shared expert)",
          "[model_stats][moe]") {
  const ModelSpec m = hf("Qwen3-30B-A3B");
  // q 2048*4096, k and v 2048*512 each, o 4096*2048, q and k norms 128 each
  CHECK(attention_parameters(m) == 18'874'624);
  CHECK(total_parameters(m) == 30'532'122'624);
  CHECK(active_parameters(m) == 3'353'032'704);
  CHECK(rounded(total_parameters(m), 8) == 305); // 30.5 B (model card)
  CHECK(rounded(active_parameters(m), 8) == 34);  // 3.3 B: 3.35 rounds up
}

TEST_CASE("the MoE built-ins match their published totals", "[model_stats][moe]") {
  // Published: Mixtral-8x22B 141 B / 39 B (mistral.ai), Qwen3-235B-A22B 235 B / 22 B and
  // Qwen3-30B-A3B 30.5 B / 3.3 B (model cards), DeepSeek-V3 671 B / 37 B (arXiv:2412.19437).
  const auto billions = [](std::int64_t n) { return static_cast<double>(n) / 1e9; };
  CHECK(total_parameters(catalog().find("mixtral_8x22B")) == 140'630'071'296);
  CHECK(active_parameters(catalog().find("mixtral_8x22B")) == 39'161'468'928);
  CHECK(total_parameters(catalog().find("qwen3_235B_A22B")) == 235'093'634'560);
  CHECK(active_parameters(catalog().find("qwen3_235B_A22B")) == 22'190'763'520);
  CHECK(total_parameters(catalog().find("qwen3_30B_A3B")) == 30'532'122'624);
  CHECK(total_parameters(catalog().find("deepseek_v3")) == 671'026'419'200);
  CHECK(active_parameters(catalog().find("deepseek_v3")) == 37'552'297'472);
  CHECK(billions(total_parameters(catalog().find("mixtral_8x22B"))) == Approx(141).epsilon(0.01));
  CHECK(billions(active_parameters(catalog().find("mixtral_8x22B"))) == Approx(39).epsilon(0.01));
}

TEST_CASE("Megatron's FLOPs count MLA's projections and only the MoE layers' experts",
          "[model_stats][moe]") {
  const ModelSpec m = hf("DeepSeek-V3");
  // Per token and layer, forward / 2 (multiply-adds), Megatron's MLA branch, s = 4096:
  // q: 1536*(7168 + 128*192 + 1) = 48,760,320; kv: 512*(7168 + 128*256 + 1) = 20,447,744;
  // rope key 7168*64 = 458,752; o 16384*7168 = 117,440,512;
  // core 4096*128*192/2 + 4096*128*128/2 = 50,331,648 + 33,554,432
  const double attention = 48'760'320.0 + 20'447'744.0 + 458'752.0 + 117'440'512.0 +
                           50'331'648.0 + 33'554'432.0;
  const double dense_mlp = 3.0 * 7168 * 18432;
  const double moe_mlp = 3.0 * 7168 * (2048 * 8 + 2048);
  const double per_token = 61 * attention + 3 * dense_mlp + 58 * moe_mlp + 7168.0 * 129280;
  CHECK(forward_flops_per_sequence(m, 4096, 129280) == Approx(2.0 * 4096 * per_token).epsilon(1e-12));
}
