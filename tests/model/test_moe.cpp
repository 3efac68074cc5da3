#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "fixtures.hpp"
#include "native_fixtures.hpp"
#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/model/moe.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/model/zero_bubble.hpp"

using namespace zerosearch;

namespace {

NativeGpu gpu(double memory_gib = 80.0) { return test::h100_like(memory_gib, false); }

ModelSpec small_moe() { return test::test_small_moe(); }

NativeContext context(const ModelSpec& m, int gpn = 8) {
  NativeContext c;
  c.model = m;
  c.gpus_per_node = gpn;
  c.gpus = {gpu()};
  return c;
}

DesignPoint point(DpMethod method, int tp, int pp, int dp, int ep, int etp, int gbs = 64) {
  DesignPoint p;
  p.method = method;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.mbs = 1;
  p.num_micro_batches = gbs / dp;
  p.ep = static_cast<std::int16_t>(ep);
  p.etp = static_cast<std::int16_t>(etp);
  return p;
}

NativeEstimate estimate(const NativeContext& c, const DesignPoint& p) {
  const int nodes = (p.tp * p.cp * p.dp * p.pp + c.gpus_per_node - 1) / c.gpus_per_node;
  const NativePlacement where =
      native_placement(c, p, std::vector<int>(static_cast<std::size_t>(nodes), 0));
  REQUIRE(native_invalid_reason(c, p, where).empty());
  return native_estimate(c, p, where);
}

} // namespace

TEST_CASE("all-to-all: each rank's bytes spread over the ranks, node and network at once",
          "[moe]") {
  const A2aLink node{100e9, 10e-6};
  const A2aLink net{6.25e9, 20e-6};
  // 8 ranks in one node, 8 MB each: 7 of 8 shares (7 MB) over NVLink at 100 GB/s = 70 us
  CHECK(all_to_all_s(8e6, 8, 8, node, net) == Approx(10e-6 + 70e-6));
  // 16 ranks, 8 per node: 7 shares of 0.5 MB inside (35 us), 8 over the network at
  // 6.25 GB/s (640 us): the network sets the time, with its latency
  CHECK(all_to_all_s(8e6, 16, 8, node, net) == Approx(20e-6 + 640e-6));
  CHECK(all_to_all_s(8e6, 1, 1, node, net) == 0.0);
  // ep ranks per node: ep ranks etp apart, as many as the node holds
  DesignPoint p;
  p.ep = 8;
  p.etp = 2;
  CHECK(ep_ranks_per_node(p, 8) == 4);
  p.etp = 1;
  CHECK(ep_ranks_per_node(p, 8) == 8);
  p.ep = 2;
  CHECK(ep_ranks_per_node(p, 8) == 2);
}

