#pragma once
// Communication costs (docs/model.md §4): pipeline links between stages, data-parallel collectives
// and the embedding synchronisation. Like the original, these are computed in float32 (its torch
// tensors), so every step rounds to float; the results are float32 seconds.
#include <vector>

#include "zerosearch/core/cluster.hpp"
#include "zerosearch/core/dp_method.hpp"

namespace zerosearch {

/// Python's `number / float32_tensor`: torch evaluates it as reciprocal(tensor) * number,
/// which rounds twice. Used wherever the original divides a plain number by a tensor.
[[nodiscard]] constexpr float torch_rdiv(float numerator, float tensor) noexcept {
  return (1.0F / tensor) * numerator;
}

/// Link bandwidth of one node type, in bit/s, as float32 (the original's torch tensors).
struct LinkF32 {
  float inter_node_bits_per_s = 0.0F;
  float intra_node_bits_per_s = 0.0F;
};

/// Where ranks live: rank = t + tp*d + tp*dp*s, on node rank / gpus_per_node.
struct RankLayout {
  int tp = 1;
  int dp = 1;
  int pp = 1;
  int gpus_per_node = 4;

  [[nodiscard]] constexpr int rank(int stage, int d, int t) const noexcept {
    return t + tp * d + tp * dp * stage;
  }
  [[nodiscard]] constexpr int node(int stage, int d, int t) const noexcept {
    return rank(stage, d, t) / gpus_per_node;
  }
};

/// Time in seconds to send one micro-batch's activations across each stage boundary j
/// (between stage j and j+1); pp-1 entries, empty when pp == 1.
/// `links[g]` is indexed by node-type index; `activation_elems` = mbs * seq * hidden.
[[nodiscard]] std::vector<float> pipeline_link_times_s(const RankLayout& layout,
                                                       const Placement& placement,
                                                       const std::vector<LinkF32>& links,
                                                       float activation_elems);

/// Parameters that stage 0 synchronises across data-parallel replicas: its embedding or
/// post_process counted once (h*v) plus (12 h^2 + 20800)/tp per transformer layer, summed in
/// float32 in layer order. `stage0_layers` is partition[0] (with the embedding first).
[[nodiscard]] float stage0_param_count(int stage0_layers, int total_layers, float hidden,
                                       float vocab, float tp) noexcept;

/// Ring bandwidth (bit/s) of stage 0's data-parallel group: the slowest link between ranks
/// (0,d,tp-1) and (0,(d+1)%dp,tp-1).
[[nodiscard]] float dp_ring_bandwidth_bits_per_s(const RankLayout& layout, const Placement& placement,
                                          const std::vector<LinkF32>& links) noexcept;

/// Data-parallel synchronisation time per step, seconds (docs/model.md §4), for `params` parameters
/// of `precision_bits` over a ring of `bandwidth_bits_per_s`, with `micro_batches` micro-batches.
[[nodiscard]] float dp_sync_time_s(DpMethod method, int dp, float params, int precision_bits,
                                   float bandwidth_bits_per_s, float micro_batches) noexcept;

/// Embedding all-reduce between the first and last stage, seconds; 0 when pp == 1.
[[nodiscard]] float embedding_sync_time_s(const RankLayout& layout, const Placement& placement,
                                          const std::vector<LinkF32>& links, double hidden,
                                          double vocab, int precision_bits);

} // namespace zerosearch
