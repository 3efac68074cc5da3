// Issue 27: a ZeRO-3 MoE plan reaches DeepSpeed as AutoEP (ds_config.json's expert_parallel
// section, deepspeedai/DeepSpeed edaa7221: deepspeed/module_inject/auto_ep_config.py
// parse_autoep_config; deepspeed/runtime/engine.py _validate_zero3_moe_compatibility).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/io/launch.hpp"
#include "zerosearch/io/launch_flags.hpp"
#include "zerosearch/search/plan.hpp"

using namespace zerosearch;

namespace {

const Catalogs& catalogs() {
  static const Catalogs c = load_catalogs(ZEROSEARCH_TEST_PROFILEDB);
  return c;
}

/// A native plan of `model` on 4 x 8 H100-SXM (32 GPUs), pp 1, not estimated: the files read
/// only the partition, the OOM flag and the step time.
struct TestPlan {
  EstimateContext ctx;
  LaunchPlan lp;
};
std::unique_ptr<TestPlan> plan_for(const std::string& model, DpMethod method, int tp, int ep,
                                   int etp = 1, int cp = 1) {
  auto t = std::make_unique<TestPlan>();
  PlanInput in;
  in.model = "llama2_13B";
  in.cluster = Cluster{{{"H100-SXM", 4}}, 8, {}};
  t->ctx = make_plan(in, catalogs()).context;
  t->ctx.model = catalogs().models.find(model);
  t->ctx.estimator = Estimator::native;
  t->ctx.global_batch = 64;
  DesignPoint p;
  p.method = method;
  p.tp = tp;
  p.pp = 1;
  p.cp = static_cast<std::int16_t>(cp);
  p.dp = 32 / (tp * cp);
  p.ep = static_cast<std::int16_t>(ep);
  p.etp = static_cast<std::int16_t>(etp);
  p.mbs = 1;
  p.num_micro_batches = t->ctx.global_batch / p.dp;
  t->lp.ctx = &t->ctx;
  t->lp.point = p;
  t->lp.placement = Placement(4, 0);
  t->lp.estimate.partition = {static_cast<int>(t->ctx.model.num_layers) + 2};
  t->lp.estimate.step_s = 1.0;
  t->lp.origin = "test";
  t->lp.hardware = &catalogs().hardware;
  return t;
}

bool has(const std::vector<LaunchFile>& files, const std::string& name) {
  return std::any_of(files.begin(), files.end(), [&](const LaunchFile& f) { return f.name == name; });
}

const LaunchFile& file(const std::vector<LaunchFile>& files, const std::string& name) {
  const auto it = std::find_if(files.begin(), files.end(),
                               [&](const LaunchFile& f) { return f.name == name; });
  if (it == files.end()) {
    FAIL("no file " << name);
  }
  return *it;
}

} // namespace

TEST_CASE("AutoEP: a ZeRO-3 MoE plan's ds_config.json carries ep and the MoE shape", "[launch]") {
  struct Case {
    const char* model;
    int ep;
    const char* preset;
    int top_k;
  };
  for (const Case c : {Case{"mixtral_8x7B", 8, "mixtral", 2}, Case{"qwen3_30B_A3B", 16, "qwen3_moe", 8},
                       Case{"deepseek_v3", 32, "deepseek_v3", 8}}) {
    INFO(c.model);
    auto t = plan_for(c.model, DpMethod::zero3, 1, c.ep);
    const auto files = launch_files(t->lp);
    const auto j = nlohmann::json::parse(file(files, "ds_config.json").text);
    CHECK(j.at("zero_optimization").at("stage").get<int>() == 3);
    const auto& ep = j.at("expert_parallel");
    CHECK(ep.at("enabled").get<bool>());
    CHECK(ep.at("autoep_size").get<int>() == c.ep);
    CHECK(ep.at("expert_tensor_parallel_size").get<int>() == 1);
    CHECK(ep.at("preset_model").get<std::string>() == c.preset);
    CHECK(ep.at("top_k").get<int>() == c.top_k);
    // Only keys DeepSpeed's parse_autoep_config reads, none "auto".
    for (const auto& [key, value] : ep.items()) {
      CHECK(documented_argument("DeepSpeed JSON expert_parallel", key));
      CHECK_FALSE((value.is_string() && value.get<std::string>() == "auto"));
    }
    CHECK(documented_argument("DeepSpeed JSON", "expert_parallel"));
    // AutoEP's rule: autoep_size divides the experts (auto_ep_config.py
    // validate_autoep_post_detection) and the stage's ranks (auto_ep_folding.py).
    CHECK(t->ctx.model.num_experts % c.ep == 0);
    CHECK(32 % c.ep == 0);
    // The launcher runs the user's script with this config; Slurm runs the launcher.
    const LaunchFile& sh = file(files, "launch_deepspeed_autoep.sh");
    CHECK(sh.executable);
    CHECK(sh.text.find("--deepspeed_config \"$PLAN_DIR/ds_config.json\"") != std::string::npos);
    CHECK(file(files, "slurm.sbatch").text.find("launch_deepspeed_autoep.sh") != std::string::npos);
    CHECK(file(files, "PLAN.md").text.find("AutoEP") != std::string::npos);
    CHECK((file(files, "PLAN.md").text.find("router bias") != std::string::npos) ==
          t->ctx.model.router_bias);
  }
}

TEST_CASE("AutoEP: no expert_parallel section without ZeRO-3 or without experts", "[launch]") {
  // ZeRO-1 MoE: Megatron-DeepSpeed's native MoE layers take ep (--moe-expert-parallel-size).
  auto z1 = plan_for("mixtral_8x7B", DpMethod::zero1, 1, 8);
  const auto files = launch_files(z1->lp);
  CHECK_FALSE(nlohmann::json::parse(file(files, "ds_config.json").text).contains("expert_parallel"));
  CHECK_FALSE(has(files, "launch_deepspeed_autoep.sh"));
  // ZeRO-3 of a dense model.
  auto dense = plan_for("llama2_13B", DpMethod::zero3, 1, 1);
  const auto dfiles = launch_files(dense->lp);
  CHECK_FALSE(nlohmann::json::parse(file(dfiles, "ds_config.json").text).contains("expert_parallel"));
}

TEST_CASE("AutoEP: what ZeRO-3 AutoEP cannot run is refused with DeepSpeed's reason", "[launch]") {
  // engine.py _validate_zero3_moe_compatibility: no AutoTP / mpu tensor parallelism.
  auto tp = plan_for("mixtral_8x7B", DpMethod::zero3, 2, 8);
  CHECK_THROWS_WITH(launch_files(tp->lp),
                    Catch::Contains("AutoEP with ZeRO Stage 3 does not support AutoTP yet") &&
                        Catch::Contains("tp 2"));
  // No sequence parallelism.
  auto cp = plan_for("mixtral_8x7B", DpMethod::zero3, 1, 8, 1, 2);
  CHECK_THROWS_WITH(launch_files(cp->lp), Catch::Contains("sequence parallelism") &&
                                              Catch::Contains("cp 2"));
}