TEST_CASE("flex dispatcher: a token sent once per destination node and rank (DeepEP, HybridEP)",
          "[moe]") {
  // The chance a group of E/g experts holds one of a token's k: 1 - C(E - E/g, k) / C(E, k).
  // 4 experts, top-2, 2 groups of 2: 1 - C(2,2)/C(4,2) = 1 - 1/6.
  CHECK(group_hit_share(4, 2, 2) == Approx(5.0 / 6.0));
  // One expert per group: k / E.
  CHECK(group_hit_share(4, 2, 4) == Approx(0.5));
  CHECK(group_hit_share(4, 2, 1) == 1.0);
  // 8 experts, top-2, 2 groups of 4: 1 - C(4,2)/C(8,2) = 1 - 6/28.
  CHECK(group_hit_share(8, 2, 2) == Approx(22.0 / 28.0));
  // Qwen3-30B-A3B, 128 experts top-8 on 2 nodes: 1 - C(64,8)/C(128,8) = 0.9969 (the
  // all-to-all sends 8 x 8/16 = 4 copies over the network).
  double none = 1.0;
  for (int i = 0; i < 8; ++i) none *= (64.0 - i) / (128.0 - i);
  CHECK(group_hit_share(128, 8, 2) == Approx(1.0 - none));
  CHECK(group_hit_share(128, 8, 2) == Approx(0.9969).margin(1e-4));

  const A2aLink node{100e9, 1e-6};
  const A2aLink net{10e9, 10e-6};
  // 4 ranks, 2 per node, 4 experts top-2, 1 GB of tokens per GPU (one copy): other node
  // 1 x 5/6 copies over the network (83.3 ms), NVLink (4 - 2) x 1/2 = 1 copy (10 ms): the
  // network sets the time. The all-to-all sends 2 GB: 2 of 4 shares over the network (100 ms).
  CHECK(flex_all_to_all_s(1e9, 4, 2, 4, 2, node, net) == Approx(10e-6 + 5.0 / 6.0 * 0.1));
  CHECK(all_to_all_s(2e9, 4, 2, node, net) == Approx(10e-6 + 0.1));
  // One node of 4 ranks, one expert each: no two copies of a token go to one rank, so the flex
  // dispatcher sends what the all-to-all sends (3 x 1/2 copies = 1.5 GB at 100 GB/s).
  CHECK(flex_all_to_all_s(1e9, 4, 2, 4, 4, node, net) == Approx(1e-6 + 0.015));
  CHECK(all_to_all_s(2e9, 4, 4, node, net) == Approx(1e-6 + 0.015));
  // 2 ranks in a node, 8 experts top-2: the other rank gets 22/28 copies, not 1.
  CHECK(flex_all_to_all_s(1e9, 8, 2, 2, 2, node, net) == Approx(1e-6 + 22.0 / 28.0 * 0.01));
  CHECK(flex_all_to_all_s(1e9, 8, 2, 1, 1, node, net) == 0.0);
  CHECK(std::string(moe_dispatcher_name(MoeDispatcher::hybridep)) == "hybridep");
  CHECK(std::string(moe_dispatcher_name(MoeDispatcher::alltoall)) == "alltoall");
  CHECK_FALSE(flex_dispatcher(MoeDispatcher::alltoall));
  CHECK(flex_dispatcher(MoeDispatcher::deepep));

  // In the estimate (small MoE: 16 experts top-2, ep 8 in one node): per layer and
  // micro-batch 2048 tokens x 1024 x 2 bytes = 4 MiB a copy, 7 x (1 - C(14,2)/C(16,2)) =
  // 7 x 29/120 copies over NVLink at 0.8 x 450 GB/s (the all-to-all: 7/8 x 2 copies).
  const ModelSpec m = small_moe();
  NativeContext c = context(m);
  c.settings.moe_dispatcher = MoeDispatcher::hybridep;
  const NativeEstimate flex = estimate(c, point(DpMethod::dp, 1, 1, 16, 8, 1));
  const double copy = 2048.0 * 1024 * 2;
  const double a2a = 8.4e-6 + 3.4e-6 + 7.0 * 29.0 / 120.0 * copy / (0.8 * 450e9);
  CHECK(flex.stages[0].moe_comm_s == Approx(8 * 2 * 2 * a2a));
  const NativeEstimate plain = estimate(context(m), point(DpMethod::dp, 1, 1, 16, 8, 1));
  CHECK(flex.stages[0].moe_comm_s < plain.stages[0].moe_comm_s);
  // Across two nodes the network carries 92/120 copies of a token instead of 1.
  const NativeEstimate flex16 = estimate(c, point(DpMethod::dp, 1, 1, 16, 16, 1));
  const NativeEstimate plain16 = estimate(context(m), point(DpMethod::dp, 1, 1, 16, 16, 1));
  CHECK(flex16.stages[0].moe_comm_s < plain16.stages[0].moe_comm_s);
}

TEST_CASE("dispatch bytes: the rank's tokens, top-k copies of h, times the imbalance", "[moe]") {
  const ModelSpec m = small_moe();
  DesignPoint p;
  p.tp = 2;
  p.mbs = 2;
  // 2048 x 2 / 2 tokens x 2 copies x 1024 x 2 bytes = 8 MiB; imbalance 1.5: 12 MiB
  CHECK(dispatch_bytes(m, p, 2.0, 1.0) == 2048.0 * 2 / 2 * 2 * 1024 * 2);
  CHECK(dispatch_bytes(m, p, 2.0, 1.5) == 1.5 * 8 * 1024 * 1024);
  ModelSpec capped = m;
  capped.capacity_factor = 1.25;
  CHECK(effective_moe_imbalance(m, 1.5) == 1.5);
  CHECK(effective_moe_imbalance(capped, 1.5) == 1.25); // tokens beyond capacity are dropped
  CHECK(effective_moe_imbalance(m, 0.5) == 1.0);
}

