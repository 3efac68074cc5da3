#include <string_view>
#include "zerosearch/model/native.hpp"
#include "zerosearch/model/native_steps.hpp"
#include "zerosearch/model/zero_bubble.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <memory>
#include <optional>
#include <queue>
#include <span>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>

#include "zerosearch/model/context_parallel.hpp"
#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/model/moe_kernels.hpp"
#include "zerosearch/model/network.hpp"

namespace zerosearch {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
/// Latency of one step of a ring collective or one send, seconds.
constexpr double kAlpha_s = 20e-6;

double elem_bytes(Dtype d) noexcept {
  // fp8 trains with bf16 weights and activations (the GEMM inputs are cast per layer).
  return d == Dtype::fp32 || d == Dtype::tf32 ? 4.0 : 2.0;
}

/// Bus bandwidth (bytes/s) of an intra-node collective over n GPUs: the calibration's tp
/// all-reduce fit for that group size (nearest smaller, else the smallest).
double intra_bus_bytes_per_s(const NativeGpu& g, int n) noexcept {
  const auto& fits = g.calibration.tp_allreduce;
  if (fits.empty()) {
    return 0.8 * g.spec.intra_node.GBps_per_dir * 1e9;
  }
  auto it = fits.upper_bound(n);
  if (it != fits.begin()) {
    --it;
  }
  return it->second.bus_bytes_per_s;
}

/// Ring all-reduce, reduce-scatter and all-gather of `bytes` per GPU over n GPUs at bus
/// bandwidth `bus` (nccl-tests convention), with NCCL's latencies of the link (an all-reduce
/// across `tree_nodes` > 1 nodes may take the tree's).
double ring_allreduce_s(double bytes, int n, double bus, const NcclLatency& lat,
                        int tree_nodes = 0) noexcept {
  if (n <= 1 || bytes <= 0) return 0.0;
  const double k = n - 1;
  return nccl_collective_s(2 * k / n * bytes, 2 * (n - 1), bus, lat, tree_nodes);
}
double ring_half_s(double bytes, int n, double bus, const NcclLatency& lat) noexcept {
  if (n <= 1 || bytes <= 0) return 0.0;
  const double k = n - 1;
  return nccl_collective_s(k / n * bytes, n - 1, bus, lat);
}

/// The ranks of a design point: tp x cp x dp per stage, pp stages.
long long world_size(const DesignPoint& p) noexcept {
  return static_cast<long long>(p.tp) * p.cp * p.dp * p.pp;
}

/// NCCL's latencies of a GPU's intra-node link.
NcclLatency intra_latency(const GpuSpec& g) noexcept {
  return nccl_latency(g.intra_node.link.rfind("nvlink", 0) == 0 ? Transport::nvlink
                                                                 : Transport::pci);
}

/// A data-parallel collective over `dp` ranks spaced tp apart (docs/native.md §2.4): inside a
/// node when the group fits in one, else hierarchical (intra-node reduce-scatter, inter-node
/// ring over the nodes on the node's network share of one GPU, intra-node all-gather). Where the
/// node type's scale-up domain spans nodes, "node" reads "domain" (docs/native.md §2.5).
struct DpGroup {
  int intra = 1;
  int inter = 1;
  double intra_bus = 1.0;
  double inter_bus = 1.0;
  NcclLatency intra_lat;
  NcclLatency inter_lat;
};

/// The node's network share of one of `flows` GPUs of a node that cross it at once (a pipeline
/// boundary's or the tied embedding's GPUs: one stage's tp x cp x dp ranks, at most the node's
/// GPUs), over the oversubscription.
double nic_share_bytes_per_s(const NativeContext& ctx, const NativeGpu& g, long long flows) noexcept {
  const long long n = std::clamp<long long>(flows, 1, std::max(1, ctx.gpus_per_node));
  return g.inter_node_bytes_per_s / static_cast<double>(n) / g.spec.scale_out_oversubscription;
}

/// The network share of one GPU for traffic that leaves its scale-up domain, bytes/s, when every
/// GPU of the node crosses at once (the data-parallel collectives): the node's network over its
/// GPUs, over the oversubscription.
double scale_out_bytes_per_s(const NativeContext& ctx, const NativeGpu& g) noexcept {
  return nic_share_bytes_per_s(ctx, g, ctx.gpus_per_node);
}

/// A group of n ranks spaced `stride` apart (dp: n = dp, stride = tp; expert data parallel:
/// n = edp, stride = etp x ep) among the design point's `world` ranks.
DpGroup spaced_group(const NativeContext& ctx, int n, int stride, const NativeGpu& g,
                     long long world) {
  DpGroup d;
  const NetworkTiers tiers = network_tiers(g.spec, ctx.gpus_per_node);
  if (tiers.multi_node_domain()) {
    const DomainSplit split = group_domain_split(n, stride, tiers.domain_gpus, world);
    d.intra = split.members;
    d.inter = split.domains;
  } else {
    d.intra = std::max(1, std::min(n, ctx.gpus_per_node / std::max(1, stride)));
    d.inter = (n + d.intra - 1) / d.intra;
  }
  d.intra_bus = intra_bus_bytes_per_s(g, d.intra);
  d.inter_bus = scale_out_bytes_per_s(ctx, g);
  d.intra_lat = intra_latency(g.spec);
  d.inter_lat = nccl_latency(Transport::net);
  return d;
}

/// Gradients are reduced over the dp x cp ranks (Megatron-LM's data-parallel group with
/// context parallelism; torchtitan's FSDP mesh dp_shard x cp), tp apart.
DpGroup dp_group(const NativeContext& ctx, const DesignPoint& p, const NativeGpu& g) {
  return spaced_group(ctx, p.dp * p.cp, p.tp, g, world_size(p));
}

/// The bus bandwidth of one NCCL ring over a group spanning nodes: its hops all move at once,
/// so it runs at its slowest: the intra-node bus, or the network share of the group's members
/// on a node (the node's other GPUs reduce their own groups at the same time, each with its
/// share; a group with one member per node has one GPU's share).
double dp_ring_bus(const DpGroup& d) noexcept {
  const double net = d.inter_bus * d.intra;
  return d.intra > 1 ? std::min(d.intra_bus, net) : net;
}

/// All-reduce of `bytes` per GPU over the group: inside a node, a ring on the intra-node bus;
/// across nodes, the faster (NCCL's tuner picks the algorithm its model prices lowest) of one
/// ring over all the group's ranks (nccl_ring_s: the intra-node and network hops pipelined, each
/// node's network carrying 2 (n - 1) / n of the bytes) and the hierarchical form (intra-node
/// reduce-scatter, a ring over the nodes on 1/intra of the bytes, intra-node all-gather, one
/// after the other: 2 (nodes - 1) / nodes of the bytes on each node's network).
double dp_allreduce_s(const DpGroup& d, double bytes) noexcept {
  if (d.inter <= 1) return ring_allreduce_s(bytes, d.intra, d.intra_bus, d.intra_lat);
  if (bytes <= 0) return 0.0;
  const int n = d.intra * d.inter;
  const double ring = nccl_ring_s(2.0 * (n - 1) / n * bytes, 2 * (n - 1), 2 * (d.inter - 1),
                                  dp_ring_bus(d), d.intra_lat, d.inter_lat, d.inter);
  const double hierarchical =
      2 * ring_half_s(bytes, d.intra, d.intra_bus, d.intra_lat) +
      ring_allreduce_s(bytes / d.intra, d.inter, d.inter_bus, d.inter_lat, d.inter);
  return std::min(ring, hierarchical);
}

/// Reduce-scatter (or all-gather) of `bytes` (the full, unsharded size on one GPU), the faster
/// of the two forms as dp_allreduce_s.
double dp_half_s(const DpGroup& d, double bytes) noexcept {
  if (d.inter <= 1) return ring_half_s(bytes, d.intra, d.intra_bus, d.intra_lat);
  if (bytes <= 0) return 0.0;
  const int n = d.intra * d.inter;
  const double ring = nccl_ring_s(static_cast<double>(n - 1) / n * bytes, n - 1, d.inter - 1,
                                  dp_ring_bus(d), d.intra_lat, d.inter_lat);
  const double hierarchical = ring_half_s(bytes, d.intra, d.intra_bus, d.intra_lat) +
                              ring_half_s(bytes / d.intra, d.inter, d.inter_bus, d.inter_lat);
  return std::min(ring, hierarchical);
}

/// One all-gather or reduce-scatter of `bytes` (the full size on one GPU) over the group as
/// NCCL 2.7 to 2.10 runs one call: a ring over all its ranks, the only algorithm NCCL's tuning
/// model has for them (src/graph/tuning.cc: `if (coll != ncclFuncAllReduce && a !=
/// NCCL_ALGO_RING) continue;`), with n - 1 steps of which nodes - 1 cross the network.
double dp_ring_half_s(const DpGroup& d, double bytes) noexcept {
  if (d.inter <= 1) return ring_half_s(bytes, d.intra, d.intra_bus, d.intra_lat);
  if (bytes <= 0) return 0.0;
  const int n = d.intra * d.inter;
  return nccl_ring_s(static_cast<double>(n - 1) / n * bytes, n - 1, d.inter - 1, dp_ring_bus(d),
                     d.intra_lat, d.inter_lat);
}

/// Bandwidth of the activation send from stage j to stage j + 1, bytes/s: the intra-node link
/// inside a node, or inside one scale-up domain spanning nodes (both stages of one node type);
/// else the slower node's network share of a GPU over the oversubscription.
double pipeline_send_bytes_per_s(const NativeContext& ctx, const DesignPoint& p, int j,
                         const NativePlacement& where, const NativeGpu& gpu,
                         const NativeGpu& next) noexcept {
  const double link =
      std::min(gpu.spec.intra_node.GBps_per_dir, next.spec.intra_node.GBps_per_dir) * 1e9 * 0.8;
  if (where.boundary_inter_node[static_cast<std::size_t>(j)] == 0) return link;
  const NetworkTiers tiers = network_tiers(gpu.spec, ctx.gpus_per_node);
  const long long per_stage = static_cast<long long>(p.tp) * p.cp * p.dp;
  if (tiers.multi_node_domain() &&
      where.stage_gpu[static_cast<std::size_t>(j)] ==
          where.stage_gpu[static_cast<std::size_t>(j + 1)] &&
      !crosses_domain(j * per_stage, (j + 2) * per_stage - 1, tiers.domain_gpus)) {
    return link;
  }
  return std::min(nic_share_bytes_per_s(ctx, gpu, per_stage),
                  nic_share_bytes_per_s(ctx, next, per_stage));
}

/// Slice boundaries are multiples of 1/32 of the sequence (TeraPipe's DP stays small).
std::int64_t terapipe_quantum(std::int64_t seq) noexcept {
  return std::max<std::int64_t>(1, (seq + 31) / 32);
}

bool shards_parameters(DpMethod m) noexcept { return framework_params(m).shard_level >= 3; }

/// Bytes per logit the loss holds at its peak on the last stage (docs/native.md §3).
double loss_bytes_per_logit(const FrameworkParams& fw, const NativeSettings& st, double wb,
                            int tp) noexcept {
  if (st.fused_loss) {
    // A fused 16-bit cross-entropy (torch.compile of the loss, flash-attn's xentropy, Liger's):
    // the 16-bit logits are kept for a fused backward that writes a 16-bit gradient.
    return 2.0 * wb;
  }
  if (!fw.torch_loss) {
    // Megatron-LM's vocab-parallel cross-entropy: the logits in the training dtype, their
    // fp32 softmax and its gradient.
    return wb + 4.0 + 4.0;
  }
  // torchtitan's eager loss_fn upcasts the 16-bit model output (`pred.flatten(0, 1).float()`,
  // train.py at 9dec370) and frees it before backward (`del pred`). Its block stays in the
  // caching allocator's reserve: every later tensor of the logits' size is fp32, twice as large,
  // and does not fit in it, so at the peak it is reserved and unused (the memory a GPU must
  // have, and torchtitan's logged `memory:`, max_reserved_gib, counts it).
  const double cached = wb < 4.0 ? wb : 0.0;
  if (tp > 1) {
    // torchtitan's loss_parallel (on with tp unless training.disable_loss_parallel): DTensor's
    // vocab-parallel cross-entropy (torch/distributed/tensor/parallel/loss.py) fuses nll_loss's
    // and log_softmax's backward into `(grad_input + torch.exp(x)) * grad_output` next to the
    // saved fp32 log-softmax x and the zeros_like(x) grad_input: four fp32 tensors of the
    // logits' size live at once (x, grad_input, exp(x), their sum; then the product).
    return 4.0 * 4.0 + cached;
  }
  // Eager cross_entropy(logits.float()): log_softmax's saved fp32 output, the fp32 gradient
  // coming in and the one going out live together in its backward.
  return 3.0 * 4.0 + cached;
}

AnalyticLayerTimes layer_times(const NativeContext& ctx, const DesignPoint& p, int g) {
  const NativeGpu& gpu = ctx.gpus[static_cast<std::size_t>(g)];
  return analytic_layer_times(ctx.model, gpu.spec, gpu.calibration,
                              native_layer_settings(ctx.model, p, ctx.settings));
}

/// The model's dense layers (the first_k_dense_layers of an MoE model): the same model
/// without experts.
ModelSpec dense_variant(const ModelSpec& m) {
  ModelSpec d = m;
  d.num_experts = 0;
  d.experts_per_token = 0;
  d.moe_ffn_hidden_size = 0;
  d.shared_expert_ffn_hidden_size = 0;
  d.first_k_dense_layers = 0;
  return d;
}

/// One layer's context-parallel exchange on a GPU of `gpu` (docs/native.md §2.4): its cost per
/// micro-batch and its receive buffers, bytes.
struct CpExchange {
  CpLayerCost cost;
  double buffer_bytes = 0.0;
};
CpExchange cp_exchange(const NativeContext& ctx, const DesignPoint& p, const NativeGpu& gpu,
                       const AnalyticLayerTimes& t) {
  CpExchange x;
  if (p.cp <= 1) return x;
  const ModelSpec& m = ctx.model;
  const double wb = elem_bytes(p.dtype);
  const double tokens = static_cast<double>(m.sequence_length) / p.cp * p.mbs;
  const double a = static_cast<double>(m.num_attention_heads);
  const double g = static_cast<double>(m.num_key_value_heads > 0 ? m.num_key_value_heads
                                                                 : m.num_attention_heads);
  const double d = m.head_dim > 0 ? static_cast<double>(m.head_dim)
                                  : static_cast<double>(m.hidden_size) / a;
  // Key/value heads of one tp rank (replicated when tp exceeds them, as Megatron-LM does).
  const double g_rank = std::max(1.0, g / p.tp);
  // What the exchange moves: those heads, or (--cp_kv_repeat) K/V repeated to the rank's query
  // heads, as torchtitan's Llama hands them to scaled_dot_product_attention at 9dec370.
  const double kv_heads_moved = ctx.settings.cp_kv_repeat ? std::max(g_rank, a / p.tp) : g_rank;
  const double kv_bytes = 2.0 * tokens * kv_heads_moved * d * wb;
  const double qkv_bytes = tokens * (a / p.tp * d + 2.0 * g_rank * d) * wb;
  const double out_bytes = tokens * a / p.tp * d * wb;
  CpLinks links;
  const NetworkTiers tiers = network_tiers(gpu.spec, ctx.gpus_per_node);
  links.ranks_per_node =
      tiers.multi_node_domain()
          ? group_domain_split(p.cp, p.tp, tiers.domain_gpus, world_size(p)).members
          : cp_ranks_per_node(p.cp, p.tp, ctx.gpus_per_node);
  links.intra_bytes_per_s = 0.8 * gpu.spec.intra_node.GBps_per_dir * 1e9; // as pipeline sends
  links.inter_bytes_per_s = scale_out_bytes_per_s(ctx, gpu);
  links.latency_s = kAlpha_s;
  if (p.cp_comm == CpComm::ring) {
    // FlashAttention's backward: kFlashBackwardRatio x its tensor-core forward, with its own
    // exponential bound (analytic_layer_times, docs/analytic.md).
    x.cost = cp_ring_cost(p.cp, kv_bytes, t.attention_forward_s, t.attention_backward_s, links);
  } else if (p.cp_comm == CpComm::allgather) {
    x.cost = cp_allgather_cost(p.cp, kv_bytes, links);
  } else if (p.cp_comm == CpComm::torch_allgather) {
    // The gradients accumulate and travel in fp32 (_cp_options.convert_to_f32).
    x.cost = cp_torch_allgather_cost(p.cp, kv_bytes, kv_bytes * 4.0 / wb, t.attention_forward_s,
                                     t.attention_backward_s, links);
  } else {
    x.cost = cp_a2a_cost(p.cp, qkv_bytes, out_bytes, links);
  }
  x.buffer_bytes = cp_buffer_bytes(p.cp, p.cp_comm, kv_bytes, qkv_bytes);
  return x;
}

/// The layer times of one design point on each node type, computed once per type however many
/// stages run on it. Up to kInline node types are held inline (one or two: nearly every
/// cluster); more in a vector: one is made per estimate call, and the two vectors it held
/// cost two allocations and frees each time.
class StageLayerTimes {
public:
  using Times = std::optional<AnalyticLayerTimes>;
  static constexpr std::size_t kInline = 2;
  StageLayerTimes(const NativeContext& ctx, const DesignPoint& p) : ctx_(ctx), p_(p), n_(ctx.gpus.size()) {
    if (n_ <= kInline) {
      times_ = times_inline_.data();
      dense_times_ = dense_inline_.data();
    } else {
      more_.resize(2 * n_);
      times_ = more_.data();
      dense_times_ = more_.data() + n_;
    }
  }
  StageLayerTimes(const StageLayerTimes&) = delete;
  StageLayerTimes& operator=(const StageLayerTimes&) = delete;
  const AnalyticLayerTimes& operator()(int g) {
    Times& t = times_[static_cast<std::size_t>(g)];
    if (!t) {
      t = layer_times(ctx_, p_, g);
    }
    return *t;
  }
  /// The times of a dense layer of an MoE model with first_k_dense_layers.
  const AnalyticLayerTimes& dense(int g) {
    Times& t = dense_times_[static_cast<std::size_t>(g)];
    if (!t) {
      if (!dense_ctx_) {
        dense_ctx_ = ctx_;
        dense_ctx_->model = dense_variant(ctx_.model);
      }
      t = layer_times(*dense_ctx_, p_, g);
    }
    return *t;
  }

  /// The times computed so far, per node type (NativeConfigShare keeps them).
  [[nodiscard]] std::span<const Times> computed() const noexcept { return {times_, n_}; }
  [[nodiscard]] std::span<const Times> dense_computed() const noexcept { return {dense_times_, n_}; }
  /// Starts from the times another point of the same configuration computed (computed(),
  /// dense_computed(); empty: none): layer_times reads no schedule, so they are the same bits.
  void seed(std::span<const Times> t, std::span<const Times> dense) {
    if (t.size() == n_) std::copy(t.begin(), t.end(), times_);
    if (dense.size() == n_) std::copy(dense.begin(), dense.end(), dense_times_);
  }

private:
  const NativeContext& ctx_;
  const DesignPoint& p_;
  std::size_t n_;
  Times* times_;
  Times* dense_times_;
  std::array<Times, kInline> times_inline_;
  std::array<Times, kInline> dense_inline_;
  std::vector<Times> more_;
  std::optional<NativeContext> dense_ctx_;
};

/// Hidden size, attention heads, key/value heads, head size and the FFN width a token passes
/// through (an MoE layer: its top-k experts and the shared one).
struct LayerDims {
  double h, a, g, d, f;
};
LayerDims layer_dims(const ModelSpec& m) noexcept {
  const double h = static_cast<double>(m.hidden_size);
  const double a = static_cast<double>(m.num_attention_heads);
  const double g = static_cast<double>(m.num_key_value_heads > 0 ? m.num_key_value_heads
                                                                 : m.num_attention_heads);
  const double d = m.head_dim > 0 ? static_cast<double>(m.head_dim) : h / a;
  const double f = m.is_moe() ? static_cast<double>(m.experts_per_token * m.moe_ffn_hidden_size +
                                                    m.shared_expert_ffn_hidden_size)
                              : static_cast<double>(m.ffn_hidden_size);
  return {h, a, g, d, f};
}

/// The matmuls of one layer in execution order, as weights (rows x columns of the weight, so
/// FLOPs are proportional): q, k, v, o, then the MLP (gate, up, down or fc1, fc2). A fixed
/// array and its count: it is read per stage of every design point, so it allocates nothing.
struct LayerMatmuls {
  std::array<double, 7> w{};
  std::size_t n = 0;
  [[nodiscard]] std::size_t size() const noexcept { return n; }
  [[nodiscard]] double operator[](std::size_t i) const noexcept { return w[i]; }
};
LayerMatmuls layer_matmuls(const ModelSpec& m) noexcept {
  const auto [h, a, g, d, f] = layer_dims(m);
  if (m.gated_mlp) {
    return {{h * a * d, h * g * d, h * g * d, a * d * h, h * f, h * f, f * h}, 7};
  }
  return {{h * a * d, h * g * d, h * g * d, a * d * h, h * f, f * h, 0.0}, 6};
}

/// Share of a layer's matmul FLOPs that per-op selective checkpointing recomputes (every
/// second matmul's output is kept: the first, third, ...).
double per_op_recomputed_share(const ModelSpec& m) noexcept {
  const LayerMatmuls mm = layer_matmuls(m);
  double all = 0.0, again = 0.0;
  for (std::size_t i = 0; i < mm.size(); ++i) {
    all += mm[i];
    if (i % 2 == 1) again += mm[i];
  }
  return all > 0 ? again / all : 0.0;
}

/// Parameter tensors of one layer: its matmul weights and two norm weights; GPT-style
/// layers add a bias to each matmul and each norm.
double tensors_per_layer(const ModelSpec& m) noexcept {
  const double mats = m.gated_mlp ? 7.0 : 6.0; // layer_matmuls(m).size(), without building it
  const bool biases = m.is_gpt_family();
  return mats + 2.0 + (biases ? mats + 2.0 : 0.0);
}

double recompute_s(const AnalyticLayerTimes& t, Recompute r, const FrameworkParams& fw,
                   const ModelSpec& m, RecomputeModules mods) {
  switch (r) {
  case Recompute::none: return 0.0;
  case Recompute::selective:
    if (fw.selective_per_op) {
      return per_op_recomputed_share(m) * t.gemm_forward_s + t.elementwise_forward_s;
    }
    return mods.is_default() ? t.attention_forward_s : modules_recompute_s(t, mods, m);
  case Recompute::full: return t.layer.forward_s;
  }
  return 0.0;
}

} // namespace

