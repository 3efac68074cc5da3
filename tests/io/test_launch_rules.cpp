// Issue 24: each framework rule a plan can break, with the framework's file, line and message
// (the versions docs/launch.md names), and the round trip from emitted flags back to the
// estimator's parameter count for every catalog model.
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/io/launch.hpp"
#include "zerosearch/io/launch_flags.hpp"
#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/search/plan.hpp"

using namespace zerosearch;

namespace {

const Catalogs& catalogs() {
  static const Catalogs c = load_catalogs(ZEROSEARCH_TEST_PROFILEDB);
  return c;
}

/// The original's 8 x 4 A10 context (zerosearch estimator); plan_for replaces the model.
const EstimateContext& a10_context() {
  static const SearchPlan plan = [] {
    PlanInput in;
    in.model = "llama2_13B";
    in.cluster = Cluster{{{"A10", 8}}, 4, {}};
    return make_plan(in, catalogs());
  }();
  return plan.context;
}

/// A plan of `model` on 8 x 4 GPUs of `gpu` without estimating it (the files read only the
/// partition, the OOM flag and the times): the estimator's parameter count is the model's.
struct TestPlan {
  EstimateContext ctx;
  LaunchPlan lp;
};
std::unique_ptr<TestPlan> plan_for(const std::string& model, DpMethod method, int tp, int pp,
                                   const std::string& gpu = "A10", Estimator est = Estimator::native) {
  auto t = std::make_unique<TestPlan>();
  t->ctx = a10_context();
  t->ctx.model = catalogs().models.find(model);
  t->ctx.cluster.groups[0].gpu = gpu;
  t->ctx.estimator = est;
  t->ctx.global_batch = 64;
  DesignPoint p;
  p.method = method;
  p.tp = tp;
  p.pp = pp;
  p.dp = 32 / (tp * pp);
  p.mbs = 1;
  p.num_micro_batches = t->ctx.global_batch / p.dp;
  t->lp.ctx = &t->ctx;
  t->lp.point = p;
  t->lp.placement = Placement(8, 0);
  std::vector<int> split = deepspeed_default_split(static_cast<int>(t->ctx.model.num_layers), pp);
  split.front() += 1;
  split.back() += 1;
  t->lp.estimate.partition = split;
  t->lp.estimate.step_s = 1.0;
  t->lp.origin = "test";
  t->lp.hardware = &catalogs().hardware;
  return t;
}

const LaunchFile* find(const std::vector<LaunchFile>& files, const std::string& name) {
  for (const auto& f : files) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

std::string text_of(const std::vector<LaunchFile>& files, const std::string& name) {
  const LaunchFile* f = find(files, name);
  REQUIRE(f != nullptr);
  return f->text;
}

/// "--flag value" pairs of a MEGATRON_ARGS array ("" for switches).
std::map<std::string, std::string> megatron_flags(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  const std::regex item(R"(^  (--[A-Za-z0-9_-]+)(?: (.*))?$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, item)) {
      out[m[1].str()] = m[2].matched ? m[2].str() : "";
    }
  }
  return out;
}

std::int64_t num(const std::map<std::string, std::string>& f, const std::string& k) {
  const auto it = f.find(k);
  REQUIRE(it != f.end());
  return std::stoll(it->second);
}

std::int64_t vocab_comment(const std::string& text) {
  const std::regex v(R"(# Vocabulary: (\d+) tokens)");
  std::smatch m;
  REQUIRE(std::regex_search(text, m, v));
  return std::stoll(m[1].str());
}

/// The model Megatron-LM builds from megatron_lm_args.sh (megatron/training/arguments.py and
/// TransformerConfig defaults at d98e8a64: learned absolute positions, LayerNorm, biases, tied
/// output layer, MHA unless --group-query-attention).
ModelSpec from_megatron_lm(const std::string& text) {
  const auto f = megatron_flags(text);
  ModelSpec m;
  m.num_layers = num(f, "--num-layers");
  m.hidden_size = num(f, "--hidden-size");
  m.ffn_hidden_size = num(f, "--ffn-hidden-size");
  m.num_attention_heads = num(f, "--num-attention-heads");
  m.num_key_value_heads =
      f.count("--group-query-attention") != 0 ? num(f, "--num-query-groups") : m.num_attention_heads;
  m.head_dim = f.count("--kv-channels") != 0 ? num(f, "--kv-channels")
                                             : m.hidden_size / m.num_attention_heads;
  m.gated_mlp = f.count("--swiglu") != 0;
  m.norm = f.count("--normalization") != 0 && f.at("--normalization") == "RMSNorm" ? Norm::rmsnorm
                                                                                  : Norm::layernorm;
  const bool no_bias = f.count("--disable-bias-linear") != 0;
  m.mlp_bias = m.attention_output_bias = !no_bias;
  m.qkv_bias = !no_bias || f.count("--add-qkv-bias") != 0;
  m.tied_embeddings = f.count("--untie-embeddings-and-output-weights") == 0;
  m.learned_position_embeddings =
      f.count("--position-embedding-type") == 0 || f.at("--position-embedding-type") != "rope";
  m.max_position_embeddings = num(f, "--max-position-embeddings");
  if (f.count("--num-experts") != 0) {
    m.num_experts = num(f, "--num-experts");
    m.experts_per_token = num(f, "--moe-router-topk");
    m.moe_ffn_hidden_size = num(f, "--moe-ffn-hidden-size");
    m.shared_expert_ffn_hidden_size = f.count("--moe-shared-expert-intermediate-size") != 0
                                          ? num(f, "--moe-shared-expert-intermediate-size")
                                          : 0;
    // TransformerConfig: no shared-expert gate unless asked (moe_shared_expert_gate);
    // moe_layer_freq as a list expression; the router's expert bias
    // (moe_router_enable_expert_bias).
    m.shared_expert_gate = f.count("--moe-shared-expert-gate") != 0;
    m.router_bias = f.count("--moe-router-enable-expert-bias") != 0;
    if (f.count("--moe-layer-freq") != 0) {
      std::smatch k;
      const std::string freq = f.at("--moe-layer-freq");
      REQUIRE(std::regex_search(freq, k, std::regex(R"(\[0\]\*(\d+)\+\[1\]\*(\d+))")));
      m.first_k_dense_layers = std::stoll(k[1].str());
      REQUIRE(m.first_k_dense_layers + std::stoll(k[2].str()) == m.num_layers);
    }
  }
  // MLATransformerConfig (multi-head latent attention) and qk_layernorm.
  if (f.count("--multi-latent-attention") != 0) {
    m.q_lora_rank = f.count("--q-lora-rank") != 0 ? num(f, "--q-lora-rank") : 0;
    m.kv_lora_rank = num(f, "--kv-lora-rank");
    m.qk_nope_head_dim = num(f, "--qk-head-dim");
    m.qk_rope_head_dim = num(f, "--qk-pos-emb-head-dim");
    m.v_head_dim = num(f, "--v-head-dim");
    m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
  }
  m.qk_norm = f.count("--qk-layernorm") != 0;
  m.vocab_size = vocab_comment(text);
  return m;
}

/// The model Megatron-DeepSpeed builds (megatron/arguments.py at 4efb479d: kv heads default to
/// the heads, line 444-445; experts are --ffn-hidden-size wide, every --expert-interval layer).
ModelSpec from_megatron_deepspeed(const std::string& text) {
  const auto f = megatron_flags(text);
  ModelSpec m;
  m.num_layers = num(f, "--num-layers");
  m.hidden_size = num(f, "--hidden-size");
  m.ffn_hidden_size = num(f, "--ffn-hidden-size");
  m.num_attention_heads = num(f, "--num-attention-heads");
  m.num_key_value_heads = f.count("--num-key-value-heads") != 0 ? num(f, "--num-key-value-heads")
                                                                : m.num_attention_heads;
  m.head_dim = f.count("--kv-channels") != 0 ? num(f, "--kv-channels")
                                             : m.hidden_size / m.num_attention_heads;
  m.gated_mlp = f.count("--swiglu") != 0;
  m.norm = f.count("--normalization") != 0 && f.at("--normalization") == "rmsnorm" ? Norm::rmsnorm
                                                                                  : Norm::layernorm;
  const bool no_bias = f.count("--disable-bias-linear") != 0;
  m.mlp_bias = m.attention_output_bias = m.qkv_bias = !no_bias;
  m.tied_embeddings = f.count("--untie-embeddings-and-output-weights") == 0;
  m.learned_position_embeddings = f.count("--use-rotary-position-embeddings") == 0;
  m.max_position_embeddings = num(f, "--max-position-embeddings");
  if (f.count("--num-experts") != 0) {
    REQUIRE(num(f, "--expert-interval") == 1);
    m.num_experts = num(f, "--num-experts");
    m.experts_per_token = num(f, "--topk");
    m.moe_ffn_hidden_size = m.ffn_hidden_size;
  }
  m.vocab_size = vocab_comment(text);
  return m;
}

/// torchtitan's FeedForward width, as torchtitan/models/llama3/model/model.py:332-336 (v0.2.2).
std::int64_t tt_ffn(std::int64_t dim, std::int64_t multiple_of, double multiplier) {
  auto h = static_cast<std::int64_t>(2 * 4 * dim / 3);
  if (multiplier > 0) {
    h = static_cast<std::int64_t>(multiplier * static_cast<double>(h));
  }
  return multiple_of * ((h + multiple_of - 1) / multiple_of);
}

/// The model torchtitan v0.2.2 builds from torchtitan.toml: a shipped flavor
/// (torchtitan/models/llama3/__init__.py:51-99) or the registration the file asks for.
ModelSpec from_torchtitan(const std::string& toml) {
  ModelSpec m;
  m.gated_mlp = true;
  m.norm = Norm::rmsnorm;
  std::smatch s;
  if (std::regex_search(toml, s,
                        std::regex(R"re(name = "(deepseek_v3|qwen3)"\nflavor = "([^"]+)")re"))) {
    // The MoE flavors of torchtitan/models/deepseek_v3/__init__.py (deepseekv3_args) and
    // torchtitan/models/qwen3/__init__.py (qwen3_args) at v0.2.2.
    struct F {
      std::int64_t dim, layers, heads, kv, vocab, inter, moe_inter, experts, top_k, shared, dense,
          q_lora;
    };
    const std::map<std::string, F> shipped{
        {"deepseek_v3/16B", {2048, 27, 16, 16, 102400, 10944, 1408, 64, 6, 2, 1, 0}},
        {"deepseek_v3/236B", {5120, 60, 128, 128, 102400, 12288, 1536, 160, 6, 2, 1, 1536}},
        {"deepseek_v3/671B", {7168, 61, 128, 128, 129280, 18432, 2048, 256, 8, 1, 3, 1536}},
        {"qwen3/30B-A3B", {2048, 48, 32, 4, 151936, 6144, 768, 128, 8, 0, 0, 0}},
        {"qwen3/235B-A22B", {4096, 94, 64, 4, 151936, 12288, 1536, 128, 8, 0, 0, 0}}};
    const bool deepseek = s[1].str() == "deepseek_v3";
    const F& x = shipped.at(s[1].str() + "/" + s[2].str());
    m.architecture = deepseek ? "deepseek_v3" : "qwen3_moe";
    m.hidden_size = x.dim;
    m.num_layers = x.layers;
    m.num_attention_heads = x.heads;
    m.num_key_value_heads = x.kv;
    m.vocab_size = x.vocab;
    m.ffn_hidden_size = x.inter;
    m.moe_ffn_hidden_size = x.moe_inter;
    m.num_experts = x.experts;
    m.experts_per_token = x.top_k;
    m.shared_expert_ffn_hidden_size = x.shared * x.moe_inter; // num_shared_experts x moe_inter_dim
    m.shared_expert_gate = false; // torchtitan's shared experts are a plain FeedForward
    m.first_k_dense_layers = x.dense;
    // No router bias parameter: torchtitan's MoE.expert_bias is a buffer
    // (torchtitan/models/moe/moe.py, register_buffer).
    if (deepseek) { // MLA: kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v 128
      m.q_lora_rank = x.q_lora;
      m.kv_lora_rank = 512;
      m.qk_nope_head_dim = 128;
      m.qk_rope_head_dim = 64;
      m.v_head_dim = 128;
      m.head_dim = 192;
    } else { // head_dim 128, qk_norm
      m.head_dim = 128;
      m.qk_norm = true;
    }
    return m;
  }
  std::int64_t multiple_of = 0;
  double multiplier = 0;
  if (std::regex_search(toml, s, std::regex(R"re(flavor = "(8B|70B|405B)")re"))) {
    const std::string fl = s[1].str();
    struct F { std::int64_t dim, layers, heads, kv, mult; double x; };
    const std::map<std::string, F> shipped{{"8B", {4096, 32, 32, 8, 1024, 1.3}},
                                           {"70B", {8192, 80, 64, 8, 4096, 1.3}},
                                           {"405B", {16384, 126, 128, 8, 4096, 1.2}}};
    const F& x = shipped.at(fl);
    m.hidden_size = x.dim;
    m.num_layers = x.layers;
    m.num_attention_heads = x.heads;
    m.num_key_value_heads = x.kv;
    m.vocab_size = 128256;
    multiple_of = x.mult;
    multiplier = x.x;
  } else {
    const std::regex reg(R"(TransformerModelArgs\(dim=(\d+), n_layers=(\d+), n_heads=(\d+), n_kv_heads=(\d+), vocab_size=(\d+), multiple_of=(\d+), ffn_dim_multiplier=([0-9.]+|None),)");
    REQUIRE(std::regex_search(toml, s, reg));
    m.hidden_size = std::stoll(s[1].str());
    m.num_layers = std::stoll(s[2].str());
    m.num_attention_heads = std::stoll(s[3].str());
    m.num_key_value_heads = std::stoll(s[4].str());
    m.vocab_size = std::stoll(s[5].str());
    multiple_of = std::stoll(s[6].str());
    multiplier = s[7].str() == "None" ? 0.0 : std::stod(s[7].str());
  }
  m.head_dim = m.hidden_size / m.num_attention_heads;
  m.ffn_hidden_size = tt_ffn(m.hidden_size, multiple_of, multiplier);
  return m;
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

} // namespace

TEST_CASE("round trip: every catalog model's emitted flags give the estimator's parameters",
          "[launch][roundtrip]") {
  int checked_lm = 0, checked_ds = 0, checked_tt = 0;
  for (const ModelSpec& model : catalogs().models.models) {
    INFO(model.name);
    const std::int64_t want = total_parameters(model);
    // dp (Megatron-LM), fsdp with pp 1 (Megatron-LM, torchtitan), zero1 (Megatron-DeepSpeed).
    for (const auto& [method, pp] : std::vector<std::pair<DpMethod, int>>{
             {DpMethod::dp, 2}, {DpMethod::fsdp, 1}, {DpMethod::zero1, 2}}) {
      INFO(to_string(method));
      auto t = plan_for(model.name, method, 1, pp, "H100-SXM");
      const LaunchChoice choice = launch_choice(t->lp);
      const bool runnable = std::any_of(choice.written.begin(), choice.written.end(), [](const std::string& w) {
        return w == "megatron_deepspeed" || w == "megatron_lm" || w == "torchtitan";
      });
      if (!runnable) {
        // FSDP of a tied-embedding GPT (Megatron-LM needs untied weights, torchtitan has no
        // GPT), a ZeRO plan of Qwen (Megatron-DeepSpeed has no QKV-only bias) or of an MoE model
        // whose experts are not --ffn-hidden-size wide (Megatron-DeepSpeed's experts are).
        CHECK((model.tied_embeddings || model.qkv_bias ||
               (model.is_moe() && model.moe_ffn_hidden_size != model.ffn_hidden_size)));
        CHECK_THROWS_WITH(launch_files(t->lp), Catch::Contains("no framework can run this plan"));
        continue;
      }
      const auto files = launch_files(t->lp);
      for (const auto& written : choice.written) {
        INFO(written);
        if (written == "megatron_lm") {
          CHECK(total_parameters(from_megatron_lm(text_of(files, "megatron_lm_args.sh"))) == want);
          ++checked_lm;
        } else if (written == "megatron_deepspeed") {
          CHECK(total_parameters(from_megatron_deepspeed(
                    text_of(files, "megatron_deepspeed_args.sh"))) == want);
          ++checked_ds;
        } else if (written == "torchtitan") {
          // DeepSeek-V3's router bias is a buffer in torchtitan (MoE.expert_bias), not a
          // parameter as zerosearch counts it.
          const std::int64_t bias =
              model.router_bias ? (model.num_layers - model.first_k_dense_layers) * model.num_experts
                                : 0;
          CHECK(total_parameters(from_torchtitan(text_of(files, "torchtitan.toml"))) == want - bias);
          ++checked_tt;
        }
      }
    }
  }
  // Every model reaches Megatron-LM twice (dp, fsdp unless tied); most reach the others.
  CHECK(checked_lm >= static_cast<int>(catalogs().models.models.size()));
  CHECK(checked_ds >= 8);
  CHECK(checked_tt >= 4);
}

TEST_CASE("GQA reaches every framework (issue 24 item 1)", "[launch][rules]") {
  // Megatron-LM: --group-query-attention --num-query-groups (arguments.py:2382 at d98e8a64,
  // TransformerConfig.num_query_groups); Megatron-DeepSpeed --num-key-value-heads
  // (megatron/arguments.py:623 at 4efb479d); torchtitan n_kv_heads of the flavor.
  auto dp = plan_for("llama3_8B", DpMethod::fsdp, 1, 1, "H100-SXM");
  auto files = launch_files(dp->lp);
  const std::string lm = text_of(files, "megatron_lm_args.sh");
  CHECK(contains(lm, "  --group-query-attention\n  --num-query-groups 8\n"));
  CHECK(contains(text_of(files, "torchtitan.toml"), "flavor = \"8B\""));
  auto z = plan_for("llama3_8B", DpMethod::zero1, 1, 2, "H100-SXM");
  CHECK(contains(text_of(launch_files(z->lp), "megatron_deepspeed_args.sh"),
                 "--num-key-value-heads 8\n"));
  // Megatron-DeepSpeed divides the key/value heads over tp (megatron/model/transformer.py:566-567,
  // megatron/core/utils.py:18: '8 is not divisible by 16').
  auto z16 = plan_for("llama3_70B", DpMethod::zero1, 16, 2, "H100-SXM");
  CHECK_THROWS_WITH(launch_files(z16->lp), Catch::Contains("'8 is not divisible by 16'"));
  // A registration for a model without a shipped flavor carries its real kv heads.
  auto l70 = plan_for("llama2_70B", DpMethod::fsdp, 1, 1, "H100-SXM");
  CHECK(contains(text_of(launch_files(l70->lp), "torchtitan.toml"), "n_heads=64, n_kv_heads=8,"));
  // Megatron-LM: 'num_query_groups (4) must be a multiple or divisor of
  // tensor_model_parallel_size (7)' (transformer_config.py:1461-1468): Qwen2.5-7B's 28 heads
  // split over tp 7, its 4 key/value heads do not.
  auto bad = plan_for("qwen2.5_7B", DpMethod::dp, 7, 1, "H100-SXM");
  CHECK_THROWS_WITH(launch_files(bad->lp), Catch::Contains("'num_query_groups (4) must be a multiple "
                                                           "or divisor of tensor_model_parallel_size (7)'"));
}

TEST_CASE("MoE: Megatron-LM gets the expert flags, torchtitan refuses with its reason (item 2)",
          "[launch][rules]") {
  auto t = plan_for("mixtral_8x7B", DpMethod::fsdp, 1, 1, "H100-SXM");
  const auto files = launch_files(t->lp);
  const std::string lm = text_of(files, "megatron_lm_args.sh");
  CHECK(contains(lm, "--num-experts 8\n"));
  CHECK(contains(lm, "--moe-router-topk 2\n"));
  CHECK(contains(lm, "--moe-ffn-hidden-size 14336\n"));
  CHECK(find(files, "torchtitan.toml") == nullptr);
  const std::string md = text_of(files, "PLAN.md");
  CHECK(contains(md, "no torchtitan files: torchtitan v0.2.2 has no mixtral model"));
  CHECK(contains(md, "8 experts per layer, top-2 routing"));
  // Megatron-DeepSpeed: --num-experts --topk --expert-interval 1 (megatron/arguments.py:608-616);
  // with tp > 1 and pp > 1 its GPTModelPipe asserts 'Pipe and/or Grad partitioning are not
  // supported for MoE model' (megatron/model/gpt_model.py): the pipeline block turns them off.
  auto z = plan_for("mixtral_8x7B", DpMethod::zero1, 2, 2, "H100-SXM");
  const auto zf = launch_files(z->lp);
  CHECK(contains(text_of(zf, "megatron_deepspeed_args.sh"), "--num-experts 8\n  --topk 2\n"));
  const auto j = nlohmann::json::parse(text_of(zf, "ds_config.json"));
  CHECK_FALSE(j.at("pipeline").at("pipe_partitioned").get<bool>());
  CHECK_FALSE(j.at("pipeline").at("grad_partitioned").get<bool>());
}

TEST_CASE("Megatron-LM FSDP: no gradient-accumulation fusion, CUDA_DEVICE_MAX_CONNECTIONS not 1 "
          "(items 3, 4)",
          "[launch][rules]") {
  // megatron/training/arguments.py:1040-1041 (d98e8a64): '--use-torch-fsdp2 is not supported
  // with gradient accumulation fusion'; :1048-1049: 'FSDP always requires
  // CUDA_DEVICE_MAX_CONNECTIONS value large than one'.
  auto t = plan_for("llama3_8B", DpMethod::fsdp, 2, 1, "H100-SXM");
  const auto files = launch_files(t->lp);
  CHECK(contains(text_of(files, "megatron_lm_args.sh"), "--no-gradient-accumulation-fusion\n"));
  const std::string launch = text_of(files, "launch_megatron_lm.sh");
  CHECK(contains(launch, "unset CUDA_DEVICE_MAX_CONNECTIONS"));
  CHECK_FALSE(contains(launch, "CUDA_DEVICE_MAX_CONNECTIONS=1"));
  CHECK_FALSE(contains(text_of(files, "slurm.sbatch"), "CUDA_DEVICE_MAX_CONNECTIONS=1"));
  // arguments.py:1477-1479: tp > 1 without FSDP asserts CUDA_DEVICE_MAX_CONNECTIONS == "1"
  // ('Using tensor model parallelism or context parallelism require setting the environment
  // variable CUDA_DEVICE_MAX_CONNECTIONS to 1'): set by the launcher itself, so running it
  // directly passes validate_args.
  auto d = plan_for("llama3_8B", DpMethod::dp, 2, 1, "H100-SXM");
  const std::string dl = text_of(launch_files(d->lp), "launch_megatron_lm.sh");
  CHECK(contains(dl, "export CUDA_DEVICE_MAX_CONNECTIONS=1"));
  CHECK(dl.find("export CUDA_DEVICE_MAX_CONNECTIONS=1") < dl.find("exec torchrun"));
  // FSDP with pp > 1 (arguments.py:1034) and with fp16 (arguments.py:1046) are not written for
  // Megatron-LM.
  auto fp = plan_for("llama3_8B", DpMethod::fsdp, 1, 2, "H100-SXM");
  CHECK(contains(text_of(launch_files(fp->lp), "PLAN.md"),
                 "'--use-torch-fsdp2 is not supported with pipeline parallelism'"));
}

TEST_CASE("torchtitan: micro-batch, DDP dimensionality, recompute default, flavors (items 5-8)",
          "[launch][rules]") {
  // Item 5: train.py:196-214 at v0.2.2 accumulates global / (local_batch_size x dp) forward
  // passes of local_batch_size sequences, so without a pipeline local_batch_size is the plan's
  // micro-batch (gradient accumulation does the rest).
  auto t = plan_for("llama3_8B", DpMethod::fsdp, 1, 1, "H100-SXM");
  std::string toml = text_of(launch_files(t->lp), "torchtitan.toml");
  CHECK(contains(toml, "local_batch_size = 1\nglobal_batch_size = 64\n"));
  // With a pipeline the local batch is split into pipeline_parallel_microbatch_size pieces
  // (job_config.py:411-417): local = micro-batch x micro-batches.
  auto tp = plan_for("llama3_8B", DpMethod::fsdp, 1, 2, "H100-SXM");
  toml = text_of(launch_files(tp->lp), "torchtitan.toml");
  CHECK(contains(toml, fmt::format("local_batch_size = {}\n", tp->lp.point.num_micro_batches)));
  CHECK(contains(toml, "pipeline_parallel_microbatch_size = 1\n"));
  // Item 7: v0.2.2's ActivationCheckpoint.mode defaults to "selective" with
  // selective_ac_option "2" (job_config.py:651-655): none is written.
  CHECK(contains(toml, "[activation_checkpoint]\nmode = \"none\"\n"));
  // Item 6: torchtitan/models/llama3/infra/parallelize.py:151 (v0.2.2) raises 'DDP has not
  // supported > 1D parallelism' for data_parallel_replicate_degree with tp or pp > 1.
  auto ddp = plan_for("llama3_8B", DpMethod::dp, 2, 1, "H100-SXM");
  const auto files = launch_files(ddp->lp);
  CHECK(find(files, "torchtitan.toml") == nullptr);
  CHECK(contains(text_of(files, "PLAN.md"), "'DDP has not supported > 1D parallelism'"));
  auto ddp1 = plan_for("llama3_8B", DpMethod::dp, 1, 1, "H100-SXM");
  CHECK(contains(text_of(launch_files(ddp1->lp), "torchtitan.toml"),
                 "data_parallel_replicate_degree = 32\n"));
  // Item 8: the shipped flavors are "8B", "70B", "405B" (__init__.py:51-99); main (b5bcd76)
  // reads no TOML: launch_torchtitan_main.sh runs --module llama3 --config llama3_70b.
  auto l70 = plan_for("llama3_70B", DpMethod::fsdp, 1, 1, "H100-SXM");
  const auto f70 = launch_files(l70->lp);
  CHECK(contains(text_of(f70, "torchtitan.toml"), "flavor = \"70B\""));
  const std::string main70 = text_of(f70, "launch_torchtitan_main.sh");
  CHECK(contains(main70, "--module llama3 --config llama3_70b"));
  CHECK(contains(main70, "--training.num_tokens_per_microbatch_per_dp_rank 8192"));
  const std::regex flag(R"((--[a-z_.]+[a-z_]))");
  for (std::sregex_iterator it(main70.begin(), main70.end(), flag), end; it != end; ++it) {
    const std::string f = (*it)[1].str();
    if (f.find('.') != std::string::npos || f == "--module" || f == "--config") {
      INFO(f);
      CHECK(documented_argument("torchtitan main", f));
    }
  }
}

TEST_CASE("fp8 plans are written as fp8 where the framework can (item 9)", "[launch][rules]") {
  auto t = plan_for("llama3_8B", DpMethod::fsdp, 1, 1, "H100-SXM");
  t->lp.point.dtype = Dtype::fp8;
  auto files = launch_files(t->lp);
  const std::string lm = text_of(files, "megatron_lm_args.sh");
  CHECK(contains(lm, "--bf16\n  --fp8-format hybrid\n  --fp8-recipe tensorwise\n"));
  const std::string toml = text_of(files, "torchtitan.toml");
  CHECK(contains(toml, "converters = [\"quantize.linear.float8\"]"));
  CHECK(contains(toml, "[quantize.linear.float8]\nrecipe_name = \"tensorwise\""));
  const std::string md = text_of(files, "PLAN.md");
  CHECK(contains(md, "with fp8 linear layers, as estimated"));
  CHECK_FALSE(contains(md, "the files set bf16"));
  // DeepSpeed has no fp8 mode: bf16, said in PLAN.md.
  auto z = plan_for("llama3_8B", DpMethod::zero1, 1, 2, "H100-SXM");
  z->lp.point.dtype = Dtype::fp8;
  files = launch_files(z->lp);
  CHECK(contains(text_of(files, "PLAN.md"), "DeepSpeed's engine has no fp8 training mode"));
  CHECK(contains(text_of(files, "PLAN.md"), "Precision: bf16, not the estimate's fp8"));
  CHECK(nlohmann::json::parse(text_of(files, "ds_config.json")).at("bf16").at("enabled").get<bool>());
}

TEST_CASE("slurm.sbatch says where pretrain_gpt.py comes from (item 10)", "[launch][rules]") {
  auto t = plan_for("llama2_13B", DpMethod::zero1, 1, 8, "A10", Estimator::zerosearch);
  const auto files = launch_files(t->lp);
  const std::string sb = text_of(files, "slurm.sbatch");
  CHECK(contains(sb, "Submit from the framework's checkout"));
  CHECK(contains(sb, "MEGATRON_DS=${MEGATRON_DS:-$SLURM_SUBMIT_DIR}"));
  CHECK(contains(text_of(files, "launch_deepspeed.sh"), "\"$MEGATRON_DS/pretrain_gpt.py\""));
}

TEST_CASE("Llama-3 tokenizer and rotary base, Qwen's QKV bias (item 12)", "[launch][rules]") {
  auto l3 = plan_for("llama3_8B", DpMethod::dp, 1, 2, "H100-SXM");
  const std::string lm = text_of(launch_files(l3->lp), "megatron_lm_args.sh");
  CHECK(contains(lm, "--rotary-base 500000\n"));
  CHECK(contains(lm, "--tokenizer-type HuggingFaceTokenizer\n"));
  CHECK_FALSE(contains(lm, "SentencePiece"));
  CHECK_FALSE(contains(lm, "Llama2Tokenizer"));
  auto l2 = plan_for("llama2_13B", DpMethod::dp, 1, 2, "A10", Estimator::zerosearch);
  CHECK(contains(text_of(launch_files(l2->lp), "megatron_lm_args.sh"), "--rotary-base 10000\n"));
  auto q = plan_for("qwen2.5_7B", DpMethod::dp, 1, 2, "H100-SXM");
  const auto qf = launch_files(q->lp);
  CHECK(contains(text_of(qf, "megatron_lm_args.sh"), "--disable-bias-linear\n  --add-qkv-bias\n"));
  // Megatron-DeepSpeed has no QKV-only bias: a ZeRO plan of Qwen is refused with the reason.
  auto qz = plan_for("qwen2.5_7B", DpMethod::zero1, 1, 2, "H100-SXM");
  CHECK_THROWS_WITH(launch_files(qz->lp), Catch::Contains("it has no QKV-only bias"));
}

TEST_CASE("precision comes from GpuSpec: a GPU without bf16 gets fp16 (item 13)",
          "[launch][rules]") {
  const GpuSpec* v100 = catalogs().hardware.find_gpu("V100-32GB");
  REQUIRE(v100 != nullptr);
  REQUIRE_FALSE(v100->peak_tflops.bf16.has_value());
  auto t = plan_for("llama2_7B", DpMethod::zero1, 1, 2, "V100-32GB");
  auto files = launch_files(t->lp);
  const auto j = nlohmann::json::parse(text_of(files, "ds_config.json"));
  CHECK(j.at("fp16").at("enabled").get<bool>());
  CHECK_FALSE(j.at("bf16").at("enabled").get<bool>());
  CHECK(contains(text_of(files, "megatron_deepspeed_args.sh"), "  --fp16\n"));
  CHECK(contains(text_of(files, "PLAN.md"), "V100-32GB has no bf16"));
  // A GPU with bf16 keeps it.
  auto a = plan_for("llama2_7B", DpMethod::zero1, 1, 2, "A10");
  CHECK(contains(text_of(launch_files(a->lp), "megatron_deepspeed_args.sh"), "  --bf16\n"));
  // FSDP2 on fp16: Megatron-LM asserts '--use-torch-fsdp2 not supported with fp16 yet'
  // (arguments.py:1046) and torchtitan trains bf16/fp32: nothing can run it.
  auto f = plan_for("llama2_7B", DpMethod::fsdp, 1, 1, "V100-32GB");
  CHECK_THROWS_WITH(launch_files(f->lp), Catch::Contains("no framework can run this plan"));
}

TEST_CASE("DeepSpeed rules: ZeRO-2/3 with a pipeline, the batch rule", "[launch][rules]") {
  // deepspeed/runtime/pipe/engine.py:76-77 (0.19.6): 'ZeRO-2 and ZeRO-3 are incompatible with
  // pipeline parallelism'.
  auto t = plan_for("llama2_13B", DpMethod::zero2, 1, 8, "A10", Estimator::zerosearch);
  CHECK_THROWS_WITH(launch_files(t->lp),
                    Catch::Contains("'ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism'"));
  // deepspeed/runtime/config.py:937-940: train_batch_size == micro x accumulation x dp.
  auto b = plan_for("llama2_13B", DpMethod::zero1, 1, 8, "A10", Estimator::zerosearch);
  b->lp.point.mbs = 3;
  CHECK_THROWS_WITH(launch_files(b->lp), Catch::Contains("train_batch_size == micro x accumulation x dp"));
}

TEST_CASE("Megatron-LM interleaving: equal chunks, or the estimated chunks as a layout",
          "[launch][rules]") {
  auto t = plan_for("llama2_13B", DpMethod::dp, 1, 8, "A10");
  t->lp.point.virtual_stages = 2; // 16 chunks for 40 layers: neither 40, 41 nor 42 splits
  // The estimate's chunks (interleaved_chunks: 2, eight of 3, seven of 2) as
  // --pipeline-model-parallel-layout, chunk k on pp rank k % pp (megatron-core's
  // PipelineParallelLayerLayout), without --num-virtual-stages-per-pipeline-rank.
  const auto files2 = launch_files(t->lp);
  const std::string args2 = text_of(files2, "megatron_lm_args.sh");
  CHECK(contains(args2, "--pipeline-model-parallel-layout 'Et*2|t*3|t*3|t*3|t*3|t*3|t*3|t*3|t*3|"
                        "t*2|t*2|t*2|t*2|t*2|t*2|t*2L'\n"));
  CHECK_FALSE(contains(args2, "--num-virtual-stages-per-pipeline-rank"));
  CHECK_FALSE(contains(args2, "--account-for"));
  CHECK(contains(text_of(files2, "PLAN.md"), "pp x virtual stages (8 x 2) divides neither the 40 "
                                             "layers"));
  // DeepSeek-V3's 61 layers, pp 4 x v 2: Megatron-LM's --decoder-first/last-pipeline-num-layers
  // cannot (every stage's layers a multiple of v, so v would divide 61); the layout can.
  auto d = plan_for("deepseek_v3", DpMethod::dp, 4, 4, "H100-SXM");
  d->lp.point.virtual_stages = 2;
  CHECK(contains(text_of(launch_files(d->lp), "megatron_lm_args.sh"),
                 "--pipeline-model-parallel-layout 'Et*7|t*8|t*8|t*8|t*8|t*8|t*7|t*7L'\n"));
  t->lp.point.virtual_stages = 5; // 40 chunks of one layer
  const std::string args5 = text_of(launch_files(t->lp), "megatron_lm_args.sh");
  CHECK(contains(args5, "--num-virtual-stages-per-pipeline-rank 5\n"));
  CHECK_FALSE(contains(args5, "--account-for"));
  // 126 layers, 8 x 8 chunks: megatron-core counts the embedding and the loss as a layer
  // each (128 = 64 x 2), as the native estimate splits them.
  auto l = plan_for("llama3_405B", DpMethod::dp, 1, 8, "H100-SXM");
  l->lp.point.virtual_stages = 8;
  const std::string args8 = text_of(launch_files(l->lp), "megatron_lm_args.sh");
  CHECK(contains(args8, "--num-virtual-stages-per-pipeline-rank 8\n"));
  CHECK(contains(args8, "--account-for-embedding-in-pipeline-split\n"));
  CHECK(contains(args8, "--account-for-loss-in-pipeline-split\n"));
  l->lp.point.virtual_stages = 3; // 24 chunks divide neither 126, 127 nor 128: a layout
  const std::string args3 = text_of(launch_files(l->lp), "megatron_lm_args.sh");
  CHECK(contains(args3, "--pipeline-model-parallel-layout 'Et*5|t*6|"));
  CHECK_FALSE(contains(args3, "--num-virtual-stages-per-pipeline-rank"));
}

TEST_CASE("zerosearch-estimator plans set and say what the profiles measured (issue 25 item 1)",
          "[launch][rules]") {
  // The original's measurement script Megatron-DeepSpeed/_01_run_inter_homo.sh passes no
  // activation-checkpointing flag: recompute none, written explicitly in every framework.
  auto t = plan_for("llama2_13B", DpMethod::zero1, 1, 8, "A10", Estimator::zerosearch);
  t->lp.point.recompute = Recompute::full; // ignored by the zerosearch estimator
  const auto files = launch_files(t->lp);
  const std::string md = text_of(files, "PLAN.md");
  CHECK(contains(md, "measured with its Megatron-DeepSpeed fork without activation checkpointing"));
  CHECK(contains(md, "--estimator native --dp_method zero1 --tp 1 --pp 8 --dp 4 --mbs 1 "
                     "--recompute none"));
  const auto j = nlohmann::json::parse(text_of(files, "ds_config.json"));
  CHECK(j.at("pipeline").at("activation_checkpoint_interval").get<int>() == 0);
  CHECK_FALSE(contains(text_of(files, "megatron_deepspeed_args.sh"), "--recompute"));
  auto d = plan_for("llama2_13B", DpMethod::fsdp, 1, 1, "A10", Estimator::zerosearch);
  CHECK(contains(text_of(launch_files(d->lp), "torchtitan.toml"), "mode = \"none\""));
}

TEST_CASE("MoE: a gated shared expert reaches Megatron-LM as --moe-shared-expert-gate",
          "[launch][rules][roundtrip]") {
  // DeepSeek-V3's shared expert has no gate: no flag. The same model with qwen2_moe's gate
  // (an h-wide sigmoid gate per MoE layer): the flag, and the parameters Megatron-LM builds
  // from the flags are the estimator's again (58 x 7168 more).
  auto plain = plan_for("deepseek_v3", DpMethod::dp, 4, 1, "H100-SXM");
  REQUIRE_FALSE(plain->ctx.model.shared_expert_gate);
  const std::string without = text_of(launch_files(plain->lp), "megatron_lm_args.sh");
  CHECK_FALSE(contains(without, "--moe-shared-expert-gate"));
  auto gated = plan_for("deepseek_v3", DpMethod::dp, 4, 1, "H100-SXM");
  gated->ctx.model.shared_expert_gate = true;
  const std::string with = text_of(launch_files(gated->lp), "megatron_lm_args.sh");
  CHECK(contains(with, "--moe-shared-expert-intermediate-size 2048\n"));
  CHECK(contains(with, "--moe-shared-expert-gate\n"));
  CHECK(total_parameters(from_megatron_lm(with)) == total_parameters(gated->ctx.model));
  CHECK(total_parameters(gated->ctx.model) - total_parameters(plain->ctx.model) == 58 * 7168);
}

TEST_CASE("MoE: the estimated expert layout and DeepSeek-V3's shape reach Megatron-LM (issue 27)",
          "[launch][rules]") {
  // ModelParallelConfig.expert_model_parallel_size / expert_tensor_parallel_size;
  // TransformerConfig.moe_layer_freq, moe_router_enable_expert_bias; MLATransformerConfig.
  auto t = plan_for("deepseek_v3", DpMethod::dp, 4, 1, "H100-SXM"); // dp 8
  t->lp.point.ep = 16;
  t->lp.point.etp = 2;
  const auto files = launch_files(t->lp);
  const std::string lm = text_of(files, "megatron_lm_args.sh");
  CHECK(contains(lm, "--expert-model-parallel-size 16\n"));
  CHECK(contains(lm, "--expert-tensor-parallel-size 2\n"));
  CHECK(contains(lm, "--num-experts 256\n"));
  CHECK(contains(lm, "--moe-router-topk 8\n"));
  CHECK(contains(lm, "--moe-ffn-hidden-size 2048\n"));
  CHECK(contains(lm, "--moe-shared-expert-intermediate-size 2048\n"));
  CHECK(contains(lm, "--moe-layer-freq '([0]*3+[1]*58)'\n"));
  CHECK(contains(lm, "--moe-router-enable-expert-bias\n"));
  CHECK(contains(lm, "--moe-token-dispatcher-type alltoall\n"));
  CHECK(contains(lm, "--multi-latent-attention\n"));
  CHECK(contains(lm, "--q-lora-rank 1536\n"));
  CHECK(contains(lm, "--kv-lora-rank 512\n"));
  CHECK(contains(lm, "--qk-head-dim 128\n"));
  CHECK(contains(lm, "--qk-pos-emb-head-dim 64\n"));
  CHECK(contains(lm, "--v-head-dim 128\n"));
  CHECK_FALSE(contains(lm, "--group-query-attention"));
  CHECK_FALSE(contains(lm, "--kv-channels"));
  const std::string md = text_of(files, "PLAN.md");
  CHECK(contains(md, "expert parallel size 16, expert tensor parallel size 2, expert data "
                     "parallel size 1"));
  auto f = plan_for("deepseek_v3", DpMethod::fsdp, 1, 1, "H100-SXM");
  CHECK(contains(text_of(launch_files(f->lp), "torchtitan.toml"),
                 "name = \"deepseek_v3\"\nflavor = \"671B\""));
  // Qwen3: q and k norms; GQA as estimated.
  auto q = plan_for("qwen3_30B_A3B", DpMethod::dp, 2, 1, "H100-SXM");
  q->lp.point.ep = 8;
  q->lp.point.etp = 1;
  const std::string qlm = text_of(launch_files(q->lp), "megatron_lm_args.sh");
  CHECK(contains(qlm, "--qk-layernorm\n"));
  CHECK(contains(qlm, "--group-query-attention\n  --num-query-groups 4\n"));
  CHECK(contains(qlm, "--expert-model-parallel-size 8\n  --expert-tensor-parallel-size 1\n"));
  // Megatron-DeepSpeed: --moe-expert-parallel-size ep; experts whole, or split over tp
  // (--enable-expert-tensor-parallelism), nothing else.
  auto z = plan_for("mixtral_8x7B", DpMethod::zero1, 2, 1, "H100-SXM"); // dp 16
  z->lp.point.ep = 4;
  z->lp.point.etp = 2;
  const std::string zds = text_of(launch_files(z->lp), "megatron_deepspeed_args.sh");
  CHECK(contains(zds, "--moe-expert-parallel-size 4\n  --enable-expert-tensor-parallelism\n"));
  auto z4 = plan_for("mixtral_8x7B", DpMethod::zero1, 4, 1, "H100-SXM"); // dp 8
  z4->lp.point.ep = 4;
  z4->lp.point.etp = 2;
  CHECK_THROWS_WITH(launch_files(z4->lp),
                    Catch::Contains("Megatron-DeepSpeed cannot split experts over etp 2 with tp 4"));
}

TEST_CASE("MoE: torchtitan's deepseek_v3 and qwen3 flavors with ep and etp, what it cannot run "
          "is refused with the reason (issue 27)",
          "[launch][rules]") {
  // torchtitan v0.2.2: [parallelism] expert_parallel_degree and expert_tensor_parallel_degree
  // (torchtitan/config/job_config.py), the experts on the (pp, dp_replicate, efsdp, ep, etp)
  // mesh (torchtitan/distributed/parallel_dims.py), flavors of torchtitan/models/*/__init__.py.
  auto d = plan_for("deepseek_v3", DpMethod::fsdp, 1, 4, "H100-SXM"); // dp 8
  d->lp.point.ep = 8;
  d->lp.point.etp = 1;
  const auto df = launch_files(d->lp);
  const std::string dt = text_of(df, "torchtitan.toml");
  CHECK(contains(dt, "[model]\nname = \"deepseek_v3\"\nflavor = \"671B\""));
  CHECK(contains(dt, "data_parallel_shard_degree = 8\n"));
  CHECK(contains(dt, "pipeline_parallel_degree = 4\nexpert_parallel_degree = 8\n"
                     "expert_tensor_parallel_degree = 1\n"));
  // The 61 layers in the planned split (16, 15, 15, 15 here), the last stage with norm and output
  CHECK(contains(dt, "\"layers.59\", \"layers.60\", \"norm\", \"output\"],\n"));
  CHECK(contains(text_of(df, "PLAN.md"), "FSDP2 over dp, tp, pp, ep, etp"));
  // etp = tp: experts split over the tp ranks of each ep rank
  auto q = plan_for("qwen3_30B_A3B", DpMethod::fsdp, 2, 1, "H100-SXM"); // dp 16
  q->lp.point.ep = 8;
  q->lp.point.etp = 2;
  const std::string qt = text_of(launch_files(q->lp), "torchtitan.toml");
  CHECK(contains(qt, "name = \"qwen3\"\nflavor = \"30B-A3B\""));
  CHECK(contains(qt, "expert_parallel_degree = 8\nexpert_tensor_parallel_degree = 2\n"));
  // Without expert parallelism etp has no effect in torchtitan: written as its default
  auto q1 = plan_for("qwen3_235B_A22B", DpMethod::fsdp, 2, 1, "H100-SXM");
  q1->lp.point.etp = 2;
  const std::string q1t = text_of(launch_files(q1->lp), "torchtitan.toml");
  CHECK(contains(q1t, "flavor = \"235B-A22B\""));
  CHECK(contains(q1t, "expert_parallel_degree = 1\nexpert_tensor_parallel_degree = 1\n"));
  // Refused, with torchtitan's reason: qwen3 has no pipelining function in v0.2.2 ...
  // (and Megatron-LM's FSDP2 takes no pipeline: nothing runs this plan)
  auto qpp = plan_for("qwen3_30B_A3B", DpMethod::fsdp, 1, 2, "H100-SXM");
  CHECK_THROWS_WITH(launch_files(qpp->lp),
                    Catch::Contains("torchtitan v0.2.2's qwen3 model has no pipelining function"));
  // ... DeepSeek-V3's flavor uses FlexAttention, which its context parallelism does not take ...
  auto dcp = plan_for("deepseek_v3", DpMethod::fsdp, 1, 1, "H100-SXM");
  dcp->lp.point.dp = 16;
  dcp->lp.point.cp = 2;
  dcp->lp.point.num_micro_batches = 4;
  CHECK(contains(text_of(launch_files(dcp->lp), "PLAN.md"),
                 "no torchtitan files: torchtitan's deepseek_v3 flavor 671B uses FlexAttention"));
  // ... ep needs FSDP's dp_shard ranks (a dp plan replicates) ...
  auto ddp = plan_for("deepseek_v3", DpMethod::dp, 1, 1, "H100-SXM");
  ddp->lp.point.ep = 8;
  CHECK(contains(text_of(launch_files(ddp->lp), "PLAN.md"),
                 "torchtitan takes expert parallelism from data_parallel_shard_degree x cp x tp"));
  // ... and torchtitan has no Mixtral.
  auto mx = plan_for("mixtral_8x7B", DpMethod::fsdp, 1, 1, "H100-SXM");
  CHECK(contains(text_of(launch_files(mx->lp), "PLAN.md"), "torchtitan v0.2.2 has no mixtral "
                                                           "model"));
  // A DeepSeek shape torchtitan has no flavor of
  auto other = plan_for("deepseek_v3", DpMethod::fsdp, 1, 1, "H100-SXM");
  other->ctx.model.num_layers = 62;
  CHECK(contains(text_of(launch_files(other->lp), "PLAN.md"),
                 "torchtitan v0.2.2's deepseek_v3 model has no flavor of deepseek_v3's shape"));
}

TEST_CASE("MoE: expert parallelism under FSDP and ZeRO-3 goes to the frameworks that shard "
          "experts over edp (issue 27)",
          "[launch][rules]") {
  // Megatron-LM's --use-torch-fsdp2 shards every parameter over the dp x cp group
  // (torch_fully_sharded_data_parallel.py): not an ep > 1 plan; torchtitan writes it.
  auto f = plan_for("qwen3_30B_A3B", DpMethod::fsdp, 1, 1, "H100-SXM"); // dp 32
  f->lp.point.ep = 16;
  const auto ff = launch_files(f->lp);
  CHECK(find(ff, "megatron_lm_args.sh") == nullptr);
  CHECK(contains(text_of(ff, "PLAN.md"), "--use-torch-fsdp2 shards every parameter over the "
                                         "data-parallel group"));
  CHECK(contains(text_of(ff, "torchtitan.toml"), "expert_parallel_degree = 16\n"));
  // Megatron-DeepSpeed's experts are DeepSpeed's native MoE layers, which ZeRO-3 rejects;
  // DeepSpeed runs the plan as AutoEP (tests/io/test_launch_autoep.cpp), without tp.
  auto z = plan_for("mixtral_8x7B", DpMethod::zero3, 1, 1, "H100-SXM");
  const auto zf = launch_files(z->lp);
  CHECK(find(zf, "megatron_deepspeed_args.sh") == nullptr);
  CHECK(contains(text_of(zf, "PLAN.md"),
                 "'Native DeepSpeed MoE is not supported with ZeRO Stage 3'"));
  CHECK(contains(text_of(zf, "ds_config.json"), "\"expert_parallel\""));
  auto z2 = plan_for("mixtral_8x7B", DpMethod::zero3, 2, 1, "H100-SXM");
  CHECK_THROWS_WITH(launch_files(z2->lp),
                    Catch::Contains("'Native DeepSpeed MoE is not supported with ZeRO Stage 3'") &&
                        Catch::Contains("'AutoEP with ZeRO Stage 3 does not support AutoTP yet'"));
}

TEST_CASE("MoE: the all-to-all overlap reaches Megatron-LM where it runs, the other frameworks "
          "refuse it (--moe_a2a_overlap)",
          "[launch][rules][moe]") {
  // qwen3_30B_A3B on 32 H100, tp 1, pp 1, dp 32, ep 8: where Megatron runs the overlap
  // (moe_a2a_overlap_runs: ep > 1, no full recompute, no pipeline).
  auto t = plan_for("qwen3_30B_A3B", DpMethod::dp, 1, 1, "H100-SXM");
  t->lp.point.ep = 8;
  t->lp.point.etp = 1;
  const auto args = [&] { return text_of(launch_files(t->lp), "megatron_lm_args.sh"); };
  CHECK_FALSE(contains(args(), "--overlap-moe-expert-parallel-comm")); // not asked
  auto native = std::make_shared<NativeContext>();
  native->settings.moe_a2a_overlap = true;
  t->ctx.native = native;
  CHECK(contains(args(), "--overlap-moe-expert-parallel-comm\n  --delay-wgrad-compute\n"));
  CHECK(documented_argument("Megatron-LM", "--overlap-moe-expert-parallel-comm"));
  CHECK(documented_argument("Megatron-LM", "--delay-wgrad-compute"));
  // Full recompute: Megatron asserts against the overlap ('disable full recomputation when
  // enabling overlap_moe_expert_parallel_comm'), the estimate charged the all-to-alls in full
  // and the files do not ask for it; nor with pp 2 without virtual stages.
  t->lp.point.recompute = Recompute::full;
  CHECK_FALSE(contains(args(), "--overlap-moe-expert-parallel-comm"));
  t->lp.point.recompute = Recompute::none;
  // DeepSpeed (AutoEP under ZeRO-3) and torchtitan run each pass alone: refused with the
  // reason.
  t->lp.point.method = DpMethod::fsdp;
  t->lp.point.dp = 32;
  CHECK_THROWS_WITH(launch_files(t->lp),
                    Catch::Contains("no torchtitan files: the plan was estimated with "
                                    "--moe_a2a_overlap on"));
  auto p2 = plan_for("qwen3_30B_A3B", DpMethod::dp, 1, 2, "H100-SXM");
  p2->lp.point.ep = 8;
  p2->lp.point.etp = 1;
  p2->ctx.native = native;
  CHECK_FALSE(contains(text_of(launch_files(p2->lp), "megatron_lm_args.sh"),
                       "--overlap-moe-expert-parallel-comm"));
}

TEST_CASE("MoE: the flex dispatcher reaches Megatron-LM as --moe-token-dispatcher-type flex "
          "with its backend, the other frameworks refuse it (--moe_dispatcher)",
          "[launch][rules][moe]") {
  auto t = plan_for("qwen3_30B_A3B", DpMethod::dp, 1, 1, "H100-SXM");
  t->lp.point.ep = 8;
  t->lp.point.etp = 1;
  const auto args = [&] { return text_of(launch_files(t->lp), "megatron_lm_args.sh"); };
  CHECK(contains(args(), "--moe-token-dispatcher-type alltoall"));
  CHECK_FALSE(contains(args(), "--moe-flex-dispatcher-backend"));
  auto native = std::make_shared<NativeContext>();
  native->settings.moe_dispatcher = MoeDispatcher::hybridep;
  t->ctx.native = native;
  CHECK(contains(args(), "--moe-token-dispatcher-type flex\n  --moe-flex-dispatcher-backend "
                         "hybridep\n"));
  CHECK_FALSE(contains(args(), "--moe-token-dispatcher-type alltoall"));
  CHECK(documented_argument("Megatron-LM", "--moe-token-dispatcher-type"));
  CHECK(documented_argument("Megatron-LM", "--moe-flex-dispatcher-backend"));
  native->settings.moe_dispatcher = MoeDispatcher::deepep;
  CHECK(contains(args(), "--moe-flex-dispatcher-backend deepep\n"));
  // torchtitan's and DeepSpeed's MoE layers send every top-k copy: refused.
  t->lp.point.method = DpMethod::fsdp;
  t->lp.point.dp = 32;
  CHECK_THROWS_WITH(launch_files(t->lp),
                    Catch::Contains("no torchtitan files: the plan was estimated with "
                                    "--moe_dispatcher deepep"));
  // Without expert parallelism nothing is dispatched: the all-to-all flag, no refusal.
  auto one = plan_for("qwen3_30B_A3B", DpMethod::dp, 1, 1, "H100-SXM");
  one->lp.point.ep = 1;
  one->lp.point.etp = 1;
  one->ctx.native = native;
  CHECK(contains(text_of(launch_files(one->lp), "megatron_lm_args.sh"),
                 "--moe-token-dispatcher-type alltoall"));
}

namespace {
/// Every writer's refusal of `lp`, one a line.
std::string refusals(const LaunchPlan& lp) {
  std::string out;
  for (const auto& [target, why] : launch_choice(lp).refused) out += why + "\n";
  return out;
}
} // namespace

TEST_CASE("pipeline layout: Megatron-LM gets the plan's --pipeline_layout as given, the other "
          "frameworks refuse it (issue 27)",
          "[launch][rules]") {
  // DeepSeek-V3 as Megatron-Bridge runs it on GB300: pp 2 x vp 8, 16 uneven chunks with the
  // MTP layer beside the loss.
  auto t = plan_for("deepseek_v3", DpMethod::dp, 1, 2, "H100-SXM");
  auto native = std::make_shared<NativeContext>();
  native->settings.pipeline_layout =
      std::make_shared<const PipelineLayout>(parse_pipeline_layout("Et*4|(t*4|)*14tmL"));
  t->ctx.native = native;
  t->lp.point.schedule = Schedule::interleaved;
  t->lp.point.virtual_stages = 8;
  t->lp.estimate.partition = native->settings.pipeline_layout->partition(2);
  const std::string args = text_of(launch_files(t->lp), "megatron_lm_args.sh");
  CHECK(contains(args, "--pipeline-model-parallel-layout 'Et*4|(t*4|)*14tmL'\n"));
  CHECK(contains(args, "--mtp-num-layers 1\n"));
  // The layout sets the virtual stages; arguments.py refuses both.
  CHECK_FALSE(contains(args, "--num-virtual-stages-per-pipeline-rank"));
  CHECK(documented_argument("Megatron-LM", "--pipeline-model-parallel-layout"));
  CHECK(documented_argument("Megatron-LM", "--mtp-num-layers"));
  // Without MTP layers no --mtp-num-layers.
  native->settings.pipeline_layout =
      std::make_shared<const PipelineLayout>(parse_pipeline_layout("Et*4|(t*4|)*14tL"));
  CHECK_FALSE(contains(text_of(launch_files(t->lp), "megatron_lm_args.sh"), "--mtp-num-layers"));
  // DeepSpeed's pipeline engine and torchtitan's split points cannot place it.
  // zero1 is Megatron-LM's distributed optimizer, which takes the layout (docs/launch.md).
  t->lp.point.method = DpMethod::zero1;
  CHECK(launch_choice(t->lp).written == std::vector<std::string>{"megatron_lm"});
  CHECK(contains(refusals(t->lp), "no DeepSpeed config: the plan was estimated with "
                                  "--pipeline_layout 'Et*4|(t*4|)*14tL'"));
  CHECK(contains(refusals(t->lp), "no Megatron-DeepSpeed files: the plan was estimated with "
                                  "--pipeline_layout"));
  CHECK(contains(text_of(launch_files(t->lp), "megatron_lm_args.sh"),
                 "--use-distributed-optimizer\n"));
  t->lp.point.method = DpMethod::fsdp;
  CHECK_THROWS_WITH(launch_files(t->lp),
                    Catch::Contains("no torchtitan files: the plan was estimated with "
                                    "--pipeline_layout"));
}

TEST_CASE("recompute modules: Megatron-LM gets the plan's --recompute-modules, the other "
          "frameworks refuse them (issue 27)",
          "[launch][rules]") {
  auto t = plan_for("deepseek_v3", DpMethod::dp, 1, 2, "H100-SXM");
  auto native = std::make_shared<NativeContext>();
  t->ctx.native = native;
  t->lp.point.recompute = Recompute::selective;
  const auto args = [&] { return text_of(launch_files(t->lp), "megatron_lm_args.sh"); };
  // Megatron's default (core_attn alone) needs no list.
  CHECK(contains(args(), "--recompute-granularity selective\n"));
  CHECK_FALSE(contains(args(), "--recompute-modules"));
  native->settings.recompute_modules = parse_recompute_modules("mla_up_proj,layernorm");
  // A list argument (nargs '+'): the names space-separated, in Megatron's order.
  CHECK(contains(args(), "--recompute-granularity selective\n  --recompute-modules layernorm "
                         "mla_up_proj\n"));
  CHECK(documented_argument("Megatron-LM", "--recompute-modules"));
  // Not recomputing selectively: the list is not written.
  t->lp.point.recompute = Recompute::full;
  CHECK_FALSE(contains(args(), "--recompute-modules"));
  t->lp.point.recompute = Recompute::selective;
  t->lp.point.method = DpMethod::zero1; // Megatron-LM's distributed optimizer takes the list
  CHECK(launch_choice(t->lp).written == std::vector<std::string>{"megatron_lm"});
  CHECK(contains(refusals(t->lp), "no DeepSpeed config: the plan was estimated with "
                                  "--recompute_modules layernorm,mla_up_proj"));
  CHECK(contains(refusals(t->lp), "no Megatron-DeepSpeed files: the plan was estimated with "
                                  "--recompute_modules"));
  CHECK(contains(args(), "--recompute-modules layernorm mla_up_proj\n"));
  t->lp.point.method = DpMethod::fsdp;
  CHECK_THROWS_WITH(launch_files(t->lp),
                    Catch::Contains("no torchtitan files: the plan was estimated with "
                                    "--recompute_modules"));
}