TEST_CASE("expert layouts that cannot be are one-line reasons", "[moe]") {
  const ModelSpec m = small_moe();
  CHECK(moe_invalid_reason(m, point(DpMethod::dp, 2, 1, 8, 8, 2)).empty());
  CHECK(moe_invalid_reason(m, point(DpMethod::dp, 2, 1, 8, 3, 1)) ==
        "--ep 3 does not divide the 16 experts of test-moe");
  CHECK(moe_invalid_reason(m, point(DpMethod::dp, 2, 1, 8, 16, 2)) ==
        "--etp 2 x --ep 16 = 32 does not divide tp 2 x dp 8 = 16 (the GPUs of a pipeline stage "
        "hold the experts as etp x ep x edp)");
  CHECK(moe_invalid_reason(m, point(DpMethod::dp, 1, 1, 16, 1, 3)) ==
        "--etp 3 does not divide the expert FFN width 1024 of test-moe");
  // Methods that shard parameters: the layouts torchtitan's FSDP2 and DeepSpeed ZeRO-3 run.
  CHECK(moe_invalid_reason(m, point(DpMethod::fsdp, 2, 1, 8, 2, 2)).empty());
  CHECK(moe_invalid_reason(m, point(DpMethod::fsdp, 2, 1, 8, 8, 1)).empty());
  CHECK(moe_invalid_reason(m, point(DpMethod::fsdp, 4, 1, 8, 2, 2)) ==
        "--ep 2 --etp 2 with fsdp: torchtitan's FSDP2 runs expert parallelism with etp 1 or "
        "etp = tp 4 only");
  CHECK(moe_invalid_reason(m, point(DpMethod::fsdp, 2, 1, 8, 1, 1)) ==
        "--ep 1 --etp 1 with fsdp: without expert parallelism the experts are split as the "
        "dense MLP (etp = tp 2)");
  CHECK(moe_invalid_reason(m, point(DpMethod::zero3, 1, 1, 16, 8, 1)).empty());
  CHECK(moe_invalid_reason(m, point(DpMethod::zero3, 1, 1, 16, 4, 2)) ==
        "--ep 4 --etp 2 with zero3: DeepSpeed ZeRO-3 shards experts only as AutoEP layers, with "
        "expert_tensor_parallel_size 1 (etp 1)");
  DesignPoint ulysses = point(DpMethod::zero3, 1, 1, 8, 8, 1);
  ulysses.cp = 2;
  CHECK(moe_invalid_reason(m, ulysses) ==
        "--ep 8 --cp 2 with zero3: DeepSpeed's AutoEP with ZeRO Stage 3 does not support "
        "sequence parallelism (cp 1)");
  ulysses.ep = 1;
  CHECK(moe_invalid_reason(m, ulysses).empty());
  ModelSpec dense = m;
  dense.num_experts = 0;
  CHECK(moe_invalid_reason(dense, point(DpMethod::dp, 1, 1, 8, 2, 1)) ==
        "--ep 2 --etp 1: test-moe is a dense model (expert parallelism needs num_experts > 0)");
  CHECK(moe_invalid_reason(dense, point(DpMethod::dp, 2, 1, 8, 1, 1)).empty());
}

TEST_CASE("expert memory: weights over ep x etp, ZeRO over edp, the rest over tp and dp",
          "[moe]") {
  const ModelSpec m = small_moe();
  const NativeContext c = context(m);
  // tp 2, dp 8, ep 8, etp 1: edp = 16 / 8 = 2
  const DesignPoint p = point(DpMethod::zero1, 2, 1, 8, 8, 1);
  REQUIRE(p.edp() == 2);
  const NativeEstimate e = estimate(c, p);
  const double experts = 8.0 * static_cast<double>(expert_parameters(m)); // 8 MoE layers
  const double all = static_cast<double>(total_parameters(m));
  // One stage: the dense part / tp, the experts / (ep x etp)
  const double dense_local = (all - experts) / 2;
  const double expert_local = experts / 8;
  const StageShards s = stage_shards(m, p, all, 8);
  CHECK(s.dense == Approx(dense_local));
  CHECK(s.expert == Approx(expert_local));
  const double gib = 1024.0 * 1024 * 1024;
  // 16-bit weights and gradients on every rank; ZeRO-1 shards Adam's 12 bytes, the dense part
  // over dp 8 and the experts over edp 2
  CHECK(e.stages[0].memory.weights == Approx(2.0 * (dense_local + expert_local) / gib));
  CHECK(e.stages[0].memory.gradients == Approx(2.0 * (dense_local + expert_local) / gib));
  CHECK(e.stages[0].memory.optimizer ==
        Approx(12.0 * (dense_local / 8 + expert_local / 2) / gib));
  // Without expert parallelism (etp = tp) every GPU holds half of every expert: more memory
  const NativeEstimate replicated = estimate(c, point(DpMethod::zero1, 2, 1, 8, 1, 2));
  CHECK(replicated.stages[0].memory.weights == Approx(2.0 * all / 2 / gib));
  CHECK(replicated.stages[0].memory.weights > 2.0 * e.stages[0].memory.weights);
}