FrameworkParams framework_params(DpMethod m, Dtype d) noexcept {
  FrameworkParams fw = framework_params(m);
  if (fw.fp16_grads_in_fp16 && d == Dtype::fp16) {
    fw.grad_bytes = 2.0;
    fw.grad_reduce_bytes = 2.0;
  }
  return fw;
}

FrameworkParams framework_params(DpMethod m, Dtype d, const NativeSettings& settings) noexcept {
  FrameworkParams fw = framework_params(m, d);
  const bool sixteen_bit = d == Dtype::bf16 || d == Dtype::fp16 || d == Dtype::fp8;
  // Pure 16-bit training (--master_weights off): the gradients take the parameters' dtype, and
  // so does the reduction, except torchtitan's FSDP2, which reduces in float32 only
  // (training.mixed_precision_reduce) and casts the reduced shards back to the parameters'.
  const bool pure = sixteen_bit && !settings.master_weights;
  if (pure) {
    fw.grad_bytes = 2.0;
    if (!fw.fp32_sharded_params) fw.grad_reduce_bytes = 2.0;
  }
  if (settings.layer_impl == LayerImpl::hf_gpt2_amp && sixteen_bit) {
    // torch.cuda.amp autocast keeps the module in fp32: its .grad tensors are fp32 and torch
    // DDP all-reduces them as they are (docs/native.md §2.2).
    fw.grad_bytes = 4.0;
    fw.grad_reduce_bytes = 4.0;
  }
  if (settings.grad_reduce_fp32 && sixteen_bit) {
    fw.grad_reduce_bytes = *settings.grad_reduce_fp32 ? 4.0 : 2.0;
    if (std::string_view(fw.framework) != "deepspeed" && !(pure && fw.fp32_sharded_params)) {
      fw.grad_bytes = fw.grad_reduce_bytes;
    }
  }
  if (settings.grad_accum_fp32 && d == Dtype::bf16 && m == DpMethod::zero1 && !pure) [[unlikely]] {
    // DeepSpeed's BF16_Optimizer (docs/native.md §4): the gradients the optimizer, the tied
    // embedding's all-reduce and the step read are its fp32 accumulation buffers.
    fw.fp32_grad_accumulation = true;
    fw.grad_bytes = 4.0;
  }
  return fw;
}

NcclLatency nccl_latency(Transport transport) noexcept {
  NcclLatency l;
  if (transport == Transport::nvlink) {
    l.simple_step_s = 3.4e-6;
    l.ll_step_s = 0.6e-6;
  } else if (transport == Transport::pci) {
    l.simple_step_s = 5.7e-6;
    l.ll_step_s = 1.0e-6;
  }
  return l;
}

double nccl_ring_s(double bytes_on_wire, int steps, int net_steps, double bus,
                   const NcclLatency& intra, const NcclLatency& net, int tree_nodes) noexcept {
  if (steps <= 0 || bytes_on_wire <= 0) return 0.0;
  const double hops = std::clamp(net_steps, 0, steps);
  const double local = steps - hops;
  double simple_lat = net.simple_base_s + local * intra.simple_step_s + hops * net.simple_step_s;
  double ll_lat = net.ll_base_s + local * intra.ll_step_s + hops * net.ll_step_s;
  if (tree_nodes > 1) {
    // NCCL's tree all-reduce: up and down a binary tree over the nodes.
    const double depth = 2.0 * std::ceil(std::log2(static_cast<double>(tree_nodes)));
    simple_lat = std::min(simple_lat, net.simple_base_s + depth * net.simple_step_s);
    ll_lat = std::min(ll_lat, net.ll_base_s + depth * net.ll_step_s);
  }
  const double simple = simple_lat + bytes_on_wire / bus;
  const double ll = ll_lat + bytes_on_wire / (0.25 * bus);
  return std::min(simple, ll);
}

double nccl_collective_s(double bytes_on_wire, int steps, double bus, const NcclLatency& lat,
                         int tree_nodes) noexcept {
  // One transport for every step: the ring with no network steps.
  return nccl_ring_s(bytes_on_wire, steps, 0, bus, lat, lat, tree_nodes);
}

double optimizer_launches(double parameters, double tensors) noexcept {
  constexpr double kChunk = 65536.0, kMaxChunks = 320.0, kMaxTensors = 36.0;
  if (parameters <= 0) return 0.0;
  const double chunks = std::ceil(parameters / kChunk) + std::max(0.0, tensors);
  return std::max(std::ceil(tensors / kMaxTensors), std::ceil(chunks / kMaxChunks));
}

double host_link_bytes_per_s(const GpuSpec& gpu) noexcept {
  const std::string& link = gpu.intra_node.link;
  double x16 = 32e9; // PCIe 4.0 x16, per direction
  if (link == "pcie3" || link == "nvlink2") {
    x16 = 16e9;
  } else if (link == "pcie5" || link == "nvlink4" || link == "nvlink5") {
    x16 = 64e9;
  } else if (link == "pcie4" || link == "pcie") {
    x16 = 32e9;
  } else if (link.rfind("pcie", 0) == 0) {
    x16 = gpu.intra_node.GBps_per_dir * 1e9;
  }
  return 0.8 * x16;
}

NativePlacement native_placement(const NativeContext& ctx, const DesignPoint& p,
                                 const std::vector<int>& node_types) {
  NativePlacement w;
  native_placement_into(ctx, p, node_types, w);
  return w;
}

void native_placement_into(const NativeContext& ctx, const DesignPoint& p,
                           const std::vector<int>& node_types, NativePlacement& w) {
  // Every field rewritten from empty, in the buffers `w` already holds.
  w.stage_gpu.clear();
  w.stage_net.clear();
  w.boundary_inter_node.clear();
  const long long per_stage = static_cast<long long>(p.tp) * p.cp * p.dp;
  const long long gpn = std::max(1, ctx.gpus_per_node);
  const auto node_of = [&](long long rank) {
    const long long n = rank / gpn;
    return static_cast<std::size_t>(std::min<long long>(n, static_cast<long long>(node_types.size()) - 1));
  };
  w.stage_gpu.resize(static_cast<std::size_t>(p.pp));
  // Slowness order of node types for a stage spanning several: lower 16-bit peak first, then
  // less memory; each type's peak computed once, not per comparison.
  // (Only where there are several node types: with one, no stage compares them.)
  std::array<double, 8> peaks{};
  const bool cached = ctx.gpus.size() <= peaks.size();
  for (std::size_t t = 0; cached && ctx.gpus.size() > 1 && t < ctx.gpus.size(); ++t) {
    peaks[t] = peak_flops(ctx.gpus[t].spec, Dtype::bf16);
  }
  const auto peak = [&](std::size_t t) {
    return cached ? peaks[t] : peak_flops(ctx.gpus[t].spec, Dtype::bf16);
  };
  const auto slower_type = [&](int a, int b) {
    const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
    const double pa = peak(ua), pb = peak(ub);
    if (pa != pb) return pa < pb;
    return ctx.gpus[ua].memory_gib < ctx.gpus[ub].memory_gib;
  };
  const auto net_of = [&](int t) {
    return ctx.gpus[static_cast<std::size_t>(t)].inter_node_bytes_per_s;
  };
  // With one node type every stage is on it (stage_gpu stays 0).
  for (int j = 0; ctx.gpus.size() > 1 && j < p.pp; ++j) {
    const std::size_t first = node_of(j * per_stage);
    const std::size_t last = node_of((j + 1) * per_stage - 1);
    int g = node_types[first];
    int net = g;
    for (std::size_t n = first + 1; n <= last; ++n) {
      const int h = node_types[n];
      if (h != g && slower_type(h, g)) {
        g = h;
      }
      if (h != net && net_of(h) < net_of(net)) {
        net = h;
      }
    }
    w.stage_gpu[static_cast<std::size_t>(j)] = g;
    if (net_of(net) < net_of(g)) {
      if (w.stage_net.empty()) {
        w.stage_net.assign(w.stage_gpu.begin(), w.stage_gpu.end());
        w.stage_net.resize(static_cast<std::size_t>(p.pp));
      }
      w.stage_net[static_cast<std::size_t>(j)] = net;
    } else if (!w.stage_net.empty()) {
      w.stage_net[static_cast<std::size_t>(j)] = g;
    }
  }
  // Boundary j crosses nodes where stage j's first or last node is not stage j + 1's.
  const auto boundaries = static_cast<std::size_t>(std::max(0, p.pp - 1));
  const long long ranks = static_cast<long long>(p.pp) * per_stage;
  if (per_stage >= gpn && ranks > 0 && (ranks - 1) / gpn < static_cast<long long>(node_types.size())) {
    // Stages of a node or more, every rank on a node of its own (node_of clamps none): stage
    // j + 1 starts at least a node after stage j does, so every boundary crosses.
    w.boundary_inter_node.assign(boundaries, 1);
    return;
  }
  // Else each stage's first and last node computed once (not twice, as each of its two
  // boundaries').
  w.boundary_inter_node.resize(boundaries); // one allocation
  std::size_t first = node_of(0);
  std::size_t last = node_of(per_stage - 1);
  for (int j = 0; j + 1 < p.pp; ++j) {
    const long long next = (j + 1) * per_stage;
    const std::size_t next_first = node_of(next);
    const std::size_t next_last = node_of(next + per_stage - 1);
    w.boundary_inter_node[static_cast<std::size_t>(j)] =
        first != next_first || last != next_last ? 1 : 0;
    first = next_first;
    last = next_last;
  }
}

std::string native_invalid_reason(const NativeContext& ctx, const DesignPoint& p,
                                  const NativePlacement& where) {
  if (p.virtual_stages < 1) {
    return fmt::format("--virtual_stages {} must be at least 1", p.virtual_stages);
  }
  if (is_split_schedule(p.schedule)) {
    if (p.virtual_stages > 1) {
      return fmt::format("the {} schedule sets its own model chunks (--virtual_stages 1)",
                         to_string(p.schedule));
    }
    std::string why = split_schedule_invalid_reason(p.schedule, p.pp, p.num_micro_batches,
                                                    ctx.model.num_layers);
    if (!why.empty()) return why;
  }
  const PipelineLayout* layout = ctx.settings.pipeline_layout.get();
  if (p.virtual_stages > 1 && p.pp < 2) {
    return fmt::format("--virtual_stages {} needs a pipeline (pp > 1)", p.virtual_stages);
  }
  if (layout != nullptr) {
    // The layout fixes every chunk's layers (docs/native.md §2.5): the even-split rules below
    // do not apply, its own do.
    if (p.schedule != Schedule::one_f_one_b && p.schedule != Schedule::interleaved) {
      return fmt::format("--pipeline_layout with the {} schedule: a layout places Megatron-LM's "
                         "1F1B or interleaved 1F1B chunks (--schedule 1f1b or interleaved)",
                         to_string(p.schedule));
    }
    std::string why = pipeline_layout_invalid_reason(*layout, p.pp, p.virtual_stages,
                                                     ctx.model.num_layers);
    if (!why.empty()) return why;
    for (std::size_t k = 0; k < layout->chunks.size(); ++k) {
      const int rank = static_cast<int>(k % static_cast<std::size_t>(p.pp));
      if (layout->chunks[k].embedding && rank != 0) {
        return fmt::format("--pipeline_layout '{}': the embedding E on pipeline rank {}; the "
                           "native estimator takes it on rank 0",
                           layout->text, rank);
      }
      if (layout->chunks[k].loss && rank != p.pp - 1) {
        return fmt::format("--pipeline_layout '{}': the loss L on pipeline rank {}; the native "
                           "estimator takes it on the last rank ({})",
                           layout->text, rank, p.pp - 1);
      }
    }
    if (p.virtual_stages > 1 && p.num_micro_batches % p.pp != 0) {
      return fmt::format("--virtual_stages {}: interleaved 1F1B needs the micro-batches ({}) to "
                         "be a multiple of pp {}",
                         p.virtual_stages, p.num_micro_batches, p.pp);
    }
  }
  if (p.virtual_stages > 1 && layout == nullptr) {
    if (p.pp < 2) {
      return fmt::format("--virtual_stages {} needs a pipeline (pp > 1)", p.virtual_stages);
    }
    const long long chunks = static_cast<long long>(p.pp) * p.virtual_stages;
    // DeepSpeed needs equal chunks; torchtitan (fsdp) splits unevenly, and so does Megatron-LM
    // with --pipeline-model-parallel-layout (one entry per model chunk, megatron-core >= 0.13:
    // pipeline_parallel_layer_layout.py), which its launch file writes where pp x v divides
    // neither the layers nor them plus the embedding and the loss counted as a layer each
    // (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split:
    // get_num_layers_to_build adds one for each); the first and last chunks then hold one
    // layer fewer, as interleaved_chunks() splits them.
    if (!framework_params(p.method).uneven_chunks &&
        std::string_view(info(p.method).native.framework) != "megatron" &&
        interleaved_split_accounts(ctx.model.num_layers, p.pp, p.virtual_stages) < 0) {
      return fmt::format("--virtual_stages {} with pp {} does not divide the {} layers of {} "
                         "(pp x virtual stages must divide them, or them plus the embedding "
                         "and the loss counted as a layer each)",
                         p.virtual_stages, p.pp, ctx.model.num_layers, ctx.model.name);
    }
    // Megatron-LM counts the embedding and the loss as a layer each (the accounting above):
    // the first chunk may then hold the embedding alone and the last the loss alone
    // (pipeline layouts "E|t|...|t|L"); torchtitan's split gives every chunk a layer.
    const bool accounted = !framework_params(p.method).uneven_chunks;
    if (ctx.model.num_layers + (accounted ? 2 : 0) < chunks) {
      return fmt::format("--virtual_stages {} with pp {}: {} model chunks for the {} layers of {} "
                         "(each chunk needs a layer{})",
                         p.virtual_stages, p.pp, chunks, ctx.model.num_layers, ctx.model.name,
                         accounted ? ", or the embedding or the loss alone" : "");
    }
    if (p.num_micro_batches % p.pp != 0) {
      return fmt::format("--virtual_stages {}: interleaved 1F1B needs the micro-batches ({}) to "
                         "be a multiple of pp {}",
                         p.virtual_stages, p.num_micro_batches, p.pp);
    }
  }
  if (p.cp > 1 || p.cp < 1) {
    const ModelSpec& m = ctx.model;
    const std::string why = cp_invalid_reason(
        p.cp, p.cp_comm, m.sequence_length, m.num_attention_heads,
        m.num_key_value_heads > 0 ? m.num_key_value_heads : m.num_attention_heads, p.tp);
    if (!why.empty()) return why;
    if (!ctx.settings.flash_attention) {
      return fmt::format("--cp {} needs fused attention (--flash_attention on): Transformer "
                         "Engine and PyTorch run context parallelism on it only",
                         p.cp);
    }
    if (p.schedule == Schedule::terapipe) {
      return fmt::format("--cp {} with the terapipe schedule is not modelled", p.cp);
    }
  }
  if (p.schedule == Schedule::terapipe && p.virtual_stages > 1) {
    return "the terapipe schedule does not interleave (--virtual_stages 1)";
  }
  if (p.schedule == Schedule::terapipe && p.pp < 2) {
    return "the terapipe schedule needs a pipeline (pp > 1)";
  }
  if (p.schedule == Schedule::terapipe && ctx.model.is_moe()) {
    // Its token slices are priced from the layers' compute alone (native_token_pipeline):
    // the experts' all-to-all and the dense-first layers are not in them.
    return "the terapipe schedule with a mixture-of-experts model: its token slices do not "
           "model the experts' all-to-all (use 1f1b, interleaved or a split schedule)";
  }
  if (std::string why = moe_invalid_reason(ctx.model, p); !why.empty()) {
    return why;
  }
  if (ctx.settings.layer_impl != LayerImpl::framework) {
    const char* impl = kLayerImplNames[static_cast<std::size_t>(ctx.settings.layer_impl)];
    if (!ctx.model.is_gpt_family()) {
      return fmt::format("--layer_impl {} needs a GPT-2-style model (LayerNorm, learned "
                         "positions, GELU MLP); {} is not",
                         impl, ctx.model.name);
    }
    if (is_eager_gpt2_layer(ctx.settings.layer_impl) && (p.tp > 1 || p.pp > 1 || p.cp > 1)) {
      if (ctx.settings.layer_impl == LayerImpl::megatron_v1) {
        // Its mpu layers do split over tp, but the layer is priced as one GPU's whole layer
        // (hf_gpt2_extra), and the code has no pipeline or context parallelism.
        return fmt::format("--layer_impl {} with tp {}, pp {}, cp {}: Megatron-LM v1's GPT-2 "
                           "layer is priced for one GPU's whole layer, without pipeline or "
                           "context parallelism (tp, pp and cp 1)",
                           impl, p.tp, p.pp, p.cp);
      }
      return fmt::format("--layer_impl {} with tp {}, pp {}, cp {}: Hugging Face's "
                         "GPT2LMHeadModel has no tensor, pipeline or context parallelism "
                         "(tp, pp and cp 1)",
                         impl, p.tp, p.pp, p.cp);
    }
    if (is_eager_gpt2_layer(ctx.settings.layer_impl) && p.dtype == Dtype::fp8) {
      return fmt::format("--layer_impl {} with --dtype fp8: {} GPT-2 runs its "
                         "linears in 16 bits",
                         impl, layer_impl_owner(ctx.settings.layer_impl));
    }
  }
  if (ctx.settings.fused_layers && !framework_params(p.method).torch_loss) {
    return fmt::format("--fused_layers on with {}: only torchtitan (fsdp) runs eager layers; "
                       "Megatron-LM and DeepSpeed run fused kernels already",
                       to_string(p.method));
  }
  if (ctx.settings.grad_reduce_fp32 == false && framework_params(p.method).fp32_sharded_params) {
    return fmt::format("--grad_reduce_fp32 off with {}: torchtitan's FSDP2 reduces in float32 "
                       "only (its training.mixed_precision_reduce accepts \"float32\" alone)",
                       to_string(p.method));
  }
  if (ctx.settings.grad_accum_fp32) {
    // DeepSpeed takes its BF16_Optimizer for bf16 with fp32 gradient accumulation at ZeRO
    // stage 0 or 1 without offload (engine.py _do_optimizer_sanity_check at 38327e0); at
    // stage 0 it shards the optimizer states all the same (its own ZeRO-1), so zero1 is the
    // method that describes it.
    if (p.method != DpMethod::zero1) {
      return fmt::format("--grad_accum_fp32 on with {}: DeepSpeed's BF16_Optimizer (fp32 "
                         "gradient accumulation) shards the optimizer states as ZeRO-1: use "
                         "--dp_method zero1",
                         to_string(p.method));
    }
    if (p.dtype != Dtype::bf16) {
      return fmt::format("--grad_accum_fp32 on with --dtype {}: DeepSpeed's BF16_Optimizer "
                         "trains in bf16 only",
                         to_string(p.dtype));
    }
    if (!ctx.settings.master_weights) {
      return "--grad_accum_fp32 on with --master_weights off: DeepSpeed's BF16_Optimizer keeps "
             "fp32 master weights";
    }
    if (p.offload != Offload::none) {
      return fmt::format("--grad_accum_fp32 on with --offload {}: DeepSpeed's BF16_Optimizer "
                         "keeps the optimizer on the GPU",
                         to_string(p.offload));
    }
  }
  if (const char* why = offload_unsupported(p.method, p.offload)) {
    return fmt::format("--offload {} with {}: {}", to_string(p.offload), to_string(p.method), why);
  }
  for (const int g : where.stage_gpu) {
    const GpuSpec& spec = ctx.gpus[static_cast<std::size_t>(g)].spec;
    if (!spec.peak_tflops.of(p.dtype)) {
      return fmt::format("--dtype {}: {} has no {} tensor cores", to_string(p.dtype), spec.name,
                         to_string(p.dtype));
    }
  }
  return {};
}

namespace {

/// What a layer's activation terms are counted in: this rank's tokens of a sequence (s, over
/// cp), the micro-batch b, tp t, the element size over 2 bytes, and the split of the tensors
/// that tp replicates (t under sequence parallelism, else 1).
struct LayerTokens {
  double s, b, t, scale, sp;
};

LayerTokens layer_tokens(const ModelSpec& m, const DesignPoint& p,
                         const NativeSettings& st) noexcept {
  const double t = p.tp;
  return {static_cast<double>(m.sequence_length) / p.cp, static_cast<double>(p.mbs), t,
          elem_bytes(p.dtype) / 2.0, st.sequence_parallel && p.tp > 1 ? t : 1.0};
}

} // namespace

