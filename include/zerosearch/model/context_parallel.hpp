#pragma once
// The costs of context parallelism (docs/native.md §2.4), as pure functions: where a cp group's
// exchange runs (NVLink inside a node, the network between nodes), the exposed time of ring
// attention's key/value passes beside the attention blocks they overlap, the all-to-alls of
// DeepSpeed-Ulysses, and the receive buffers both need.
#include "zerosearch/core/context_parallel.hpp"

namespace zerosearch {

/// The links one cp rank's exchange uses. Ranks are laid out tp innermost, then cp (Megatron-LM's
/// order tp-cp-ep-dp-pp): a cp group is cp ranks tp apart.
struct CpLinks {
  /// cp ranks of one group on the same node as a given member.
  int ranks_per_node = 1;
  /// Point-to-point bandwidth inside a node (NVLink or PCIe, one direction), bytes/s.
  double intra_bytes_per_s = 1.0;
  /// The network share of one GPU, bytes/s.
  double inter_bytes_per_s = 1.0;
  /// Latency of one message, seconds.
  double latency_s = 20e-6;
};

/// The cp group of degree `cp` at tensor-parallel degree `tp` on nodes of `gpus_per_node`:
/// inside one node when tp x cp GPUs fit in it evenly, else `gpus_per_node / tp` members per
/// node (at least 1).
[[nodiscard]] int cp_ranks_per_node(int cp, int tp, int gpus_per_node) noexcept;

/// One micro-batch's context-parallel exchange in one transformer layer, seconds.
struct CpLayerCost {
  /// Exposed (not hidden behind attention) in forward and in backward.
  double forward_s = 0.0;
  double backward_s = 0.0;
  /// All of it, hidden or not, in forward and backward (for the report).
  double forward_total_s = 0.0;
  double backward_total_s = 0.0;
};

/// Time of one transfer of `bytes` per rank to the next rank of the ring: the ring's step takes
/// as long as its slowest hop, which crosses nodes when the group spans nodes.
[[nodiscard]] double cp_ring_step_s(double bytes, int cp, const CpLinks& links) noexcept;

/// One all-to-all of `bytes` held per rank over the cp ranks: (cp - 1)/cp of them leave, to the
/// ranks_per_node - 1 peers on the node over its link and to the others over the network, both
/// at once.
[[nodiscard]] double cp_all_to_all_s(double bytes, int cp, const CpLinks& links) noexcept;

/// Ring attention with causal load balance (Megatron-LM/Transformer Engine cp_comm_type p2p;
/// Liu et al. 2023, Ring Attention): each rank holds chunks i and 2 cp - 1 - i, so each of its cp
/// attention steps is 1/cp of its attention. Forward: step k's keys and values (`kv_bytes`, K
/// and V of one rank) go to the next rank while step k computes; cp - 1 transfers, each hidden
/// behind one step: exposed (cp - 1) max(0, transfer - step). Backward: the keys and values
/// travel with their gradients (2 kv_bytes a step) beside each backward step, and the last
/// gradients take one more hop to their owner, which nothing hides.
/// `attention_forward_s` and `attention_backward_s` are the rank's whole attention core.
[[nodiscard]] CpLayerCost cp_ring_cost(int cp, double kv_bytes, double attention_forward_s,
                                       double attention_backward_s, const CpLinks& links) noexcept;

/// DeepSpeed-Ulysses (Jacobs et al. 2023; Transformer Engine cp_comm_type a2a): an all-to-all of
/// q, k and v (`qkv_bytes` per rank) before attention and one of its output (`out_bytes`) after;
/// backward the same of their gradients. Attention waits for them: nothing is hidden.
[[nodiscard]] CpLayerCost cp_a2a_cost(int cp, double qkv_bytes, double out_bytes,
                                      const CpLinks& links) noexcept;

/// Llama 3's all-gather context parallelism (Transformer Engine cp_comm_type all_gather): forward
/// all-gathers the keys and values of every rank (`kv_bytes` each) before attention; backward
/// all-gathers them again (Transformer Engine keeps only the local ones) and reduce-scatters
/// the gathered gradients. Each is a ring of cp - 1 steps of kv_bytes at the slowest hop
/// (cp_ring_step_s); attention waits for them: nothing is hidden.
[[nodiscard]] CpLayerCost cp_allgather_cost(int cp, double kv_bytes, const CpLinks& links) noexcept;

/// PyTorch's context_parallel with the all-gather rotater (torch
/// distributed/tensor/experimental/_attention.py at torch 1963fc8, the torch of torchtitan's
/// 2024-12 benchmark: _templated_ring_attention and _templated_ring_attention_backward with
/// _AllGatherRotater; torchtitan's default rotate method at 9dec370). Forward: one all-gather of
/// the keys and values (cp - 1 ring steps of `kv_bytes` at the slowest hop, as
/// cp_allgather_cost) issued before the first of the cp attention blocks and waited for before
/// the second: exposed max(0, gather - one block). Backward: the same gather behind the first
/// backward block, and the key/value gradients (`grad_bytes` a rank: fp32, convert_to_f32) sent
/// to the next rank after each block (an all-to-all rotater whatever the rotate method), each
/// hidden behind the block after it, the last one waited for after the loop: exposed
/// max(0, gather - block) + (cp - 1) max(0, transfer - block) + transfer.
[[nodiscard]] CpLayerCost cp_torch_allgather_cost(int cp, double kv_bytes, double grad_bytes,
                                                  double attention_forward_s,
                                                  double attention_backward_s,
                                                  const CpLinks& links) noexcept;

/// Receive buffers of one layer's exchange at its peak, bytes: ring: in backward, the keys and
/// values and their gradients, each being sent and received (4 kv_bytes; Transformer Engine
/// double-buffers them); a2a: the head-split q, k and v (qkv_bytes); allgather: in backward,
/// the gathered keys and values and their full-length gradients (2 cp kv_bytes);
/// torch_allgather: in backward, the gathered keys and values (cp kv_bytes) and their fp32
/// gradients being sent and received (2 x 2 kv_bytes for 16-bit K/V): (cp + 4) kv_bytes.
[[nodiscard]] double cp_buffer_bytes(int cp, CpComm comm, double kv_bytes,
                                     double qkv_bytes) noexcept;

} // namespace zerosearch
