#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "zerosearch/model/native.hpp"
#include "zerosearch/model/network.hpp"

using namespace zerosearch;

namespace {

/// A GB200-like GPU (NVLink 5, trays of 4 on 1.6 Tbit/s) with its class prior, by hand;
/// `domain` GPUs on one NVLink fabric (0: the node), `oversubscription` of the network.
NativeGpu tray_gpu(int domain = 0, double oversubscription = 1.0, double nvlink_GBps = 900) {
  NativeGpu g;
  g.spec.name = "TestGB";
  g.spec.has_specs = true;
  g.spec.gpu_class = "hbm-nvlink";
  g.spec.memory_gib = 180;
  g.spec.peak_tflops.fp32 = 80;
  g.spec.peak_tflops.fp16 = 2500;
  g.spec.peak_tflops.bf16 = 2500;
  g.spec.memory_GBps = 8000;
  g.spec.intra_node = {"nvlink5", true, nvlink_GBps};
  g.spec.default_gpus_per_node = 4;
  g.spec.scale_up_domain_gpus = domain;
  g.spec.scale_out_oversubscription = oversubscription;
  g.calibration = prior_calibration(g.spec);
  g.memory_gib = 180;
  g.inter_node_bytes_per_s = 1600e9 / 8; // 4 x 400 Gbit/s per tray
  g.host_link_bytes_per_s = host_link_bytes_per_s(g.spec);
  return g;
}

ModelSpec moe_model() {
  ModelSpec m;
  m.name = "test-moe";
  m.architecture = "mixtral";
  m.hidden_size = 2048;
  m.num_layers = 8;
  m.num_attention_heads = 16;
  m.num_key_value_heads = 4;
  m.head_dim = 128;
  m.ffn_hidden_size = 8192;
  m.gated_mlp = true;
  m.vocab_size = 32000;
  m.sequence_length = 4096;
  m.max_position_embeddings = 4096;
  m.num_experts = 16;
  m.experts_per_token = 2;
  m.moe_ffn_hidden_size = 2048;
  return m;
}

ModelSpec dense_model() {
  ModelSpec m = moe_model();
  m.name = "test-dense";
  m.architecture = "llama";
  m.num_experts = 0;
  m.experts_per_token = 0;
  m.moe_ffn_hidden_size = 0;
  return m;
}

NativeContext context(const ModelSpec& m, const NativeGpu& g, int gpn = 4) {
  NativeContext c;
  c.model = m;
  c.gpus_per_node = gpn;
  c.gpus = {g};
  c.settings.overlap_grad_reduce = false; // the whole reduction shows in dp_sync_s
  return c;
}

DesignPoint point(DpMethod method, int tp, int pp, int dp, int ep = 1, int cp = 1) {
  DesignPoint p;
  p.method = method;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.cp = static_cast<std::int16_t>(cp);
  p.mbs = 1;
  p.num_micro_batches = 8;
  p.ep = static_cast<std::int16_t>(ep);
  p.etp = 1;
  return p;
}

NativeEstimate estimate(const NativeContext& c, const DesignPoint& p) {
  const long long world = static_cast<long long>(p.tp) * p.cp * p.dp * p.pp;
  const auto nodes = static_cast<std::size_t>((world + c.gpus_per_node - 1) / c.gpus_per_node);
  const NativePlacement where = native_placement(c, p, std::vector<int>(nodes, 0));
  INFO(native_invalid_reason(c, p, where));
  REQUIRE(native_invalid_reason(c, p, where).empty());
  return native_estimate(c, p, where);
}

} // namespace

TEST_CASE("a node type's tiers: the domain in whole nodes, at least the node", "[network]") {
  GpuSpec g;
  CHECK(network_tiers(g, 8).domain_gpus == 8); // no domain declared: the node
  CHECK_FALSE(network_tiers(g, 8).multi_node_domain());
  g.scale_up_domain_gpus = 72;
  g.scale_out_oversubscription = 2.0;
  CHECK(network_tiers(g, 4).domain_gpus == 72);
  CHECK(network_tiers(g, 4).multi_node_domain());
  CHECK(network_tiers(g, 4).oversubscription == 2.0);
  CHECK(network_tiers(g, 16).domain_gpus == 64); // 4 nodes of 16 fit in 72
  CHECK(network_tiers(g, 72).domain_gpus == 72);
  CHECK_FALSE(network_tiers(g, 72).multi_node_domain());
  CHECK(network_tiers(g, 128).domain_gpus == 128); // a node larger than the domain
}