namespace {

/// Activation bytes of one layer that selective recompute of `mods` does not keep (Megatron-Core
/// discards each module's outputs and reruns it in backward; docs/native.md §2.7), in the terms
/// of layer_activation_bytes: the two norms' outputs (layernorm), MLA's q, k and v (mla_up_proj,
/// an MLA model only), the routed experts' activation output (moe_act), the shared experts'
/// internals (shared_experts), a dense layer's MLP internals (mlp) or an MoE layer's whole
/// block past its input (moe: the internals and the experts' dispatched input). core_attn's
/// s^2 tensors are the caller's.
double modules_dropped_bytes(const ModelSpec& m, RecomputeModules mods, const LayerTokens& k,
                             double moe_input) noexcept {
  using M = RecomputeModule;
  const auto [s, b, t, scale, sp] = k;
  const auto [h, a, g, d, f] = layer_dims(m);
  const double kf = m.gated_mlp ? 6.0 : 4.0;
  double per_token = 0.0; // elements x 2 bytes per token
  if (mods.has(M::layernorm)) per_token += 4.0 * h / sp;
  if (mods.has(M::mla_up_proj) && m.is_mla()) per_token += (2.0 * a * d + 4.0 * g * d) / t;
  double extra = 0.0;
  if (m.is_moe()) {
    const double f_expert = static_cast<double>(m.experts_per_token * m.moe_ffn_hidden_size);
    const double f_shared = static_cast<double>(m.shared_expert_ffn_hidden_size);
    if (mods.has(M::moe)) {
      per_token += kf * f / t;
      extra = moe_input;
    } else {
      if (mods.has(M::moe_act)) per_token += 2.0 * f_expert / t;
      if (mods.has(M::shared_experts)) per_token += kf * f_shared / t;
    }
  } else if (mods.has(M::mlp)) {
    per_token += kf * f / t;
  }
  return scale * s * b * per_token + extra;
}

} // namespace

double layer_activation_bytes(const ModelSpec& m, const DesignPoint& p,
                              const NativeSettings& st) noexcept {
  const auto [s, b, t, scale, sp] = layer_tokens(m, p, st);
  const auto [h, a, g, d, f] = layer_dims(m);
  const bool dropout = m.is_gpt_family();
  if (p.recompute == Recompute::full) {
    return 2.0 * scale * s * b * h / sp; // the layer input only
  }
  // An MoE layer keeps the experts' input: the dispatched top-k copies of its tokens, gathered
  // over etp (docs/moe.md), on the busiest rank.
  const double moe_input =
      m.is_moe() ? 2.0 * scale * s * b * static_cast<double>(m.experts_per_token) * h * p.etp / t *
                       effective_moe_imbalance(m, st.moe_imbalance)
                 : 0.0;
  if (p.recompute == Recompute::selective && framework_params(p.method).selective_per_op) {
    // The layer input, attention's output and softmax statistics, every second matmul output.
    const LayerMatmuls mm = layer_matmuls(m);
    double kept = 0.0; // elements per token, before the tp split
    const std::array<double, 4> outputs{a * d, g * d, g * d, h};
    for (std::size_t i = 0; i < mm.size(); i += 2) {
      kept += i < 4 ? outputs[i] : (i + 1 == mm.size() ? h : f);
    }
    return scale * s * b * (2.0 * h / sp + 2.0 * (a * d + kept) / t) + 4.0 * s * b * a / t +
           moe_input;
  }
  // Korthikanti et al. 2022, generalised (docs/native.md §3): norm inputs and outputs (and
  // dropout masks) per token, q, k, v and the attention output, the MLP internals.
  const double replicated = (8.0 + (dropout ? 2.0 : 0.0)) * h / sp;
  const double kf = m.gated_mlp ? 6.0 : 4.0;
  const double split = (2 * a * d + 4 * g * d + 2 * a * d + kf * f) / t;
  double bytes = scale * s * b * (replicated + split) + moe_input;
  const bool selective = p.recompute == Recompute::selective;
  if (selective && !st.recompute_modules.is_default()) {
    bytes -= modules_dropped_bytes(m, st.recompute_modules, {s, b, t, scale, sp}, moe_input);
  }
  if (st.flash_attention) {
    bytes += 4.0 * s * b * a / t; // softmax statistics, fp32
  } else if (!(selective && st.recompute_modules.has(RecomputeModule::core_attn))) {
    bytes += (dropout ? 5.0 : 4.0) * a * s * s * b / t * scale;
  }
  return bytes;
}

double layer_weight_pass_bytes(const ModelSpec& m, const DesignPoint& p,
                               const NativeSettings& st) noexcept {
  const auto [s, b, t, scale, sp] = layer_tokens(m, p, st);
  const auto [h, a, g, d, f] = layer_dims(m);
  // Elements per token: each weight GEMM's input and its output's gradient (dW = X^T dY):
  // q/k/v (input the norm's output, sequence-split under sp; gradients a d + 2 g d split over
  // tp), the output projection (input a d / tp, gradient h), the MLP's first GEMMs (input h,
  // gradient f, twice for a gated MLP) and its last (input f / tp, gradient h). An MoE layer's
  // MLP sees the dispatched top-k copies of its tokens (f counts them; the h-sized input and
  // gradient are scaled as layer_activation_bytes scales the experts' input).
  const double mlp_tokens =
      m.is_moe() ? static_cast<double>(m.experts_per_token) * p.etp * sp / t *
                       effective_moe_imbalance(m, st.moe_imbalance)
                 : 1.0;
  const double attention = h / sp + (a * d + 2.0 * g * d) / t + a * d / t + h / sp;
  const double mlp = mlp_tokens * (h / sp + h / sp) + ((m.gated_mlp ? 2.0 : 1.0) * f + f) / t;
  return 2.0 * scale * s * b * (attention + mlp);
}

int interleaved_split_accounts(long long layers, int pp, int virtual_stages) noexcept {
  const long long chunks = static_cast<long long>(pp) * virtual_stages;
  if (chunks <= 0) return -1;
  for (int extra = 0; extra <= 2; ++extra) {
    if ((layers + extra) % chunks == 0) return extra;
  }
  return -1;
}

std::vector<int> interleaved_chunks(int layers, int pp, int virtual_stages) {
  const int total = pp * virtual_stages;
  if (total <= 0) return {};
  std::vector<int> chunks(static_cast<std::size_t>(total), layers / total);
  int extra = layers % total;
  for (int k = 1; k + 1 < total && extra > 0; ++k, --extra) {
    ++chunks[static_cast<std::size_t>(k)];
  }
  chunks[static_cast<std::size_t>(total - 1)] += extra; // what the others left
  return chunks;
}

int interleaved_chunk(int layers, int total, int k) {
  // interleaved_chunks' loop gives chunks 1 .. min(extra, total - 2) one more layer each and
  // the last chunk what is left of the remainder.
  if (total <= 0) return 0;
  const int extra = layers % total;
  const int middle = std::min(extra, std::max(total - 2, 0));
  int n = layers / total;
  if (k >= 1 && k <= middle) ++n;
  if (k == total - 1) n += extra - middle;
  return n;
}

namespace {

/// native_partition with the point's layer times (shared with native_estimate, which needs
/// them again for the stages).
/// native_steps::minmax_layers(fixed, per_layer, layers), remembered per thread by its inputs
/// bit for bit (a few thousand at most): the points that differ only in what leaves the
/// stages' costs alike (dp method, ZeRO stage, the schedules of one chunk per rank) split
/// their layers the same way.
const std::vector<int>& remembered_minmax_layers(const std::vector<double>& fixed,
                                                 const std::vector<double>& per_layer, int layers) {
  struct Entry {
    int layers = -1;
    std::vector<double> fixed, per_layer;
    std::vector<int> result;
  };
  thread_local std::unordered_multimap<std::uint64_t, Entry> memo;
  const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
  const auto same = [&bits](const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&bits](double x, double y) {
             return bits(x) == bits(y);
           });
  };
  std::uint64_t h = static_cast<std::uint32_t>(layers);
  for (const double x : fixed) h = (h ^ bits(x)) * 0x100000001b3ULL;
  for (const double x : per_layer) h = (h ^ bits(x)) * 0x100000001b3ULL;
  const auto [lo, hi] = memo.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    const Entry& e = it->second;
    if (e.layers == layers && same(e.per_layer, per_layer) && same(e.fixed, fixed)) return e.result;
  }
  if (memo.size() >= 4096) memo.clear();
  return memo.emplace(h, Entry{layers, fixed, per_layer, native_steps::minmax_layers(fixed, per_layer, layers)})
      ->second.result;
}

/// partition_with's partition into `layers`, reusing its buffer (native_estimates keeps it
/// from one configuration to the next: no allocation once it is large enough).
void partition_into(const NativeContext& ctx, const DesignPoint& p, const NativePlacement& where,
                    StageLayerTimes& times, std::vector<int>& layers) {
  const int L = static_cast<int>(ctx.model.num_layers);
  const int pp = p.pp;
  if (ctx.settings.pipeline_layout != nullptr) {
    layers = ctx.settings.pipeline_layout->partition(pp);
    return;
  }
  layers.assign(static_cast<std::size_t>(pp), 0);
  const bool alike = std::all_of(where.stage_gpu.begin(), where.stage_gpu.end(),
                                 [&](int g) { return g == where.stage_gpu.front(); });
  if (pp > 1 && schedule_chunks_per_rank(p.schedule) == 2) {
    // zbv, dualpipev: 2 pp chunks in a V, the embedding and the LM head both on rank 0;
    // dualpipe: rank r holds stages r and pp - 1 - r, both end ranks an embedding and a head.
    const bool dual = info(p.schedule).bidirectional;
    const int total = pp * (dual ? 1 : 2); // chunks (no list built: interleaved_chunk)
    for (int r = 0; r < pp; ++r) {
      layers[static_cast<std::size_t>(r)] =
          interleaved_chunk(L, total, r) + interleaved_chunk(L, total, total - 1 - r);
    }
    layers.front() += 2;
    if (dual) layers.back() += 2;
    return;
  }
  if (p.virtual_stages > 1) {
    const int total = pp * p.virtual_stages; // chunks (no list built: interleaved_chunk)
    for (int k = 0; k < total; ++k) {
      layers[static_cast<std::size_t>(k % pp)] += interleaved_chunk(L, total, k);
    }
  } else if (alike && L % pp == 0) {
    std::fill(layers.begin(), layers.end(), L / pp);
  } else {
    // Min-max: give each layer to the stage whose time grows least (optimal for stage times
    // a_i + n_i c_i); the embedding and post-process are fixed on the first and last stage.
    // Scratch kept per thread (no allocation once large enough).
    thread_local std::vector<double> per_layer, fixed;
    per_layer.assign(static_cast<std::size_t>(pp), 0.0);
    fixed.assign(static_cast<std::size_t>(pp), 0.0);
    const FrameworkParams& fw = framework_params(p.method);
    int last_gpu = -1; // the stage before's GPU type and per-layer time: runs of alike stages
    double last_per_layer = 0.0;
    for (int j = 0; j < pp; ++j) {
      const int g = where.stage_gpu[static_cast<std::size_t>(j)];
      const AnalyticLayerTimes& t = times(g);
      if (g != last_gpu) {
        last_gpu = g;
        last_per_layer = t.layer.forward_s + t.layer.backward_s +
                         recompute_s(t, p.recompute, fw, ctx.model, ctx.settings.recompute_modules);
      }
      per_layer[static_cast<std::size_t>(j)] = last_per_layer;
      if (j == 0) fixed[0] += t.embedding.forward_s + t.embedding.backward_s;
      if (j == pp - 1) fixed[static_cast<std::size_t>(j)] += t.post_process.forward_s + t.post_process.backward_s;
    }
    const std::vector<int>& minmax = remembered_minmax_layers(fixed, per_layer, L);
    layers.assign(minmax.begin(), minmax.end());
  }
  layers.front() += 1; // embedding
  layers.back() += 1;  // post_process
}

std::vector<int> partition_with(const NativeContext& ctx, const DesignPoint& p,
                                const NativePlacement& where, StageLayerTimes& times) {
  std::vector<int> layers;
  partition_into(ctx, p, where, times, layers);
  return layers;
}

} // namespace

std::vector<int> native_partition(const NativeContext& ctx, const DesignPoint& p,
                                  const NativePlacement& where) {
  StageLayerTimes times(ctx, p);
  return partition_with(ctx, p, where, times);
}

namespace {

/// A split schedule's order of passes and where its model chunks are (zero_bubble.hpp).
struct PipeShape {
  bool split = false;
  int pp = 1;
  /// The outline of the schedule's order (shared, cached per thread: zero_bubble.hpp).
  std::shared_ptr<const PipeOutline> outline;
  /// Per rank: what it holds at the peaks of its order (zero_bubble.hpp).
  std::shared_ptr<const std::vector<std::vector<PipeHeld>>> peaks;
  /// Per rank, its chunks (at most two): transformer layers, whether each holds the embedding
  /// / LM head, and each one's share of the rank's layers.
  struct Rank {
    std::size_t chunks = 0;
    std::array<int, 2> layers{};
    std::array<char, 2> embedding{}, head{};
    std::array<double, 2> share{};
    /// Whether any of its chunks holds the embedding / the LM head (stage_key reads them per
    /// stage of every split plan).
    bool any_embedding = false, any_head = false;
  };
  std::vector<Rank> ranks;
  /// Per rank, the last few split_in_flight results: their w_ratios' bits and peaks (a shape
  /// remembered by cached_pipe_shape serves plans of a few w_ratios, one per recompute
  /// choice, that come in turn: one remembered w_ratio missed on every change). Scratch, per
  /// thread.
  struct Peaks {
    static constexpr std::size_t kSlots = 4;
    std::array<std::uint64_t, kSlots> w_ratio_bits{};
    std::array<double, kSlots> value{};
    std::uint8_t n = 0;    // slots filled
    std::uint8_t next = 0; // the slot replaced next once all are filled (round robin)
  };
  mutable std::vector<Peaks> last_peak;
  [[nodiscard]] bool holds_embedding(int j) const {
    if (!split) return j == 0;
    const Rank& r = ranks[static_cast<std::size_t>(j)];
    return std::find(r.embedding.begin(), r.embedding.begin() + static_cast<std::ptrdiff_t>(r.chunks), 1) !=
           r.embedding.begin() + static_cast<std::ptrdiff_t>(r.chunks);
  }
  [[nodiscard]] bool holds_head(int j) const {
    if (!split) return j == pp - 1;
    const Rank& r = ranks[static_cast<std::size_t>(j)];
    return std::find(r.head.begin(), r.head.begin() + static_cast<std::ptrdiff_t>(r.chunks), 1) !=
           r.head.begin() + static_cast<std::ptrdiff_t>(r.chunks);
  }
};

/// The chunks of `p` under its schedule: one per rank as the partition gives them (zb-h1,
/// zb-h2); for zbv and dualpipev 2 pp chunks split as interleaved_chunks does (torchtitan's
/// split), chunk k on rank k and 2 pp - 1 - k; for dualpipe pp stages, rank r holding stage r
/// and stage pp - 1 - r (two copies of the parameters).
PipeShape pipe_shape(const NativeContext& ctx, const DesignPoint& p, const std::vector<int>& partition) {
  PipeShape sh;
  sh.pp = p.pp;
  sh.split = is_split_schedule(p.schedule) && p.pp > 1;
  if (!sh.split) return sh;
  sh.outline = cached_pipe_outline(p.schedule, p.pp, p.num_micro_batches);
  const PipeLayout& l = sh.outline->layout;
  const int L = static_cast<int>(ctx.model.num_layers);
  // The chunks when a rank holds two (read through interleaved_chunk, no list built).
  const int total_chunks = p.pp * (info(p.schedule).bidirectional ? 1 : 2);
  // Transformer layers at each position: the partition's stages less the embedding and the
  // LM head (one chunk per rank), or the chunks.
  const auto at_position = [&](int pos) {
    if (l.chunks_per_rank != 1) return interleaved_chunk(L, total_chunks, pos);
    return partition[static_cast<std::size_t>(pos)] - (pos == 0 ? 1 : 0) - (pos == p.pp - 1 ? 1 : 0);
  };
  const auto R = static_cast<std::size_t>(p.pp);
  sh.ranks.assign(R, {});
  for (std::size_t r = 0; r < R; ++r) {
    PipeShape::Rank& rk = sh.ranks[r];
    int total = 0;
    for (const auto& [d, pos] : l.place[r]) {
      (void)d;
      const int n = at_position(pos);
      rk.layers[rk.chunks] = n;
      rk.embedding[rk.chunks] = pos == 0 ? 1 : 0;
      rk.head[rk.chunks] = pos == l.positions - 1 ? 1 : 0;
      rk.any_embedding = rk.any_embedding || pos == 0;
      rk.any_head = rk.any_head || pos == l.positions - 1;
      ++rk.chunks;
      total += n;
    }
    for (std::size_t c = 0; c < rk.chunks; ++c) {
      rk.share[c] = total > 0 ? static_cast<double>(rk.layers[c]) / total
                              : 1.0 / static_cast<double>(rk.chunks);
    }
  }
  sh.peaks = cached_pipe_held_peaks(p.schedule, p.pp, p.num_micro_batches);
  return sh;
}

/// pipe_shape(ctx, p, partition), remembered per thread by what it reads (the schedule, pp,
/// micro-batches, the model's layers and the partition): plans that differ in the
/// data-parallel method, ZeRO stage, recompute or dp share it. The reference stays valid until
/// the thread's next call. Only for plans that split the backward (is_split_schedule, pp > 1).
const PipeShape& cached_pipe_shape(const NativeContext& ctx, const DesignPoint& p,
                                   const std::vector<int>& partition) {
  struct Entry {
    Schedule schedule;
    int pp = 0;
    int m = 0;
    long long layers = 0;
    std::vector<int> partition;
    PipeShape shape;
  };
  struct Cache {
    std::unordered_multimap<std::uint64_t, std::unique_ptr<Entry>> entries;
  };
  thread_local Cache cache;
  std::uint64_t h = (static_cast<std::uint64_t>(p.schedule) << 56) ^
                    (static_cast<std::uint64_t>(static_cast<std::uint32_t>(p.pp)) << 40) ^
                    (static_cast<std::uint64_t>(static_cast<std::uint32_t>(p.num_micro_batches)) << 8) ^
                    static_cast<std::uint64_t>(ctx.model.num_layers);
  for (const int x : partition) h = h * 0x100000001b3ULL ^ static_cast<std::uint32_t>(x);
  const auto [lo, hi] = cache.entries.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    const Entry& e = *it->second;
    if (e.schedule == p.schedule && e.pp == p.pp && e.m == p.num_micro_batches &&
        e.layers == ctx.model.num_layers && e.partition == partition) {
      return e.shape;
    }
  }
  if (cache.entries.size() >= 1024) cache.entries.clear(); // a few MB at most
  auto e = std::make_unique<Entry>(
      Entry{p.schedule, p.pp, p.num_micro_batches, ctx.model.num_layers, partition,
            pipe_shape(ctx, p, partition)});
  return cache.entries.emplace(h, std::move(e))->second->shape;
}

/// split_in_flight's held_peak where rank r's slots do not hold `bits` (out of line).
[[gnu::noinline]] double split_in_flight_new(const PipeShape& shape, std::size_t r, double w_ratio,
                                             std::uint64_t bits) {
  if (shape.last_peak.size() != shape.ranks.size()) shape.last_peak.assign(shape.ranks.size(), {});
  const PipeShape::Rank& rk = shape.ranks[r];
  PipeShape::Peaks& last = shape.last_peak[r];
  // held_peak depends on the rank's peaks and shares (the shape's) and w_ratio only.
  const double value =
      held_peak((*shape.peaks)[r], std::span<const double>(rk.share.data(), rk.chunks), w_ratio);
  std::size_t i = last.n;
  if (i < PipeShape::Peaks::kSlots) {
    ++last.n;
  } else {
    i = last.next;
    last.next = static_cast<std::uint8_t>((i + 1) % PipeShape::Peaks::kSlots);
  }
  last.w_ratio_bits[i] = bits;
  last.value[i] = value;
  return value;
}

/// A split schedule's peak along rank r's order, in micro-batches of its activations, a
/// deferred weight pass holding M_W / M_B of one (Qi et al.'s Table 1; docs/native.md §2.3).
/// The remembered slots looked at inline, a new w_ratio out of line (split_in_flight_new);
/// split_in_flight, the same out of line, for stage_memory (inlined there it cost the
/// default list's plans, which do not call it, 0.5 M instructions on native_h100x512_top10).
[[gnu::always_inline]] inline double split_in_flight_inline(const PipeShape& shape, std::size_t r,
                                                            const native_steps::LayerActivations& act) {
  const double w_ratio = act.layer > 0.0 ? act.weight_pass / act.layer : 0.0;
  const auto bits = std::bit_cast<std::uint64_t>(w_ratio);
  if (r < shape.last_peak.size()) {
    const PipeShape::Peaks& last = shape.last_peak[r];
    for (std::size_t i = 0; i < last.n; ++i) {
      if (last.w_ratio_bits[i] == bits) return last.value[i];
    }
  }
  return split_in_flight_new(shape, r, w_ratio, bits);
}
[[gnu::noinline]] double split_in_flight(const PipeShape& shape, std::size_t r,
                                         const native_steps::LayerActivations& act) {
  return split_in_flight_inline(shape, r, act);
}

/// Whether pipe_times_into computes the same chunk times for two ranks: every figure of the
/// stage and of the rank's chunks it reads is equal.
bool same_chunk_inputs(const NativeStage& a, const NativeStage& b, const PipeShape::Rank& ra,
                       const PipeShape::Rank& rb) noexcept {
  return a.gpu == b.gpu && a.forward_s == b.forward_s && a.backward_s == b.backward_s &&
         a.weight_s == b.weight_s && a.moe_layers == b.moe_layers &&
         a.moe_comm_s == b.moe_comm_s && a.moe_comm_forward_s == b.moe_comm_forward_s &&
         ra.chunks == rb.chunks && ra.layers == rb.layers && ra.embedding == rb.embedding &&
         ra.head == rb.head;
}

