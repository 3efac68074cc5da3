#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <numeric>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/io/launch.hpp"
#include "zerosearch/io/launch_flags.hpp"
#include "zerosearch/search/plan.hpp"

using namespace zerosearch;
namespace fs = std::filesystem;

namespace {

const Catalogs& catalogs() {
  static const Catalogs c = load_catalogs(ZEROSEARCH_TEST_PROFILEDB);
  return c;
}

const SearchPlan& mixed_plan() {
  static const SearchPlan plan = [] {
    PlanInput in;
    in.model = "llama2_13B";
    in.cluster = Cluster{{{"A10", 3}, {"A6000", 5}}, 4, {}};
    return make_plan(in, catalogs());
  }();
  return plan;
}

// The golden heterogeneous row: A10 A10 A6000x5 A10, partition 5-4-6-6-6-6-5-4.
const Placement kGoldenPlacement{0, 0, 1, 1, 1, 1, 1, 0};

LaunchPlan make_launch_plan(DpMethod method, const std::vector<int>& partition, int mbs = 1) {
  const SearchPlan& plan = mixed_plan();
  DesignPoint p;
  p.method = method;
  p.tp = 1;
  p.pp = 8;
  p.dp = 4;
  p.mbs = mbs;
  p.num_micro_batches = plan.context.global_batch / (p.dp * p.mbs);
  LaunchPlan lp;
  lp.ctx = &plan.context;
  lp.point = p;
  lp.placement = kGoldenPlacement;
  lp.estimate = estimate(plan.context, p, layer_costs(plan.context, p), kGoldenPlacement, partition);
  lp.origin = "test";
  lp.hardware = &catalogs().hardware;
  return lp;
}

/// `ctx` as if the native estimator had produced the plan with `settings` (the launch files
/// follow some of them).
EstimateContext with_native_settings(const EstimateContext& ctx, const NativeSettings& settings) {
  EstimateContext out = ctx;
  out.estimator = Estimator::native;
  auto native = std::make_shared<NativeContext>();
  native->settings = settings;
  out.native = native;
  return out;
}

/// The model parts of a torchtitan TOML's module_fqns_per_model_part: transformer layers per
/// part, how many in all, and whether each appears once, in order.
struct TomlParts {
  std::vector<int> per_part;
  int layers = 0;
  bool ordered = true;
};
TomlParts toml_parts(const std::string& toml) {
  TomlParts out;
  const std::regex part(R"(\n  \[([^\]]*)\],)");
  const std::regex layer(R"re("layers\.(\d+)")re");
  for (std::sregex_iterator it(toml.begin(), toml.end(), part), end; it != end; ++it) {
    const std::string names = (*it)[1].str();
    int count = 0;
    for (std::sregex_iterator l(names.begin(), names.end(), layer), e; l != e; ++l) {
      out.ordered = out.ordered && std::stoi((*l)[1].str()) == out.layers;
      ++out.layers;
      ++count;
    }
    out.per_part.push_back(count);
  }
  return out;
}

const LaunchFile& file(const std::vector<LaunchFile>& files, const std::string& name) {
  for (const auto& f : files) {
    if (f.name == name) {
      return f;
    }
  }
  FAIL("no file " << name);
  throw std::logic_error("unreachable");
}

bool has_file(const std::vector<LaunchFile>& files, const std::string& name) {
  return std::any_of(files.begin(), files.end(), [&](const LaunchFile& f) { return f.name == name; });
}

/// Every "--flag" token of `text` outside comments.
std::vector<std::string> flags_in(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  const std::regex flag(R"((^|\s)(--[A-Za-z][A-Za-z0-9_-]*))");
  while (std::getline(in, line)) {
    const auto hash = line.find('#');
    if (hash != std::string::npos && line.find_first_not_of(' ') == hash) {
      continue;
    }
    for (std::sregex_iterator it(line.begin(), line.end(), flag), end; it != end; ++it) {
      out.push_back((*it)[2].str());
    }
  }
  return out;
}

/// Layers per stage of a Megatron-LM layout string (only the forms megatron_layout writes:
/// "E", "t", "t*N", "L"), with the counts of E and L and their positions checked.
std::vector<int> parse_layout(const std::string& layout, int& embeddings, int& losses,
                              bool& e_first, bool& l_last) {
  std::vector<int> counts;
  embeddings = losses = 0;
  std::stringstream ss(layout);
  std::string stage;
  std::vector<std::string> stages;
  while (std::getline(ss, stage, '|')) {
    stages.push_back(stage);
  }
  e_first = !stages.empty() && stages.front().rfind("E", 0) == 0;
  l_last = !stages.empty() && !stages.back().empty() && stages.back().back() == 'L';
  for (const auto& s : stages) {
    int t = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == 'E') {
        ++embeddings;
      } else if (s[i] == 'L') {
        ++losses;
      } else if (s[i] == 't') {
        if (i + 1 < s.size() && s[i + 1] == '*') {
          std::size_t j = i + 2;
          int n = 0;
          while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) != 0) {
            n = n * 10 + (s[j] - '0');
            ++j;
          }
          t += n;
          i = j - 1;
        } else {
          t += 1;
        }
      }
    }
    counts.push_back(t);
  }
  return counts;
}

} // namespace

TEST_CASE("layout string: one embedding first, one loss last, layers sum to the model's",
          "[launch]") {
  const std::vector<int> partition{5, 6, 6, 6, 6, 6, 3, 4};
  CHECK(megatron_layout(partition) == "Et*4|t*6|t*6|t*6|t*6|t*6|t*3|t*3L");
  CHECK(transformer_layers_per_stage(partition) == std::vector<int>{4, 6, 6, 6, 6, 6, 3, 3});
  // Edge cases: a stage with the embedding only, a stage of one layer, a last stage of the head.
  CHECK(megatron_layout({1, 1, 40, 1}) == "E|t|t*40|L");
  for (const auto& p : std::vector<std::vector<int>>{
           partition, {1, 1, 40, 1}, {6, 5, 5, 5, 5, 5, 5, 6}, {2, 40}, {21, 21}}) {
    int e = 0, l = 0;
    bool e_first = false, l_last = false;
    const auto counts = parse_layout(megatron_layout(p), e, l, e_first, l_last);
    CHECK(e == 1);
    CHECK(l == 1);
    CHECK(e_first);
    CHECK(l_last);
    CHECK(counts.size() == p.size());
    CHECK(std::accumulate(counts.begin(), counts.end(), 0) ==
          std::accumulate(p.begin(), p.end(), 0) - 2);
    CHECK(counts == transformer_layers_per_stage(p));
  }
}

