// All arithmetic here is float32 on purpose: the original holds bandwidths, sizes and degrees in
// torch float32 tensors, and its results are float32 values. Each expression below follows the
// original's evaluation order so that every intermediate rounds the same way.
#include "zerosearch/model/comm.hpp"

#include <algorithm>
#include <limits>

namespace zerosearch {

namespace {
float fl(int v) noexcept { return static_cast<float>(v); }

const LinkF32& link_of(const std::vector<LinkF32>& links, const Placement& placement, int node) {
  return links[static_cast<std::size_t>(placement[static_cast<std::size_t>(node)])];
}
} // namespace

std::vector<float> pipeline_link_times_s(const RankLayout& layout, const Placement& placement,
                                         const std::vector<LinkF32>& links,
                                         float activation_elems) {
  std::vector<float> out;
  if (layout.pp <= 1) {
    return out;
  }
  out.reserve(static_cast<std::size_t>(layout.pp - 1));
  // The original fixes 16-bit activations here, whatever --precision says.
  const float volume_bits = activation_elems * 16.0F;
  // Boundary j pairs every rank r of stage j's block [K j, K (j+1)) with r + K, K = tp*dp.
  // The result is volume / (the slowest pair's bandwidth): max over d of volume / slowest_d
  // equals volume / min over d and t, division being monotone. The block is walked in runs
  // of ranks whose node and partner node stay the same, so a boundary costs O(K / M), not O(K).
  const int k = layout.tp * layout.dp;
  const int m = layout.gpus_per_node;
  for (int j = 0; j + 1 < layout.pp; ++j) {
    float slowest = std::numeric_limits<float>::infinity();
    const int end = k * (j + 1);
    for (int r = k * j; r < end;) {
      const int a = r / m;
      const int b = (r + k) / m;
      float bw = 0.0F;
      if (a != b) {
        const float inter = std::min(link_of(links, placement, a).inter_node_bits_per_s,
                                     link_of(links, placement, b).inter_node_bits_per_s);
        bw = inter / fl(layout.dp) / fl(layout.tp) / 1.05F;
      } else {
        bw = link_of(links, placement, a).intra_node_bits_per_s / 3.5F;
      }
      slowest = std::min(slowest, bw);
      r = std::min({end, (a + 1) * m, (b + 1) * m - k});
    }
    out.push_back(volume_bits / slowest);
  }
  return out;
}

float stage0_param_count(int stage0_layers, int total_layers, float hidden, float vocab,
                         float tp) noexcept {
  // Layer 0 is the embedding: h*v. The post_process (last layer) would count h*v again, but
  // the original counts the pair once. Transformer layers: (12 h^2 + 20800) / tp each.
  float params = hidden * vocab;
  const float per_transformer = (12.0F * (hidden * hidden) + 20800.0F) / tp;
  for (int layer = 1; layer < stage0_layers; ++layer) {
    if (layer == total_layers - 1) {
      break;
    }
    params = params + per_transformer;
  }
  return params;
}

float dp_ring_bandwidth_bits_per_s(const RankLayout& layout, const Placement& placement,
                            const std::vector<LinkF32>& links) noexcept {
  // The original keeps only the last tensor index's ring (its list is reset per index).
  const int t = layout.tp - 1;
  float slowest = std::numeric_limits<float>::infinity();
  for (int d = 0; d < layout.dp; ++d) {
    const int a = layout.node(0, d, t);
    const int b = layout.node(0, (d + 1) % layout.dp, t);
    const float bw = a == b ? link_of(links, placement, a).intra_node_bits_per_s
                            : std::min(link_of(links, placement, a).inter_node_bits_per_s,
                                       link_of(links, placement, b).inter_node_bits_per_s);
    slowest = std::min(slowest, bw);
  }
  return slowest;
}

float dp_sync_time_s(DpMethod method, int dp, float params, int precision_bits,
                     float bandwidth_bits_per_s, float micro_batches) noexcept {
  const float n = fl(dp);
  const float ring = n * bandwidth_bits_per_s;
  switch (method) {
  case DpMethod::dp:
  case DpMethod::zero0:
    // all-reduce: 2(n-1) P q / (n B)
    return fl(2 * (dp - 1)) * (params * fl(precision_bits)) / ring;
  case DpMethod::zero1:
  case DpMethod::fsdp: {
    // reduce-scatter + all-gather, (n-1) P q / (n B) each
    const float half = fl(dp - 1) * (params * fl(precision_bits)) / ring;
    return half + half;
  }
  case DpMethod::zero2: {
    // a reduce per micro-batch plus one all-gather, always 16-bit
    const float once = fl(dp - 1) * (params * 16.0F) / ring;
    return once * micro_batches + once;
  }
  case DpMethod::zero3:
    // reduce-scatter per micro-batch, 32-bit
    return fl(dp - 1) * (params * 32.0F) / ring * micro_batches;
  }
  return 0.0F;
}

float embedding_sync_time_s(const RankLayout& layout, const Placement& placement,
                            const std::vector<LinkF32>& links, double hidden, double vocab,
                            int precision_bits) {
  if (layout.pp <= 1) {
    return 0.0F;
  }
  // The original resets its minimum for each d, so only the last replica's links count.
  const int d = layout.dp - 1;
  float slowest = std::numeric_limits<float>::infinity();
  for (int t = 0; t < layout.tp; ++t) {
    const int a = layout.node(0, d, t);
    const int b = layout.node(layout.pp - 1, d, t);
    const float bw = a != b ? std::min(link_of(links, placement, a).inter_node_bits_per_s,
                                       link_of(links, placement, b).inter_node_bits_per_s)
                            : link_of(links, placement, a).intra_node_bits_per_s;
    slowest = std::min(slowest, bw);
  }
  const float shared = slowest / fl(std::min(layout.dp, layout.gpus_per_node));
  // 2*(2-1)*(h*v*q) is a Python integer; Python int / tensor is torch's reciprocal * int.
  const double volume_bits = 2.0 * hidden * vocab * static_cast<double>(precision_bits);
  return torch_rdiv(static_cast<float>(volume_bits), 2.0F * shared) / fl(layout.tp);
}

} // namespace zerosearch
