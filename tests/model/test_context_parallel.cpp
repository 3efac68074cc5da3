#include <catch2/catch.hpp>

#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/context_parallel.hpp"
#include "zerosearch/model/native.hpp"
#include "native_fixtures.hpp"

using namespace zerosearch;

namespace {

/// Links with round numbers: 1 GB/s inside a node, 0.1 GB/s across, no latency.
CpLinks links(int ranks_per_node) {
  CpLinks l;
  l.ranks_per_node = ranks_per_node;
  l.intra_bytes_per_s = 1e9;
  l.inter_bytes_per_s = 1e8;
  l.latency_s = 0.0;
  return l;
}

NativeGpu h100_like() { return test::h100_like(80.0, false); }

ModelSpec llama8b(std::int64_t seq) {
  ModelSpec m;
  m.name = "test-llama";
  m.architecture = "llama";
  m.hidden_size = 4096;
  m.num_layers = 32;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden_size = 14336;
  m.gated_mlp = true;
  m.vocab_size = 128256;
  m.sequence_length = seq;
  m.max_position_embeddings = seq;
  return m;
}

NativeContext context(const ModelSpec& m, int gpn = 8) {
  NativeContext c;
  c.model = m;
  c.gpus_per_node = gpn;
  c.gpus = {h100_like()};
  return c;
}

DesignPoint point(int tp, int cp, int dp, int pp, int gbs) {
  DesignPoint p;
  p.method = DpMethod::dp;
  p.tp = tp;
  p.cp = static_cast<std::int16_t>(cp);
  p.dp = dp;
  p.pp = pp;
  p.mbs = 1;
  p.num_micro_batches = gbs / dp;
  return p;
}

NativeEstimate run(const NativeContext& c, const DesignPoint& p) {
  const long long gpus = static_cast<long long>(p.tp) * p.cp * p.dp * p.pp;
  const auto nodes = static_cast<std::size_t>((gpus + c.gpus_per_node - 1) / c.gpus_per_node);
  REQUIRE(native_invalid_reason(c, p, native_placement(c, p, std::vector<int>(nodes, 0))).empty());
  return native_estimate(c, p, native_placement(c, p, std::vector<int>(nodes, 0)));
}

} // namespace

TEST_CASE("a cp group stays in the node when tp x cp GPUs fit, else spans nodes", "[cp]") {
  CHECK(cp_ranks_per_node(2, 4, 8) == 2);  // 8 GPUs: one node
  CHECK(cp_ranks_per_node(8, 1, 8) == 8);
  CHECK(cp_ranks_per_node(4, 4, 8) == 2);  // 16 GPUs: 2 members per node
  CHECK(cp_ranks_per_node(16, 1, 8) == 8); // 8 members per node
  CHECK(cp_ranks_per_node(4, 8, 8) == 1);  // every member on its own node
}

TEST_CASE("ring attention hides each K/V pass behind one attention step", "[cp]") {
  // cp 4 in one node, K and V of one rank 1 MB: each pass 1 ms over 1 GB/s.
  const CpLinks l = links(4);
  CHECK(cp_ring_step_s(1e6, 4, l) == Approx(1e-3));
  // Attention 8 ms forward: 4 steps of 2 ms, each longer than its 1 ms pass: nothing exposed,
  // 3 passes of 1 ms in all. Backward 20 ms: steps of 5 ms, passes of K, V and their
  // gradients 2 ms, hidden; the last gradients' hop home (1 ms) is not.
  const CpLayerCost hidden = cp_ring_cost(4, 1e6, 8e-3, 20e-3, l);
  CHECK(hidden.forward_s == Approx(0.0).margin(1e-15));
  CHECK(hidden.forward_total_s == Approx(3e-3));
  CHECK(hidden.backward_s == Approx(1e-3));
  CHECK(hidden.backward_total_s == Approx(3 * 2e-3 + 1e-3));
  // Attention 2 ms forward: steps of 0.5 ms, passes of 1 ms: 3 x 0.5 ms exposed. Backward
  // 4 ms: steps of 1 ms, passes of 2 ms: 3 x 1 ms + the 1 ms hop home.
  const CpLayerCost exposed = cp_ring_cost(4, 1e6, 2e-3, 4e-3, l);
  CHECK(exposed.forward_s == Approx(1.5e-3));
  CHECK(exposed.backward_s == Approx(4e-3));
  // Across nodes (2 members per node) every ring step waits for its network hop: 10 ms.
  const CpLayerCost across = cp_ring_cost(4, 1e6, 8e-3, 20e-3, links(2));
  CHECK(across.forward_s == Approx(3 * (10e-3 - 2e-3)));
  CHECK(across.backward_s == Approx(3 * (20e-3 - 5e-3) + 10e-3));
  // cp 1: no exchange.
  CHECK(cp_ring_cost(1, 1e6, 8e-3, 20e-3, l).backward_total_s == 0.0);
}