TEST_CASE("Megatron-DeepSpeed's own split balances transformer layers, first stages first",
          "[launch]") {
  // LAUNCH.md ran DeepSpeed's 'type:transformer' partitioning: 40 / 8 and 40 / 7.
  CHECK(deepspeed_default_split(40, 8) == std::vector<int>(8, 5));
  CHECK(deepspeed_default_split(40, 7) == std::vector<int>{6, 6, 6, 6, 6, 5, 5});
}

TEST_CASE("DeepSpeed plan: batch rule, documented keys and flags, hostfile in stage order",
          "[launch]") {
  const LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  REQUIRE_FALSE(lp.estimate.oom);
  const auto files = launch_files(lp);
  for (const auto& name : {"PLAN.md", "hostfile", "ds_config.json", "megatron_deepspeed_args.sh",
                           "launch_deepspeed.sh", "ds_explicit_partition.py", "slurm.sbatch"}) {
    CHECK(has_file(files, name));
  }
  CHECK_FALSE(has_file(files, "torchtitan.toml"));

  // The JSON parses, obeys the batch rule with the data-parallel size, and has only keys
  // DeepSpeed reads (zero_optimization is pydantic extra="forbid").
  const auto j = nlohmann::json::parse(file(files, "ds_config.json").text);
  CHECK(j.at("train_batch_size").get<int>() ==
        j.at("train_micro_batch_size_per_gpu").get<int>() *
            j.at("gradient_accumulation_steps").get<int>() * lp.point.dp);
  CHECK(j.at("train_batch_size").get<int>() == 64);
  CHECK(j.at("gradient_accumulation_steps").get<int>() == 16);
  CHECK(j.at("zero_optimization").at("stage").get<int>() == 1);
  CHECK(j.at("bf16").at("enabled").get<bool>() != j.at("fp16").at("enabled").get<bool>());
  for (const auto& [key, value] : j.items()) {
    CHECK(documented_argument("DeepSpeed JSON", key));
    CHECK_FALSE((value.is_string() && value.get<std::string>() == "auto"));
  }
  for (const auto& [key, value] : j.at("zero_optimization").items()) {
    CHECK(documented_argument("DeepSpeed JSON zero_optimization", key));
  }
  for (const auto& [key, value] : j.at("pipeline").items()) {
    CHECK(documented_argument("DeepSpeed JSON pipeline", key));
  }
  for (const auto& [key, value] : j.at("bf16").items()) {
    CHECK(documented_argument("DeepSpeed JSON precision", key));
  }

  // Hostfile: one line per node in placement order, "host slots=G", no duplicates, the type of
  // each line's node equal to the placement's.
  std::istringstream hf(file(files, "hostfile").text);
  std::string line;
  std::vector<std::string> types;
  std::set<std::string> hosts;
  const std::regex entry(R"(^(\S+)\s+slots=(\d+)\s+# (\S+), ranks (\d+)-(\d+), stage (\d+)$)");
  int n = 0;
  while (std::getline(hf, line)) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    std::smatch m;
    REQUIRE(std::regex_match(line, m, entry));
    CHECK(hosts.insert(m[1].str()).second);
    CHECK(m[2].str() == "4");
    types.push_back(m[3].str());
    CHECK(std::stoi(m[4].str()) == 4 * n);
    CHECK(std::stoi(m[6].str()) == n); // tp x dp = 4 = GPUs per node: stage n on node n
    ++n;
  }
  CHECK(types == std::vector<std::string>{"A10", "A10", "A6000", "A6000", "A6000", "A6000",
                                          "A6000", "A10"});
  CHECK(*hosts.begin() == "a10-node01");

  // Every flag is in the documented lists.
  for (const auto& f : flags_in(file(files, "megatron_deepspeed_args.sh").text)) {
    INFO(f);
    CHECK(documented_argument("Megatron-DeepSpeed", f));
  }
  for (const auto& f : flags_in(file(files, "launch_deepspeed.sh").text)) {
    INFO(f);
    CHECK(documented_argument("deepspeed launcher", f));
  }
  // Batch flags equal the JSON (Megatron-DeepSpeed resets the DeepSpeed batch from them).
  const std::string args = file(files, "megatron_deepspeed_args.sh").text;
  CHECK(args.find("--micro-batch-size 1\n") != std::string::npos);
  CHECK(args.find("--global-batch-size 64\n") != std::string::npos);
  CHECK(args.find("--zero-stage 1\n") != std::string::npos);
  CHECK(args.find("--pipeline-model-parallel-size 8\n") != std::string::npos);

  // The uneven split goes to the shim, as transformer layers summing to 40.
  const std::string launch = file(files, "launch_deepspeed.sh").text;
  CHECK(launch.find("export DS_PIPE_PARTITION=4-4-6-6-6-6-5-3\n") != std::string::npos);
  // PLAN.md states what upstream would run instead and its cost from the estimator.
  const LaunchPlan even = make_launch_plan(DpMethod::zero1, {6, 5, 5, 5, 5, 5, 5, 6});
  const std::string plan_md = file(files, "PLAN.md").text;
  CHECK(plan_md.find(fmt::format("estimated {:.4f} s/step instead of {:.4f}", even.estimate.step_s,
                                 lp.estimate.step_s)) != std::string::npos);
  CHECK(even.estimate.step_s > lp.estimate.step_s);
}

TEST_CASE("an even DeepSpeed split needs no shim", "[launch]") {
  const auto files = launch_files(make_launch_plan(DpMethod::zero1, {6, 5, 5, 5, 5, 5, 5, 6}));
  CHECK_FALSE(has_file(files, "ds_explicit_partition.py"));
  CHECK(file(files, "launch_deepspeed.sh").text.find("DS_PIPE_PARTITION") == std::string::npos);
}

