// The data-parallel collectives across nodes as NCCL prices its ring (docs/native.md §2):
// one ring over all the group's ranks, its intra-node and network hops pipelined, against the
// hierarchical form; the faster is charged.
#include <catch2/catch.hpp>

#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/model/native.hpp"
#include "native_fixtures.hpp"

using namespace zerosearch;

namespace {

/// `nodes` nodes of 4 GPUs: intra-node bus `intra_bus`, each node's network `net` bytes/s.
NativeContext four_gpu_nodes(double intra_bus, double net) {
  NativeContext c;
  c.model = test::test_llama(8);
  c.gpus_per_node = 4;
  NativeGpu g = test::h100_like();
  with_intra_node_bus(g.calibration, intra_bus);
  g.inter_node_bytes_per_s = net;
  c.gpus = {g};
  c.settings.overlap_grad_reduce = false;
  return c;
}

DesignPoint dp_only(int dp) {
  DesignPoint p;
  p.method = DpMethod::dp;
  p.tp = 1;
  p.pp = 1;
  p.dp = dp;
  p.mbs = 1;
  p.num_micro_batches = 1;
  return p;
}

} // namespace

TEST_CASE("NCCL's ring across nodes: intra-node and network steps at their own latencies",
          "[native][collectives]") {
  const NcclLatency pci = nccl_latency(Transport::pci);
  const NcclLatency net = nccl_latency(Transport::net);
  // An all-reduce over 16 ranks on 4 nodes: 30 steps, 2 x 3 = 6 of them over the network.
  // 1 GB per rank: 2 x 15/16 x 1e9 = 1.875e9 bytes on the wire at 3.75 GB/s = 0.5 s, plus
  // Simple's latency 8.4 + 24 x 5.7 + 6 x 14 = 229.2 us (LL: 46.8 us, but at a quarter of the bus).
  CHECK(nccl_ring_s(1.875e9, 30, 6, 3.75e9, pci, net) == Approx(0.5 + 229.2e-6));
  // 1 KiB per rank (1,920 bytes on the wire): LL's 6.6 + 24 x 1.0 + 6 x 2.7 = 46.8 us plus
  // 1920 / (3.75e9 / 4) s.
  CHECK(nccl_ring_s(1920, 30, 6, 3.75e9, pci, net) == Approx(46.8e-6 + 1920 / 0.9375e9));
  // With the tree over 4 nodes allowed: 2 log2(4) = 4 network steps, LL 6.6 + 4 x 2.7 = 17.4 us.
  CHECK(nccl_ring_s(1920, 30, 6, 3.75e9, pci, net, 4) == Approx(17.4e-6 + 1920 / 0.9375e9));
  // Inside one node (no network steps) it is nccl_collective_s on the intra-node link.
  CHECK(nccl_ring_s(1.5e9, 6, 0, 3.75e9, pci, net) ==
        Approx(nccl_collective_s(1.5e9, 6, 3.75e9, pci)));
  CHECK(nccl_ring_s(0.0, 30, 6, 3.75e9, pci, net) == 0.0);
}

TEST_CASE("data parallelism over 4 nodes whose PCIe bus is as slow as their network: one "
          "pipelined ring",
          "[native][collectives]") {
  // AMP's T4 cluster in figures (the paper's 50 Gbit/s inside and between g4dn.12xlarge
  // nodes, 60 % achieved): 3.75 GB/s both. dp 16 over 4 nodes of 4.
  const NativeContext c = four_gpu_nodes(3.75e9, 3.75e9);
  const DesignPoint p = dp_only(16);
  const NativeEstimate e =
      native_estimate(c, p, native_placement(c, p, std::vector<int>(4, 0)));
  // Megatron-LM's DDP all-reduces fp32 gradients: S = 4 bytes x P per GPU.
  const double S = 4.0 * static_cast<double>(total_parameters(c.model));
  // The ring: every node's network carries 2 x 15/16 S, at the slower of the PCIe bus (3.75
  // GB/s) and the group's network share (4 GPUs x 3.75/4 GB/s): 1.875 S / 3.75e9 s.
  const double ring = nccl_ring_s(1.875 * S, 30, 6, 3.75e9, nccl_latency(Transport::nvlink),
                                  nccl_latency(Transport::net), 4);
  // Hierarchically the same bytes take twice as long: reduce-scatter (3/4 S on PCIe), the ring
  // over the nodes (2 x 3/4 x S/4 at 3.75/4 GB/s) and the all-gather, one after the other:
  // (0.75 + 1.5 + 0.75) S / 3.75e9 = 3 S / 3.75e9.
  CHECK(e.dp_sync_s == Approx(ring).epsilon(1e-6));
  CHECK(e.dp_sync_s == Approx(1.875 * S / 3.75e9).epsilon(1e-3));
}

TEST_CASE("data parallelism over 2 NVLink nodes on a slow network: the hierarchical form",
          "[native][collectives]") {
  // NVLink inside (360 GB/s), 1.25 GB/s between the nodes: dp 8 over 2 nodes of 4. The ring
  // would carry 2 x 7/8 S over each node's network, the hierarchical form 2 x 1/2 x S/4 per GPU
  // at a quarter of it, S in all: NCCL's choice, the faster, is the latter.
  const NativeContext c = four_gpu_nodes(360e9, 1.25e9);
  const DesignPoint p = dp_only(8);
  const NativeEstimate e =
      native_estimate(c, p, native_placement(c, p, std::vector<int>(2, 0)));
  const double S = 4.0 * static_cast<double>(total_parameters(c.model));
  CHECK(e.dp_sync_s > S / 1.25e9);
  CHECK(e.dp_sync_s < 1.01 * S / 1.25e9);
  CHECK(e.dp_sync_s < 1.75 * S / 1.25e9 / 1.5);
}