TEST_CASE("where a group's instances fall in scale-up domains", "[network]") {
  // Inside: the span divides the domain (tp 8 of 72; ep 8 at etp 2 = 16 of 64).
  CHECK(group_domain_split(8, 1, 72, 1024).members == 8);
  CHECK(group_domain_split(8, 1, 72, 1024).domains == 1);
  CHECK(group_domain_split(8, 2, 64, 1024).domains == 1);
  // ep 16 on 72: the instance on ranks 64-79 crosses, 8 on each side, when those ranks exist.
  CHECK(group_domain_split(16, 1, 72, 144).members == 8);
  CHECK(group_domain_split(16, 1, 72, 144).domains == 2);
  CHECK(group_domain_split(16, 1, 72, 64).members == 16); // a 64-GPU run: none crosses
  // Whole domains: dp 36 spaced tp 4 apart over two racks of 72: 18 in each.
  CHECK(group_domain_split(36, 4, 72, 144).members == 18);
  CHECK(group_domain_split(36, 4, 72, 144).domains == 2);
  // dp 32 spaced 4 apart: 18 in the first rack, 14 in the second.
  CHECK(group_domain_split(32, 4, 72, 128).members == 14);
  CHECK(group_domain_split(32, 4, 72, 128).domains == 2);
  // A stride that does not divide the domain: edp 9 spaced 16 apart over 144 ranks; the
  // offsets 8-15 meet the boundary at 72 after 4 members, the rest after 5.
  CHECK(group_domain_split(9, 16, 72, 144).members == 4);
  CHECK(group_domain_split(9, 16, 72, 144).domains == 2);
  CHECK(group_domain_split(1, 4, 72, 144).members == 1);
}

TEST_CASE("a domain of one node is today's model, bit for bit", "[network]") {
  const NativeGpu plain = tray_gpu(0);
  const NativeGpu node_domain = tray_gpu(4); // declared, but only the node
  for (const DesignPoint& p :
       {point(DpMethod::zero1, 2, 2, 16, 8), point(DpMethod::dp, 1, 2, 32, 16),
        point(DpMethod::zero1, 4, 1, 8, 8, 2), point(DpMethod::dp, 2, 2, 16, 4)}) {
    const NativeEstimate a = estimate(context(moe_model(), plain), p);
    const NativeEstimate b = estimate(context(moe_model(), node_domain), p);
    CHECK(a.step_s == b.step_s);
    CHECK(a.stages[0].moe_comm_s == b.stages[0].moe_comm_s);
    CHECK(a.stages[0].dp_sync_s == b.stages[0].dp_sync_s);
    CHECK(a.stages[0].cp_comm_s == b.stages[0].cp_comm_s);
    CHECK(a.stages[0].send_s == b.stages[0].send_s);
  }
}