TEST_CASE("Megatron-LM plan: the uneven split as a layout, torchtitan parts in order",
          "[launch]") {
  const std::vector<int> partition{5, 4, 6, 6, 6, 6, 5, 4};
  // llama2_13B has DeepSpeed profiles only: estimate as zero1, write the files of a dp row.
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, partition);
  lp.point.method = DpMethod::dp;
  const auto files = launch_files(lp);
  const std::string args = file(files, "megatron_lm_args.sh").text;
  CHECK(args.find("--pipeline-model-parallel-layout 'Et*4|t*4|t*6|t*6|t*6|t*6|t*5|t*3L'\n") !=
        std::string::npos);
  const auto flags = flags_in(args);
  CHECK(std::find(flags.begin(), flags.end(), "--use-distributed-optimizer") == flags.end());
  for (const auto& f : flags_in(args)) {
    INFO(f);
    CHECK(documented_argument("Megatron-LM", f));
  }
  for (const auto& f : flags_in(file(files, "launch_megatron_lm.sh").text)) {
    INFO(f);
    CHECK(documented_argument("torchrun", f));
  }
  // torchtitan (an fsdp row: torchtitan's DDP is 1-D only): every transformer layer once, in
  // order, the split as planned.
  CHECK_FALSE(has_file(files, "torchtitan.toml"));
  lp.point.method = DpMethod::fsdp;
  const std::string toml = file(launch_files(lp), "torchtitan.toml").text;
  const TomlParts parts = toml_parts(toml);
  CHECK(parts.ordered);
  CHECK(parts.per_part == transformer_layers_per_stage(partition));
  CHECK(toml.find("[\"tok_embeddings\", \"layers.0\"") != std::string::npos);
  CHECK(toml.find("\"norm\", \"output\"],\n]") != std::string::npos);
  CHECK(toml.find("data_parallel_shard_degree = 4\n") != std::string::npos);
  // Keys are documented for torchtitan v0.2.x.
  std::istringstream in(toml);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == ' ' || line[0] == ']') {
      continue;
    }
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const std::string key = line.substr(0, line.find(' '));
    INFO(section << "." << key);
    CHECK(documented_argument("torchtitan TOML", section + "." + key));
  }
}

TEST_CASE("an overlapped gradient reduction reaches Megatron-LM and DeepSpeed", "[launch]") {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  const auto has = [](const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
  };
  // Not asked (and never with the zerosearch estimator): the frameworks' defaults.
  auto files = launch_files(lp);
  CHECK(has(file(files, "ds_config.json").text, "\"overlap_comm\": false"));
  NativeSettings settings;
  settings.overlap_grad_reduce = true;
  const EstimateContext ctx = with_native_settings(*lp.ctx, settings);
  lp.ctx = &ctx;
  files = launch_files(lp);
  CHECK(has(file(files, "ds_config.json").text, "\"overlap_comm\": true"));
  lp.point.method = DpMethod::dp;
  files = launch_files(lp);
  const std::string args = file(files, "megatron_lm_args.sh").text;
  CHECK(has(args, "--overlap-grad-reduce"));
  for (const auto& f : flags_in(args)) {
    INFO(f);
    CHECK(documented_argument("Megatron-LM", f));
  }
  CHECK_FALSE(has_file(files, "torchtitan.toml")); // a dp plan with pp 8: Megatron-LM only
}

TEST_CASE("overlapped tp collectives reach Megatron-LM (--tp_comm_overlap)", "[launch]") {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  lp.point.method = DpMethod::dp;
  const auto args = [&] { return file(launch_files(lp), "megatron_lm_args.sh").text; };
  CHECK(args().find("--tp-comm-overlap") == std::string::npos);
  NativeSettings settings;
  settings.tp_comm_overlap = true;
  const EstimateContext ctx = with_native_settings(*lp.ctx, settings);
  lp.ctx = &ctx;
  CHECK(args().find("--tp-comm-overlap") == std::string::npos); // tp 1: nothing to overlap
  lp.point.tp = 2;
  lp.point.dp = 2;
  CHECK(args().find("--tp-comm-overlap") != std::string::npos);
  CHECK(documented_argument("Megatron-LM", "--tp-comm-overlap"));
}

TEST_CASE("the gradient reduction's dtype as estimated: Megatron-LM flags, DeepSpeed's key",
          "[launch]") {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  lp.point.method = DpMethod::dp;
  const auto args = [&] { return file(launch_files(lp), "megatron_lm_args.sh").text; };
  CHECK(args().find("--grad-reduce-in-bf16") == std::string::npos); // unset: the default
  CHECK(args().find("--accumulate-allreduce-grads-in-fp32") == std::string::npos);
  NativeSettings settings;
  settings.grad_reduce_fp32 = false;
  const EstimateContext off = with_native_settings(*lp.ctx, settings);
  lp.ctx = &off;
  CHECK(args().find("--grad-reduce-in-bf16") != std::string::npos);
  settings.grad_reduce_fp32 = true;
  const EstimateContext on = with_native_settings(*lp.ctx, settings);
  lp.ctx = &on;
  CHECK(args().find("--accumulate-allreduce-grads-in-fp32") != std::string::npos);
  CHECK(args().find("--grad-reduce-in-bf16") == std::string::npos);
  CHECK(documented_argument("Megatron-LM", "--grad-reduce-in-bf16"));
  CHECK(documented_argument("Megatron-LM", "--accumulate-allreduce-grads-in-fp32"));
  lp.point.method = DpMethod::zero1;
  const auto j = nlohmann::json::parse(file(launch_files(lp), "ds_config.json").text);
  REQUIRE(j.contains("fp32_allreduce"));
  CHECK(j["fp32_allreduce"] == true);
  CHECK(documented_argument("DeepSpeed JSON", "fp32_allreduce"));
}

TEST_CASE("fp32 gradient accumulation as estimated: DeepSpeed's data_types key", "[launch]") {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  const auto config = [&] {
    return nlohmann::json::parse(file(launch_files(lp), "ds_config.json").text);
  };
  CHECK_FALSE(config().contains("data_types")); // off: DeepSpeed's default with ZeRO-1
  NativeSettings settings;
  settings.grad_accum_fp32 = true;
  const EstimateContext on = with_native_settings(*lp.ctx, settings);
  lp.ctx = &on;
  const auto j = config();
  REQUIRE(j.contains("data_types"));
  CHECK(j["data_types"]["grad_accum_dtype"] == "fp32");
  CHECK(documented_argument("DeepSpeed JSON", "data_types"));
  for (const auto& [key, value] : j.at("data_types").items()) {
    CHECK(documented_argument("DeepSpeed JSON data_types", key));
  }
}