/// Per rank and chunk, one micro-batch's forward, input-gradient and weight-gradient times: the
/// rank's times (framework costs included) shared out in proportion to each chunk's analytic
/// compute, so the chunks of a rank add up to it; the tensor-parallel collectives a DualPipe
/// F&B pair can hide; the stages' sends as the links.
/// Fills `pt`, reusing its buffers (every figure is overwritten).
void pipe_times_into(const NativeContext& ctx, const DesignPoint& p, const NativeEstimate& est,
                     const PipeShape& shape, StageLayerTimes& times, PipeTimes& pt) {
  const FrameworkParams fw = framework_params(p.method, p.dtype, ctx.settings);
  pt.link_s.clear();
  // Ranks dropped or added as pp changes from one plan to the next: their chunk vectors kept in
  // a spare pool per thread, not freed and allocated again (every figure is overwritten below).
  thread_local std::vector<std::vector<PipeChunkTimes>> spare_ranks;
  while (pt.chunks.size() > est.stages.size()) {
    spare_ranks.push_back(std::move(pt.chunks.back()));
    pt.chunks.pop_back();
  }
  while (pt.chunks.size() < est.stages.size()) {
    if (spare_ranks.empty()) {
      pt.chunks.emplace_back();
    } else {
      pt.chunks.push_back(std::move(spare_ranks.back()));
      spare_ranks.pop_back();
    }
  }
  for (std::size_t r = 0; r < est.stages.size(); ++r) {
    const NativeStage& st = est.stages[r];
    if (r + 1 < est.stages.size()) pt.link_s.push_back(st.send_s);
    const PipeShape::Rank& rk = shape.ranks[r];
    const std::size_t C = rk.chunks;
    // Most ranks repeat the one before (the middle stages of a pipeline): the same inputs
    // below, so the same chunk times, copied.
    if (r > 0 && same_chunk_inputs(st, est.stages[r - 1], rk, shape.ranks[r - 1])) {
      pt.chunks[r] = pt.chunks[r - 1];
      continue;
    }
    const AnalyticLayerTimes& t = times(st.gpu);
    const double rc = recompute_s(t, p.recompute, fw, ctx.model, ctx.settings.recompute_modules);
    std::array<double, 2> f{}, b{}, w{};
    double sf = 0.0, sb = 0.0, sw = 0.0;
    for (std::size_t c = 0; c < C; ++c) {
      const double n = rk.layers[c];
      const bool e = rk.embedding[c] != 0, h = rk.head[c] != 0;
      f[c] = n * t.layer.forward_s + (e ? t.embedding.forward_s : 0.0) + (h ? t.post_process.forward_s : 0.0);
      b[c] = n * (t.layer.backward_s + rc) + (e ? t.embedding.backward_s : 0.0) +
             (h ? t.post_process.backward_s : 0.0);
      w[c] = n * t.layer.weight_s + (e ? t.embedding.weight_s : 0.0) + (h ? t.post_process.weight_s : 0.0);
      sf += f[c];
      sb += b[c];
      sw += w[c];
    }
    const auto part = [C](double total, double x, double sum) {
      return sum > 0.0 ? total * x / sum : total / static_cast<double>(C);
    };
    // The MoE all-to-all a DualPipe F&B pair can hide (DeepSeek-V3's reason for the schedule):
    // the stage's dispatch and combine, less the MLP's tp collective they replace
    // (add_moe_comm), shared out over the chunks by their layers; 0 for a dense model.
    double n_sum = 0.0;
    for (std::size_t c = 0; c < C; ++c) n_sum += rk.layers[c];
    const double backward_passes = p.recompute == Recompute::full ? 2.0 : 1.0;
    const double a2a_f = st.moe_comm_forward_s - st.moe_layers * t.tp_comm_forward_s / 2.0;
    const double a2a_b = (st.moe_comm_s - st.moe_comm_forward_s) -
                         st.moe_layers * backward_passes * t.tp_comm_forward_s / 2.0;
    std::vector<PipeChunkTimes>& chunks = pt.chunks[r];
    chunks.resize(C);
    for (std::size_t c = 0; c < C; ++c) {
      PipeChunkTimes& ct = chunks[c];
      const double n = rk.layers[c];
      const double share = n_sum > 0.0 ? n / n_sum : 0.0;
      ct.forward_s = part(st.forward_s, f[c], sf);
      ct.weight_s = part(st.weight_s, w[c], sw);
      ct.input_s = std::max(0.0, part(st.backward_s, b[c], sb) - ct.weight_s);
      ct.forward_comm_s =
          std::min(ct.forward_s, n * t.tp_comm_forward_s + share * std::max(0.0, a2a_f));
      ct.backward_comm_s =
          std::min(ct.input_s, n * t.tp_comm_backward_s + share * std::max(0.0, a2a_b));
    }
  }
}

/// A lower bound of a split schedule's makespan from the stages alone, before the chunk times
/// (pipe_times_into) and the outline's bound (pipe_fill_bound): O(ranks x chunks). Each
/// micro-batch through a rank's chunk runs one forward and one whole backward there (an input
/// pass and its weight pass, a full backward, or its halves of F&B pairs; counted from the
/// outline, the fewest over the rank's chunks), and pipe_times_into shares the stage's
/// forward_s and backward_s out over the chunks (an input pass and its weight pass at least
/// the chunk's share of backward_s): the rank's passes take at least that many times
/// forward_s + backward_s, less what its F&B pairs hide (overlapped_s: at most each pair's
/// forward_comm_s and backward_comm_s, bounded here as pipe_times_into bounds them). No rank
/// finishes before its own passes, so the makespan is at least the busiest rank's; the same
/// relative 1e-9 margin as pipe_busy_bound's covers the rounding of the shares and sums.
///
/// With one chunk per rank (zb-h1, zb-h2: position j on rank j, no F&B pairs), pipe_fill_bound's
/// fill and drain on the stages too: rank r starts no earlier than the forwards of ranks
/// 0 .. r - 1 and their sends, and its passes up to its last backward are followed by the
/// backwards of that micro-batch on ranks r - 1 .. 0 and the sends between; each pass at
/// least what pipe_times_into makes of the stage (a forward forward_s, an input pass
/// backward_s - weight_s, a weight pass weight_s, a full backward backward_s).
/// A configuration's sends per stage (send_s of `p`), each computed when first read: a
/// split plan pruned on its stage bound reads few or none (native_estimates).
struct LazySends {
  const NativeContext& ctx;
  const DesignPoint& p;
  const native_steps::PointConstants& k;
  const NativePlacement& where;
  std::vector<double>& value;
  std::vector<char>& known; // sized pp, all 0 to start
  double at(std::size_t j) {
    if (known[j] == 0) {
      value[j] = native_steps::send_s(ctx, p, k, where, static_cast<int>(j));
      known[j] = 1;
    }
    return value[j];
  }
  const double* all() {
    for (std::size_t j = 0; j < known.size(); ++j) at(j);
    return value.data();
  }
};

/// The stages a stage bound reads, by rank: a plan's own (EstimateStages) or, in
/// bounded_split_stages, its configuration's distinct stage cores, each looked up when first
/// read, and the stages' sends (LazyCoreStages), so that a plan pruned on the bound reads and
/// copies no stage it does not need.
struct EstimateStages {
  const std::vector<NativeStage>& stages;
  [[nodiscard]] std::size_t size() const noexcept { return stages.size(); }
  [[nodiscard]] const NativeStage& at(std::size_t r) const noexcept { return stages[r]; }
  [[nodiscard]] double send(std::size_t r) const noexcept { return stages[r].send_s; }
};

/// Where a stage bound may stop (bounded_split_stages): once the bound, with the step time's
/// other terms added as with_totals adds them, is past `limit` (both pruning limits), the
/// plan is pruned whatever the remaining ranks add; the bound so far (a maximum over fewer
/// ranks) is still a lower bound of the makespan. The terms may be the maxima over the stages
/// read so far (bounded_split_stages raises them as it reads them): no more than the step
/// time's, so still a lower bound. The default never stops.
struct BoundStop {
  double dp = 0.0, embedding = 0.0, optimizer = 0.0, offload = 0.0;
  double limit = HUGE_VAL;
  [[nodiscard]] bool past(double pipeline) const noexcept {
    return pipeline + dp + embedding + optimizer + offload > limit;
  }
};

template <class Stages>
double linear_stage_bound(const Stages& stages, const PipeOutline& o, const BoundStop& stop = {}) {
  const auto R = static_cast<std::size_t>(o.layout.ranks);
  const std::vector<std::uint32_t>& u = o.uses;
  const bool drain = o.tail.size() == u.size() && o.last_backward.size() == R;
  double from = 0.0, down = 0.0, latest = 0.0;
  for (std::size_t r = 0; r < R && r < stages.size(); ++r) {
    const NativeStage& st = stages.at(r);
    const double d[4] = {st.forward_s, std::max(0.0, st.backward_s - st.weight_s),
                         st.backward_s, st.weight_s};
    const std::uint32_t* ur = &u[r * 4];
    double busy = 0.0;
    for (std::size_t k = 0; k < 4; ++k) busy += static_cast<double>(ur[k]) * d[k];
    const double before = latest;
    latest = std::max(latest, from + busy);
    if (drain && o.last_backward[r].first == 0 &&
        static_cast<std::size_t>(o.last_backward[r].second) == r) {
      const std::uint32_t* tr = &o.tail[r * 4];
      double before_tail = 0.0;
      for (std::size_t k = 0; k < 4; ++k) before_tail += static_cast<double>(ur[k] - tr[k]) * d[k];
      latest = std::max(latest, from + before_tail + down);
    }
    if (latest > before && stop.past(latest * (1.0 - 1e-9))) break;
    // The chain to rank r + 1: this rank's forward and send; back from it: its backward (the
    // shortest kind the order runs) and the send.
    const double send = stages.send(r);
    from += st.forward_s + send;
    const double backward = ur[1] > 0 ? (ur[2] > 0 ? std::min(d[1], d[2]) : d[1]) : d[2];
    down += send + backward;
  }
  return latest * (1.0 - 1e-9);
}

/// What split_stage_bound reads of an outline with several chunks per rank or directions, per
/// rank: the fewest forwards or whole backwards of its chunks (0: the rank is skipped) and the
/// most F&B pairs any of its chunks takes part in, counted as split_stage_bound counted them.
struct RankPasses {
  std::uint32_t fewest = 0;
  std::uint32_t most_paired = 0;
};

std::vector<RankPasses> rank_passes(const PipeOutline& o) {
  const auto R = static_cast<std::size_t>(o.layout.ranks);
  const auto C = static_cast<std::size_t>(o.layout.chunks_per_rank);
  const std::vector<std::uint32_t>& u = o.uses;
  const std::size_t pairs_at = R * C * 4;
  std::vector<RankPasses> out(R);
  for (std::size_t r = 0; r < R; ++r) {
    std::uint32_t fewest = UINT32_MAX, most_paired = 0;
    for (std::size_t c = 0; c < C; ++c) {
      const std::size_t k = (r * C + c) * 4;
      std::uint32_t forwards = u[k];
      std::uint32_t backwards = std::min(u[k + 1], u[k + 3]) + u[k + 2];
      std::uint32_t paired_f = 0, paired_b = 0;
      for (std::size_t b = 0; b < C; ++b) {
        paired_f += u[pairs_at + (r * C + c) * C + b]; // chunk c's forward with chunk b's backward
        paired_b += u[pairs_at + (r * C + b) * C + c]; // chunk b's forward with chunk c's backward
      }
      forwards += paired_f;
      backwards += paired_b;
      fewest = std::min({fewest, forwards, backwards});
      most_paired = std::max({most_paired, paired_f, paired_b});
    }
    out[r] = {fewest == UINT32_MAX ? 0 : fewest, most_paired};
  }
  return out;
}

/// rank_passes of `o`, remembered per thread by outline (held, so that an address is not
/// reused while it is remembered; dropped whole past 1,024 outlines). The search visits the
/// configurations fastest first, so consecutive plans rarely share their (pp, m): eight
/// recent slots missed on about a fifth of the split plans.
const std::vector<RankPasses>& cached_rank_passes(const std::shared_ptr<const PipeOutline>& o) {
  struct Slot {
    std::shared_ptr<const PipeOutline> outline;
    std::vector<RankPasses> passes;
  };
  thread_local std::unordered_map<const PipeOutline*, Slot> slots;
  thread_local const PipeOutline* last = nullptr;
  thread_local const std::vector<RankPasses>* last_passes = nullptr;
  if (o.get() == last) return *last_passes;
  auto it = slots.find(o.get());
  if (it == slots.end()) {
    if (slots.size() >= 1024) slots.clear();
    it = slots.emplace(o.get(), Slot{o, rank_passes(*o)}).first;
  }
  last = o.get();
  last_passes = &it->second.passes;
  return it->second.passes;
}

template <class Stages>
double split_stage_bound(const DesignPoint& p, const Stages& stages, const PipeShape& shape,
                         StageLayerTimes& times, const BoundStop& stop = {}) {
  const PipeOutline& o = *shape.outline;
  const auto R = static_cast<std::size_t>(o.layout.ranks);
  const auto C = static_cast<std::size_t>(o.layout.chunks_per_rank);
  if (C == 1 && o.layout.directions == 1) return linear_stage_bound(stages, o, stop);
  const std::vector<RankPasses>& passes = cached_rank_passes(shape.outline);
  const double backward_passes = p.recompute == Recompute::full ? 2.0 : 1.0;
  double latest = 0.0;
  for (std::size_t r = 0; r < R && r < stages.size(); ++r) {
    const std::uint32_t fewest = passes[r].fewest, most_paired = passes[r].most_paired;
    if (fewest == 0) continue;
    const NativeStage& st = stages.at(r);
    double busy = static_cast<double>(fewest) * (st.forward_s + st.backward_s) * (1.0 - 1e-9);
    if (busy <= latest) continue; // cannot raise the bound, less what pairs hide either
    if (most_paired > 0) {
      // What the pairs can hide, per micro-batch of every chunk: pipe_times_into's
      // forward_comm_s and backward_comm_s before their min with the pass.
      const PipeShape::Rank& rk = shape.ranks[r];
      const AnalyticLayerTimes& t = times(st.gpu);
      const double a2a_f = st.moe_comm_forward_s - st.moe_layers * t.tp_comm_forward_s / 2.0;
      const double a2a_b = (st.moe_comm_s - st.moe_comm_forward_s) -
                           st.moe_layers * backward_passes * t.tp_comm_forward_s / 2.0;
      double n_sum = 0.0;
      for (std::size_t c = 0; c < rk.chunks; ++c) n_sum += rk.layers[c];
      double hidden = 0.0;
      for (std::size_t c = 0; c < rk.chunks; ++c) {
        const double n = rk.layers[c];
        const double share = n_sum > 0.0 ? n / n_sum : 0.0;
        hidden += n * t.tp_comm_forward_s + share * std::max(0.0, a2a_f) +
                  n * t.tp_comm_backward_s + share * std::max(0.0, a2a_b);
      }
      busy -= static_cast<double>(most_paired) * hidden * (1.0 + 1e-9);
    }
    if (busy > latest) {
      latest = busy;
      if (stop.past(latest)) break;
    }
  }
  return latest;
}

PipeTimes pipe_times(const NativeContext& ctx, const DesignPoint& p, const NativeEstimate& est,
                     const PipeShape& shape, StageLayerTimes& times) {
  PipeTimes pt;
  pipe_times_into(ctx, p, est, shape, times, pt);
  return pt;
}

} // namespace