TEST_CASE("inside an NVL72 domain, groups across trays cost the scale-up link", "[network]") {
  // ep 8 over two trays of 4 on a domain of 72 costs what it costs inside one 8-GPU node;
  // without the domain, half of it crosses the trays' network.
  const DesignPoint ep8 = point(DpMethod::zero1, 1, 1, 64, 8);
  const NativeEstimate rack = estimate(context(moe_model(), tray_gpu(72)), ep8);
  const NativeEstimate node8 = estimate(context(moe_model(), tray_gpu(0), 8), ep8);
  const NativeEstimate trays = estimate(context(moe_model(), tray_gpu(0)), ep8);
  CHECK(rack.stages[0].moe_comm_s == node8.stages[0].moe_comm_s);
  CHECK(trays.stages[0].moe_comm_s > 2.0 * rack.stages[0].moe_comm_s);
  // ep 16 on a 64-GPU run: all of it in the rack, as in a 16-GPU node.
  const DesignPoint ep16 = point(DpMethod::zero1, 1, 1, 64, 16);
  const NativeEstimate rack16 = estimate(context(moe_model(), tray_gpu(72)), ep16);
  const NativeEstimate node16 = estimate(context(moe_model(), tray_gpu(0), 16), ep16);
  CHECK(rack16.stages[0].moe_comm_s == node16.stages[0].moe_comm_s);
  // ep 16 over two racks (144 GPUs): the group on ranks 64-79 straddles them and sets the pace.
  const DesignPoint ep16x144 = point(DpMethod::zero1, 1, 1, 144, 16);
  const NativeEstimate two_racks = estimate(context(moe_model(), tray_gpu(72)), ep16x144);
  CHECK(two_racks.stages[0].moe_comm_s > 2.0 * rack16.stages[0].moe_comm_s);
  // tp 4 x cp 4: the cp ring over 4 trays runs on NVLink as inside a 16-GPU node.
  ModelSpec long_seq = dense_model();
  long_seq.sequence_length = 32768;
  long_seq.max_position_embeddings = 32768;
  const DesignPoint cp4 = point(DpMethod::zero1, 4, 1, 2, 1, 4);
  const NativeEstimate rack_cp = estimate(context(long_seq, tray_gpu(72)), cp4);
  const NativeEstimate node_cp = estimate(context(long_seq, tray_gpu(0), 16), cp4);
  const NativeEstimate trays_cp = estimate(context(long_seq, tray_gpu(0)), cp4);
  CHECK(rack_cp.stages[0].cp_comm_s == node_cp.stages[0].cp_comm_s);
  CHECK(trays_cp.stages[0].cp_comm_s > rack_cp.stages[0].cp_comm_s);
  // The dp all-reduce of tp 4 x dp 16 = 64 GPUs stays in the rack: as in a 64-GPU node.
  const DesignPoint dp16 = point(DpMethod::dp, 4, 1, 16);
  const NativeEstimate rack_dp = estimate(context(dense_model(), tray_gpu(72)), dp16);
  const NativeEstimate node_dp = estimate(context(dense_model(), tray_gpu(0), 64), dp16);
  CHECK(rack_dp.stages[0].dp_sync_s == node_dp.stages[0].dp_sync_s);
  CHECK(estimate(context(dense_model(), tray_gpu(0)), dp16).stages[0].dp_sync_s >
        2.0 * rack_dp.stages[0].dp_sync_s);
  // Pipeline sends between trays of one rack: the NVLink figure, as inside a node.
  const DesignPoint pp2 = point(DpMethod::zero1, 4, 2, 1);
  CHECK(estimate(context(dense_model(), tray_gpu(72)), pp2).stages[0].send_s ==
        estimate(context(dense_model(), tray_gpu(0), 8), pp2).stages[0].send_s);
  CHECK(estimate(context(dense_model(), tray_gpu(0)), pp2).stages[0].send_s >
        estimate(context(dense_model(), tray_gpu(72)), pp2).stages[0].send_s);
}

TEST_CASE("oversubscription 2 doubles what crosses domains, not what stays inside", "[network]") {
  // The dp all-reduce of tp 4 x dp 36 spans two racks of 72, 18 ranks in each. Two forms, the
  // faster charged (docs/native.md §2): one NCCL ring over the 36 ranks at the slower of the
  // rack's NVLink bus (0.8 x 900 GB/s) and the 18 ranks' network share (18 x 50 GB/s / r), or
  // the hierarchical form: reduce-scatter in the rack, a ring between the racks on 1/18 of the
  // gradients at the network share of a GPU over the oversubscription r, all-gather in the
  // rack, whose time is A + B r (A: the rack part and the latencies; B r: the bytes between
  // racks).
  const auto sync = [](const DesignPoint& p, int domain, double r) {
    return estimate(context(dense_model(), tray_gpu(domain, r)), p).stages[0].dp_sync_s;
  };
  const DesignPoint across = point(DpMethod::dp, 4, 1, 36);
  // r = 1 and 1.2: the ring, bound by NVLink (720 GB/s < 900 / 1.2 = 750): r does not touch it.
  const double t1 = sync(across, 72, 1.0);
  CHECK(sync(across, 72, 1.2) == Approx(t1).epsilon(1e-12));
  // r = 2: the ring is bound by the network (450 GB/s) and slower; still the faster form
  // (2 x 35/36 / 450 against 2 x 17/18 / 720 + 1/18 / 25 per gradient byte).
  const double t2 = sync(across, 72, 2.0);
  CHECK(t2 > 1.5 * t1);
  // r = 4, 6, 8: the hierarchical form, A + B r: equal steps of r add equal times.
  const double t4 = sync(across, 72, 4.0), t6 = sync(across, 72, 6.0), t8 = sync(across, 72, 8.0);
  CHECK(t4 > t2);
  const double step = t6 - t4;
  CHECK(step > 0.0);
  CHECK(t8 - t6 == Approx(step).epsilon(1e-9));
  CHECK(t4 - 2.0 * step > 0.0); // A: the rack part
  // tp 4 x dp 16 = 64 GPUs inside one rack: the oversubscription does not touch it.
  const DesignPoint inside = point(DpMethod::dp, 4, 1, 16);
  CHECK(sync(inside, 72, 1.0) == sync(inside, 72, 2.0));
  // Nodes without a domain: what crosses nodes crosses the fabric (the ring over 8 trays).
  const DesignPoint nodes = point(DpMethod::dp, 4, 1, 8);
  const double n1 = sync(nodes, 0, 1.0), n2 = sync(nodes, 0, 2.0), n3 = sync(nodes, 0, 3.0);
  CHECK(n2 > n1);
  CHECK(n3 - n2 == Approx(n2 - n1).epsilon(1e-9));
}