TEST_CASE("a plan estimated with a compiled loss compiles it in torchtitan", "[launch]") {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  NativeSettings settings;
  settings.fused_loss = true;
  const EstimateContext ctx = with_native_settings(*lp.ctx, settings);
  lp.ctx = &ctx;
  lp.point.method = DpMethod::fsdp;
  const std::string toml = file(launch_files(lp), "torchtitan.toml").text;
  CHECK(toml.find("\n[compile]\nenable = true\ncomponents = [\"loss\"]\n") != std::string::npos);
  CHECK(documented_argument("torchtitan TOML", "compile.enable"));
  CHECK(documented_argument("torchtitan TOML", "compile.components"));
  // Fused layers (--fused_layers: torch.compile of the model) compile the blocks too.
  settings.fused_layers = true;
  const EstimateContext both = with_native_settings(*lp.ctx, settings);
  lp.ctx = &both;
  CHECK(file(launch_files(lp), "torchtitan.toml").text.find(
            "\n[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n") != std::string::npos);
  settings.fused_loss = false;
  const EstimateContext model_only = with_native_settings(*lp.ctx, settings);
  lp.ctx = &model_only;
  CHECK(file(launch_files(lp), "torchtitan.toml").text.find(
            "\n[compile]\nenable = true\ncomponents = [\"model\"]\n") != std::string::npos);
}

TEST_CASE("a plan estimated with a fused loss is not written for a framework whose loss is fp32",
          "[launch]") {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  NativeSettings settings;
  settings.fused_loss = true;
  const EstimateContext ctx = with_native_settings(*lp.ctx, settings);
  lp.ctx = &ctx;
  const auto refused_for_loss = [](const LaunchChoice& c) {
    std::vector<std::string> refused;
    for (const auto& [target, why] : c.refused) {
      if (why.find("--fused_loss on") != std::string::npos &&
          why.find("fp32 softmax of the logits") != std::string::npos) {
        refused.push_back(target);
      }
    }
    std::sort(refused.begin(), refused.end());
    return refused;
  };
  // Megatron-LM runs this native zero1 plan with its distributed optimizer: refused too.
  CHECK(refused_for_loss(launch_choice(lp)) ==
        std::vector<std::string>{"deepspeed", "megatron_deepspeed", "megatron_lm"});
  // Without it the same ZeRO-1 plan is written for DeepSpeed and Megatron-DeepSpeed, and the
  // dp plan for Megatron-LM, which the fused loss refuses too.
  const LaunchChoice plain = launch_choice(make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4}));
  CHECK(std::count(plain.written.begin(), plain.written.end(), "deepspeed") == 1);
  CHECK(std::count(plain.written.begin(), plain.written.end(), "megatron_deepspeed") == 1);
  LaunchPlan dp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  dp.point.method = DpMethod::dp;
  const LaunchChoice plain_dp = launch_choice(dp);
  CHECK(std::count(plain_dp.written.begin(), plain_dp.written.end(), "megatron_lm") == 1);
  dp.ctx = &ctx;
  CHECK(refused_for_loss(launch_choice(dp)) == std::vector<std::string>{"megatron_lm"});
}

TEST_CASE("an interleaved ZeRO plan is not written for DeepSpeed's pipeline engine", "[launch]") {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  lp.point.virtual_stages = 5; // 40 layers in 8 x 5 chunks of one layer
  const LaunchChoice c = launch_choice(lp);
  std::vector<std::string> refused;
  for (const auto& [target, why] : c.refused) {
    if (why.find("not interleaved 1F1B with 5 virtual stages") != std::string::npos) {
      refused.push_back(target);
    }
  }
  std::sort(refused.begin(), refused.end());
  CHECK(refused == std::vector<std::string>{"deepspeed", "megatron_deepspeed"});
  CHECK(std::count(c.written.begin(), c.written.end(), "deepspeed") == 0);
}

TEST_CASE("torchtitan interleaves uneven chunks as estimated, every layer once", "[launch]") {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {6, 5, 5, 5, 5, 5, 5, 6});
  lp.point.method = DpMethod::fsdp;
  lp.point.virtual_stages = 2; // 16 chunks for llama2_13B's 40 layers: uneven
  const std::string toml = file(launch_files(lp), "torchtitan.toml").text;
  CHECK(toml.find("pipeline_parallel_schedule = \"Interleaved1F1B\"") != std::string::npos);
  const TomlParts parts = toml_parts(toml);
  CHECK(parts.ordered);
  CHECK(parts.layers == 40);
  CHECK(parts.per_part == interleaved_chunks(40, 8, 2));
}

TEST_CASE("the method table's launch column picks the frameworks", "[launch]") {
  // FSDP with a pipeline: torchtitan only (Megatron-LM, megatron/training/arguments.py:1034 at
  // d98e8a64: '--use-torch-fsdp2 is not supported with pipeline parallelism').
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {6, 5, 5, 5, 5, 5, 5, 6});
  lp.point.method = DpMethod::fsdp;
  LaunchChoice c = launch_choice(lp);
  CHECK(c.written == std::vector<std::string>{"torchtitan"});
  lp.point.method = DpMethod::zero1;
  c = launch_choice(lp);
  CHECK(c.written == std::vector<std::string>{"deepspeed", "megatron_deepspeed"});
  // dp with a pipeline: Megatron-LM only (torchtitan's DDP is 1-D only, see test_launch_rules).
  lp.point.method = DpMethod::dp;
  c = launch_choice(lp);
  CHECK(c.written == std::vector<std::string>{"megatron_lm"});
  // Every method of the table reaches a framework through its launch column.
  for (const DpMethodInfo& m : dp_methods()) {
    INFO(m.name);
    CHECK((m.launch.kind == DpLaunchKind::deepspeed_zero) == (m.launch.zero_stage >= 0));
    CHECK((m.launch.kind == DpLaunchKind::deepspeed_zero) == (m.flavour == Flavour::deepspeed));
  }
  // The registry lists every target with the versions it writes for.
  const auto targets = launch_targets();
  REQUIRE(targets.size() == 5);
  CHECK(std::string(targets.back().name) == "slurm");
  for (const auto& t : targets) {
    CHECK(std::string(t.versions).size() > 5);
  }
}