TEST_CASE("Ulysses all-to-alls move (cp - 1)/cp of each tensor, nothing hidden", "[cp]") {
  // 4 MB per rank over 4 ranks of one node: 3 x 1 MB over 1 GB/s.
  CHECK(cp_all_to_all_s(4e6, 4, links(4)) == Approx(3e-3));
  // 2 per node: 1 MB to the node's peer (1 ms), 2 MB over the network (20 ms), at once.
  CHECK(cp_all_to_all_s(4e6, 4, links(2)) == Approx(20e-3));
  // q, k, v (4 MB) before attention and its output (2 MB) after, forward and backward alike.
  const CpLayerCost c = cp_a2a_cost(4, 4e6, 2e6, links(4));
  CHECK(c.forward_s == Approx(3e-3 + 1.5e-3));
  CHECK(c.backward_s == Approx(c.forward_s));
  CHECK(c.forward_total_s == c.forward_s);
  // Buffers: ring holds K, V and their gradients twice (4 kv); a2a the head-split q, k, v.
  CHECK(cp_buffer_bytes(4, CpComm::ring, 1e6, 4e6) == 4e6);
  CHECK(cp_buffer_bytes(4, CpComm::a2a, 1e6, 4e6) == 4e6);
  CHECK(cp_buffer_bytes(1, CpComm::a2a, 1e6, 4e6) == 0.0);
}

TEST_CASE("all-gather cp: K/V gathered before attention, again in backward, nothing hidden",
          "[cp]") {
  // cp 4 in one node, K and V of one rank 1 MB: a gather is 3 ring steps of 1 ms; backward
  // gathers again and reduce-scatters the gradients.
  const CpLayerCost c = cp_allgather_cost(4, 1e6, links(4));
  CHECK(c.forward_s == Approx(3e-3));
  CHECK(c.backward_s == Approx(6e-3));
  CHECK(c.forward_total_s == c.forward_s);
  CHECK(c.backward_total_s == c.backward_s);
  // Across nodes every step waits for its network hop (10 ms).
  CHECK(cp_allgather_cost(4, 1e6, links(2)).forward_s == Approx(30e-3));
  // The ring moves the same bytes but hides them behind attention: never slower.
  const CpLayerCost ring = cp_ring_cost(4, 1e6, 2e-3, 4e-3, links(4));
  CHECK(ring.forward_s < c.forward_s);
  CHECK(ring.backward_s < c.backward_s);
  CHECK(cp_allgather_cost(1, 1e6, links(4)).backward_s == 0.0);
  // Buffers: the gathered K and V and their full-length gradients in backward (2 cp kv).
  CHECK(cp_buffer_bytes(4, CpComm::allgather, 1e6, 4e6) == 8e6);
  CHECK(cp_buffer_bytes(1, CpComm::allgather, 1e6, 4e6) == 0.0);
}

TEST_CASE("an all-gather cp plan costs more than the ring and holds more", "[cp]") {
  // Llama-3 8B at 128k on tp 8 x cp 4 (4 nodes): the estimate charges the gathers in full.
  const NativeContext c = context(llama8b(131072));
  DesignPoint ring = point(8, 4, 1, 1, 1);
  DesignPoint gather = ring;
  gather.cp_comm = CpComm::allgather;
  const NativeEstimate r = run(c, ring);
  const NativeEstimate g = run(c, gather);
  CHECK(g.stages[0].cp_comm_s > r.stages[0].cp_comm_s);
  CHECK(g.step_s > r.step_s);
  CHECK(g.stages[0].memory.total() > r.stages[0].memory.total());
}