TEST_CASE("tp degrees on NVLink: the node's divisors, then whole nodes dividing the domain",
          "[network]") {
  CHECK(nvlink_tp_degrees(8, 8) == std::vector<int>{1, 2, 4, 8});
  CHECK(nvlink_tp_degrees(4, 72) == std::vector<int>{1, 2, 4, 8, 12, 24, 36, 72});
  CHECK(nvlink_tp_degrees(16, 64) == std::vector<int>{1, 2, 4, 8, 16, 32, 64});
  CHECK(nvlink_tp_degrees(4, 0) == std::vector<int>{1, 2, 4});
  // The domain several node types share: the gcd of theirs, the node when one has none.
  GpuSpec rack, half_rack, plain;
  rack.scale_up_domain_gpus = 72;
  half_rack.scale_up_domain_gpus = 36;
  CHECK(shared_domain_gpus({&rack}, 4) == 72);
  CHECK(shared_domain_gpus({&rack, &half_rack}, 4) == 36);
  CHECK(shared_domain_gpus({&rack, &plain}, 4) == 4);
  CHECK(shared_domain_gpus({&plain}, 8) == 8);
  CHECK(shared_domain_gpus({}, 8) == 8);
}

TEST_CASE("tp 8 over two trays of an NVL72 rack costs what it costs inside one node",
          "[network]") {
  // tp 8 x dp 8 = 64 GPUs in one rack of trays of 4 is tp 8 in one 64-GPU NVLink node: the
  // layers' tp all-reduces at the NVLink figures for 8 GPUs, the dp ring in the rack.
  for (const DesignPoint& p : {point(DpMethod::zero1, 8, 1, 8), point(DpMethod::dp, 8, 2, 4)}) {
    const NativeEstimate rack = estimate(context(dense_model(), tray_gpu(72)), p);
    const NativeEstimate node = estimate(context(dense_model(), tray_gpu(0), 64), p);
    CHECK(rack.step_s == node.step_s);
    CHECK(rack.stages[0].forward_s == node.stages[0].forward_s);
    CHECK(rack.stages[0].dp_sync_s == node.stages[0].dp_sync_s);
  }
  // On two racks (tp 8 x dp 18 = 144 GPUs) no tp group straddles them (72 = 9 x 8): the layers
  // cost the same, only the dp reduction crosses racks.
  const DesignPoint two = point(DpMethod::zero1, 8, 1, 18);
  const NativeEstimate racks = estimate(context(dense_model(), tray_gpu(72)), two);
  const NativeEstimate one = estimate(context(dense_model(), tray_gpu(72)), point(DpMethod::zero1, 8, 1, 8));
  CHECK(racks.stages[0].forward_s == one.stages[0].forward_s);
  CHECK(racks.stages[0].dp_sync_s > one.stages[0].dp_sync_s);
}

TEST_CASE("the run's note names a domain of several nodes and an oversubscribed network",
          "[network]") {
  GpuSpec g;
  g.name = "GB";
  CHECK(network_note(g, 4).empty()); // the node is the domain, full bisection: nothing to say
  g.scale_up_domain_gpus = 72;
  CHECK(network_note(g, 4) ==
        "GB: NVLink domains of 72 GPUs (18 nodes of 4): groups of ranks inside one talk over "
        "NVLink across nodes; the network between domains has full bisection (docs/native.md "
        "\u00a72.5)");
  CHECK(network_note(g, 72).empty());
  g.scale_up_domain_gpus = 0;
  g.scale_out_oversubscription = 2.0;
  CHECK(network_note(g, 8) == "GB: the network between nodes is oversubscribed 2:1 (what "
                              "crosses it gets 1/2 of a GPU's share) (docs/native.md \u00a72.5)");
}