TEST_CASE("context parallelism: the experts fold over tp x cp x dp, each GPU dispatches s/cp "
          "tokens",
          "[moe]") {
  const ModelSpec m = small_moe();
  const NativeContext c = context(m);
  // tp 2 x dp 4 = 8 GPUs cannot hold etp 1 x ep 16; with cp 2 a stage has 16 and edp is 1
  DesignPoint p = point(DpMethod::zero1, 2, 1, 4, 16, 1, 64);
  CHECK(moe_invalid_reason(m, p) ==
        "--etp 1 x --ep 16 = 16 does not divide tp 2 x dp 4 = 8 (the GPUs of a pipeline stage "
        "hold the experts as etp x ep x edp)");
  p.cp = 2;
  CHECK(moe_invalid_reason(m, p).empty());
  CHECK(p.edp() == 1);
  DesignPoint wide = point(DpMethod::dp, 2, 1, 4, 16, 2);
  wide.cp = 2;
  CHECK(moe_invalid_reason(m, wide) ==
        "--etp 2 x --ep 16 = 32 does not divide tp 2 x cp 2 x dp 4 = 16 (the GPUs of a pipeline "
        "stage hold the experts as etp x ep x edp)");
  // Each GPU dispatches its own tokens: 2048 / (tp 2 x cp 2), top-2 copies of 1024 x 2 bytes
  CHECK(dispatch_bytes(m, p, 2.0, 1.0) == 2048.0 / 4 * 2 * 1024 * 2);
  // tp 2 x cp 2 x dp 4 shards ZeRO states as tp 2 x dp 8 does: the dense part over dp x cp = 8,
  // the experts over edp = 16 / (etp 1 x ep 8) = 2, and reduces the experts' gradients over the
  // same edp group (2 ranks, 8 apart)
  DesignPoint folded = point(DpMethod::zero1, 2, 1, 4, 8, 1);
  folded.cp = 2;
  REQUIRE(folded.edp() == 2);
  const NativeEstimate with_cp = estimate(c, folded);
  const NativeEstimate with_dp = estimate(c, point(DpMethod::zero1, 2, 1, 8, 8, 1));
  CHECK(with_cp.stages[0].memory.optimizer == Approx(with_dp.stages[0].memory.optimizer));
  CHECK(with_cp.stages[0].memory.weights == Approx(with_dp.stages[0].memory.weights));
  CHECK(with_cp.stages[0].expert_dp_sync_s == Approx(with_dp.stages[0].expert_dp_sync_s));
  CHECK(with_cp.stages[0].expert_dp_sync_s > 0.0);
  // Half the tokens per GPU: half the dispatched bytes, a shorter all-to-all
  CHECK(with_cp.stages[0].moe_comm_s < with_dp.stages[0].moe_comm_s);
  CHECK(with_cp.stages[0].cp_comm_s > 0.0);
}

TEST_CASE("expert parallelism adds the all-to-all and the expert gradients' reduction",
          "[moe]") {
  const ModelSpec m = small_moe();
  const NativeContext c = context(m);
  const NativeEstimate one = estimate(c, point(DpMethod::dp, 1, 1, 16, 1, 1));
  const NativeEstimate in_node = estimate(c, point(DpMethod::dp, 1, 1, 16, 8, 1));
  const NativeEstimate across = estimate(c, point(DpMethod::dp, 1, 1, 16, 16, 1));
  CHECK(one.stages[0].moe_comm_s == 0.0);
  CHECK(one.stages[0].moe_layers == 8);
  // ep 8 inside a node; ep 16 spans two nodes: half of its bytes cross the network
  CHECK(in_node.stages[0].moe_comm_s > 0.0);
  CHECK(across.stages[0].moe_comm_s > 2.0 * in_node.stages[0].moe_comm_s);
  // The all-to-all per layer and micro-batch by hand: 2048 tokens x 2 copies x 1024 x 2 bytes
  // = 8 MiB per rank; 7 of 8 shares over NVLink at the prior's bus bandwidth (0.8 x 450 GB/s),
  // with NCCL's NVLink latency (8.4 + 3.4 us); dispatch and combine, forward and backward.
  const double bytes = 2048.0 * 2 * 1024 * 2;
  const double a2a = 8.4e-6 + 3.4e-6 + 7.0 / 8 * bytes / (0.8 * 450e9);
  CHECK(in_node.stages[0].moe_comm_s == Approx(8 * 2 * 2 * a2a));
  // Expert gradients reduced over edp = 16 / 8 = 2 ranks, 8 apart (GPU 0 of each node); with
  // ep 16 there is no expert data parallelism left
  CHECK(in_node.stages[0].expert_dp_sync_s > 0.0);
  CHECK(across.stages[0].expert_dp_sync_s == 0.0);
  // The router's imbalance makes the busiest rank slower
  NativeContext skewed = c;
  skewed.settings.moe_imbalance = 1.5;
  const NativeEstimate slow = estimate(skewed, point(DpMethod::dp, 1, 1, 16, 8, 1));
  CHECK(slow.stages[0].moe_comm_s == Approx(8 * 2 * 2 * (8.4e-6 + 3.4e-6 + 1.5 * (a2a - 11.8e-6))));
  CHECK(slow.stages[0].forward_s > in_node.stages[0].forward_s);
}