namespace native_steps {

namespace {

/// minmax_layers by a heap of every stage's next cost: the definition.
std::vector<int> minmax_layers_heap(const std::vector<double>& fixed,
                                    const std::vector<double>& per_layer, int layers) {
  const std::size_t pp = fixed.size();
  std::vector<int> n(pp, 1); // every stage gets at least one layer
  using Item = std::pair<double, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> next;
  for (std::size_t j = 0; j < pp; ++j) {
    next.emplace(fixed[j] + 2 * per_layer[j], static_cast<int>(j));
  }
  for (int left = layers - static_cast<int>(pp); left > 0; --left) {
    const auto [cost, j] = next.top();
    next.pop();
    const auto ju = static_cast<std::size_t>(j);
    ++n[ju];
    next.emplace(fixed[ju] + (n[ju] + 1) * per_layer[ju], j);
  }
  return n;
}

} // namespace

std::vector<int> minmax_layers(const std::vector<double>& fixed,
                               const std::vector<double>& per_layer, int layers) {
  // Stages with equal (fixed, per-layer) costs form a class; inside one, the stage with the
  // fewest layers and then the lowest index is the class's cheapest, so a class's members
  // (by index) take layers in turn: members [0, r) hold base + 1 layers, [r, size) base.
  // Each layer goes to the cheapest (cost, index) over the classes' candidates: the heap's
  // pop, found in O(classes). Where a member with base + 1 layers would be cheaper than
  // (or tie with) member r (a per-layer cost of 0, or lost in rounding), the turn order does
  // not hold: the heap decides.
  const std::size_t pp = fixed.size();
  struct Class {
    double fixed = 0.0, per = 0.0;
    int base = 1;
    std::size_t r = 0, begin = 0, size = 0;
  };
  constexpr std::size_t kMaxClasses = 8;
  std::array<Class, kMaxClasses> cls;
  std::size_t classes = 0;
  std::vector<int> member_class(pp);
  for (std::size_t j = 0; j < pp; ++j) {
    if (!std::isfinite(fixed[j]) || !std::isfinite(per_layer[j])) {
      return minmax_layers_heap(fixed, per_layer, layers);
    }
    std::size_t c = 0;
    while (c < classes && !(cls[c].fixed == fixed[j] && cls[c].per == per_layer[j])) ++c;
    if (c == classes) {
      if (classes == kMaxClasses) return minmax_layers_heap(fixed, per_layer, layers);
      cls[c].fixed = fixed[j];
      cls[c].per = per_layer[j];
      ++classes;
    }
    ++cls[c].size;
    member_class[j] = static_cast<int>(c);
  }
  // members of each class by index, the classes one after another
  std::vector<int> members(pp);
  for (std::size_t c = 0, at = 0; c < classes; ++c) {
    cls[c].begin = at;
    at += cls[c].size;
  }
  {
    std::array<std::size_t, kMaxClasses> fill{};
    for (std::size_t j = 0; j < pp; ++j) {
      const auto c = static_cast<std::size_t>(member_class[j]);
      members[cls[c].begin + fill[c]++] = static_cast<int>(j);
    }
  }
  std::vector<int> n(pp, 1);
  for (int left = layers - static_cast<int>(pp); left > 0; --left) {
    double best_cost = 0.0;
    int best_j = -1;
    std::size_t best_c = 0;
    for (std::size_t c = 0; c < classes; ++c) {
      const Class& k = cls[c];
      const int j = members[k.begin + k.r];
      const double cost = k.fixed + (k.base + 1) * k.per;
      if (k.r > 0) {
        const double ahead = k.fixed + (k.base + 2) * k.per; // member 0, base + 1 layers
        if (!(cost < ahead)) return minmax_layers_heap(fixed, per_layer, layers);
      }
      if (best_j < 0 || cost < best_cost || (cost == best_cost && j < best_j)) {
        best_cost = cost;
        best_j = j;
        best_c = c;
      }
    }
    Class& k = cls[best_c];
    ++n[static_cast<std::size_t>(best_j)];
    if (++k.r == k.size) {
      k.r = 0;
      ++k.base;
    }
  }
  return n;
}

EntryParams entry_params(const ModelSpec& m, int pp) {
  EntryParams e;
  e.embedding = static_cast<double>(embedding_parameters(m));
  e.layer = static_cast<double>(layer_parameters(m));
  e.dense_layer = static_cast<double>(dense_layer_parameters(m));
  e.post = static_cast<double>(post_process_parameters(m));
  if (m.tied_embeddings && pp > 1) {
    e.post += static_cast<double>(m.vocab_size * m.hidden_size);
  }
  return e;
}

PointConstants point_constants(const NativeContext& ctx, const DesignPoint& p) {
  PointConstants k;
  k.fw = framework_params(p.method, p.dtype, ctx.settings);
  k.elem_bytes = elem_bytes(p.dtype);
  k.entries = entry_params(ctx.model, p.pp);
  k.act = layer_activations(ctx, p);
  k.tensors_per_layer = tensors_per_layer(ctx.model);
  k.opt = optimizer_state_bytes(k.fw, k.elem_bytes, ctx.settings.master_weights);
  k.recompute_modules = ctx.settings.recompute_modules;
  k.layer_impl = ctx.settings.layer_impl;
  return k;
}

StageEntries stage_entries(const ModelSpec& m, const DesignPoint& p,
                           const std::vector<int>& partition, int j, bool embedding, bool head) {
  StageEntries e;
  e.embedding = embedding;
  e.head = head;
  e.layers = partition[static_cast<std::size_t>(j)] - (embedding ? 1 : 0) - (head ? 1 : 0);
  e.moe = m.is_moe() ? stage_moe_layers(m, p, partition, j) : 0;
  e.main = m.is_moe() ? e.moe : e.layers;
  e.dense = e.layers - e.main;
  return e;
}

StageEntries layout_chunk_entries(const ModelSpec& m, const LayoutChunk& chunk) {
  StageEntries e;
  e.embedding = chunk.embedding;
  e.head = chunk.loss;
  e.mtp = chunk.mtp;
  e.layers = chunk.layers + chunk.mtp;
  // DeepSeek-V3's MTP block is one transformer layer of the model's own kind (MoE).
  e.moe = m.is_moe() ? static_cast<int>(moe_layers_in(m, chunk.first_layer, chunk.layers)) + chunk.mtp
                     : 0;
  e.main = m.is_moe() ? e.moe : e.layers;
  e.dense = e.layers - e.main;
  return e;
}

StageEntries layout_stage_entries(const ModelSpec& m, const PipelineLayout& layout, int pp,
                                  int j) {
  StageEntries e;
  for (std::size_t k = static_cast<std::size_t>(j); k < layout.chunks.size();
       k += static_cast<std::size_t>(pp)) {
    const StageEntries c = layout_chunk_entries(m, layout.chunks[k]);
    e.embedding = e.embedding || c.embedding;
    e.head = e.head || c.head;
    e.layers += c.layers;
    e.moe += c.moe;
    e.main += c.main;
    e.dense += c.dense;
    e.mtp += c.mtp;
  }
  return e;
}

void set_compute(NativeStage& c, const ModelSpec& m, const DesignPoint& p,
                 const PointConstants& k, const StageEntries& e, const AnalyticLayerTimes& t,
                 const AnalyticLayerTimes& dense) {
  const FrameworkParams& fw = k.fw;
  const double rc = recompute_s(t, p.recompute, fw, m, k.recompute_modules);
  c.forward_s = e.main * t.layer.forward_s + (e.embedding ? t.embedding.forward_s : 0.0) +
                (e.head ? t.post_process.forward_s : 0.0);
  c.recompute_s = e.main * rc;
  c.backward_s = e.main * (t.layer.backward_s + rc) + (e.embedding ? t.embedding.backward_s : 0.0) +
                 (e.head ? t.post_process.backward_s : 0.0);
  c.weight_s = e.main * t.layer.weight_s + (e.embedding ? t.embedding.weight_s : 0.0) +
               (e.head ? t.post_process.weight_s : 0.0);
  if (e.mtp > 0) {
    // Each MTP layer's own pass through the (shared) LM head and loss.
    c.forward_s += e.mtp * t.post_process.forward_s;
    c.backward_s += e.mtp * t.post_process.backward_s;
    c.weight_s += e.mtp * t.post_process.weight_s;
  }
  if (e.dense > 0) {
    const double rcd = recompute_s(dense, p.recompute, fw, dense_variant(m), k.recompute_modules);
    c.forward_s += e.dense * dense.layer.forward_s;
    c.recompute_s += e.dense * rcd;
    c.backward_s += e.dense * (dense.layer.backward_s + rcd);
    c.weight_s += e.dense * dense.layer.weight_s;
  }
}

void add_moe_comm(NativeStage& st, const NativeContext& ctx, const DesignPoint& p,
                  const PointConstants& k, const NativeGpu& gpu, const AnalyticLayerTimes& t,
                  int moe_layers) {
  if (moe_layers <= 0) return;
  const ModelSpec& m = ctx.model;
  const double bytes =
      dispatch_bytes(m, p, k.elem_bytes, effective_moe_imbalance(m, ctx.settings.moe_imbalance));
  const NetworkTiers tiers = network_tiers(gpu.spec, ctx.gpus_per_node);
  const int intra = tiers.multi_node_domain()
                        ? group_domain_split(p.ep, p.etp, tiers.domain_gpus, world_size(p)).members
                        : ep_ranks_per_node(p, ctx.gpus_per_node);
  const NcclLatency node_lat = intra_latency(gpu.spec);
  const NcclLatency net_lat = nccl_latency(Transport::net);
  const A2aLink node{intra_bus_bytes_per_s(gpu, intra), node_lat.simple_base_s + node_lat.simple_step_s};
  const A2aLink net{scale_out_bytes_per_s(ctx, gpu), net_lat.simple_base_s + net_lat.simple_step_s};
  // The flex dispatcher (DeepEP, HybridEP) sends one copy of a token per destination node and
  // rank, the all-to-all dispatcher one per top-k expert (docs/moe.md §3.2).
  const double a2a =
      flex_dispatcher(ctx.settings.moe_dispatcher)
          ? flex_all_to_all_s(bytes / static_cast<double>(std::max<std::int64_t>(
                                              1, m.experts_per_token)),
                              static_cast<int>(m.num_experts),
                              static_cast<int>(m.experts_per_token), p.ep, intra, node, net)
          : all_to_all_s(bytes, p.ep, intra, node, net);
  const double etp_comm =
      p.etp > 1 ? dp_half_s(spaced_group(ctx, p.etp, 1, gpu, world_size(p)), bytes * p.etp) : 0.0;
  const double pass = 2.0 * (a2a + etp_comm); // dispatch + combine
  const double delta = pass - t.tp_comm_forward_s / 2.0;
  // Full recompute and selective recompute of the whole MoE block ("moe") dispatch and combine
  // again.
  const bool rerun = p.recompute == Recompute::full ||
                     (p.recompute == Recompute::selective && !k.fw.selective_per_op &&
                      k.recompute_modules.has(RecomputeModule::moe));
  const double passes = rerun ? 3.0 : 2.0;
  st.moe_comm_s = moe_layers * passes * pass;
  st.moe_comm_forward_s = moe_layers * pass;
  st.forward_s += moe_layers * delta;
  st.backward_s += moe_layers * delta * (passes - 1.0);
  if (rerun) st.recompute_s += moe_layers * delta;
}

void add_cp_exchange(NativeStage& st, const NativeContext& ctx, const DesignPoint& p,
                     const PointConstants& k, const NativeGpu& gpu, const AnalyticLayerTimes& t,
                     int layers) {
  if (p.cp <= 1 || layers <= 0) return;
  // The attention's rerun under recomputation (full; Megatron-LM's selective recomputes core
  // attention, per-op SAC keeps it) exchanges again.
  const FrameworkParams& fw = k.fw;
  const CpExchange x = cp_exchange(ctx, p, gpu, t);
  const bool rerun = p.recompute == Recompute::full ||
                     (p.recompute == Recompute::selective && !fw.selective_per_op &&
                      k.recompute_modules.has(RecomputeModule::core_attn));
  const double again = rerun ? x.cost.forward_s : 0.0;
  st.forward_s += layers * x.cost.forward_s;
  st.backward_s += layers * (x.cost.backward_s + again);
  st.recompute_s += layers * again;
  st.cp_comm_s = layers * (x.cost.forward_s + x.cost.backward_s + again);
  st.cp_comm_forward_s = layers * x.cost.forward_s;
  st.memory.buffers += x.buffer_bytes; // one layer's exchange at a time
}

StageParams stage_params(const ModelSpec& m, const DesignPoint& p, const PointConstants& k,
                         const StageEntries& e) {
  const EntryParams& params = k.entries;
  // An MTP layer adds its projection of the normed hidden state and embedding (2h x h) to
  // its transformer layer; it shares the LM head of the stage holding the loss.
  const double h = static_cast<double>(m.hidden_size);
  const double stage = e.main * params.layer + e.dense * params.dense_layer +
                       (e.embedding ? params.embedding : 0.0) + (e.head ? params.post : 0.0) +
                       e.mtp * 2.0 * h * h;
  // The dense part / tp, the routed experts / (ep x etp); ZeRO shards the first over dp x cp,
  // the second over edp.
  StageParams sp;
  sp.shards = stage_shards(m, p, stage, e.moe);
  sp.local = sp.shards.local();
  sp.d = p.dp * p.cp;
  sp.edp = p.edp();
  sp.root = (e.embedding ? params.embedding : 0.0) + (e.head ? params.post : 0.0);
  return sp;
}

double grad_accumulation_s(const DesignPoint& p, const PointConstants& k, const NativeGpu& gpu,
                           double local_params, int layers) noexcept {
  if (k.fw.fp32_grad_accumulation) [[unlikely]] {
    // DeepSpeed's BF16_Optimizer sets the bf16 .grad to None before every backward
    // (clear_lp_grads: no AccumulateGrad add) and after it adds each parameter's bf16 gradient
    // into its fp32 buffer, tensor by tensor: hp_grad.add_(lp.grad.to(float32)), a cast (read
    // 2, write 4 bytes) and an add (read 4 + 4, write 4), every micro-batch
    // (deepspeed/runtime/bf16_optimizer.py update_hp_grads, called from backward and from the
    // pipeline engine's _exec_backward_pass, at microsoft/DeepSpeed 56c5223 and e4a5a46; the
    // same in _update_hp_grad at 38327e0).
    const double bytes = kBf16OptimizerAccumulateBytes * local_params;
    return std::max(bytes / (gpu.spec.memory_GBps * 1e9 * gpu.calibration.memory_efficiency),
                    2.0 * stage_tensors(k, layers) * kHostPerKernel_s);
  }
  // Megatron-LM's DDP accumulates in the weight-gradient GEMM (gradient-accumulation fusion,
  // its default); ZeRO-3 and FSDP reduce-scatter every micro-batch and add into the shard
  // (1/dp of this).
  const double mb = p.num_micro_batches;
  if (!(p.method == DpMethod::zero0 || p.method == DpMethod::zero1 || p.method == DpMethod::zero2) ||
      !(mb > 1)) {
    return 0.0;
  }
  const double once = 3.0 * k.elem_bytes * local_params /
                      (gpu.spec.memory_GBps * 1e9 * gpu.calibration.memory_efficiency);
  return once * (mb - 1) / mb;
}

double bf16_optimizer_step_bytes(double reduce_bytes) noexcept {
  // Once a step, over the whole unsharded fp32 buffer: clear_hp_grads zeroes it (write 4);
  // the data-parallel reduction (engine.py allreduce_and_copy, allreduce_bucket) copies it into
  // a flat bucket (read 4, write 4), casts that to the communication dtype and back when it is
  // not fp32 (read 4, write r; read r, write 4), scales it for the average (read r, write r)
  // and copies it back into the buffers (read 4, write 4).
  const double cast = reduce_bytes < 4.0 ? 2.0 * (4.0 + reduce_bytes) : 0.0;
  return 4.0 + 8.0 + cast + 2.0 * reduce_bytes + 8.0;
}

double stage_tensors(const PointConstants& k, int layers) noexcept {
  return layers * k.tensors_per_layer + 2.0;
}

bool shards_some(const DesignPoint& p, const StageParams& params) noexcept {
  return params.d > 1 || (params.shards.expert > 0 && p.ep * p.etp != p.tp && params.edp > 1);
}

bool keeps_unsharded(const DesignPoint& p, const PointConstants& k,
                     const StageParams& params) noexcept {
  return k.fw.unsharded_with_pp && p.pp > 1 && shards_some(p, params);
}

/// DeepSpeed's ZeRO-3 before PR #1453 (--zero3_impl per_param, model/deepspeed_zero3.hpp):
/// one all-gather per gathered parameter per fetch and one reduce-scatter per parameter, each
/// through PyTorch's list API (world-size copies) and priced as its own NCCL ring call; the
/// device synchronized before every gather and after every sub-module fetch
/// (partition_parameters.py `_allgather_param`, stage3.py `_synchronize_communication` at
/// v0.3.14), so nothing hides behind compute: forward adds the gathers, backward the rerun's
/// gathers under full recompute, the gathers its backward fetches again, and the
/// reduce-scatters. The embedding entry gathers and reduces the word embedding (and learned
/// positions); the head entry gathers the LM head (the tied embedding as an external
/// parameter), reduces the final norm (and LayerNorm's bias) and an untied head.
void add_per_param_zero3(NativeStage& st, const NativeContext& ctx, const DesignPoint& p,
                         const PointConstants& k, const NativeGpu& gpu, const StageParams& params,
                         const StageEntries& e) {
  const ModelSpec& m = ctx.model;
  const DpGroup group = dp_group(ctx, p, gpu);
  const int n = p.dp * p.cp;
  const Zero3LayerCalls lc = zero3_per_param_layer(m);
  const double layers = e.layers;
  const double h = static_cast<double>(m.hidden_size);
  const double norms = m.norm == Norm::layernorm ? 2.0 : 1.0; // the final norm's weight (and bias)
  const double embedding = e.embedding ? (m.learned_position_embeddings ? 2.0 : 1.0) : 0.0;
  // Large tensors (gathered, and reduce-scattered on their own) and small ones (persistent,
  // only reduce-scattered): each kind's calls carry its bytes evenly.
  const double gathers = layers * lc.gathers + embedding + (e.head ? 1.0 : 0.0);
  const double large_reduces =
      layers * lc.gathers + embedding + (e.head && !m.tied_embeddings ? 1.0 : 0.0);
  const double small_reduces = layers * (lc.reduces - lc.gathers) + (e.head ? norms : 0.0);
  const double small = (layers * (lc.elements - lc.gathered_elements) +
                        (e.head ? norms * h : 0.0)) / p.tp;
  const double large = std::max(0.0, params.local - small);
  const double wb = k.elem_bytes;
  const double gb = k.fw.grad_reduce_bytes;
  const auto calls_s = [&](double calls, double bytes) {
    return calls > 0 ? zero3_list_calls_s(calls, dp_ring_half_s(group, bytes / calls), n) : 0.0;
  };
  const double gather = calls_s(gathers, wb * large);
  const double reduce = calls_s(large_reduces, gb * large) + calls_s(small_reduces, gb * small);
  const double regather = p.recompute == Recompute::full
                              ? calls_s(layers * lc.regathers,
                                        wb * layers * lc.regathered_elements / p.tp)
                              : 0.0;
  const double backward = (p.recompute == Recompute::full ? gather + regather : gather) + reduce;
  st.forward_s += gather;
  st.backward_s += backward;
  st.sharded_comm_s = gather + backward;
}

void add_sharded_comm(NativeStage& st, const NativeContext& ctx, const DesignPoint& p,
                      const PointConstants& k, const NativeGpu& gpu, const StageParams& params,
                      const StageEntries& e) {
  const int layers = e.layers;
  const double d = p.dp * p.cp;
  const StageShards& shards = params.shards;
  const bool expert_group = shards.expert > 0 && p.ep * p.etp != p.tp;
  if (!shards_parameters(p.method) || !shards_some(p, params)) return;
  if (p.method == DpMethod::zero3 && ctx.settings.zero3_impl == Zero3Impl::per_param &&
      !expert_group) {
    add_per_param_zero3(st, ctx, p, k, gpu, params, e);
    return;
  }
  // Parameters gathered for forward and again for backward, gradients reduce-scattered, every
  // micro-batch; prefetching hides them behind compute except the first layer's gather.
  // With a pipeline, torchtitan's FSDP2 keeps the parameters gathered and the gradients
  // unsharded over the micro-batches: one gather before the first forward, one
  // reduce-scatter during the last backward, both charged once per step.
  const FrameworkParams& fw = k.fw;
  const double wb = k.elem_bytes;
  const DpGroup group = dp_group(ctx, p, gpu);
  const double local = params.local;
  double gather = 0.0, reduce = 0.0;
  if (!expert_group) {
    gather = dp_half_s(group, wb * local);
    reduce = dp_half_s(group, fw.grad_reduce_bytes * local);
  } else {
    // With expert parallelism the routed experts are their own FSDP unit, sharded over the
    // edp ranks that hold the same experts (etp x ep apart: torchtitan's efsdp mesh, DeepSpeed
    // AutoEP's expert-data-parallel group): one gather and one reduce-scatter over dp x cp for
    // the dense part, one over edp for the experts (docs/moe.md §2.1).
    if (d > 1) {
      gather = dp_half_s(group, wb * shards.dense);
      reduce = dp_half_s(group, fw.grad_reduce_bytes * shards.dense);
    }
    if (params.edp > 1) {
      const DpGroup experts = spaced_group(ctx, static_cast<int>(params.edp), p.ep * p.etp, gpu,
                                           world_size(p));
      const double expert_gather = dp_half_s(experts, wb * shards.expert);
      const double expert_reduce = dp_half_s(experts, fw.grad_reduce_bytes * shards.expert);
      gather += expert_gather;
      reduce += expert_reduce;
    }
  }
  const double first_gather = layers > 0 ? gather / std::max(1, st.layers) : gather;
  // FSDP2 gathers into one flat buffer and copies it out to the parameters on the compute
  // stream (foreach_all_gather_copy_out in torch/distributed/fsdp/_fully_shard/
  // _fsdp_collectives.py): a read and a write of the gathered parameters that cannot
  // overlap compute. DeepSpeed ZeRO-3 gathers into the parameters' own storage.
  const double copy_out =
      fw.torch_loss
          ? 2.0 * wb * local / (gpu.spec.memory_GBps * 1e9 * gpu.calibration.memory_efficiency)
          : 0.0;
  if (keeps_unsharded(p, k, params)) {
    st.dp_sync_s = first_gather + copy_out + std::max(0.0, gather - st.forward_s) +
                   std::max(0.0, reduce - fw.dp_overlap * st.backward_s);
    return;
  }
  const double compute_f = st.forward_s, compute_b = st.backward_s;
  st.forward_s += copy_out;
  st.backward_s += copy_out;
  // Prefetching hides the next layer's gather behind this layer's compute; what cannot hide:
  // the first layer's gather before forward, the last layer's reduce-scatter after backward,
  // and whatever is longer than the compute.
  const double last_reduce = layers > 0 ? reduce / std::max(1, st.layers) : reduce;
  const double fwd = std::max(st.forward_s, gather) + first_gather;
  const double bwd = std::max(st.backward_s, gather + reduce) + last_reduce;
  st.sharded_comm_s = (fwd - compute_f) + (bwd - compute_b);
  st.forward_s = fwd;
  st.backward_s = bwd;
}

void add_offload_fetch(NativeStage& st, const DesignPoint& p, const PointConstants& k,
                       const NativeGpu& gpu, const StageParams& params) {
  if (p.offload != Offload::optimizer_params) return;
  const double fetch = params.zero_shard(k.elem_bytes) / gpu.host_link_bytes_per_s;
  st.forward_s = std::max(st.forward_s, fetch);
  st.backward_s = std::max(st.backward_s, fetch);
}

double send_s(const NativeContext& ctx, const DesignPoint& p, const PointConstants& k,
              const NativePlacement& where, int j) {
  if (j + 1 >= p.pp) return 0.0;
  const NativeGpu& gpu = ctx.gpus[static_cast<std::size_t>(where.stage_gpu[static_cast<std::size_t>(j)])];
  const NativeGpu& next =
      ctx.gpus[static_cast<std::size_t>(where.stage_gpu[static_cast<std::size_t>(j + 1)])];
  const double s = static_cast<double>(ctx.model.sequence_length) / p.cp; // this rank's tokens
  const double h = static_cast<double>(ctx.model.hidden_size);
  const double bytes = k.elem_bytes * s * p.mbs * h / p.tp; // scatter-gather over tp
  const double bw = pipeline_send_bytes_per_s(ctx, p, j, where, gpu, next);
  // The attention mask Megatron-LM v1.1.5's GPT2ModelPipe sends with each activation under
  // DeepSpeed's pipeline engine (pipe_mask_send_bytes): a message of its own one way only,
  // so half of it on the figure charged for each direction (the schedules charge send_s twice
  // per micro-batch and boundary).
  const double send = kAlpha_s + bytes / bw;
  if (ctx.settings.layer_impl != LayerImpl::megatron_unfused) return send;
  const double mask = pipe_mask_send_bytes(ctx.settings.layer_impl,
                                           static_cast<double>(ctx.model.sequence_length));
  return send + 0.5 * (kAlpha_s + mask / bw);
}

DpSync dp_sync(const NativeContext& ctx, const DesignPoint& p, const PointConstants& k,
               const NativeGpu& gpu, const StageParams& params, double backward_s) {
  DpSync out;
  const StageShards& shards = params.shards;
  const double d = params.d, edp = params.edp;
  if (shards_parameters(p.method) || !(d > 1 || (shards.expert > 0 && edp > 1))) return out;
  const FrameworkParams& fw = k.fw;
  const double wb = k.elem_bytes;
  const auto reduce = [&](const DpGroup& grp, double params_local) {
    if (fw.fp32_grad_accumulation) {
      // DeepSpeed's BF16_Optimizer all-reduces every gradient (its fp32 buffers cast to the
      // communication dtype, bf16 unless fp32_allreduce: engine.py allreduce_bucket), then
      // all-gathers the updated bf16 partitions (bf16_optimizer.py step, all_gather_dp_groups).
      return dp_allreduce_s(grp, fw.grad_reduce_bytes * params_local) +
             dp_half_s(grp, wb * params_local);
    }
    if (fw.shard_level >= 1) { // reduce-scatter, then all-gather the updated parameters
      return dp_half_s(grp, fw.grad_reduce_bytes * params_local) + dp_half_s(grp, wb * params_local);
    }
    return dp_allreduce_s(grp, fw.grad_reduce_bytes * params_local);
  };
  double sync = d > 1 ? reduce(dp_group(ctx, p, gpu), shards.dense) : 0.0;
  if (shards.expert > 0 && edp > 1) {
    out.expert_s = reduce(spaced_group(ctx, static_cast<int>(edp), p.ep * p.etp, gpu, world_size(p)),
                          shards.expert);
    sync += out.expert_s;
  }
  const std::optional<bool>& overlap = ctx.settings.overlap_grad_reduce;
  const double hidden = overlap ? (*overlap ? 1.0 : 0.0) : fw.dp_overlap;
  out.sync_s = std::max(0.0, sync - hidden * backward_s);
  return out;
}

ModelStates model_states(const NativeContext& ctx, const DesignPoint& p, const PointConstants& k,
                         const NativeGpu& gpu, const StageParams& params) {
  const FrameworkParams& fw = k.fw;
  const double wb = k.elem_bytes;
  const double largest_layer_params = k.entries.layer;
  // Bytes of `bytes_per_param` of the layers being computed (current and prefetched), gathered
  // on one GPU: the dense part / tp and, with expert parallelism, the routed experts / (ep x
  // etp).
  const auto gathered_layers = [&](double bytes_per_param) {
    if (ctx.model.is_moe() && p.ep * p.etp != p.tp) {
      const double experts = static_cast<double>(expert_parameters(ctx.model));
      return 2.0 * bytes_per_param *
             ((largest_layer_params - experts) / p.tp + experts / (p.ep * p.etp));
    }
    return 2.0 * bytes_per_param * largest_layer_params / p.tp;
  };
  const bool mixed = wb < 4.0;
  const double local = params.local;
  const auto zero_shard = [&](double bytes) { return params.zero_shard(bytes); };
  const bool opt_sharded = fw.shard_level >= 1;
  const bool grad_sharded = fw.shard_level >= 2;
  // The master copy (fp32, 16-bit or none: --master_weights) and Adam's m and v.
  const double opt_bytes = k.opt.total();
  ModelStates ms;
  if (fw.fp32_sharded_params) {
    // FSDP2's sharded parameters are the master: fp32, or the training dtype in pure 16-bit
    // training (torchtitan's training.dtype bfloat16); its gradient shards take their dtype.
    ms.weights = zero_shard(k.opt.master > 0.0 ? k.opt.master : wb);
    ms.gradients = zero_shard(fw.grad_bytes);
    ms.optimizer = zero_shard(k.opt.moments);
    if (keeps_unsharded(p, k, params)) {
      // the gathered training-dtype parameters and the unsharded gradient accumulators
      ms.weights += wb * local;
      ms.gradients += fw.grad_reduce_bytes * local;
    } else {
      // bf16 copies of the layers being computed (current and prefetched), and the root
      // module's parameters (embedding, final norm, output projection: torchtitan's
      // apply_fsdp wraps each block, then the model): FSDP2 does not reshard the root after
      // forward ("For the root, do not reshard after forward", FSDPState._lazy_init in
      // torch/distributed/_composable/fsdp/_fsdp_state.py), so they stay gathered from its
      // forward to the end of its backward, across the peak at the loss.
      ms.buffers = (mixed ? gathered_layers(wb) + wb * params.root / p.tp : 0.0);
    }
  } else {
    ms.weights = shards_parameters(p.method) ? zero_shard(wb) : wb * local;
    ms.gradients = (grad_sharded ? zero_shard(fw.grad_bytes) : fw.grad_bytes * local);
    // BF16_Optimizer: the bf16 .grad tensors beside the fp32 buffers (grad_bytes 4), alive
    // from a backward to the next one's clear_lp_grads.
    if (fw.fp32_grad_accumulation) ms.gradients += wb * local;
    ms.optimizer = opt_sharded ? zero_shard(opt_bytes) : opt_bytes * local;
    if (shards_parameters(p.method)) {
      ms.buffers = gathered_layers(wb);
    }
  }
  if (p.offload != Offload::none) {
    // ZeRO-Offload: the master copy, Adam states and gradients (fp32, or 16-bit with
    // --master_weights off) live in host memory; the GPU keeps the training-dtype gradients
    // (partitioned from ZeRO-2 on).
    ms.host_bytes += zero_shard(opt_bytes + k.opt.host_gradient);
    ms.optimizer = 0.0;
    ms.gradients = (grad_sharded ? zero_shard(wb) : wb * local);
    if (p.offload == Offload::optimizer_params) {
      ms.host_bytes += zero_shard(wb);
      ms.weights = 0.0;
    }
    // per step: gradients to the host, updated parameters back, CPU-Adam in between
    ms.offload_s += zero_shard(wb + wb) / gpu.host_link_bytes_per_s +
                    zero_shard(1.0) / ctx.settings.host_adam_params_per_s;
  }
  return ms;
}

int interleaved_held_forwards(int pp, int v, int m, int j) noexcept {
  // Megatron-Core's get_pp_rank_microbatches (megatron/core/pipeline_parallel/schedules.py,
  // NVIDIA/Megatron-LM@d98e8a6): (pp - j - 1) 2 + (v - 1) pp chunk forwards of warm-up
  // (microbatch_group_size_per_vp_stage = pp), all m v of them when that is as many (the
  // older "m == pp: all in warm-up" rule went with 4295be1a6c, 2024-11); then the steady
  // phase's first forward runs before the first backward frees one, and each later forward
  // follows a backward. torch.distributed.pipelining's ScheduleInterleaved1F1B warms up as many.
  const int warm = interleaved_warmup_forwards(pp, v, m, j);
  return warm >= m * v ? warm : warm + 1;
}

int interleaved_first_chunk_held(int pp, int m) noexcept {
  // Rank 0's order as interleaved_order walks it: forward k is chunk (k mod pp v) / pp, so its
  // (v - 1) pp + 2 (pp - 1) warm-up forwards hold pp + pp - 2 of the first chunk; the first two
  // steady forwards (pp v + pp - 2 and pp v + pp - 1, m >= 2 pp) are of the first chunk too,
  // while the backwards between them are of the last chunk: 2 pp. Later steady steps trade a
  // first-chunk backward for a later chunk's forward. With m = pp every forward warms up: pp
  // of the first chunk, all of them.
  return m <= pp ? m : 2 * pp;
}

double in_flight(const DesignPoint& p, int j, bool split, double split_in_flight) noexcept {
  const int pp = p.pp;
  const int v = p.virtual_stages;
  const double mb = p.num_micro_batches;
  const bool all = info(p.schedule).in_flight == InFlight::all;
  if (v > 1 && !all && !split) {
    // Interleaved 1F1B (v > 1 needs pp > 1): rank j's chunk forwards held at its peak
    // (docs/native.md §3), each 1/v of the stage's layers.
    return static_cast<double>(interleaved_held_forwards(pp, v, p.num_micro_batches, j)) / v;
  }
  return all ? mb : split ? split_in_flight : pp > 1 ? std::min<double>(pp - j, mb) : 1.0;
}

LayerActivations layer_activations(const NativeContext& ctx, const DesignPoint& p) {
  const ModelSpec& m = ctx.model;
  LayerActivations a;
  a.layer = layer_activation_bytes(m, p, ctx.settings);
  DesignPoint q = p;
  q.recompute = Recompute::none;
  a.full_layer = layer_activation_bytes(m, q, ctx.settings);
  // Only the split schedules defer weight passes.
  a.weight_pass = is_split_schedule(p.schedule) ? layer_weight_pass_bytes(m, p, ctx.settings) : 0.0;
  a.dense_layer =
      m.first_k_dense_layers > 0 ? layer_activation_bytes(dense_variant(m), p, ctx.settings) : a.layer;
  return a;
}

LayoutHeld layout_held(const NativeContext& ctx, const DesignPoint& p, const PointConstants& k,
                       int j) {
  const ModelSpec& m = ctx.model;
  const PipelineLayout& layout = *ctx.settings.pipeline_layout;
  const LayerActivations& act = k.act;
  const int v = p.virtual_stages;
  const auto vu = static_cast<std::size_t>(v);
  // One micro-batch's embedding output, as add_activations counts it.
  const double s = static_cast<double>(m.sequence_length) / p.cp;
  const double h = static_cast<double>(m.hidden_size);
  const double sp = ctx.settings.sequence_parallel && p.tp > 1 ? p.tp : 1.0;
  const double embedding = k.elem_bytes * s * p.mbs * h / sp;
  std::vector<double> layer_bytes(vu, 0.0), bytes(vu, 0.0);
  std::size_t embedding_chunk = vu;
  for (std::size_t c = 0; c < vu; ++c) {
    const StageEntries e = layout_chunk_entries(m, layout.at(p.pp, j, static_cast<int>(c)));
    layer_bytes[c] = e.dense > 0 ? e.main * act.layer + e.dense * act.dense_layer
                                 : e.layers * act.layer;
    bytes[c] = layer_bytes[c] + (e.embedding ? embedding : 0.0);
    if (e.embedding) embedding_chunk = c;
  }
  const std::vector<int> held = interleaved_held_peak(p.pp, v, p.num_micro_batches, j, bytes);
  LayoutHeld out;
  double held_bytes = 0.0, stage_bytes = 0.0;
  int forwards = 0;
  for (std::size_t c = 0; c < vu; ++c) {
    out.layers_bytes += held[c] * layer_bytes[c];
    held_bytes += held[c] * bytes[c];
    stage_bytes += bytes[c];
    forwards += held[c];
  }
  out.embedding_held = embedding_chunk < vu ? held[embedding_chunk] : 0.0;
  out.in_flight = stage_bytes > 0.0 ? held_bytes / stage_bytes : static_cast<double>(forwards) / v;
  return out;
}

void add_activations(NativeMemory& mem, const NativeContext& ctx, const DesignPoint& p,
                     const PointConstants& k, const StageEntries& e, double held,
                     const LayoutHeld* layout) {
  const ModelSpec& m = ctx.model;
  const LayerActivations& act = k.act;
  const double wb = k.elem_bytes;
  mem.activations = layout != nullptr ? layout->layers_bytes
                    : e.dense > 0     ? held * (e.main * act.layer + e.dense * act.dense_layer)
                                      : held * e.layers * act.layer;
  if (e.moe > 0) {
    // The all-to-all's send and receive buffers of the layer being computed (the permuted
    // tokens and the combine's output), on the busiest rank.
    mem.buffers += 2.0 * dispatch_bytes(m, p, wb, effective_moe_imbalance(m, ctx.settings.moe_imbalance));
  }
  double logits_bytes = 0.0;
  if (e.head || e.mtp > 0) {
    // The logits and their gradient of the loss and of each MTP layer's loss (--pipeline_layout).
    const double V = static_cast<double>(m.vocab_size);
    logits_bytes = ((e.head ? 1.0 : 0.0) + e.mtp) * static_cast<double>(m.sequence_length) /
                   p.cp * p.mbs * V / p.tp * loss_bytes_per_logit(k.fw, ctx.settings, wb, p.tp);
  }
  // With full recompute, the layer being recomputed. On the stage with the loss, its working
  // set and the loss's tensors are not live together: the loss's backward and the LM head's
  // free the logits' tensors before the last layer's checkpoint is recomputed in its backward
  // (torch.utils.checkpoint and Megatron-LM's CheckpointFunction recompute when the layer's
  // backward starts), so only the larger of the two counts.
  const bool recomputed = p.recompute == Recompute::full && e.layers > 0;
  if (recomputed && act.full_layer > logits_bytes) {
    mem.activations += act.full_layer;
  }
  const double s = static_cast<double>(m.sequence_length) / p.cp; // this rank's tokens
  const double h = static_cast<double>(m.hidden_size);
  if (e.embedding) {
    const double sp = ctx.settings.sequence_parallel && p.tp > 1 ? p.tp : 1.0;
    // embedding output
    mem.buffers += (layout != nullptr ? layout->embedding_held : held) * wb * s * p.mbs * h / sp;
  }
  if ((e.head || e.mtp > 0) && !(recomputed && act.full_layer > logits_bytes)) {
    mem.buffers += logits_bytes;
  }
}

void to_gib(NativeMemory& mem, double overhead_gib) noexcept {
  mem.weights /= kGiB;
  mem.gradients /= kGiB;
  mem.optimizer /= kGiB;
  mem.activations /= kGiB;
  mem.buffers /= kGiB;
  mem.overhead = overhead_gib;
}

bool deepspeed_fp16_optimizer(const DesignPoint& p, const PointConstants& k) noexcept {
  return p.method == DpMethod::zero0 && p.dtype == Dtype::fp16 && k.opt.master == 4.0 &&
         p.offload == Offload::none;
}

double optimizer_step_s(const DesignPoint& p, const PointConstants& k, const NativeGpu& gpu,
                        const StageParams& params, int layers) {
  if (p.offload != Offload::none) return 0.0;
  const FrameworkParams& fw = k.fw;
  const double wb = k.elem_bytes;
  const double updated = fw.shard_level >= 1 ? params.zero_shard(1.0) : params.local;
  const double tensors = stage_tensors(k, layers);
  const double bw = gpu.spec.memory_GBps * 1e9 * gpu.calibration.memory_efficiency;
  if (k.layer_impl == LayerImpl::hf_gpt2_amp && fw.shard_level == 0) {
    // The fp32 module under autocast, stepped tensor by tensor (kAmpEagerAdamBytes) with one
    // launch per op and tensor.
    return std::max(updated * kAmpEagerAdamBytes / bw,
                    tensors * kAmpEagerAdamOps * kHostPerKernel_s);
  }
  // Megatron-LM's fp16 step with loss scaling and fp32 master weights moves more than the
  // states themselves: its local DDP's passes over the gradients, the cast to fp32 gradients,
  // the unscale, the norm and the copy back (megatron_fp16_step_bytes).
  // (fp16_grads_in_fp16 marks Megatron-LM's DDP, the one method with its fp16 path.)
  const bool megatron_fp16 = p.dtype == Dtype::fp16 && k.opt.master > 0.0 &&
                             fw.fp16_grads_in_fp16 &&
                             k.layer_impl != LayerImpl::hf_gpt2 &&
                             k.layer_impl != LayerImpl::hf_gpt2_amp;
  const double step_bytes = megatron_fp16 ? megatron_fp16_step_bytes(fw.grad_bytes, wb)
                                          : optimizer_step_bytes(fw.grad_bytes, wb, k.opt);
  const double bytes = updated * step_bytes +
                       (fw.fp32_grad_accumulation
                            ? params.local * bf16_optimizer_step_bytes(fw.grad_reduce_bytes)
                            : 0.0);
  const double memory_s = bytes / bw;
  // The host issues the multi-tensor launches over the stage's parameter tensors (the GEMM
  // weights, norms and biases of each layer, the embedding and LM head).
  const double launches = optimizer_launches(updated, tensors);
  if (deepspeed_fp16_optimizer(p, k)) {
    // FP16_Optimizer.step: the serial overflow check, then the fp32 copies, norm and unscale
    // around the fused Adam, with a cast and a copy-back launched per tensor.
    return fp16_overflow_check_s(gpu, updated, tensors) +
           std::max(memory_s + updated * kFp16OptimizerStepBytes / bw,
                    (launches + 2.0 * tensors) * kHostPerKernel_s);
  }
  return std::max(memory_s, launches * kHostPerKernel_s);
}

double fp16_overflow_check_s(const NativeGpu& gpu, double params, double tensors) noexcept {
  const double bw = gpu.spec.memory_GBps * 1e9 * gpu.calibration.memory_efficiency;
  return tensors * (3.0 * kHostPerKernel_s + kHostSync_s) + params * kFp16OverflowCheckBytes / bw;
}

double one_f_one_b_s(const std::vector<NativeStage>& stages, int v, double mb) noexcept {
  double sum_t = 0.0, max_t = 0.0, sum_send = 0.0, max_send = 0.0;
  const int pp = static_cast<int>(stages.size());
  for (int j = 0; j < pp; ++j) {
    const NativeStage& st = stages[static_cast<std::size_t>(j)];
    double t = st.forward_s + st.backward_s;
    if (st.moe_a2a_overlap_s > 0.0) {
      // EP all-to-all overlap (docs/moe.md §3.1): each combined pair of the rank's m v
      // chunk passes hides 1/v of the stage's per-micro-batch figure.
      const int m = static_cast<int>(mb);
      t -= st.moe_a2a_overlap_s * moe_a2a_overlap_pairs(pp, j, v, m) / (v * mb);
    }
    sum_t += t;
    max_t = std::max(max_t, t);
    sum_send += st.send_s;
    max_send = std::max(max_send, st.send_s);
  }
  return mb * max_t + (sum_t - max_t) / v + 2.0 * sum_send +
         (stages.size() > 1 ? 2.0 * v * (mb - 1) * max_send : 0.0);
}

TeraPipeRun terapipe_run(const NativeContext& ctx, const DesignPoint& p, const NativeEstimate& est) {
  const TokenPipeline pipe = native_token_pipeline(ctx, p, est);
  std::size_t slowest = 0;
  for (std::size_t j = 0; j < est.stages.size(); ++j) {
    const NativeStage& a = est.stages[j];
    const NativeStage& b = est.stages[slowest];
    if (a.forward_s + a.backward_s > b.forward_s + b.backward_s) slowest = j;
  }
  const std::int64_t seq = ctx.model.sequence_length;
  TeraPipeRun run;
  run.slices = optimal_slicing(pipe.stages[slowest], p.pp, p.num_micro_batches, seq,
                               terapipe_quantum(seq));
  run.pipeline_s = simulate_token_pipeline(pipe, run.slices);
  return run;
}

double embedding_sync_s(const NativeContext& ctx, const DesignPoint& p, const PointConstants& k,
                        const NativePlacement& where) {
  const ModelSpec& m = ctx.model;
  if (!m.tied_embeddings || p.pp <= 1) return 0.0;
  // Over the network when the first and last stage are on different nodes.
  const FrameworkParams& fw = k.fw;
  const NativeGpu& gpu = ctx.gpus[static_cast<std::size_t>(where.stage_gpu.front())];
  // The tied copies' gradients are all-reduced as the framework keeps them (`grad_bytes`), not
  // in the data-parallel reduction's dtype: DeepSpeed's PipelineModule.allreduce_tied_weight_
  // gradients runs dist.all_reduce(weight.grad) on the 16-bit .grad (its fp32_allreduce applies
  // only to the engine's data-parallel buckets, engine.py allreduce_bucket); Megatron-LM's
  // _allreduce_word_embedding_grads reduces weight.main_grad.
  const double bytes = fw.grad_bytes * static_cast<double>(m.vocab_size) *
                       static_cast<double>(m.hidden_size) / p.tp;
  const NetworkTiers tiers = network_tiers(gpu.spec, ctx.gpus_per_node);
  const bool one_domain = tiers.multi_node_domain() &&
                          where.stage_gpu.front() == where.stage_gpu.back() &&
                          !crosses_domain(0, world_size(p) - 1, tiers.domain_gpus);
  // Across the network, at the slower of the two ends' networks, each shared by the first
  // (last) stage's GPUs on the node, which sync their own copies at once.
  const long long per_stage = static_cast<long long>(p.tp) * p.cp * p.dp;
  const double bw =
      one_domain ? 0.8 * gpu.spec.intra_node.GBps_per_dir * 1e9
                 : std::min(nic_share_bytes_per_s(ctx, ctx.gpus[static_cast<std::size_t>(where.net_gpu(0))], per_stage),
                            nic_share_bytes_per_s(ctx, ctx.gpus[static_cast<std::size_t>(where.net_gpu(p.pp - 1))], per_stage));
  return ring_allreduce_s(bytes, 2, bw, nccl_latency(Transport::net));
}

NativeEstimate with_totals(NativeEstimate out, const NativeContext& ctx, const DesignPoint& p) {
  double host_per_gpu = 0.0;
  for (std::size_t j = 0; j < out.stages.size(); ++j) {
    const NativeStage& st = out.stages[j];
    out.dp_sync_s = std::max(out.dp_sync_s, st.dp_sync_s);
    out.optimizer_s = std::max(out.optimizer_s, st.optimizer_s);
    out.offload_s = std::max(out.offload_s, st.offload_s);
    host_per_gpu = std::max(host_per_gpu, st.host_gib);
    const double total = st.memory.total();
    if (total > out.peak_memory_gib) {
      out.peak_memory_gib = total;
      out.peak_stage = static_cast<int>(j);
    }
    out.oom = out.oom || !st.fits();
  }
  out.host_gib_per_node = host_per_gpu * ctx.gpus_per_node;
  if (p.offload != Offload::none) {
    double host_limit = ctx.settings.host_memory_gib;
    if (host_limit <= 0.0) {
      double least = 0.0;
      for (const NativeStage& st : out.stages) {
        const double node = 2.0 * st.memory_limit_gib * ctx.gpus_per_node;
        least = least == 0.0 ? node : std::min(least, node);
      }
      host_limit = least;
    }
    out.host_oom = out.host_gib_per_node > host_limit;
    out.oom = out.oom || out.host_oom;
  }
  out.step_s = out.pipeline_s + out.dp_sync_s + out.embedding_sync_s + out.optimizer_s +
               out.offload_s;
  return out;
}

} // namespace native_steps