namespace {

/// The 32 GPUs of make_launch_plan as one stage at tp 2 x dp 16 (4 micro-batches of the global
/// batch 64), the 40 layers, the embedding and the loss on it.
LaunchPlan tp2_dp16_plan(DpMethod method) {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  lp.point.method = method;
  lp.point.tp = 2;
  lp.point.pp = 1;
  lp.point.dp = 16;
  lp.point.num_micro_batches = 64 / 16;
  lp.estimate.partition = {42};
  return lp;
}

} // namespace

TEST_CASE("a ZeRO-3 plan with tp > 1 runs under Megatron-DeepSpeed", "[launch][zero3]") {
  // The native estimator's zero3 at tp 2 (docs/native.md §4): Megatron-DeepSpeed builds the
  // tensor-parallel model under deepspeed.zero.Init(mpu=...) (pretrain_gpt.py), so its
  // arguments carry tp and DeepSpeed's config stage 3; DeepSpeed's pipeline engine is off.
  LaunchPlan lp = tp2_dp16_plan(DpMethod::zero3);
  CHECK(launch_choice(lp).written == std::vector<std::string>{"deepspeed", "megatron_deepspeed"});
  const auto files = launch_files(lp);
  const auto j = nlohmann::json::parse(file(files, "ds_config.json").text);
  CHECK(j.at("zero_optimization").at("stage").get<int>() == 3);
  CHECK(j.at("train_batch_size").get<int>() == 64);
  CHECK(j.at("gradient_accumulation_steps").get<int>() == 4); // 64 / (1 x 16)
  CHECK_FALSE(j.contains("pipeline"));
  const std::string args = file(files, "megatron_deepspeed_args.sh").text;
  CHECK(args.find("--tensor-model-parallel-size 2") != std::string::npos);
  CHECK(args.find("--pipeline-model-parallel-size 1") != std::string::npos);
  CHECK(args.find("--no-pipeline-parallel") != std::string::npos);
  CHECK(args.find("--zero-stage 3") != std::string::npos);
}

TEST_CASE("Megatron's sequence parallelism is written only where the framework sums the norm "
          "gradients over tp",
          "[launch][zero3][sp]") {
  // A native zero3 plan at tp 2 (32 GPUs: tp 2 x dp 16, pp 1), its estimate with sequence
  // parallelism (--sequence_parallel on, the default): Megatron-DeepSpeed under --deepspeed
  // never sums the norm weights' gradients over tp (megatron/training.py train_step calls
  // optimizer.reduce_model_grads only without --deepspeed; DeepSpeed ZeRO ignores the
  // parameters' sequence_parallel attribute), so no Megatron-DeepSpeed files, at any ZeRO stage.
  LaunchPlan lp = tp2_dp16_plan(DpMethod::zero3);
  NativeSettings settings; // sequence_parallel on
  const EstimateContext on = with_native_settings(*lp.ctx, settings);
  lp.ctx = &on;
  const auto md_refusal = [&] {
    for (const auto& [target, why] : launch_choice(lp).refused) {
      if (target == "megatron_deepspeed") return why;
    }
    return std::string();
  };
  const std::string why = md_refusal();
  CHECK(why == "no Megatron-DeepSpeed files: the plan assumes Megatron's sequence parallelism "
               "(tp 2), whose norm-weight gradients Megatron-DeepSpeed sums over tp only without "
               "--deepspeed (megatron/training.py train_step, optimizer.reduce_model_grads) and "
               "DeepSpeed's ZeRO never does, so the tp ranks' norm weights would drift apart; "
               "plan with --sequence_parallel off");
  CHECK(launch_choice(lp).written == std::vector<std::string>{"deepspeed"});
  // ds_config.json alone is no launcher: one line, exit 2 (InputError), every reason in it.
  CHECK_THROWS_AS(launch_files(lp), InputError);
  CHECK_THROWS_WITH(launch_files(lp),
                    Catch::StartsWith("cannot emit: no framework can run this plan: ") &&
                        Catch::Contains(why) && !Catch::Contains("\n"));
  // The same at ZeRO-1 and ZeRO-2 (pp 1), and not at tp 1, where there is no sequence split.
  for (const DpMethod m : {DpMethod::zero1, DpMethod::zero2}) {
    lp.point.method = m;
    CHECK(md_refusal() == why);
  }
  lp.point.method = DpMethod::zero3;
  lp.point.tp = 1;
  lp.point.dp = 32;
  lp.point.num_micro_batches = 2;
  CHECK(md_refusal().empty());
  // Estimated without it (--sequence_parallel off: activations not split over tp, all-reduces
  // instead of all-gathers and reduce-scatters): written, and the file runs without it.
  lp.point.tp = 2;
  lp.point.dp = 16;
  lp.point.num_micro_batches = 4;
  settings.sequence_parallel = false;
  const EstimateContext off = with_native_settings(*lp.ctx, settings);
  lp.ctx = &off;
  CHECK(launch_choice(lp).written == std::vector<std::string>{"deepspeed", "megatron_deepspeed"});
  const std::string args = file(launch_files(lp), "megatron_deepspeed_args.sh").text;
  CHECK(args.find("  --tensor-model-parallel-size 2\n  --pipeline-model-parallel-size 1\n  "
                  "--no-pipeline-parallel\n") != std::string::npos);
  CHECK(args.find("  --zero-stage 3\n") != std::string::npos);
  CHECK(args.find("--sequence-parallel") == std::string::npos);
}