TEST_CASE("dense layers first: a stage counts its MoE layers", "[moe]") {
  ModelSpec m = small_moe();
  m.first_k_dense_layers = 3;
  DesignPoint p = point(DpMethod::dp, 1, 2, 8, 1, 1);
  // 8 layers over 2 stages: [emb + 4, 4 + post]; layers 0-2 dense
  CHECK(stage_moe_layers(m, p, {5, 5}, 0) == 1);
  CHECK(stage_moe_layers(m, p, {5, 5}, 1) == 4);
  // interleaved, 2 chunks per rank of 2 layers: rank 0 has layers 0-1 and 4-5
  p.virtual_stages = 2;
  CHECK(stage_moe_layers(m, p, {5, 5}, 0) == 2);
  CHECK(stage_moe_layers(m, p, {5, 5}, 1) == 3);
  const NativeContext c = context(m);
  const NativeEstimate e = estimate(c, point(DpMethod::dp, 1, 2, 8, 8, 1));
  CHECK(e.stages[0].moe_layers == 1);
  CHECK(e.stages[1].moe_layers == 4);
  // The first stage's 16-bit weights by hand: embedding, 3 dense layers and 1 MoE layer, the
  // experts over ep 8
  const double first = static_cast<double>(embedding_parameters(m) + 3 * dense_layer_parameters(m) +
                                            layer_parameters(m)) -
                       static_cast<double>(expert_parameters(m)) * (1.0 - 1.0 / 8);
  CHECK(e.stages[0].memory.weights == Approx(2.0 * first / (1024.0 * 1024 * 1024)));
}

namespace {

/// Megatron-LM's theoretical weight-and-optimizer memory of the most loaded GPU
/// (compute_weight_and_optimizer_memory in megatron/training/theoretical_memory_usage.py, read
/// at 00caa53a), by hand: per parameter 18 bytes (16-bit weight, fp32 gradient, fp32 master and
/// Adam m, v; no distributed optimizer); a dense layer 2h(3/2 f + 1) + attention, an MoE layer
/// 2h(3/2 f_e E + 3/2 f_shared + 1) + attention (GQA 2h^2(1 + g/a) q/h, or MLA's LoRA
/// projections); the first stage holds (block / pp + embedding) / tp, plus the LM head when
/// pp = 1. Megatron's formula divides the experts by tp; with expert parallelism they are
/// divided by etp x ep instead (the correction Megatron-Bridge PR #3744 makes).
struct MegatronCase {
  const char* model;
  int tp, pp, dp, ep, etp;
};

double megatron_weight_and_optimizer_bytes(const ModelSpec& m, const MegatronCase& k) {
  const double h = static_cast<double>(m.hidden_size);
  const double a = static_cast<double>(m.num_attention_heads);
  double attention = 0.0;
  if (m.is_mla()) {
    const double qk = static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim);
    attention = static_cast<double>(m.q_lora_rank) * (h + a * qk + 1) +
                static_cast<double>(m.kv_lora_rank) *
                    (h + a * static_cast<double>(m.qk_nope_head_dim + m.v_head_dim) + 1) +
                h * static_cast<double>(m.qk_rope_head_dim) +
                a * static_cast<double>(m.v_head_dim) * h;
  } else {
    const double q = a * static_cast<double>(m.head_dim);
    attention = 2 * h * h * (1 + static_cast<double>(m.num_key_value_heads) / a) * q / h;
  }
  const double dense_layer = 2 * h * (1.5 * static_cast<double>(m.ffn_hidden_size) + 1) + attention;
  const double experts = 2 * h * 1.5 * static_cast<double>(m.moe_ffn_hidden_size * m.num_experts);
  const double moe_layer =
      2 * h * (1.5 * static_cast<double>(m.shared_expert_ffn_hidden_size) + 1) + attention + experts;
  const double moe_layers = static_cast<double>(m.num_layers - m.first_k_dense_layers);
  const double dense_layers = static_cast<double>(m.first_k_dense_layers);
  const double embedding = h * static_cast<double>(m.vocab_size);
  const double block_without_experts = dense_layers * dense_layer + moe_layers * (moe_layer - experts) + h;
  double shard = (block_without_experts / k.pp + embedding) / k.tp +
                 moe_layers * experts / k.pp / (k.ep * k.etp);
  if (!m.tied_embeddings && k.pp == 1) shard += embedding / k.tp;
  return 18.0 * shard;
}

} // namespace

TEST_CASE("weights and optimizer within 5 percent of Megatron-LM's theoretical memory on 10 MoE "
          "layouts", "[moe]") {
  // The table of docs/moe.md; etp x ep differs from tp in every case but the first two.
  const MegatronCase cases[] = {
      {"mixtral_8x7B", 2, 1, 8, 1, 2},    {"mixtral_8x7B", 4, 2, 4, 1, 4},
      {"mixtral_8x7B", 2, 1, 8, 8, 1},    {"mixtral_8x7B", 4, 2, 4, 4, 2},
      {"mixtral_8x7B", 1, 4, 8, 8, 1},    {"mixtral_8x22B", 4, 4, 8, 8, 1},
      {"mixtral_8x22B", 8, 2, 4, 4, 4},   {"qwen3_30B_A3B", 1, 1, 16, 16, 1},
      {"qwen3_30B_A3B", 2, 2, 8, 8, 2},   {"qwen3_235B_A22B", 4, 2, 16, 32, 2},
      {"qwen3_235B_A22B", 2, 1, 32, 64, 1}, {"deepseek_v3", 8, 1, 32, 64, 1},
      {"deepseek_v3", 4, 1, 64, 32, 2},
  };
  for (const MegatronCase& k : cases) {
    const ModelSpec& m = test::shipped_catalogs().models.find(k.model);
    NativeContext c = context(m);
    DesignPoint p = point(DpMethod::dp, k.tp, k.pp, k.dp, k.ep, k.etp, k.dp * k.pp);
    const NativeEstimate e = estimate(c, p);
    const NativeMemory& mem = e.stages[0].memory; // the first stage: Megatron's most loaded
    const double ours = (mem.weights + mem.gradients + mem.optimizer) * 1024.0 * 1024 * 1024;
    const double megatron = megatron_weight_and_optimizer_bytes(m, k);
    INFO(k.model << " tp " << k.tp << " pp " << k.pp << " dp " << k.dp << " ep " << k.ep
                 << " etp " << k.etp << ": ours " << ours / 1073741824.0 << " GiB, Megatron "
                 << megatron / 1073741824.0 << " GiB");
    CHECK(std::abs(ours / megatron - 1.0) < 0.05);
  }
}