namespace {

/// What stage j of `p` computes that depends on j only through its GPU type and its entries
/// (StageKey): native_estimate's per-stage steps in order (docs/native.md §7), all but the
/// send to the next stage and the activations in flight (stage_finish). `st` is
/// default-constructed.
void stage_core_on(NativeStage& st, const NativeContext& ctx, const DesignPoint& p,
                   const native_steps::StageEntries& e, int gpu_index, const NativeGpu& gpu,
                   StageLayerTimes& times, const native_steps::PointConstants& k) {
  using namespace native_steps;
  const ModelSpec& m = ctx.model;
  st.gpu = gpu_index;
  st.layers = e.layers + (e.embedding ? 1 : 0) + (e.head ? 1 : 0); // partition[j]
  st.memory_limit_gib = gpu.memory_gib;
  st.moe_layers = e.moe;

  const AnalyticLayerTimes& t = times(st.gpu);
  set_compute(st, m, p, k, e, t, e.dense > 0 ? times.dense(st.gpu) : t);
  add_moe_comm(st, ctx, p, k, gpu, t, e.moe);
  add_cp_exchange(st, ctx, p, k, gpu, t, e.layers);
  if (ctx.settings.moe_a2a_overlap && e.moe > 0 && moe_a2a_overlap_runs(m, p)) {
    // The compute beside the all-to-all: the passes less their collectives (tp, the MoE
    // layers' dispatch and combine, which replace their MLP's tp collective, and cp).
    const double tp_layers = e.layers - e.moe / 2.0;
    const double a2a_f = st.moe_comm_forward_s;
    const double a2a_b = st.moe_comm_s - st.moe_comm_forward_s;
    const double f_compute = st.forward_s - tp_layers * t.tp_comm_forward_s - a2a_f -
                             st.cp_comm_forward_s;
    const double b_compute = st.backward_s - tp_layers * t.tp_comm_backward_s - a2a_b -
                             (st.cp_comm_s - st.cp_comm_forward_s);
    st.moe_a2a_overlap_s = moe_a2a_hidden_s(a2a_f, a2a_b, f_compute, b_compute);
  }

  const StageParams params = stage_params(m, p, k, e);
  st.grad_accumulation_s =
      grad_accumulation_s(p, k, gpu, params.local, e.layers);
  st.backward_s += st.grad_accumulation_s;
  st.weight_s += st.grad_accumulation_s; // adds the weight gradient into .grad
  add_sharded_comm(st, ctx, p, k, gpu, params, e);
  add_offload_fetch(st, p, k, gpu, params);
  if (!shards_parameters(p.method)) {
    const DpSync sync = dp_sync(ctx, p, k, gpu, params, st.backward_s);
    st.dp_sync_s = sync.sync_s;
    st.expert_dp_sync_s = sync.expert_s;
  }

  const ModelStates states = model_states(ctx, p, k, gpu, params);
  st.memory.weights = states.weights;
  st.memory.gradients = states.gradients;
  st.memory.optimizer = states.optimizer;
  st.memory.buffers += states.buffers;
  st.offload_s = states.offload_s;
  st.host_gib = states.host_bytes / kGiB;
  st.optimizer_s = optimizer_step_s(p, k, gpu, params, e.layers);
}

/// stage_core_on for stage GPU type `gpu_index` whose collectives cross the network of node
/// type `net_index`: a stage spanning node types runs on its slowest GPU and crosses its nodes
/// at the slowest of their networks. Inlined into estimate_stage's two copies, as it was into
/// its one.
[[gnu::always_inline]] inline void stage_core(NativeStage& st, const NativeContext& ctx, const DesignPoint& p,
                const native_steps::StageEntries& e, int gpu_index, int net_index,
                StageLayerTimes& times, const native_steps::PointConstants& k) {
  const NativeGpu& gpu = ctx.gpus[static_cast<std::size_t>(gpu_index)];
  if (net_index == gpu_index) {
    stage_core_on(st, ctx, p, e, gpu_index, gpu, times, k);
    return;
  }
  NativeGpu spanning = gpu;
  spanning.inter_node_bytes_per_s =
      ctx.gpus[static_cast<std::size_t>(net_index)].inter_node_bytes_per_s;
  stage_core_on(st, ctx, p, e, gpu_index, spanning, times, k);
}

/// The memory of stage j (after stage_core and its send): the micro-batches in flight, the
/// activations they hold, the memory in GiB.
namespace {

/// stage_memory's last steps: the activations of `held` micro-batches (a layout's as `layout`
/// holds them) added to `mem`, then bytes to GiB with the framework overhead.
[[gnu::always_inline]] inline void finish_memory(NativeMemory& mem, const NativeContext& ctx,
                                                 const DesignPoint& p,
                                                 const native_steps::PointConstants& k,
                                                 const native_steps::StageEntries& e, double held,
                                                 const native_steps::LayoutHeld* layout = nullptr) {
  native_steps::add_activations(mem, ctx, p, k, e, held, layout);
  native_steps::to_gib(mem, ctx.settings.framework_overhead_gib);
}

/// in_flight(p, j, true, split_in_flight(shape, j, act)) for a split plan of one virtual
/// stage: the micro-batches where its schedule holds all of them, else the split figure.
[[gnu::always_inline]] inline double split_plan_in_flight(
    const DesignPoint& p, const PipeShape& shape, std::size_t j,
    const native_steps::LayerActivations& act) {
  return info(p.schedule).in_flight == InFlight::all
             ? static_cast<double>(p.num_micro_batches)
             : split_in_flight_inline(shape, j, act);
}

} // namespace

void stage_memory(NativeStage& st, const NativeContext& ctx, const DesignPoint& p,
                  const PipeShape& shape, const native_steps::PointConstants& k,
                  const native_steps::StageEntries& e, int j) {
  using namespace native_steps;
  const auto ju = static_cast<std::size_t>(j);
  if (p.virtual_stages > 1) {
    if (ctx.settings.pipeline_layout != nullptr) {
      // A layout's chunks, each held as Megatron-Core's interleaved order holds it (§2.6).
      const LayoutHeld held = layout_held(ctx, p, k, j);
      st.in_flight = held.in_flight;
      finish_memory(st.memory, ctx, p, k, e, st.in_flight, &held);
      return;
    }
    if (e.embedding && info(p.schedule).in_flight != InFlight::all) {
      // Interleaved 1F1B's first rank: its layers as in_flight counts them, the embedding's
      // output held by its first chunk's forwards only (§3).
      st.in_flight = in_flight(p, j, false, 0.0);
      const LayerActivations& act = k.act;
      LayoutHeld held;
      held.layers_bytes = st.in_flight * (e.dense > 0 ? e.main * act.layer + e.dense * act.dense_layer
                                                      : e.layers * act.layer);
      held.embedding_held = interleaved_first_chunk_held(p.pp, p.num_micro_batches);
      held.in_flight = st.in_flight;
      finish_memory(st.memory, ctx, p, k, e, st.in_flight, &held);
      return;
    }
  }
  st.in_flight =
      in_flight(p, j, shape.split, shape.split ? split_in_flight(shape, ju, k.act) : 0.0);
  finish_memory(st.memory, ctx, p, k, e, st.in_flight);
}

/// Whether stage `core` fits with stage_memory's memory for a plan of one virtual stage whose
/// in-flight figure `in_flight` the caller has just computed (the same expression): its last
/// steps on a copy of the core's memory only (bounded_split_stages reads nothing else of it).
bool fits_in_flight(const NativeStage& core, const NativeContext& ctx, const DesignPoint& p,
                    const native_steps::PointConstants& k, const native_steps::StageEntries& e,
                    double in_flight) {
  NativeMemory mem = core.memory;
  finish_memory(mem, ctx, p, k, e, in_flight);
  return mem.total() <= core.memory_limit_gib;
}

/// What stage_core's result depends on: the stage's GPU type, the node type whose network
/// its collectives cross, and its entries.
struct StageKey {
  int gpu = 0;
  int net = 0;
  native_steps::StageEntries e;
  [[nodiscard]] bool operator==(const StageKey& o) const noexcept {
    return gpu == o.gpu && net == o.net && e.embedding == o.e.embedding && e.head == o.e.head &&
           e.layers == o.e.layers && e.moe == o.e.moe && e.main == o.e.main &&
           e.dense == o.e.dense && e.mtp == o.e.mtp;
  }
};

/// Stage j of `p` into `st` (default-constructed): native_estimate's per-stage steps in order
/// (docs/native.md §7). Most stages of a pipeline are alike (the same GPU type and entries:
/// all but the first and the last of an even split), so stage_core runs once per distinct
/// StageKey of the point, remembered in `seen` (a few entries), and its result is copied: the
/// same operations on the same inputs, the same bits.
struct SeenStages {
  static constexpr std::size_t kMax = 12;
  /// Left uninitialised until written (a NativeStage is trivially copyable): zeroing eight
  /// stages per point would cost more than the copies it serves.
  union Slot {
    NativeStage st;
    Slot() noexcept {}
  };
  static_assert(std::is_trivially_copyable_v<NativeStage> &&
                std::is_trivially_destructible_v<NativeStage>);
  std::array<StageKey, kMax> key;
  std::array<Slot, kMax> core;
  std::size_t n = 0;
  /// The slot the last stage matched: the stages of a pipeline come in runs of alike ones, so
  /// it is looked at first (keys are distinct: any match is the same slot).
  std::size_t last = 0;
  /// The slot holding `key`, or n where none does (the last match looked at first).
  [[gnu::always_inline]] std::size_t find(const StageKey& k) noexcept {
    std::size_t i = last;
    if (!(i < n && key[i] == k)) {
      i = 0;
      while (i < n && !(key[i] == k)) ++i;
    }
    if (i < n) last = i;
    return i;
  }
};
/// Stage j's key: its GPU, its network and its entries (the pipeline layout's, or the
/// partition's with the embedding and LM head where the schedule's shape puts them: the
/// first and the last rank, but the first holds both in a V (zbv, dualpipev) and both end
/// ranks hold both in DualPipe).
[[gnu::always_inline]] inline StageKey stage_key(const NativeContext& ctx, const DesignPoint& p,
                                                 const NativePlacement& where,
                                                 const std::vector<int>& partition,
                                                 const PipeShape& shape, int j) {
  const auto ju = static_cast<std::size_t>(j);
  using namespace native_steps;
  const PipelineLayout* layout = ctx.settings.pipeline_layout.get();
  return StageKey{where.stage_gpu[ju], where.net_gpu(j),
                  layout != nullptr ? layout_stage_entries(ctx.model, *layout, p.pp, j)
                                    : stage_entries(ctx.model, p, partition, j,
                                                    shape.holds_embedding(j), shape.holds_head(j))};
}
/// Appends stage j to `stages` and returns its entries; with `memory`, its memory too
/// (stage_memory), else all but it. Inlined into estimate_with and bounded_split_stages (a
/// call per stage costs the default list about 3 %).
[[gnu::always_inline]] inline native_steps::StageEntries estimate_stage(
    std::vector<NativeStage>& stages, const NativeContext& ctx, const DesignPoint& p,
    const NativePlacement& where, const std::vector<int>& partition, const PipeShape& shape,
    StageLayerTimes& times, const native_steps::PointConstants& k, SeenStages& seen, int j,
    const double* sends, bool memory) {
  using namespace native_steps;
  const auto ju = static_cast<std::size_t>(j);
  const StageKey key = stage_key(ctx, p, where, partition, shape, j);
  const std::size_t i = seen.find(key);
  if (i < seen.n) {
    stages.push_back(seen.core[i].st);
  } else {
    NativeStage& st = stages.emplace_back();
    stage_core(st, ctx, p, key.e, key.gpu, key.net, times, k);
    if (seen.n < SeenStages::kMax) {
      seen.key[seen.n] = key;
      seen.core[seen.n].st = st;
      ++seen.n;
    }
  }
  stages.back().send_s = sends != nullptr ? sends[ju] : send_s(ctx, p, k, where, j);
  if (memory) stage_memory(stages.back(), ctx, p, shape, k, key.e, j);
  return key.e;
}

} // namespace