TEST_CASE("FSDP at tp > 1: Megatron-LM and torchtitan split the sequence as estimated",
          "[launch][sp]") {
  // The same 32 GPUs as fsdp. Megatron-LM sums the sequence-parallel norms' gradients over tp in
  // finalize_model_grads (_allreduce_non_tensor_model_parallel_grads, FSDP2's DTensor grads
  // unsharded first; megatron/core/distributed/finalize_model_grads.py at d98e8a64) and takes
  // --sequence-parallel as estimated; torchtitan v0.2.2 always splits (SequenceParallel on the
  // norms in apply_tp; DTensor sums the replicated weights' gradients).
  LaunchPlan lp = tp2_dp16_plan(DpMethod::fsdp);
  NativeSettings settings;
  const EstimateContext on = with_native_settings(*lp.ctx, settings);
  lp.ctx = &on;
  CHECK(launch_choice(lp).written == std::vector<std::string>{"megatron_lm", "torchtitan"});
  auto files = launch_files(lp);
  CHECK(file(files, "megatron_lm_args.sh").text.find("  --sequence-parallel\n") != std::string::npos);
  CHECK(file(files, "torchtitan.toml").text.find("tensor_parallel_degree = 2\n") != std::string::npos);
  settings.sequence_parallel = false;
  const EstimateContext off = with_native_settings(*lp.ctx, settings);
  lp.ctx = &off;
  const LaunchChoice c = launch_choice(lp);
  CHECK(c.written == std::vector<std::string>{"megatron_lm"});
  REQUIRE(c.refused.size() == 3); // also deepspeed and megatron_deepspeed (no ZeRO method)
  bool said = false;
  for (const auto& [target, why] : c.refused) {
    said = said || (target == "torchtitan" &&
                    why == "no torchtitan files: torchtitan v0.2.2 always runs sequence "
                           "parallelism at tp > 1 (SequenceParallel on the norms, apply_tp in "
                           "torchtitan/models/llama3/infra/parallelize.py), and the plan was "
                           "estimated without it (--sequence_parallel off, tp 2); plan with "
                           "--sequence_parallel on");
  }
  CHECK(said);
  files = launch_files(lp);
  CHECK(file(files, "megatron_lm_args.sh").text.find("--sequence-parallel") == std::string::npos);
}

TEST_CASE("zero1 at tp > 1 runs as Megatron-LM's distributed optimizer, sequence-parallel or not",
          "[launch][zero1][sp]") {
  // A native zero1 plan at tp 2 (32 GPUs: tp 2 x dp 16, pp 1). ZeRO-1 is Megatron-Core's
  // distributed optimizer (--use-distributed-optimizer: fp32 master weights and Adam's states
  // / dp, gradients reduce-scattered, parameters all-gathered), and Megatron-LM sums the
  // sequence-parallel norm gradients over tp itself (finalize_model_grads,
  // _allreduce_non_tensor_model_parallel_grads at d98e8a64): written with --sequence-parallel,
  // and with the estimate's bf16 gradients (--grad-reduce-in-bf16; DeepSpeed's 2 bytes).
  LaunchPlan lp = tp2_dp16_plan(DpMethod::zero1);
  NativeSettings settings; // sequence_parallel on, grad_reduce_fp32 unset
  const EstimateContext on = with_native_settings(*lp.ctx, settings);
  lp.ctx = &on;
  CHECK(launch_choice(lp).written == std::vector<std::string>{"deepspeed", "megatron_lm"});
  auto files = launch_files(lp);
  std::string args = file(files, "megatron_lm_args.sh").text;
  CHECK(args.find("\n  --tensor-model-parallel-size 2\n  --pipeline-model-parallel-size 1\n  "
                  "--use-distributed-optimizer\n  --num-layers 40\n") != std::string::npos);
  CHECK(args.find("\n  --sequence-parallel\n  --grad-reduce-in-bf16\n  --lr ") != std::string::npos);
  CHECK(args.find("--overlap-grad-reduce") == std::string::npos);
  CHECK(args.find("--accumulate-allreduce-grads-in-fp32") == std::string::npos);
  CHECK(args.find("--use-torch-fsdp2") == std::string::npos);
  for (const auto& f : flags_in(args)) {
    INFO(f);
    CHECK(documented_argument("Megatron-LM", f));
  }
  CHECK(file(files, "launch_megatron_lm.sh").text.find("export CUDA_DEVICE_MAX_CONNECTIONS=1") !=
        std::string::npos);
  // --grad_reduce_fp32 off: the same bf16 reduction; --overlap_grad_reduce on: overlapped.
  settings.grad_reduce_fp32 = false;
  settings.overlap_grad_reduce = true;
  const EstimateContext off16 = with_native_settings(*lp.ctx, settings);
  lp.ctx = &off16;
  args = file(launch_files(lp), "megatron_lm_args.sh").text;
  CHECK(args.find("\n  --sequence-parallel\n  --overlap-grad-reduce\n  --grad-reduce-in-bf16\n") !=
        std::string::npos);
  CHECK(args.find("--overlap-param-gather") == std::string::npos);
  // Estimated without sequence parallelism: Megatron-DeepSpeed too, and no --sequence-parallel.
  settings = NativeSettings{};
  settings.sequence_parallel = false;
  const EstimateContext off = with_native_settings(*lp.ctx, settings);
  lp.ctx = &off;
  CHECK(launch_choice(lp).written ==
        std::vector<std::string>{"deepspeed", "megatron_deepspeed", "megatron_lm"});
  args = file(launch_files(lp), "megatron_lm_args.sh").text;
  CHECK(args.find("--sequence-parallel") == std::string::npos);
  CHECK(args.find("\n  --use-distributed-optimizer\n") != std::string::npos);
  CHECK(args.find("\n  --grad-reduce-in-bf16\n") != std::string::npos);
}

TEST_CASE("an interleaved zero1 plan is written for Megatron-LM", "[launch][zero1]") {
  // DeepSpeed's pipeline engine has no interleaved 1F1B; Megatron-LM runs it with the
  // distributed optimizer.
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  lp.point.virtual_stages = 5; // 40 layers in 8 x 5 chunks of one layer
  const EstimateContext native = with_native_settings(*lp.ctx, NativeSettings{});
  lp.ctx = &native;
  const LaunchChoice c = launch_choice(lp);
  CHECK(c.written == std::vector<std::string>{"megatron_lm"});
  const std::string args = file(launch_files(lp), "megatron_lm_args.sh").text;
  CHECK(args.find("\n  --tensor-model-parallel-size 1\n  --pipeline-model-parallel-size 8\n  "
                  "--use-distributed-optimizer\n") != std::string::npos);
  CHECK(args.find("\n  --num-virtual-stages-per-pipeline-rank 5\n") != std::string::npos);
  CHECK(args.find("\n  --grad-reduce-in-bf16\n") != std::string::npos);
  CHECK(args.find("--sequence-parallel") == std::string::npos); // tp 1
}