TEST_CASE("DualPipe's F&B pairs hide the MoE all-to-all behind the other pass's compute",
          "[moe][zb]") {
  // tp 1: no tp collective to hide, so whatever an F&B pair saves is all-to-all.
  const ModelSpec m = small_moe();
  const NativeContext c = context(m);
  DesignPoint p = point(DpMethod::zero1, 1, 2, 8, 8, 1, 64); // 8 micro-batches, ep 8
  p.schedule = Schedule::dualpipe;
  const NativeEstimate e = estimate(c, p);
  REQUIRE(e.stages[0].moe_comm_forward_s > 0.0);
  const PipeRun run = native_pipe_run(c, p, e);
  // Per rank and chunk: its forward and its full backward alone, from the passes run alone.
  std::map<std::tuple<int, int, int>, double> alone; // (rank, chunk, kind)
  for (const PipeEvent& ev : run.events) {
    if (ev.kind == PipeOpKind::forward || ev.kind == PipeOpKind::full_backward) {
      alone[{ev.rank, ev.chunk, static_cast<int>(ev.kind)}] = ev.end_s - ev.start_s;
    }
  }
  int pairs = 0;
  for (const PipeEvent& ev : run.events) {
    if (ev.kind != PipeOpKind::forward_backward) continue;
    const auto f = alone.find({ev.rank, ev.chunk, static_cast<int>(PipeOpKind::forward)});
    const auto b =
        alone.find({ev.rank, ev.back_chunk, static_cast<int>(PipeOpKind::full_backward)});
    if (f == alone.end() || b == alone.end()) continue;
    ++pairs;
    const double serial = f->second + b->second;
    const double pair = ev.end_s - ev.start_s;
    CHECK(pair < 0.99 * serial); // here about 9 % of the pair is hidden all-to-all
    // No more is hidden than the stage's all-to-all of one micro-batch, forward and backward.
    const NativeStage& st = e.stages[static_cast<std::size_t>(ev.rank)];
    CHECK(pair >= serial - st.moe_comm_s - 1e-12);
  }
  CHECK(pairs > 0);
}

namespace {

/// The native model's ring reduce-scatter / all-gather of `bytes` over n ranks inside a node
/// of the test GPU (its prior's bus bandwidth for n ranks) or over the network (50 GB/s: 400
/// Gbit/s x 8 / 8 GPUs).
double ring_half(double bytes, int n, bool network) {
  if (n <= 1) return 0.0;
  double bus = 50e9;
  if (!network) {
    const auto& fits = gpu().calibration.tp_allreduce;
    bus = 0.8 * 450e9;
    if (!fits.empty()) {
      auto it = fits.upper_bound(n);
      if (it != fits.begin()) --it;
      bus = it->second.bus_bytes_per_s;
    }
  }
  return nccl_collective_s((n - 1.0) / n * bytes, n - 1, bus,
                           nccl_latency(network ? Transport::net : Transport::nvlink));
}

/// A reduce-scatter / all-gather of `bytes` over dp 16 on two nodes of 8 (docs/native.md §2):
/// the faster of one NCCL ring over the 16 ranks (15 steps, one of them over the network, at the
/// slower of the NVLink bus and the 8 ranks' network share, 8 x 50 GB/s) and the hierarchical
/// form (8 in a node over NVLink, then 2 nodes over the network).
double dp16_half(double bytes) {
  const auto& fits = gpu().calibration.tp_allreduce;
  auto it = fits.upper_bound(8);
  --it;
  const double bus = std::min(it->second.bus_bytes_per_s, 8 * 50e9);
  const double ring = nccl_ring_s(15.0 / 16 * bytes, 15, 1, bus, nccl_latency(Transport::nvlink),
                                  nccl_latency(Transport::net));
  return std::min(ring, ring_half(bytes, 8, false) + ring_half(bytes / 8, 2, true));
}

} // namespace