namespace {

/// Per-chunk times of a --pipeline_layout's interleaved 1F1B (docs/native.md §2.5): each rank's
/// forward and backward (est.stages, everything its chunks run per micro-batch) split over its
/// chunks in proportion to each chunk's own compute, all-to-all and context-parallel exchange
/// (set_compute, add_moe_comm, add_cp_exchange on the chunk's entries), so that a rank's
/// chunks add up to its stage; the EP all-to-all overlap a steady pair hides, split by the
/// chunk's share of the rank's MoE layers; the sends of the stages, the last rank's back to
/// the first at the slowest boundary's time.
InterleavedTimes layout_chunk_times(const NativeContext& ctx, const DesignPoint& p,
                                    const NativePlacement& where, const NativeEstimate& est,
                                    StageLayerTimes& times, const native_steps::PointConstants& k) {
  using namespace native_steps;
  const PipelineLayout& layout = *ctx.settings.pipeline_layout;
  const int pp = p.pp;
  const int v = p.virtual_stages;
  InterleavedTimes out;
  out.pp = pp;
  out.virtual_stages = v;
  const auto n = static_cast<std::size_t>(pp * v);
  out.forward_s.assign(n, 0.0);
  out.backward_s.assign(n, 0.0);
  out.pair_hidden_s.assign(n, 0.0);
  out.a2a_forward_s.assign(n, 0.0);
  out.a2a_backward_s.assign(n, 0.0);
  out.cp_forward_s.assign(n, 0.0);
  out.cp_backward_s.assign(n, 0.0);
  double slowest_send = 0.0;
  for (int r = 0; r < pp; ++r) {
    const NativeStage& st = est.stages[static_cast<std::size_t>(r)];
    const int g = where.stage_gpu[static_cast<std::size_t>(r)];
    const NativeGpu& gpu = ctx.gpus[static_cast<std::size_t>(g)];
    const AnalyticLayerTimes& t = times(g);
    std::vector<double> f(static_cast<std::size_t>(v)), b(static_cast<std::size_t>(v));
    std::vector<int> moe(static_cast<std::size_t>(v));
    double sum_f = 0.0, sum_b = 0.0;
    int sum_moe = 0;
    for (int c = 0; c < v; ++c) {
      const StageEntries e = layout_chunk_entries(ctx.model, layout.at(pp, r, c));
      NativeStage chunk;
      set_compute(chunk, ctx.model, p, k, e, t, e.dense > 0 ? times.dense(g) : t);
      add_moe_comm(chunk, ctx, p, k, gpu, t, e.moe);
      add_cp_exchange(chunk, ctx, p, k, gpu, t, e.layers);
      const auto cu = static_cast<std::size_t>(c);
      const std::size_t i = static_cast<std::size_t>(r * v + c);
      out.a2a_forward_s[i] = chunk.moe_comm_forward_s;
      out.a2a_backward_s[i] = chunk.moe_comm_s - chunk.moe_comm_forward_s;
      out.cp_forward_s[i] = chunk.cp_comm_forward_s;
      out.cp_backward_s[i] = chunk.cp_comm_s - chunk.cp_comm_forward_s;
      f[cu] = chunk.forward_s;
      b[cu] = chunk.backward_s;
      moe[cu] = e.moe;
      sum_f += f[cu];
      sum_b += b[cu];
      sum_moe += e.moe;
    }
    for (int c = 0; c < v; ++c) {
      const auto cu = static_cast<std::size_t>(c);
      const std::size_t i = static_cast<std::size_t>(r * v + c);
      out.forward_s[i] = sum_f > 0.0 ? st.forward_s * f[cu] / sum_f : st.forward_s / v;
      out.backward_s[i] = sum_b > 0.0 ? st.backward_s * b[cu] / sum_b : st.backward_s / v;
      out.pair_hidden_s[i] =
          sum_moe > 0 ? st.moe_a2a_overlap_s * moe[cu] / static_cast<double>(sum_moe) : 0.0;
    }
    out.link_s.push_back(st.send_s);
    slowest_send = std::max(slowest_send, st.send_s);
  }
  out.link_s.back() = slowest_send; // the last rank's send to the first (no stage's own)
  return out;
}

/// The stages a stage bound reads in bounded_split_stages, each stage's core looked up in the
/// configuration's distinct cores `seen` (stage_core where new) when first read: a plan that
/// the bound prunes at its first ranks and whose first stages do not fit reads no other. Each
/// core read raises `stop`'s data-parallel, optimizer and offload terms to it (the maxima
/// with_totals takes, over the stages read so far). `unseen` holds the cores `seen` has no
/// room for (reserved for every stage: stable addresses).
struct LazyCoreStages {
  const NativeContext& ctx;
  const DesignPoint& p;
  const NativePlacement& where;
  const std::vector<int>& partition;
  const PipeShape& shape;
  StageLayerTimes& times;
  SeenStages& seen;
  const native_steps::PointConstants& k;
  const NativeStage** cores;          // per stage, nullptr until read
  native_steps::StageEntries* entries; // per stage, set when its core is read
  std::vector<NativeStage>& unseen;
  LazySends& sends;
  BoundStop& stop;
  std::size_t n;
  [[nodiscard]] std::size_t size() const noexcept { return n; }
  [[nodiscard]] const NativeStage& at(std::size_t r) const {
    if (cores[r] == nullptr) look_up(r);
    return *cores[r];
  }
  [[nodiscard]] double send(std::size_t r) const { return sends.at(r); }
  void look_up(std::size_t r) const {
    // stage_key's, the shape a split one (its ranks' any_embedding and any_head read directly).
    const int j = static_cast<int>(r);
    const PipelineLayout* layout = ctx.settings.pipeline_layout.get();
    const StageKey key{where.stage_gpu[r], where.net_gpu(j),
                       layout != nullptr
                           ? native_steps::layout_stage_entries(ctx.model, *layout, p.pp, j)
                           : native_steps::stage_entries(ctx.model, p, partition, j,
                                                         shape.ranks[r].any_embedding,
                                                         shape.ranks[r].any_head)};
    const std::size_t i = seen.find(key);
    const NativeStage* core = nullptr;
    if (i < seen.n) {
      core = &seen.core[i].st;
    } else if (seen.n < SeenStages::kMax) {
      NativeStage& st = seen.core[seen.n].st;
      st = NativeStage{};
      stage_core(st, ctx, p, key.e, key.gpu, key.net, times, k);
      seen.key[seen.n] = key;
      ++seen.n;
      core = &st;
    } else {
      NativeStage& st = unseen.emplace_back();
      stage_core(st, ctx, p, key.e, key.gpu, key.net, times, k);
      core = &st;
    }
    cores[r] = core;
    entries[r] = key.e;
    stop.dp = std::max(stop.dp, core->dp_sync_s);
    stop.optimizer = std::max(stop.optimizer, core->optimizer_s);
    stop.offload = std::max(stop.offload, core->offload_s);
  }
};

/// native_estimate of `p` with `partition` given, on the layer times `times`, the stage
/// cores `seen` and the sends `sends` (per stage, or nullptr: computed here) of points that
/// differ from `p` at most in their schedule and virtual stages (stage_core and send_s depend
/// on neither: native_estimates shares them between such points).
/// estimate_with's stages of a split-schedule plan under pruning limits: the stages' times,
/// the stage bound (split_stage_bound) as the pipeline time, and their memory, only up to the
/// first stage that does not fit when that bound already puts the step time past both limits
/// (the plan is pruned whether it fits or not, and only whether it fits is needed; its
/// stages end at that one: the estimate is OOM and pruned, its stages unused). The bound
/// reads the stages' cores where `seen` holds them, uncopied. Kept out of estimate_with, whose other plans do not run it.
/// Returns true when that bound already prunes the plan: `out` is then pruned, OOM or not
/// (exact) with that step time, all that the search reads of it, its stages unused, and
/// with_totals and the pipeline are skipped.
[[gnu::noinline]] bool bounded_split_stages(NativeEstimate& out, const NativeContext& ctx,
                                            const DesignPoint& p, const NativePlacement& where,
                                            const PipeShape& shape, const NativePruning& prune,
                                            StageLayerTimes& times, SeenStages& seen,
                                            const native_steps::PointConstants& k,
                                            LazySends* sends) {
  using namespace native_steps;
  out.embedding_sync_s = embedding_sync_s(ctx, p, k, where);
  const auto P = static_cast<std::size_t>(p.pp);
  // Each stage's core (estimate_stage's lookup in `seen`, stage_core where new) by pointer,
  // looked up when first read (LazyCoreStages): the bound and the step time read the cores,
  // and a stage is copied into out.stages only when its memory is needed (for a plan pruned
  // and OOM, up to its first stage that does not fit).
  thread_local std::vector<StageEntries> entries;
  thread_local std::vector<const NativeStage*> cores;
  thread_local std::vector<NativeStage> unseen;
  thread_local std::vector<double> own_sends;
  thread_local std::vector<char> own_known;
  entries.resize(P);
  cores.assign(P, nullptr);
  unseen.clear();
  unseen.reserve(P);
  std::optional<LazySends> own;
  if (sends == nullptr) {
    own_sends.resize(P);
    own_known.assign(P, 0);
    own.emplace(LazySends{ctx, p, k, where, own_sends, own_known});
    sends = &*own;
  }
  // The step time on the stage bound, added as with_totals adds it (none of its terms depends
  // on memory), with the data-parallel, optimizer and offload terms of the stages read so far:
  // each no more than with_totals' maximum over every stage, so the sum stays a lower bound of
  // the step time. The bound stops at the first rank that puts it past both limits
  // (BoundStop), often the first, so that a plan pruned and OOM looks up only the stages up
  // to there and to its first stage that does not fit (LazyCoreStages).
  BoundStop stop{0.0, out.embedding_sync_s, 0.0, 0.0, std::max(prune.fits_above, prune.oom_above)};
  const LazyCoreStages stages{ctx,  p,      where,          out.partition, shape, times, seen, k,
                              cores.data(), entries.data(), unseen, *sends, stop,  P};
  out.pipeline_s = split_stage_bound(p, stages, shape, times, stop);
  const double step = out.pipeline_s + stop.dp + out.embedding_sync_s + stop.optimizer + stop.offload;
  const bool pruned_anyway = step > prune.fits_above && step > prune.oom_above;
  if (pruned_anyway && p.virtual_stages == 1) {
    // Pruned whether it fits or not: only whether it fits is read. A stage's memory depends on
    // its core (its key: GPU type, network, entries) and grows with its in-flight figure
    // (add_activations multiplies it by nonnegative figures and adds the rest), so a stage
    // whose core an earlier stage shares with at least as large a figure fits if that one
    // did: its memory is not computed. The first stage that does not fit is the one the
    // stages in order would find.
    struct Largest {
      const NativeStage* core;
      double in_flight;
    };
    std::array<Largest, 16> largest; // the first n_largest written before read
    std::size_t n_largest = 0;
    for (std::size_t j = 0; j < P; ++j) {
      const NativeStage& core = stages.at(j);
      const double f = split_plan_in_flight(p, shape, j, k.act);
      std::size_t g = 0;
      while (g < n_largest && largest[g].core != &core) ++g;
      if (g < n_largest && f <= largest[g].in_flight) continue;
      if (!fits_in_flight(core, ctx, p, k, entries[j], f)) { // stage_memory, its figure f known
        out.step_s = step;
        out.oom = true;
        out.pruned = true;
        return true;
      }
      if (g < n_largest) {
        largest[g].in_flight = f;
      } else if (n_largest < largest.size()) {
        largest[n_largest++] = Largest{&core, f};
      }
    }
    out.step_s = step;
    out.oom = false;
    out.pruned = true;
    return true;
  }
  // stage_memory's steps; with one virtual stage, in_flight's split figure taken directly (as
  // above).
  for (std::size_t j = 0; j < P; ++j) {
    NativeStage& st = out.stages.emplace_back(stages.at(j));
    st.send_s = sends->at(j);
    if (p.virtual_stages == 1) {
      st.in_flight = split_plan_in_flight(p, shape, j, k.act);
      finish_memory(st.memory, ctx, p, k, entries[j], st.in_flight);
    } else {
      stage_memory(st, ctx, p, shape, k, entries[j], static_cast<int>(j));
    }
    if (pruned_anyway && !st.fits()) {
      // OOM and pruned: with_totals would find the same (a step time at least the one above, a
      // stage that does not fit), and nothing else of the estimate is read (its stages stop
      // here).
      out.step_s = step;
      out.oom = true;
      out.pruned = true;
      return true;
    }
  }
  return false;
}

/// estimate_with's split-schedule pipeline after with_totals (`out.pipeline_s` a lower bound,
/// or 0 without limits): the chunk times, pipe_fill_bound under limits, then the simulation
/// unless a bound leaves the step time past `prune`'s limit (out.pruned).
[[gnu::noinline]] void split_pipeline(NativeEstimate& out, const NativeContext& ctx,
                                      const DesignPoint& p, const PipeShape& shape,
                                      const NativePruning& prune, bool limited,
                                      StageLayerTimes& times) {
  thread_local PipeTimes split_times; // buffers reused from one plan to the next
  const double limit = out.oom ? prune.oom_above : prune.fits_above;
  out.pruned = out.step_s > limit;
  if (!out.pruned) {
    pipe_times_into(ctx, p, out, shape, times, split_times);
    if (limited) {
      out.pipeline_s = pipe_fill_bound(*shape.outline, split_times);
      out.step_s = out.pipeline_s + out.dp_sync_s + out.embedding_sync_s + out.optimizer_s +
                   out.offload_s;
      out.pruned = out.step_s > limit;
    }
  }
  if (!out.pruned) {
    out.pipeline_s = cached_pipe_makespan(p.schedule, p.pp, p.num_micro_batches, split_times);
    out.step_s = out.pipeline_s + out.dp_sync_s + out.embedding_sync_s + out.optimizer_s +
                 out.offload_s;
  }
}

NativeEstimate estimate_with(const NativeContext& ctx, const DesignPoint& p,
                             const NativePlacement& where, std::vector<int> partition,
                             const NativePruning& prune, StageLayerTimes& times,
                             SeenStages& seen, const native_steps::PointConstants& k,
                             LazySends* sends = nullptr,
                             std::vector<NativeStage>* spare_stages = nullptr) {
  using namespace native_steps;
  NativeEstimate out;
  out.partition = std::move(partition);
  if (spare_stages != nullptr) {
    // A previous estimate's stages' buffer (native_estimates), emptied: no allocation.
    out.stages.swap(*spare_stages);
    out.stages.clear();
  }
  const std::vector<int>& part = out.partition;
  // A split plan's shape is remembered (cached_pipe_shape); the others' is a few fields.
  // One per thread (split false, no outline, ranks or peaks; only its pp set here): not made
  // and freed per estimate.
  thread_local PipeShape plain;
  const bool split = is_split_schedule(p.schedule) && p.pp > 1;
  if (!split) plain.pp = p.pp; // pipe_shape's figures of a plan that does not split
  const PipeShape& shape = split ? cached_pipe_shape(ctx, p, part) : plain;
  out.stages.reserve(static_cast<std::size_t>(p.pp));
  // Without limits (every plan simulated: --exhaustive, every row kept) no bound is needed.
  const bool limited = prune.fits_above != HUGE_VAL || prune.oom_above != HUGE_VAL;
  // The pipeline (docs/native.md §2.2): 1F1B or interleaved; the zero-bubble and DualPipe
  // orders simulated pass by pass on every rank's chunk times and the links (lower bounds
  // first, cheapest first, under pruning limits: bounded_split_stages, split_pipeline);
  // TeraPipe's token-level pipeline (§2.3).
  if (shape.split && limited) {
    // True: pruned, and whether it fits (exact), all the search reads of it.
    if (bounded_split_stages(out, ctx, p, where, shape, prune, times, seen, k, sends)) return out;
  } else {
    const double* all_sends = sends != nullptr ? sends->all() : nullptr;
    for (int j = 0; j < p.pp; ++j) {
      estimate_stage(out.stages, ctx, p, where, part, shape, times, k, seen, j, all_sends, true);
    }
    if (p.schedule == Schedule::terapipe) {
      TeraPipeRun run = terapipe_run(ctx, p, out);
      out.slices = std::move(run.slices);
      out.pipeline_s = run.pipeline_s;
    } else if (ctx.settings.pipeline_layout != nullptr && p.virtual_stages > 1) {
      out.pipeline_s = simulate_interleaved(layout_chunk_times(ctx, p, where, out, times, k),
                                            p.num_micro_batches);
    } else if (!shape.split) {
      out.pipeline_s = one_f_one_b_s(out.stages, p.virtual_stages, p.num_micro_batches);
    }
    out.embedding_sync_s = embedding_sync_s(ctx, p, k, where);
  }
  out = with_totals(std::move(out), ctx, p);
  if (shape.split) split_pipeline(out, ctx, p, shape, prune, limited, times);
  return out;
}

/// Which default partition partition_with gives `p`: the V's (zbv, dualpipev), DualPipe's,
/// or that of its virtual stages (1: the min-max or uniform split).
int partition_kind(const DesignPoint& p) noexcept {
  if (p.pp > 1 && schedule_chunks_per_rank(p.schedule) == 2) {
    return info(p.schedule).bidirectional ? -2 : -1;
  }
  return p.virtual_stages;
}

} // namespace