TEST_CASE("zero1 plans Megatron-LM's distributed optimizer does not run as estimated",
          "[launch][zero1]") {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  const auto refusal = [&] {
    for (const auto& [target, why] : launch_choice(lp).refused) {
      if (target == "megatron_lm") return why;
    }
    return std::string();
  };
  // The zerosearch estimator's zero1 is DeepSpeed's measured profiles.
  CHECK(refusal() == "no Megatron-LM files: zero1 was estimated from DeepSpeed's measured "
                     "profiles (--estimator zerosearch); Megatron-DeepSpeed runs it");
  NativeSettings settings;
  settings.grad_reduce_fp32 = true;
  const EstimateContext fp32 = with_native_settings(*lp.ctx, settings);
  lp.ctx = &fp32;
  // DeepSpeed's 2-byte gradients beside an fp32 reduction: Megatron-LM's buffer would be fp32.
  CHECK(refusal() == "no Megatron-LM files: the plan was estimated with --grad_reduce_fp32 on "
                     "and zero1's 16-bit gradients (DeepSpeed keeps 2 bytes), and Megatron-LM "
                     "keeps its gradient buffer in the reduction's dtype (4 bytes: "
                     "param_and_grad_buffer.py); plan zero1 with --grad_reduce_fp32 off or "
                     "unset, or Megatron-DeepSpeed runs it");
  CHECK(launch_choice(lp).written == std::vector<std::string>{"deepspeed", "megatron_deepspeed"});
  settings.grad_reduce_fp32.reset();
  settings.grad_accum_fp32 = true;
  const EstimateContext bf16_optimizer = with_native_settings(*lp.ctx, settings);
  lp.ctx = &bf16_optimizer;
  CHECK(refusal().find("DeepSpeed's BF16_Optimizer") != std::string::npos);
  settings.grad_accum_fp32 = false;
  const EstimateContext plain = with_native_settings(*lp.ctx, settings);
  lp.ctx = &plain;
  CHECK(refusal().empty());
  lp.point.offload = Offload::optimizer;
  CHECK(refusal() == "no Megatron-LM files: the plan was estimated with DeepSpeed's ZeRO-Offload "
                     "(--offload optimizer: DeepSpeedCPUAdam on the host); Megatron-DeepSpeed "
                     "runs it");
  lp.point.offload = Offload::none;
  // The other refusals stay: pure 16-bit training (no bf16 main parameters in Megatron-LM).
  settings.master_weights = false;
  const EstimateContext pure = with_native_settings(*lp.ctx, settings);
  lp.ctx = &pure;
  CHECK(refusal().find("--use-precision-aware-optimizer") != std::string::npos);
  // ZeRO-2 and ZeRO-3 stay DeepSpeed's.
  lp.ctx = &plain;
  lp.point.method = DpMethod::zero2;
  lp.point.pp = 1;
  lp.point.dp = 32;
  lp.point.num_micro_batches = 2;
  lp.estimate.partition = {42};
  CHECK(refusal() == "no Megatron-LM files: zero2 is a DeepSpeed ZeRO method (Megatron-DeepSpeed "
                     "runs it)");
}

TEST_CASE("plans a framework rejects get one-line errors naming the rule", "[launch]") {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  lp.point.method = DpMethod::zero2;
  CHECK_THROWS_WITH(launch_files(lp), Catch::Contains("PipelineEngine rejects ZeRO stage 2"));
  lp.point.method = DpMethod::zero1;
  lp.point.tp = 3;
  CHECK_THROWS_WITH(launch_files(lp), Catch::Contains("num_attention_heads (40) to be a multiple"));
  lp.point.tp = 1;
  lp.estimate.oom = true;
  CHECK_THROWS_WITH(launch_files(lp), Catch::Contains("OOM"));
  lp.estimate.oom = false;
  lp.point.mbs = 3;
  CHECK_THROWS_WITH(launch_files(lp), Catch::Contains("train_batch_size == micro x accumulation x dp"));
}

TEST_CASE("the output folder: created, refused when it holds other files", "[launch]") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("zs_launch_{}", ::getpid());
  fs::remove_all(dir);
  CHECK_NOTHROW(check_launch_dir(dir)); // missing: fine, created on write
  const auto files = launch_files(make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4}));
  write_launch_files(dir / "a" / "b", files);
  CHECK(fs::exists(dir / "a" / "b" / "PLAN.md"));
  CHECK((fs::status(dir / "a" / "b" / "launch_deepspeed.sh").permissions() & fs::perms::owner_exec) !=
        fs::perms::none);
  // Writing an even plan over it removes the shim it no longer needs.
  write_launch_files(dir / "a" / "b",
                     launch_files(make_launch_plan(DpMethod::zero1, {6, 5, 5, 5, 5, 5, 5, 6})));
  CHECK_FALSE(fs::exists(dir / "a" / "b" / "ds_explicit_partition.py"));
  std::ofstream(dir / "a" / "b" / "notes.txt") << "mine";
  CHECK_THROWS_WITH(check_launch_dir(dir / "a" / "b"), Catch::Contains("holds 'notes.txt'"));
  CHECK_THROWS_WITH(write_launch_files(dir / "a" / "b", files), Catch::Contains("holds 'notes.txt'"));
  std::ofstream(dir / "plain") << "x";
  CHECK_THROWS_WITH(check_launch_dir(dir / "plain"), Catch::Contains("is a file"));
  fs::remove_all(dir);
}

TEST_CASE("every documented list names its source", "[launch]") {
  for (const ArgumentList& l : argument_lists()) {
    CHECK(std::string(l.source).size() > 10);
    CHECK_FALSE(l.names.empty());
  }
  CHECK(documented_argument("Megatron-LM", "--pipeline-model-parallel-layout"));
  CHECK_FALSE(documented_argument("Megatron-DeepSpeed", "--pipeline-model-parallel-layout"));
  CHECK_FALSE(documented_argument("Megatron-LM", "--use-tp-pp-dp-mapping"));
}