TEST_CASE("expert parallelism under FSDP: the experts sharded and gathered over edp, the rest "
          "over dp x cp",
          "[moe]") {
  const ModelSpec m = small_moe();
  const NativeContext c = context(m);
  const double gib = 1024.0 * 1024 * 1024;
  const double expert_layer = static_cast<double>(expert_parameters(m));
  const double all = static_cast<double>(total_parameters(m));
  const double dense = all - 8.0 * expert_layer; // tp 1
  // tp 1, dp 16 on two nodes, ep 8, etp 1: edp = 16 / 8 = 2, ranks 8 apart (one per node)
  DesignPoint p = point(DpMethod::fsdp, 1, 1, 16, 8, 1, 256);
  p.mbs = 4;
  p.num_micro_batches = 4;
  REQUIRE(moe_invalid_reason(m, p).empty());
  REQUIRE(p.edp() == 2);
  const NativeEstimate e = estimate(c, p);
  const NativeStage& st = e.stages[0];
  const double expert = 8.0 * expert_layer / 8.0; // this GPU's experts: one of 8
  // FSDP2 keeps fp32 sharded parameters, gradients (4 bytes each) and Adam's m and v (8): the
  // dense part over dp 16, the experts over edp 2
  const double shard = dense / 16 + expert / 2;
  CHECK(st.memory.weights == Approx(4.0 * shard / gib));
  CHECK(st.memory.gradients == Approx(4.0 * shard / gib));
  CHECK(st.memory.optimizer == Approx(8.0 * shard / gib));
  // The same layout without expert parallelism (ep 1, etp = tp 1): every expert sharded over 16
  const NativeEstimate whole = estimate(c, point(DpMethod::fsdp, 1, 1, 16, 1, 1, 256));
  CHECK(whole.stages[0].memory.weights == Approx(4.0 * all / 16 / gib));
  // Time: the dense part gathered (bf16) and its gradients reduce-scattered (fp32) over dp 16
  // (dp16_half: one ring over both nodes, bound by NVLink here), the experts over edp 2 (one rank
  // per node: the network only); prefetching hides all but the first layer's gather and the
  // last layer's reduce-scatter, and FSDP2's copy-out of the gathered parameters (read and
  // write them, forward and backward) does not overlap.
  const auto dp16 = [&](double bytes) { return dp16_half(bytes); };
  const double gather = dp16(2.0 * dense) + ring_half(2.0 * expert, 2, true);
  const double reduce = dp16(4.0 * dense) + ring_half(4.0 * expert, 2, true);
  REQUIRE(gather + reduce < 0.5 * st.backward_s); // hidden behind compute
  const double copy_out = 2.0 * 2.0 * (dense + expert) /
                          (3000e9 * gpu().calibration.memory_efficiency);
  const double entries = 10.0; // embedding, 8 layers, head
  CHECK(st.sharded_comm_s == Approx(2.0 * copy_out + gather / entries + reduce / entries));
}

TEST_CASE("expert parallelism under ZeRO-3: experts over edp, with edp 1 nothing of theirs is "
          "gathered",
          "[moe]") {
  const ModelSpec m = small_moe();
  const NativeContext c = context(m);
  const double expert_layer = static_cast<double>(expert_parameters(m));
  const double dense = static_cast<double>(total_parameters(m)) - 8.0 * expert_layer;
  // tp 1, dp 16, ep 16, etp 1: each GPU holds one expert of each layer whole, edp = 1
  DesignPoint p = point(DpMethod::zero3, 1, 1, 16, 16, 1, 256);
  p.mbs = 4;
  p.num_micro_batches = 4;
  REQUIRE(p.edp() == 1);
  const NativeEstimate e = estimate(c, p);
  const NativeStage& st = e.stages[0];
  const double expert = 8.0 * expert_layer / 16.0;
  const double gib = 1024.0 * 1024 * 1024;
  // DeepSpeed ZeRO-3: 16-bit weights and gradients and 12 bytes of fp32 master and Adam,
  // the dense part over dp 16, the experts not sharded further (edp 1)
  CHECK(st.memory.weights == Approx(2.0 * (dense / 16 + expert) / gib));
  CHECK(st.memory.optimizer == Approx(12.0 * (dense / 16 + expert) / gib));
  // Only the dense part is gathered and reduce-scattered (DeepSpeed gathers into the
  // parameters' own storage: no copy-out)
  const auto dp16 = [&](double bytes) { return dp16_half(bytes); };
  const double gather = dp16(2.0 * dense), reduce = dp16(2.0 * dense);
  REQUIRE(gather + reduce < 0.5 * st.backward_s);
  CHECK(st.sharded_comm_s == Approx(gather / 10.0 + reduce / 10.0));
}

