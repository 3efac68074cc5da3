// The steps of make_plan (search/plan.cpp), each on the shipped data or a small hand-made case.
#include <catch2/catch.hpp>

#include <algorithm>

#include "fixtures.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/search/plan.hpp"

using namespace zerosearch;
using zerosearch::test::shipped_catalogs;

namespace {

PlanInput llama_on(std::vector<NodeGroup> groups, int gpus_per_node = 4) {
  PlanInput in;
  in.model = "llama2_13B";
  in.cluster = Cluster{std::move(groups), gpus_per_node, {}};
  return in;
}

} // namespace

TEST_CASE("base_model: the catalog's model, or a file's under a name of its own", "[plan]") {
  const PlanInput in = llama_on({{"A10", 1}});
  CHECK(base_model(in, shipped_catalogs().models).num_layers == 40);
  PlanInput file = in;
  file.model_spec = shipped_catalogs().models.find("llama2_13B"); // a file naming a built-in
  CHECK_THROWS_AS(base_model(file, shipped_catalogs().models), InputError);
  file.model_spec->name = "my_llama";
  CHECK(&base_model(file, shipped_catalogs().models) == &*file.model_spec);
}

TEST_CASE("plan_model applies --seq_len and --custom_num_layer", "[plan]") {
  const ModelSpec& llama = shipped_catalogs().models.find("llama2_13B");
  PlanInput in = llama_on({{"A10", 1}});
  std::vector<std::string> warnings;
  CHECK(plan_model(llama, in, warnings).sequence_length == llama.sequence_length);
  CHECK(warnings.empty());
  in.sequence_length = llama.max_position_embeddings + 1;
  in.custom_num_layers = 7; // llama2_13B has a fixed layer count: ignored
  const ModelSpec longer = plan_model(llama, in, warnings);
  CHECK(longer.sequence_length == llama.max_position_embeddings + 1);
  CHECK(longer.num_layers == 40);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("max_position_embeddings") != std::string::npos);

  const ModelSpec& gpt = shipped_catalogs().models.find("gpt2XL");
  REQUIRE(gpt.num_layers_from_cli);
  in.sequence_length = 0;
  CHECK(plan_model(gpt, in, warnings).num_layers == 7);
}

TEST_CASE("node_links: the set's links, the GPU's defaults, or the overrides", "[plan]") {
  const HardwareCatalog& hw = shipped_catalogs().hardware;
  const BandwidthSet& ib = hw.bandwidth_set("ib");
  const GpuSpec& a10 = hw.gpu("A10");
  PlanInput in = llama_on({{"A10", 1}, {"A6000", 1}});
  const LinkF32 set = node_links(in, ib, a10, 0);
  CHECK(set.inter_node_bits_per_s == static_cast<float>(ib.links.at("A10").inter_node_bits_per_s));
  CHECK(set.intra_node_bits_per_s == static_cast<float>(ib.links.at("A10").intra_node_bits_per_s));

  in.inter_node_Gbitps = {100.0, 200.0}; // one per type: the second is type 1's
  CHECK(node_links(in, ib, a10, 1).inter_node_bits_per_s == static_cast<float>(200e9));
  CHECK(node_links(in, ib, a10, 1).intra_node_bits_per_s == set.intra_node_bits_per_s);

  GpuSpec plain;
  plain.name = "Plain"; // no links in the set, no specifications for defaults
  in.inter_node_Gbitps.clear();
  CHECK_THROWS_WITH(node_links(in, ib, plain, 0),
                    "comm type 'ib' has no link bandwidth for node type 'Plain' in hardware.json");
  in.inter_node_Gbitps = {50.0};
  in.intra_node_Gbitps = {400.0};
  const LinkF32 given = node_links(in, ib, plain, 0);
  CHECK(given.inter_node_bits_per_s == static_cast<float>(50e9));
  CHECK(given.intra_node_bits_per_s == static_cast<float>(400e9));
}

TEST_CASE("check_link_overrides: one value or one per node type", "[plan]") {
  PlanInput in = llama_on({{"A10", 1}, {"A6000", 1}});
  in.intra_node_Gbitps = {1, 2};
  CHECK_NOTHROW(check_link_overrides(in));
  in.intra_node_Gbitps = {1, 2, 3};
  CHECK_THROWS_WITH(check_link_overrides(in),
                    "--intra_node_gbps has 3 values but there are 2 node types; give one value "
                    "or one per --node_type");
}

