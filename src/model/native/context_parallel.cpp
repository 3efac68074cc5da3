#include "zerosearch/model/context_parallel.hpp"

#include <algorithm>

namespace zerosearch {

int cp_ranks_per_node(int cp, int tp, int gpus_per_node) noexcept {
  cp = std::max(1, cp);
  tp = std::max(1, tp);
  gpus_per_node = std::max(1, gpus_per_node);
  if (gpus_per_node % (tp * cp) == 0) return cp;
  return std::clamp(gpus_per_node / tp, 1, cp);
}

double cp_ring_step_s(double bytes, int cp, const CpLinks& links) noexcept {
  if (cp <= 1 || bytes <= 0) return 0.0;
  const double bw = links.ranks_per_node >= cp ? links.intra_bytes_per_s : links.inter_bytes_per_s;
  return links.latency_s + bytes / bw;
}

double cp_all_to_all_s(double bytes, int cp, const CpLinks& links) noexcept {
  if (cp <= 1 || bytes <= 0) return 0.0;
  const int k = std::clamp(links.ranks_per_node, 1, cp);
  const double share = bytes / cp; // what goes to each peer
  const double intra = (k - 1) * share / links.intra_bytes_per_s;
  const double inter = (cp - k) * share / links.inter_bytes_per_s;
  return links.latency_s + std::max(intra, inter);
}

CpLayerCost cp_ring_cost(int cp, double kv_bytes, double attention_forward_s,
                         double attention_backward_s, const CpLinks& links) noexcept {
  CpLayerCost c;
  if (cp <= 1) return c;
  const double steps = cp - 1;
  const double fwd_step = attention_forward_s / cp;
  const double bwd_step = attention_backward_s / cp;
  const double fwd_comm = cp_ring_step_s(kv_bytes, cp, links);
  const double bwd_comm = cp_ring_step_s(2.0 * kv_bytes, cp, links);
  const double home = cp_ring_step_s(kv_bytes, cp, links); // the last dK, dV to their owner
  c.forward_total_s = steps * fwd_comm;
  c.backward_total_s = steps * bwd_comm + home;
  c.forward_s = steps * std::max(0.0, fwd_comm - fwd_step);
  c.backward_s = steps * std::max(0.0, bwd_comm - bwd_step) + home;
  return c;
}

CpLayerCost cp_a2a_cost(int cp, double qkv_bytes, double out_bytes, const CpLinks& links) noexcept {
  CpLayerCost c;
  if (cp <= 1) return c;
  const double t = cp_all_to_all_s(qkv_bytes, cp, links) + cp_all_to_all_s(out_bytes, cp, links);
  c.forward_s = c.forward_total_s = t;
  c.backward_s = c.backward_total_s = t;
  return c;
}

CpLayerCost cp_allgather_cost(int cp, double kv_bytes, const CpLinks& links) noexcept {
  CpLayerCost c;
  if (cp <= 1) return c;
  const double gather = (cp - 1) * cp_ring_step_s(kv_bytes, cp, links);
  c.forward_s = c.forward_total_s = gather;
  c.backward_s = c.backward_total_s = 2.0 * gather; // gather again, reduce-scatter the gradients
  return c;
}

CpLayerCost cp_torch_allgather_cost(int cp, double kv_bytes, double grad_bytes,
                                    double attention_forward_s, double attention_backward_s,
                                    const CpLinks& links) noexcept {
  CpLayerCost c;
  if (cp <= 1) return c;
  const double gather = (cp - 1) * cp_ring_step_s(kv_bytes, cp, links);
  const double fwd_block = attention_forward_s / cp;
  const double bwd_block = attention_backward_s / cp;
  const double grads = cp_ring_step_s(grad_bytes, cp, links);
  c.forward_total_s = gather;
  c.forward_s = std::max(0.0, gather - fwd_block);
  c.backward_total_s = gather + cp * grads;
  c.backward_s = std::max(0.0, gather - bwd_block) +
                 (cp - 1) * std::max(0.0, grads - bwd_block) + grads;
  return c;
}

double cp_buffer_bytes(int cp, CpComm comm, double kv_bytes, double qkv_bytes) noexcept {
  if (cp <= 1) return 0.0;
  switch (comm) {
  case CpComm::ring: return 4.0 * kv_bytes;
  case CpComm::a2a: return qkv_bytes;
  case CpComm::allgather: return 2.0 * cp * kv_bytes;
  case CpComm::torch_allgather: return (cp + 4.0) * kv_bytes;
  }
  return 4.0 * kv_bytes;
}

} // namespace zerosearch