TEST_CASE("EP all-to-all overlap: where Megatron runs it, its combined pairs, what a pair hides",
          "[moe]") {
  // combined_1f1b.py: pp 1 runs F1 alone, then (F2, B1) ... (Fm, Bm-1), then Bm alone.
  CHECK(moe_a2a_overlap_pairs(1, 0, 1, 8) == 7.0);
  CHECK(moe_a2a_overlap_pairs(1, 0, 1, 1) == 0.0);
  // Interleaved, pp 4, v 2, m 8: 16 chunk passes per rank; warm-up forwards
  // 2 (pp - r - 1) + (v - 1) pp + 1: rank 0 6 + 4 + 1 = 11 (5 pairs), rank 3 0 + 4 + 1 = 5
  // (11 pairs).
  CHECK(moe_a2a_overlap_pairs(4, 0, 2, 8) == 5.0);
  CHECK(moe_a2a_overlap_pairs(4, 3, 2, 8) == 11.0);
  CHECK(moe_a2a_overlap_pairs(4, 0, 2, 4) == 0.0); // all 8 passes are warm-up
  // Forward all-to-all 2 behind a backward of 1 of compute (1 hidden), backward all-to-all 3
  // behind a forward of 10 (3 hidden).
  CHECK(moe_a2a_hidden_s(2.0, 3.0, 10.0, 1.0) == 4.0);
  CHECK(moe_a2a_hidden_s(2.0, 3.0, 0.0, 0.0) == 0.0);
  // Megatron's rules (TransformerConfig.__post_init__): ep > 1, no full recompute, pp 1 or an
  // interleaved pipeline.
  const ModelSpec m = small_moe();
  DesignPoint p = point(DpMethod::zero1, 1, 1, 16, 8, 1);
  CHECK(moe_a2a_overlap_runs(m, p));
  CHECK_FALSE(moe_a2a_overlap_runs(test::test_llama(), p)); // dense
  p.recompute = Recompute::full;
  CHECK_FALSE(moe_a2a_overlap_runs(m, p));
  p.recompute = Recompute::selective;
  CHECK(moe_a2a_overlap_runs(m, p));
  p.ep = 1;
  CHECK_FALSE(moe_a2a_overlap_runs(m, p));
  p.ep = 8;
  p.pp = 2;
  CHECK_FALSE(moe_a2a_overlap_runs(m, p)); // 1F1B without virtual stages
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  CHECK(moe_a2a_overlap_runs(m, p));
  p.schedule = Schedule::dualpipe; // hides the all-to-all its own way
  p.virtual_stages = 1;
  CHECK_FALSE(moe_a2a_overlap_runs(m, p));
}

TEST_CASE("EP all-to-all overlap: each combined pair takes the hidden all-to-all off the step",
          "[moe]") {
  // tp 1, pp 1, dp 16, ep 8 (one node), 4 micro-batches: 3 combined pairs.
  const ModelSpec m = small_moe();
  const NativeContext off = context(m);
  NativeContext on = off;
  on.settings.moe_a2a_overlap = true;
  const DesignPoint p = point(DpMethod::zero1, 1, 1, 16, 8, 1, 64);
  REQUIRE(p.num_micro_batches == 4);
  const NativeEstimate a = estimate(off, p);
  const NativeEstimate b = estimate(on, p);
  const NativeStage& st = b.stages[0];
  CHECK(a.stages[0].moe_a2a_overlap_s == 0.0);
  // The all-to-all by hand (as in "expert parallelism adds the all-to-all ..."): 8 MiB per
  // rank, 7/8 over NVLink at 0.8 x 450 GB/s plus NCCL's NVLink latency; dispatch and combine
  // in 8 MoE layers, forward and again backward.
  const double a2a = 8.4e-6 + 3.4e-6 + 7.0 / 8 * (2048.0 * 2 * 1024 * 2) / (0.8 * 450e9);
  CHECK(st.moe_comm_forward_s == Approx(8 * 2 * a2a));
  CHECK(st.moe_comm_s == Approx(8 * 2 * 2 * a2a));
  // Both passes' compute (the passes less the all-to-all; no tp or cp here) exceeds the other
  // pass's all-to-all, so a pair hides all of it: 2 x 16 all-to-alls.
  REQUIRE(st.forward_s - st.moe_comm_forward_s > st.moe_comm_s - st.moe_comm_forward_s);
  REQUIRE(st.backward_s - (st.moe_comm_s - st.moe_comm_forward_s) > st.moe_comm_forward_s);
  CHECK(st.moe_a2a_overlap_s == Approx(32 * a2a));
  // One stage: the pipeline is 4 micro-batches of forward + backward, less 3 pairs' hiding.
  CHECK(b.stages[0].forward_s == a.stages[0].forward_s);
  CHECK(b.pipeline_s == Approx(a.pipeline_s - 3 * 32 * a2a));
  CHECK(b.step_s < a.step_s);
  // Full recompute: Megatron refuses the overlap, the all-to-alls are charged in full.
  DesignPoint full = p;
  full.recompute = Recompute::full;
  CHECK(estimate(on, full).pipeline_s == estimate(off, full).pipeline_s);
}