TEST_CASE("add_node_profiles: measured, or analytic with a note", "[plan]") {
  SearchPlan measured = make_plan(llama_on({{"A10", 1}}), shipped_catalogs());
  const EstimateContext& ctx = measured.context;
  CHECK(ctx.deepspeed_profiles[0] != nullptr);
  CHECK(ctx.megatron_profiles[0] == nullptr); // llama2_13B has DeepSpeed profiles only
  CHECK(ctx.slowness[0] == ctx.deepspeed_profiles[0]->layer_times_s.begin()->second[1]);

  EstimateContext analytic = ctx;
  analytic.megatron_profiles[0] = nullptr;
  analytic.deepspeed_profiles[0] = nullptr;
  analytic.slowness[0] = 0.0;
  PlanInput in = llama_on({{"A10", 1}});
  in.profile_source = ProfileSource::analytic;
  std::vector<std::string> notes;
  add_node_profiles(analytic, 0, shipped_catalogs().hardware.gpu("A10"), in, shipped_catalogs(),
                    notes);
  CHECK(analytic.megatron_profiles[0] != nullptr);
  CHECK(analytic.deepspeed_profiles[0] != nullptr);
  CHECK(analytic.generated_profiles.size() == 2);
  CHECK(analytic.profile_source[0].rfind("analytic", 0) == 0);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("measured one ignored (--profile_source analytic)") != std::string::npos);
  CHECK_NOTHROW(check_profile_layers(analytic, 0));
}

TEST_CASE("check_profile_layers: a profile with another layer count is refused", "[plan]") {
  EstimateContext ctx = make_plan(llama_on({{"A10", 1}}), shipped_catalogs()).context;
  CHECK_NOTHROW(check_profile_layers(ctx, 0));
  ctx.model.num_layers = 39;
  CHECK_THROWS_WITH(check_profile_layers(ctx, 0),
                    Catch::Matchers::Contains("has 42 layer times but model llama2_13B needs 41"));
}

TEST_CASE("methods_for_framework: each method once by default, explicit ones need profiles",
          "[plan]") {
  const EstimateContext ctx = make_plan(llama_on({{"A10", 1}}), shipped_catalogs()).context;
  std::vector<std::string> notes;
  // No Megatron-LM profile: the DeepSpeed methods, dp and fsdp through zero0 and zero1.
  CHECK(methods_for_framework(ctx, Framework::automatic, notes) ==
        std::vector<DpMethod>{DpMethod::zero0, DpMethod::zero1, DpMethod::zero2, DpMethod::zero3});
  CHECK(notes.empty());
  CHECK(methods_for_framework(ctx, Framework::deepspeed, notes).size() == 4);
  CHECK_THROWS_WITH(methods_for_framework(ctx, Framework::megatron, notes),
                    "no Megatron-LM profile of llama2_13B on A10 "
                    "(profiles/llama2_13B_A10_megatron.json), which -f m needs for dp, fsdp; "
                    "try -f d");
  // Each framework where it has profiles (-f d on llama2_13B, -f m on gpt2XL): together, every
  // row the table marks as the original's, and only those.
  std::vector<DpMethod> searched = methods_for_framework(ctx, Framework::deepspeed, notes);
  PlanInput gpt = llama_on({{"A10", 1}});
  gpt.model = "gpt2XL";
  const EstimateContext megatron = make_plan(gpt, shipped_catalogs()).context;
  for (const DpMethod m : methods_for_framework(megatron, Framework::megatron, notes)) {
    searched.push_back(m);
  }
  std::sort(searched.begin(), searched.end());
  std::vector<DpMethod> original;
  for (const DpMethodInfo& m : dp_methods()) {
    if (m.original) original.push_back(m.id);
  }
  CHECK(searched == original);
}

TEST_CASE("add_tp_degrees: divisors of the GPUs per node that the profiles have", "[plan]") {
  SearchPlan plan = make_plan(llama_on({{"A10", 1}}, 8), shipped_catalogs());
  // The A10 profiles stop at tp 4: tp 8 is left out with a note.
  REQUIRE_FALSE(plan.tp_degrees.empty());
  CHECK(plan.tp_degrees.front() == std::vector<int>{1, 2, 4});
  bool noted = false;
  for (const auto& n : plan.notes) {
    noted = noted || n.rfind("tp 8 left out: no deepspeed profile of llama2_13B at tp 8", 0) == 0;
  }
  CHECK(noted);

  SearchPlan again;
  again.context = plan.context;
  add_tp_degrees(again, {DpMethod::zero1});
  CHECK(again.methods == std::vector<DpMethod>{DpMethod::zero1});
  CHECK(again.tp_degrees == std::vector<std::vector<int>>{{1, 2, 4}});
}