TEST_CASE("cp splits the tokens of the GEMMs and 1/cp of the causal attention", "[cp]") {
  const ModelSpec m = llama8b(32768);
  const NativeGpu g = h100_like();
  AnalyticSettings st;
  st.sequence_length = 32768;
  st.flash_attention = true; // context parallelism runs on fused attention only
  AnalyticSettings half = st;
  half.sequence_length = 16384;
  AnalyticSettings cp2 = st;
  cp2.context_parallel = 2;
  const AnalyticLayerTimes full = analytic_layer_times(m, g.spec, g.calibration, st);
  const AnalyticLayerTimes shorter = analytic_layer_times(m, g.spec, g.calibration, half);
  const AnalyticLayerTimes split = analytic_layer_times(m, g.spec, g.calibration, cp2);
  // GEMMs and element-wise work see the rank's 16k tokens, as a 16k sequence does.
  CHECK(split.gemm_forward_s == Approx(shorter.gemm_forward_s));
  CHECK(split.elementwise_forward_s == Approx(shorter.elementwise_forward_s));
  // Its 16k queries attend to keys of all 32k: half the full attention, twice the 16k one.
  CHECK(split.attention_forward_s == Approx(full.attention_forward_s / 2));
  CHECK(split.attention_forward_s == Approx(2 * shorter.attention_forward_s));
}

TEST_CASE("cp divides activations and adds the ring's K/V buffers", "[cp]") {
  const NativeContext c = context(llama8b(32768));
  const DesignPoint one = point(1, 1, 8, 1, 8);
  DesignPoint two = point(1, 2, 4, 1, 8);
  CHECK(layer_activation_bytes(c.model, two, c.settings) ==
        Approx(layer_activation_bytes(c.model, one, c.settings) / 2));
  const NativeEstimate a = run(c, one);
  const NativeEstimate b = run(c, two);
  CHECK(b.stages[0].memory.activations == Approx(a.stages[0].memory.activations / 2));
  // Buffers: embedding output and logits halve; one layer's K/V and gradient buffers come in:
  // 4 x (K and V: 2 x 16384 tokens x 8 heads x 128 x 2 bytes) = 128 MiB.
  const double kv = 2.0 * 16384 * 8 * 128 * 2;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  CHECK(b.stages[0].memory.buffers == Approx(a.stages[0].memory.buffers / 2 + 4 * kv / gib));
  // Weights, gradients and optimizer states are not split by cp.
  CHECK(b.stages[0].memory.weights == Approx(a.stages[0].memory.weights));
  CHECK(b.stages[0].memory.optimizer == Approx(a.stages[0].memory.optimizer));
}

TEST_CASE("gradients are reduced over the dp x cp ranks", "[cp]") {
  const NativeContext c = context(llama8b(32768));
  // 16 GPUs on 2 nodes: dp 8 x cp 2 and dp 16 reduce the same gradients over 16 ranks.
  const NativeEstimate a = run(c, point(1, 1, 16, 1, 16));
  const NativeEstimate b = run(c, point(1, 2, 8, 1, 16));
  CHECK(b.dp_sync_s == Approx(a.dp_sync_s));
  CHECK(b.dp_sync_s > 0.0);
  CHECK(b.stages[0].cp_comm_s > 0.0);
  // With distributed-optimizer-like sharding (zero1), states are split over dp x cp.
  DesignPoint z = point(1, 2, 8, 1, 16);
  z.method = DpMethod::zero1;
  DesignPoint z1 = point(1, 1, 16, 1, 16);
  z1.method = DpMethod::zero1;
  CHECK(run(c, z).stages[0].memory.optimizer == Approx(run(c, z1).stages[0].memory.optimizer));
}

TEST_CASE("the exposed exchange is in the stage's forward and backward", "[cp]") {
  const NativeContext c = context(llama8b(131072));
  DesignPoint p = point(8, 4, 1, 1, 1); // cp 4 across 4 nodes: the network's pace
  const NativeEstimate e = run(c, p);
  const NativeStage& st = e.stages[0];
  CHECK(st.cp_comm_s > 0.0);
  // The same point with a cp of one node's worth hides more of it.
  DesignPoint in_node = point(2, 4, 1, 1, 1);
  NativeContext c2 = context(llama8b(131072));
  const NativeEstimate f = run(c2, in_node);
  CHECK(f.stages[0].cp_comm_s < st.cp_comm_s);
  // On a slow network (1 GB/s per GPU) the forward passes are exposed too, and full
  // recompute runs them again in backward.
  NativeContext slow = context(llama8b(131072));
  slow.gpus[0].inter_node_bytes_per_s = 8e9;
  const NativeEstimate s = run(slow, p);
  DesignPoint full = p;
  full.recompute = Recompute::full;
  const NativeEstimate r = run(slow, full);
  CHECK(s.stages[0].cp_comm_s > st.cp_comm_s);
  CHECK(r.stages[0].cp_comm_s > s.stages[0].cp_comm_s);
  CHECK(r.stages[0].recompute_s > 0.0);
}