TEST_CASE("context parallelism reaches the frameworks that run it", "[launch][cp]") {
  // 32 GPUs: tp 1 x cp 2 x dp 2 x pp 8.
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  const EstimateContext ctx = with_native_settings(*lp.ctx, NativeSettings{});
  lp.ctx = &ctx;
  lp.point.cp = 2;
  lp.point.dp = 2;
  lp.point.num_micro_batches = ctx.global_batch / (lp.point.dp * lp.point.mbs);
  const auto has = [](const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
  };
  // Megatron-LM: --context-parallel-size with the ring as Transformer Engine's p2p.
  lp.point.method = DpMethod::dp;
  auto files = launch_files(lp);
  std::string args = file(files, "megatron_lm_args.sh").text;
  CHECK(has(args, "--context-parallel-size 2\n"));
  CHECK(has(args, "--cp-comm-type p2p\n"));
  CHECK(documented_argument("Megatron-LM", "--context-parallel-size"));
  CHECK(documented_argument("Megatron-LM", "--cp-comm-type"));
  CHECK(has(file(files, "hostfile").text, "dp 2, cp 2 (ring), micro-batch"));
  CHECK(has(file(files, "PLAN.md").text, "Context parallelism: each sequence split over cp 2 GPUs"));
  lp.point.cp_comm = CpComm::a2a;
  CHECK(has(file(launch_files(lp), "megatron_lm_args.sh").text, "--cp-comm-type a2a\n"));
  // Megatron-DeepSpeed: Ulysses only.
  lp.point.method = DpMethod::zero1;
  files = launch_files(lp);
  CHECK(has(file(files, "megatron_deepspeed_args.sh").text, "--ds-sequence-parallel-size 2\n"));
  CHECK(documented_argument("Megatron-DeepSpeed", "--ds-sequence-parallel-size"));
  lp.point.cp_comm = CpComm::ring;
  LaunchChoice c = launch_choice(lp);
  // Megatron-LM runs the ring (and zero1 as its distributed optimizer, sharded over dp x cp).
  CHECK(c.written == std::vector<std::string>{"deepspeed", "megatron_lm"});
  CHECK(has(file(launch_files(lp), "megatron_lm_args.sh").text,
            "--context-parallel-size 2\n  --cp-comm-type p2p\n"));
  CHECK(has(file(launch_files(lp), "megatron_lm_args.sh").text, "\n  --use-distributed-optimizer\n"));
  REQUIRE_FALSE(c.refused.empty());
  bool said = false;
  for (const auto& [target, why] : c.refused) {
    said = said || (target == "megatron_deepspeed" && has(why, "DeepSpeed-Ulysses only"));
  }
  CHECK(said);
  // torchtitan: context_parallel_degree, the ring as its shard-by-shard rotation ("alltoall";
  // its default "allgather" is the all-gather variant), Ulysses refused.
  lp.point.method = DpMethod::fsdp;
  files = launch_files(lp);
  CHECK(has(file(files, "torchtitan.toml").text,
            "context_parallel_degree = 2\ncontext_parallel_rotate_method = \"alltoall\"\n"));
  CHECK(documented_argument("torchtitan TOML", "parallelism.context_parallel_rotate_method"));
  lp.point.cp_comm = CpComm::allgather;
  CHECK(has(file(launch_files(lp), "torchtitan.toml").text,
            "context_parallel_rotate_method = \"allgather\"\n"));
  // PyTorch's all-gather rotater as torch overlaps it: the same torchtitan setting; Megatron-LM
  // has no such method and refuses it.
  lp.point.cp_comm = CpComm::torch_allgather;
  CHECK(has(file(launch_files(lp), "torchtitan.toml").text,
            "context_parallel_rotate_method = \"allgather\"\n"));
  lp.point.method = DpMethod::dp;
  c = launch_choice(lp);
  CHECK(std::find(c.written.begin(), c.written.end(), "megatron_lm") == c.written.end());
  said = false;
  for (const auto& [target, why] : c.refused) {
    said = said || (target == "megatron_lm" && has(why, "PyTorch's context_parallel"));
  }
  CHECK(said);
  lp.point.method = DpMethod::fsdp;
  lp.point.cp_comm = CpComm::a2a;
  c = launch_choice(lp);
  CHECK(std::find(c.written.begin(), c.written.end(), "torchtitan") == c.written.end());
}

TEST_CASE("a pure 16-bit plan (--master_weights off): DeepSpeed's and torchtitan's keys, or the reason",
          "[launch][master_weights]") {
  LaunchPlan lp = make_launch_plan(DpMethod::zero1, {5, 4, 6, 6, 6, 6, 5, 4});
  const auto ds = [&] {
    return nlohmann::json::parse(file(launch_files(lp), "ds_config.json").text);
  };
  REQUIRE(ds()["bf16"]["enabled"] == true);
  CHECK_FALSE(ds()["bf16"].contains("bf16_master_weights_and_grads")); // mixed: the default
  const EstimateContext* mixed = lp.ctx;
  NativeSettings settings;
  settings.master_weights = false;
  const EstimateContext pure = with_native_settings(*lp.ctx, settings);
  lp.ctx = &pure;
  // DeepSpeed (ZeRO 1-3): a bf16 master partition and bf16 Adam moments.
  CHECK(ds()["bf16"]["bf16_master_weights_and_grads"] == true);
  CHECK(ds()["bf16"]["bf16_optimizer_states"] == true);
  CHECK(documented_argument("DeepSpeed JSON precision", "bf16_master_weights_and_grads"));
  CHECK(documented_argument("DeepSpeed JSON precision", "bf16_optimizer_states"));
  const auto refused = [&](const std::string& target, const std::string& words) {
    for (const auto& [t, why] : launch_choice(lp).refused) {
      if (t == target) return why.find(words) != std::string::npos;
    }
    return false;
  };
  CHECK_FALSE(refused("deepspeed", "--master_weights off"));
  CHECK_FALSE(refused("megatron_deepspeed", "--master_weights off"));
  // ZeRO stage 0 has no 16-bit master weights in DeepSpeed: both DeepSpeed writers say why.
  lp.point.method = DpMethod::zero0;
  CHECK(refused("deepspeed", "ZeRO Stage 1, 2, or 3"));
  CHECK(refused("megatron_deepspeed", "ZeRO Stage 1, 2, or 3"));
  // Megatron-LM lowers its master weights only with the distributed optimizer and not to bf16.
  lp.point.method = DpMethod::dp;
  CHECK(refused("megatron_lm", "--use-precision-aware-optimizer"));
  CHECK(refused("megatron_lm", "--main-params-dtype takes fp32 or fp16"));
  // torchtitan: [training] dtype = "bfloat16" (parameters, gradients and states in bf16).
  lp.point.method = DpMethod::fsdp;
  const std::string toml = file(launch_files(lp), "torchtitan.toml").text;
  CHECK(toml.find("\ndtype = \"bfloat16\"\n") != std::string::npos);
  CHECK(documented_argument("torchtitan TOML", "training.dtype"));
  CHECK(documented_argument("torchtitan main", "--training.dtype"));
  lp.ctx = mixed;
  CHECK(file(launch_files(lp), "torchtitan.toml").text.find("\ndtype = ") == std::string::npos);
}
