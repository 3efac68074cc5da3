#include <catch2/catch.hpp>

#include "zerosearch/core/error.hpp"
#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/model/recompute_modules.hpp"

#include "fixtures.hpp"
#include "native_fixtures.hpp"

using namespace zerosearch;

TEST_CASE("Megatron's module names parse, print and refuse what Megatron refuses",
          "[recompute_modules]") {
  const RecomputeModules m = parse_recompute_modules("mlp,mla_up_proj,layernorm");
  CHECK(m.has(RecomputeModule::mlp));
  CHECK(m.has(RecomputeModule::mla_up_proj));
  CHECK(m.has(RecomputeModule::layernorm));
  CHECK_FALSE(m.has(RecomputeModule::core_attn));
  CHECK_FALSE(m.is_default());
  CHECK(to_string(m) == "layernorm,mla_up_proj,mlp"); // Megatron's order of the names
  CHECK(to_string(m, " ") == "layernorm mla_up_proj mlp");
  CHECK(parse_recompute_modules("core_attn").is_default());
  CHECK(RecomputeModules{}.is_default());
  CHECK_THROWS_AS(parse_recompute_modules("core_attn,attn"), InputError);
  CHECK_THROWS_AS(parse_recompute_modules("mlp,mlp"), InputError);
  CHECK_THROWS_AS(parse_recompute_modules(""), InputError);
}

TEST_CASE("what Megatron-LM refuses for the model: mla_up_proj without MLA, moe_act dense",
          "[recompute_modules]") {
  const ModelSpec& dense = test::shipped_catalogs().models.find("llama2_13B");
  const ModelSpec& gqa_moe = test::shipped_catalogs().models.find("mixtral_8x7B");
  const ModelSpec& mla = test::shipped_catalogs().models.find("deepseek_v3");
  const RecomputeModules up = parse_recompute_modules("core_attn,mla_up_proj");
  CHECK(recompute_modules_model_reason(up, mla).empty());
  CHECK(recompute_modules_model_reason(up, dense) ==
        "--recompute_modules 'core_attn,mla_up_proj': mla_up_proj needs multi-head latent "
        "attention, which llama2_13B has not (Megatron-LM: only supported with "
        "multi_latent_attention); allowed for llama2_13B: core_attn, layernorm, mlp, moe, "
        "shared_experts");
  // An MoE model without MLA: moe_act is allowed, mla_up_proj is not.
  CHECK(recompute_modules_model_reason(up, gqa_moe).find(
            "allowed for mixtral_8x7B: core_attn, moe_act, layernorm, mlp, moe, shared_experts") !=
        std::string::npos);
  const RecomputeModules act = parse_recompute_modules("moe_act");
  CHECK(recompute_modules_model_reason(act, gqa_moe).empty());
  CHECK(recompute_modules_model_reason(act, dense).find("moe_act needs an MoE model's grouped "
                                                        "GEMM") != std::string::npos);
  // Megatron-LM accepts moe and shared_experts on a dense model (they recompute nothing there).
  CHECK(recompute_modules_model_reason(parse_recompute_modules("mlp,moe,shared_experts"), dense)
            .empty());
  CHECK(recompute_modules_model_reason(RecomputeModules{}, dense).empty());
}

TEST_CASE("the recompute time of a module list is those modules' forward, by hand",
          "[recompute_modules]") {
  const ModelSpec m = test::hand_worked_layer_model();
  const AnalyticLayerTimes t = analytic_layer_times(m, test::unit_gpu(), test::ideal_calibration(), AnalyticSettings{});
  // Norms: 2 norms x (read + write) x 8 tokens x h 4 x 2 bytes = 256 B at 1 TB/s.
  CHECK(t.norm_forward_s == Approx(256e-12));
  // MLP: two GEMMs of 2 x 8 x 8 x 4 = 512 FLOP at 1 TFLOP/s, and the GeLU reading and writing
  // 8 tokens x ffn 8 x 2 bytes (2 x 128 B).
  CHECK(t.mlp_forward_s == Approx(1024e-12 + 256e-12));
  // Attention core: 4 x 8 tokens x 8 keys x 2 heads x 2 wide = 1024 FLOP.
  CHECK(t.attention_forward_s == Approx(1024e-12));
  CHECK(t.mla_up_proj_forward_s == 0.0); // no MLA
  CHECK(t.moe_act_forward_s == 0.0);     // no experts
  const auto rerun = [&](const char* list) {
    return modules_recompute_s(t, parse_recompute_modules(list), m);
  };
  CHECK(rerun("layernorm") == Approx(256e-12));
  CHECK(rerun("layernorm,mlp") == Approx(1536e-12));
  CHECK(rerun("core_attn,layernorm,mlp") == Approx(2560e-12));
  // The MoE names are nothing on a dense layer; mla_up_proj nothing without MLA.
  CHECK(rerun("moe,moe_act,shared_experts,mla_up_proj") == 0.0);
}