TEST_CASE("context parallelism needs fused attention and no token slicing", "[cp]") {
  NativeContext c = context(llama8b(32768));
  DesignPoint p = point(1, 2, 4, 1, 8);
  const NativePlacement where = native_placement(c, p, {0});
  CHECK(native_invalid_reason(c, p, where).empty());
  c.settings.flash_attention = false;
  CHECK(native_invalid_reason(c, p, where).find("fused attention") != std::string::npos);
  c.settings.flash_attention = true;
  DesignPoint odd = point(1, 3, 2, 1, 8);
  c.model.sequence_length = 32768; // 32768 / 6 is not whole
  CHECK(native_invalid_reason(c, odd, where).find("2 x cp = 6") != std::string::npos);
}

TEST_CASE("PyTorch's all-gather rotater hides its gather behind the first block only", "[cp]") {
  // cp 4 in one node (1 GB/s, no latency), K and V of one rank 1 MB: the gather is 3 ring
  // steps of 1 ms = 3 ms. Forward attention 4 ms (blocks of 1 ms): 3 - 1 = 2 ms exposed.
  // Backward 8 ms (blocks of 2 ms): the gather again, 3 - 2 = 1 ms; fp32 gradients of 2 MB,
  // 2 ms a hop, each hidden behind the next 2 ms block (3 x 0), the last one exposed: 2 ms.
  const CpLayerCost c = cp_torch_allgather_cost(4, 1e6, 2e6, 4e-3, 8e-3, links(4));
  CHECK(c.forward_s == Approx(2e-3));
  CHECK(c.backward_s == Approx(3e-3));
  CHECK(c.forward_total_s == Approx(3e-3));
  CHECK(c.backward_total_s == Approx(3e-3 + 4 * 2e-3));
  // Across nodes (0.1 GB/s): gather 30 ms - 1 ms; backward 30 - 2 + 3 x (20 - 2) + 20 ms.
  const CpLayerCost x = cp_torch_allgather_cost(4, 1e6, 2e6, 4e-3, 8e-3, links(2));
  CHECK(x.forward_s == Approx(29e-3));
  CHECK(x.backward_s == Approx(28e-3 + 54e-3 + 20e-3));
  // A block longer than the gather hides all of it; the last gradient hop stays.
  const CpLayerCost hidden = cp_torch_allgather_cost(4, 1e6, 2e6, 40e-3, 80e-3, links(4));
  CHECK(hidden.forward_s == 0.0);
  CHECK(hidden.backward_s == Approx(2e-3));
  // Never more than Transformer Engine's all-gather, which hides nothing, on the same bytes.
  CHECK(c.forward_s < cp_allgather_cost(4, 1e6, links(4)).forward_s);
  CHECK(cp_torch_allgather_cost(1, 1e6, 2e6, 4e-3, 8e-3, links(4)).backward_s == 0.0);
  // Buffers: the gathered K/V (cp kv) and the fp32 gradients sent and received (4 kv).
  CHECK(cp_buffer_bytes(4, CpComm::torch_allgather, 1e6, 4e6) == 8e6);
  CHECK(cp_buffer_bytes(1, CpComm::torch_allgather, 1e6, 4e6) == 0.0);
}

TEST_CASE("cp_kv_repeat: the exchange moves K/V of every query head", "[cp]") {
  // Llama-3 8B at 256k, tp 1 x cp 8 in one node: K and V of a rank are 2 x 32768 tokens x 8
  // heads x 128 x 2 bytes = 134 MB; repeated to the 32 query heads, 4x: 537 MB. Buffers of
  // torch_allgather: (8 + 4) x kv = 1.5 GiB (grouped) and 6 GiB (repeated).
  NativeContext c = context(llama8b(262144));
  DesignPoint p = point(1, 8, 1, 1, 1);
  p.cp_comm = CpComm::torch_allgather;
  const NativeEstimate grouped = run(c, p);
  c.settings.cp_kv_repeat = true;
  const NativeEstimate repeated = run(c, p);
  const double kv = 2.0 * 32768 * 8 * 128 * 2;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  CHECK(repeated.stages[0].memory.buffers - grouped.stages[0].memory.buffers ==
        Approx(12 * 3 * kv / gib));
  CHECK(repeated.stages[0].cp_comm_s >= grouped.stages[0].cp_comm_s);
  CHECK(repeated.step_s >= grouped.step_s);
}