/// Kept in one allocation for most configurations (up to kTypes node types, kStages stages and
/// kCores distinct cores inline; more in the vectors): the search keeps one per configuration,
/// and four allocations each cost about what the share saves.
struct NativeConfigShare {
  static constexpr std::size_t kTypes = 2, kStages = 64, kCores = 4;
  using Times = std::optional<AnalyticLayerTimes>;
  std::size_t n_times = 0; // per node type: times then dense times, inline or in `more_times`
  std::array<Times, 2 * kTypes> times_inline;
  std::vector<Times> more_times;
  bool dense = false;
  std::size_t n_partition = 0;
  std::array<int, kStages> partition_inline;
  std::vector<int> more_partition;
  /// The stages' sends (send_s reads neither the schedule nor the weight pass: the split
  /// points' on the same placement are the same bits), one per stage.
  std::size_t n_sends = 0;
  std::array<double, kStages> sends_inline;
  std::vector<double> more_sends;
  native_steps::PointConstants k;
  std::size_t n_cores = 0;
  struct Core {
    StageKey key;
    NativeStage st;
  };
  std::array<Core, kCores> cores_inline;
  std::vector<Core> more_cores;

  [[nodiscard]] const int* partition() const noexcept {
    return n_partition <= kStages ? partition_inline.data() : more_partition.data();
  }
  [[nodiscard]] const double* sends() const noexcept {
    return n_sends <= kStages ? sends_inline.data() : more_sends.data();
  }
  [[nodiscard]] const Times* all_times() const noexcept {
    return n_times <= kTypes ? times_inline.data() : more_times.data();
  }
  [[nodiscard]] const Core* cores() const noexcept {
    return n_cores <= kCores ? cores_inline.data() : more_cores.data();
  }
};

void NativeConfigShareFree::operator()(NativeConfigShare* s) const noexcept { delete s; }

NativeEstimate native_estimate_keeping(const NativeContext& ctx, const DesignPoint& p,
                                       const NativePlacement& where, const NativePruning& prune,
                                       NativeConfigSharePtr& keep) {
  NativeEstimate out;
  native_estimate_keeping(ctx, p, where, prune, keep, out);
  return out;
}

void native_estimate_keeping(const NativeContext& ctx, const DesignPoint& p,
                             const NativePlacement& where, const NativePruning& prune,
                             NativeConfigSharePtr& keep, NativeEstimate& out) {
  // native_estimate's steps, what they compute kept; the partition and the stages in `out`'s
  // buffers (estimate_with's spare stages).
  StageLayerTimes times(ctx, p);
  std::vector<int> partition = std::move(out.partition);
  std::vector<NativeStage> spare_stages = std::move(out.stages);
  partition_into(ctx, p, where, times, partition);
  SeenStages seen;
  if (!keep) keep.reset(new NativeConfigShare);
  NativeConfigShare& s = *keep;
  s.n_partition = partition.size();
  if (s.n_partition <= NativeConfigShare::kStages) {
    std::copy(partition.begin(), partition.end(), s.partition_inline.begin());
  } else {
    s.more_partition.assign(partition.begin(), partition.end());
  }
  s.k = native_steps::point_constants(ctx, p);
  out = estimate_with(ctx, p, where, std::move(partition), prune, times, seen, s.k, nullptr,
                      &spare_stages);
  // Its stages' sends (estimate_stage's send_s of every stage: a 1F1B plan's stages are all
  // estimated), kept.
  s.n_sends = out.stages.size() == static_cast<std::size_t>(p.pp) ? out.stages.size() : 0;
  double* sends = s.sends_inline.data();
  if (s.n_sends > NativeConfigShare::kStages) {
    s.more_sends.resize(s.n_sends);
    sends = s.more_sends.data();
  }
  for (std::size_t j = 0; j < s.n_sends; ++j) sends[j] = out.stages[j].send_s;
  const auto& t = times.computed();
  const auto& dense = times.dense_computed();
  s.n_times = t.size();
  s.dense = std::any_of(dense.begin(), dense.end(), [](const auto& d) { return d.has_value(); });
  NativeConfigShare::Times* to = s.times_inline.data();
  if (s.n_times > NativeConfigShare::kTypes) {
    s.more_times.resize(2 * s.n_times);
    to = s.more_times.data();
  }
  std::copy(t.begin(), t.end(), to);
  if (s.dense) std::copy(dense.begin(), dense.end(), to + s.n_times);
  s.n_cores = seen.n;
  NativeConfigShare::Core* c = s.cores_inline.data();
  if (s.n_cores > NativeConfigShare::kCores) {
    s.more_cores.resize(s.n_cores);
    c = s.more_cores.data();
  }
  for (std::size_t i = 0; i < seen.n; ++i) {
    c[i].key = seen.key[i];
    c[i].st = seen.core[i].st;
  }
}

NativeEstimate native_estimate(const NativeContext& ctx, const DesignPoint& p,
                               const NativePlacement& where, std::vector<int> partition,
                               const NativePruning& prune) {
  StageLayerTimes times(ctx, p);
  if (partition.empty()) {
    partition_into(ctx, p, where, times, partition);
  }
  SeenStages seen;
  return estimate_with(ctx, p, where, std::move(partition), prune, times, seen,
                       native_steps::point_constants(ctx, p));
}

bool same_configuration(const DesignPoint& a, const DesignPoint& b) noexcept {
  // Every field but these two equal, so that a field added to DesignPoint is compared too.
  DesignPoint b_as_a = b;
  b_as_a.schedule = a.schedule;
  b_as_a.virtual_stages = a.virtual_stages;
  return a == b_as_a;
}

void native_estimates(const NativeContext& ctx, std::span<const DesignPoint* const> points,
                      const NativePlacement& where, const NativePruning& prune,
                      std::vector<NativeEstimate>& out) {
  native_estimates(ctx, points, where, prune, out, nullptr);
}

void native_estimates(const NativeContext& ctx, std::span<const DesignPoint* const> points,
                      const NativePlacement& where, const NativePruning& prune,
                      std::vector<NativeEstimate>& out, const NativeConfigShare* seed) {
  out.resize(points.size());
  if (points.empty()) return;
  // One configuration's layer times on each node type, its default partitions (a few kinds)
  // and its distinct stages' costs, computed once for all its schedules; with `seed`, those
  // its 1F1B estimate computed are taken from it (none of them reads the schedule: the same
  // bits).
  StageLayerTimes times(ctx, *points.front());
  SeenStages seen;
  if (seed != nullptr) {
    times.seed(std::span(seed->all_times(), seed->n_times),
               seed->dense ? std::span(seed->all_times() + seed->n_times, seed->n_times)
                           : std::span<const NativeConfigShare::Times>());
    const NativeConfigShare::Core* c = seed->cores();
    for (std::size_t i = 0; i < seed->n_cores && seen.n < SeenStages::kMax; ++i) {
      seen.key[seen.n] = c[i].key;
      seen.core[seen.n].st = c[i].st;
      ++seen.n;
    }
  }
  thread_local std::vector<double> sends;
  // point_constants depends on the schedule only through whether it splits the backward
  // (LayerActivations::weight_pass): shared by the points that agree on that, and with the
  // seed's (a 1F1B point's, no weight pass) but for that figure.
  const DesignPoint& first = *points.front();
  const native_steps::PointConstants k = [&] {
    if (seed == nullptr) return native_steps::point_constants(ctx, first);
    native_steps::PointConstants c = seed->k;
    c.act.weight_pass =
        is_split_schedule(first.schedule) ? layer_weight_pass_bytes(ctx.model, first, ctx.settings) : 0.0;
    return c;
  }();
  thread_local std::vector<char> known;
  sends.resize(static_cast<std::size_t>(first.pp));
  if (seed != nullptr && seed->n_sends == sends.size()) {
    // The 1F1B point's sends on this placement (the same bits: see NativeConfigShare).
    std::copy_n(seed->sends(), sends.size(), sends.begin());
    known.assign(sends.size(), 1);
  } else {
    known.assign(static_cast<std::size_t>(first.pp), 0);
  }
  LazySends lazy{ctx, first, k, where, sends, known};
  std::array<int, 4> kinds{};
  // The kinds' partitions, in buffers kept per thread from one configuration to the next.
  thread_local std::array<std::vector<int>, 4> partitions;
  std::size_t n_kinds = 0;
  if (seed != nullptr) {
    // The 1F1B point's partition: that of one chunk per rank (zb-h1, zb-h2).
    kinds[0] = 1;
    partitions[0].assign(seed->partition(), seed->partition() + seed->n_partition);
    n_kinds = 1;
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const DesignPoint& p = *points[i];
    const int kind = partition_kind(p);
    std::size_t at = 0;
    while (at < n_kinds && kinds[at] != kind) ++at;
    // The buffers of out[i]'s previous estimate (the search reuses `out` from one placement
    // and configuration to the next) are reused: a copy into them allocates nothing.
    std::vector<int> partition = std::move(out[i].partition);
    std::vector<NativeStage> spare_stages = std::move(out[i].stages);
    if (at < n_kinds) {
      partition.assign(partitions[at].begin(), partitions[at].end());
    } else {
      partition_into(ctx, p, where, times, partition);
      if (n_kinds < kinds.size()) {
        kinds[n_kinds] = kind;
        partitions[n_kinds].assign(partition.begin(), partition.end());
        ++n_kinds;
      }
    }
    if (is_split_schedule(p.schedule) == is_split_schedule(first.schedule)) {
      out[i] = estimate_with(ctx, p, where, std::move(partition), prune, times, seen, k,
                             &lazy, &spare_stages);
    } else {
      out[i] = estimate_with(ctx, p, where, std::move(partition), prune, times, seen,
                             native_steps::point_constants(ctx, p), &lazy,
                             &spare_stages);
    }
  }
}

double native_split_stage_bound(const NativeContext& ctx, const DesignPoint& p,
                                const NativeEstimate& est, double stop_above) {
  const PipeShape shape = pipe_shape(ctx, p, est.partition);
  if (!shape.split) return 0.0;
  StageLayerTimes times(ctx, p);
  const BoundStop stop{est.dp_sync_s, est.embedding_sync_s, est.optimizer_s, est.offload_s,
                       stop_above};
  return split_stage_bound(p, EstimateStages{est.stages}, shape, times, stop);
}

InterleavedRun native_interleaved_run(const NativeContext& ctx, const DesignPoint& p,
                                      const NativePlacement& where, const NativeEstimate& est) {
  InterleavedRun run;
  if (ctx.settings.pipeline_layout == nullptr || p.virtual_stages < 2) return run;
  // The calls estimate_with makes for est.pipeline_s, the passes recorded.
  StageLayerTimes times(ctx, p);
  run.times = layout_chunk_times(ctx, p, where, est, times, native_steps::point_constants(ctx, p));
  run.makespan_s = simulate_interleaved(run.times, p.num_micro_batches, &run.passes);
  return run;
}

PipeRun native_pipe_run(const NativeContext& ctx, const DesignPoint& p, const NativeEstimate& est) {
  const PipeShape shape = pipe_shape(ctx, p, est.partition);
  if (!shape.split) return {};
  StageLayerTimes times(ctx, p);
  return simulate_pipe(pipe_program(p.schedule, p.pp, p.num_micro_batches),
                       pipe_times(ctx, p, est, shape, times), true);
}

TokenPipeline native_token_pipeline(const NativeContext& ctx, const DesignPoint& p,
                                    const NativeEstimate& est) {
  TokenPipeline pipe;
  pipe.micro_batches = p.num_micro_batches;
  const ModelSpec& m = ctx.model;
  const double s = static_cast<double>(m.sequence_length);
  // The fit is exact at the smallest slice the slicing may use and at the whole sequence.
  const std::int64_t short_len = terapipe_quantum(m.sequence_length);
  const FrameworkParams& fw = framework_params(p.method);
  const std::size_t pp = est.stages.size();
  for (std::size_t j = 0; j < pp; ++j) {
    const NativeStage& st = est.stages[j];
    const bool first = j == 0;
    const bool last = j + 1 == pp;
    const int n_layers = st.layers - (first ? 1 : 0) - (last ? 1 : 0);
    const AnalyticLayerTimes full = layer_times(ctx, p, st.gpu);
    NativeContext shorter = ctx;
    shorter.model.sequence_length = short_len;
    const AnalyticLayerTimes part = layer_times(shorter, p, st.gpu);
    // Per layer: a + b l for everything but attention, from the two lengths.
    const double na_full = full.layer.forward_s - full.attention_forward_s;
    const double na_part = part.layer.forward_s - part.attention_forward_s;
    const double dl = s - static_cast<double>(short_len);
    const double per_token = dl > 0 ? (na_full - na_part) / dl : na_full / s;
    const double fixed = na_full - per_token * s;
    SliceCost c;
    c.fixed_s = n_layers * fixed;
    c.per_token_s = n_layers * per_token + (first ? full.embedding.forward_s / s : 0.0) +
                    (last ? full.post_process.forward_s / s : 0.0);
    c.per_token_pair_s = n_layers * full.attention_forward_s / (s * (s + 1.0) / 2.0);
    // Backward over forward of the whole stage's compute, recomputation included.
    const double forward = n_layers * full.layer.forward_s + (first ? full.embedding.forward_s : 0.0) +
                           (last ? full.post_process.forward_s : 0.0);
    const double backward = n_layers * (full.layer.backward_s + recompute_s(full, p.recompute, fw, m, ctx.settings.recompute_modules)) +
                            (first ? full.embedding.backward_s : 0.0) +
                            (last ? full.post_process.backward_s : 0.0) +
                            st.grad_accumulation_s;
    c.backward_factor = forward > 0 ? backward / forward : 2.0;
    pipe.stages.push_back(c);
    if (!last) {
      pipe.link_s_per_token.push_back(std::max(0.0, st.send_s - kAlpha_s) / s);
    }
  }
  return pipe;
}

// Out of line, as GCC placed it before this file's split-schedule changes (inlined into
// layer_times' callers it cost the default list 0.1 M instructions more).
[[gnu::noinline]] AnalyticSettings native_layer_settings(const ModelSpec& model, const DesignPoint& p,
                                                         const NativeSettings& settings) noexcept {
  AnalyticSettings st;
  st.tp = p.tp;
  st.micro_batch = p.mbs;
  st.sequence_length = static_cast<int>(model.sequence_length);
  st.dtype = p.dtype;
  st.flash_attention = settings.flash_attention;
  st.attention_kernel = settings.attention_kernel;
  st.fp8_recipe = settings.fp8_recipe;
  st.lm_head_tp_split = true;
  st.sequence_parallel = settings.sequence_parallel && p.tp > 1;
  // The native costs (docs/native.md §2.2): GEMMs by shape, the host issuing the kernels of
  // the framework the method implies (torchtitan runs eager PyTorch modules; Megatron-LM and
  // Megatron-DeepSpeed fused kernels), the gathers' copies, overlapped tp collectives.
  const FrameworkParams& fw = framework_params(p.method);
  st.gemm_shapes = true;
  st.attention_dropout_bytes = true;
  st.host_per_kernel_s = kHostPerKernel_s;
  st.host_per_linear_s = kHostPerLinear_s;
  st.host_sync_s = kHostSync_s;
  st.fused_kernels = !fw.torch_loss || settings.fused_layers;
  st.layer_impl = settings.layer_impl;
  // Megatron's softmax test (megatron_fused_softmax) is for the framework's own fused layer;
  // megatron_unfused runs the eager softmax throughout, the eager GPT-2 layers their own.
  st.softmax_fallback = settings.layer_impl == LayerImpl::framework;
  st.softmax_check = settings.softmax_check;
  if (is_eager_gpt2_layer(settings.layer_impl)) {
    st.fused_kernels = false; // an eager GPT-2 layer's ops (hf_gpt2_extra)
  }
  // With expert parallelism the experts are gathered over edp even where dp x cp is 1.
  st.sharded_parameters = fw.shard_level >= 3 &&
                          (p.dp * p.cp > 1 ||
                           (model.is_moe() && p.ep * p.etp != p.tp && p.edp() > 1));
  st.context_parallel = p.cp;
  st.tp_comm_overlap = settings.tp_comm_overlap;
  if (model.is_moe()) {
    // Expert parallelism (docs/moe.md): the grouped GEMM at the GPU's experts and tokens, the
    // busiest rank's load.
    st.ep = p.ep;
    st.etp = p.etp;
    st.moe_imbalance = effective_moe_imbalance(model, settings.moe_imbalance);
  }
  return st;
}

} // namespace zerosearch