TEST_CASE("MLA's up-projections by hand, and the MoE names on an MoE layer",
          "[recompute_modules]") {
  const ModelSpec& m = test::shipped_catalogs().models.find("deepseek_v3");
  REQUIRE(m.is_mla());
  REQUIRE(m.is_moe());
  AnalyticSettings st;
  st.sequence_length = 4096;
  const AnalyticLayerTimes t = analytic_layer_times(m, test::unit_gpu(), test::ideal_calibration(), st);
  // q: 4096 tokens x (128 heads x 192) x q_lora 1536; kv: 4096 x (128 x (128 + 128)) x 512;
  // 2 FLOP each multiply-add at 1 TFLOP/s.
  CHECK(m.q_lora_rank == 1536);
  CHECK(m.kv_lora_rank == 512);
  CHECK(t.mla_up_proj_forward_s ==
        Approx(2.0 * 4096 * (128.0 * 192 * 1536 + 128.0 * 256 * 512) / 1e12));
  const auto rerun = [&](const char* list) {
    return modules_recompute_s(t, parse_recompute_modules(list), m);
  };
  CHECK(rerun("mla_up_proj") == Approx(t.mla_up_proj_forward_s));
  // "mlp" is a dense layer's: nothing on an MoE layer. "moe" reruns the whole block, which
  // holds the activation and the shared experts: adding them changes nothing.
  CHECK(rerun("mlp") == 0.0);
  CHECK(t.moe_act_forward_s > 0.0);
  CHECK(t.shared_experts_forward_s > 0.0);
  CHECK(rerun("moe_act,shared_experts") ==
        Approx(t.moe_act_forward_s + t.shared_experts_forward_s));
  CHECK(rerun("moe") == Approx(t.mlp_forward_s));
  CHECK(rerun("moe,moe_act,shared_experts") == Approx(t.mlp_forward_s));
  CHECK(t.mlp_forward_s > t.moe_act_forward_s + t.shared_experts_forward_s);
}

TEST_CASE("the activation memory drops the tensors the modules would save",
          "[recompute_modules]") {
  // GPT without flash attention, t = 1: Korthikanti et al.'s s b h (34 + 5 a s / h) bytes.
  ModelSpec g;
  g.architecture = "gpt3";
  g.hidden_size = 2048;
  g.num_attention_heads = 16;
  g.ffn_hidden_size = 4 * 2048;
  g.sequence_length = 1024;
  NativeSettings st;
  st.flash_attention = false;
  DesignPoint p;
  p.method = DpMethod::dp;
  p.mbs = 2;
  p.recompute = Recompute::selective;
  const double s = 1024, b = 2, h = 2048, a = 16;
  // Megatron's default (core_attn): the s^2 tensors go.
  CHECK(layer_activation_bytes(g, p, st) == Approx(s * b * h * 34));
  // layernorm: the two norms' outputs (2 x 2h); mlp: fc1's output and GeLU's (2 x 2 x 4h).
  st.recompute_modules = parse_recompute_modules("core_attn,layernorm,mlp");
  CHECK(layer_activation_bytes(g, p, st) == Approx(s * b * h * (34 - 4 - 16)));
  // Without core_attn the s^2 tensors stay.
  st.recompute_modules = parse_recompute_modules("layernorm");
  CHECK(layer_activation_bytes(g, p, st) == Approx(s * b * h * (30 + 5 * a * s / h)));
  // Only with --recompute selective: none keeps everything whatever the modules.
  p.recompute = Recompute::none;
  CHECK(layer_activation_bytes(g, p, st) == Approx(s * b * h * (34 + 5 * a * s / h)));
}

TEST_CASE("mla_up_proj drops q, k and v of an MLA layer", "[recompute_modules]") {
  const ModelSpec& m = test::shipped_catalogs().models.find("deepseek_v3");
  NativeSettings st;
  DesignPoint p;
  p.method = DpMethod::zero1;
  p.mbs = 1;
  p.tp = 2;
  p.etp = 1;
  p.ep = 8;
  p.recompute = Recompute::selective;
  const double base = layer_activation_bytes(m, p, st);
  st.recompute_modules = parse_recompute_modules("core_attn,mla_up_proj");
  const double a = static_cast<double>(m.num_attention_heads);
  const double g = static_cast<double>(m.num_key_value_heads > 0 ? m.num_key_value_heads
                                                                 : m.num_attention_heads);
  const double d = m.head_dim > 0 ? static_cast<double>(m.head_dim)
                                  : static_cast<double>(m.hidden_size) / a;
  // 2 bytes each of q (a d) and k, v (2 g d) per token, split over tp 2.
  const double s = static_cast<double>(m.sequence_length);
  CHECK(base - layer_activation_bytes(m, p, st) == Approx(s * 2.0 * (a * d + 2.0 * g * d) / 2.0));
}
