#pragma once
// Megatron-Core's pipeline layout (--pipeline_layout; docs/native.md §2.5): which layers each
// (pipeline rank, virtual chunk) holds, in Megatron's own string syntax, and the interleaved
// 1F1B schedule simulated on each chunk's own times. Pure functions.
#include <algorithm>
#include <span>
#include <string>
#include <vector>

namespace zerosearch {

/// One model chunk of a layout: what its entries are.
struct LayoutChunk {
  bool embedding = false; // E
  bool loss = false;      // L (the output layer and the loss: the post_process entry)
  int layers = 0;         // t, transformer (decoder) layers
  int mtp = 0;            // m, multi-token-prediction layers
  /// Index of the chunk's first transformer layer in model order.
  int first_layer = 0;
  /// Its entries in order, unrolled ("Etttt").
  std::string entries;
};

/// A parsed layout: chunks in Megatron's order (chunk k runs on pipeline rank k % pp as its
/// virtual stage k / pp: PipelineParallelLayerLayout at megatron-core 0.13+).
struct PipelineLayout {
  std::string text;
  std::vector<LayoutChunk> chunks;

  [[nodiscard]] int layers() const noexcept;
  [[nodiscard]] int mtp_layers() const noexcept;
  /// Chunk (rank r, virtual stage c) for `pp` ranks.
  [[nodiscard]] const LayoutChunk& at(int pp, int rank, int chunk) const {
    return chunks[static_cast<std::size_t>(chunk * pp + rank)];
  }
  /// Pipeline entries per rank (embedding, transformer layers and the loss each one entry;
  /// MTP layers not counted), the notation of --partition.
  [[nodiscard]] std::vector<int> partition(int pp) const;
};

/// Parses `text` as Megatron-Core's parse_str_to_list does (pipeline_parallel_layer_layout.py):
/// commas are dropped; "(...)*n" is unrolled (innermost-free groups, left to right), then
/// "x*n" for a single character; '|' separates chunks; each character is E, L, t or m. Returns
/// the layout, or throws InputError naming the bad part.
[[nodiscard]] PipelineLayout parse_pipeline_layout(const std::string& text);

/// Why `layout` cannot run `layers` transformer layers over `pp` ranks of `virtual_stages`
/// chunks each (Megatron-Core's validate_layer_layout: pp x virtual_stages chunks, E first
/// and once, L last and once, the model's layer count, MTP layers after every transformer
/// layer and on their rank's last chunk, all in one chunk), or an empty string.
[[nodiscard]] std::string pipeline_layout_invalid_reason(const PipelineLayout& layout, int pp,
                                                         int virtual_stages, long long layers);

struct ModelSpec;

/// Why Megatron-LM refuses `layout` on model `m` whatever the point, or an empty string: MTP
/// layers on a model with learned absolute positions (megatron/training/arguments.py at
/// d98e8a64, validate_args: with --mtp-num-layers the position embedding must be rope or none).
[[nodiscard]] std::string pipeline_layout_model_reason(const PipelineLayout& layout,
                                                       const ModelSpec& m);

/// Per-chunk times of interleaved 1F1B, seconds: forward_s[r * v + c], backward_s[r * v + c]
/// for rank r's virtual stage c; link_s[r], the transfer from rank r to rank (r + 1) % pp
/// (the last entry: the last rank back to the first, where the next virtual stage begins);
/// pair_hidden_s[r * v + c]: what a steady-state forward-and-backward pair hides when its
/// backward runs chunk c (the EP all-to-all overlap; 0 without).
struct InterleavedTimes {
  int pp = 1;
  int virtual_stages = 1;
  std::vector<double> forward_s;
  std::vector<double> backward_s;
  std::vector<double> link_s;
  std::vector<double> pair_hidden_s;
  /// Per chunk [r * v + c], for the timeline (the simulation does not read them): one
  /// micro-batch's MoE all-to-all and context-parallel exchange inside the chunk's forward and
  /// backward, seconds (add_moe_comm and add_cp_exchange on the chunk's entries; a rank's
  /// chunks add up to its stage's).
  std::vector<double> a2a_forward_s, a2a_backward_s, cp_forward_s, cp_backward_s;
};

/// One pass of a rank's interleaved order.
struct InterleavedOp {
  bool forward = true;
  int chunk = 0;
  int micro_batch = 0;
  /// A backward of the steady phase that Megatron-Core's combined 1F1B pairs with the forward
  /// before it: all but the first (m v - warm-up - 1 per rank, moe_a2a_overlap_pairs).
  bool steady = false;
};

/// Rank `rank`'s warm-up in Megatron-Core's interleaved 1F1B: (pp - rank - 1) x 2 + (v - 1) x pp
/// chunk forwards (get_pp_rank_microbatches, megatron/core/pipeline_parallel/schedules.py,
/// NVIDIA/Megatron-LM@d98e8a6), at most all m v of them.
[[nodiscard]] constexpr int interleaved_warmup_forwards(int pp, int virtual_stages,
                                                        int micro_batches, int rank) noexcept {
  return std::min((pp - rank - 1) * 2 + (virtual_stages - 1) * pp,
                  micro_batches * virtual_stages);
}

/// Rank `rank`'s order of passes in Megatron-Core's interleaved 1F1B
/// (forward_backward_pipelining_with_interleaving, micro-batch groups of pp): warm-up
/// forwards (pp - rank - 1) x 2 + (v - 1) x pp (all m v when that is as many: Megatron-LM
/// dropped its "m = pp: all in warm-up" rule in 4295be1a6c), then one forward and one
/// backward at a time, then the remaining backwards. Precondition: micro_batches % pp == 0.
/// With one virtual stage, Megatron-Core's plain 1F1B (forward_backward_pipelining_without_
/// interleaving): min(pp - rank - 1, m) warm-up forwards, any m (what the timeline draws for
/// 1F1B plans).
[[nodiscard]] std::vector<InterleavedOp> interleaved_order(int pp, int virtual_stages,
                                                           int micro_batches, int rank);

/// Per chunk, the forwards rank `rank` holds at its activation peak in interleaved_order(pp,
/// virtual_stages, micro_batches, rank): a chunk's forward of a micro-batch is held from the
/// forward to its backward, and the peak is the first point of the order where the held
/// forwards' bytes, sum over chunks of held[c] x chunk_bytes[c], are largest (reached in the
/// warm-up or the first pp x virtual_stages steady pairs: the steady phase repeats after
/// that). With even chunks rank 0 holds (v - 1) pp + 2 pp - 1 = pp v (1 + (pp - 1) / (pp v))
/// chunk forwards, Megatron-LM's interleaved memory factor. Precondition: micro_batches %
/// pp == 0, chunk_bytes.size() == virtual_stages.
[[nodiscard]] std::vector<int> interleaved_held_peak(int pp, int virtual_stages,
                                                     int micro_batches, int rank,
                                                     std::span<const double> chunk_bytes);

/// One pass of a simulated interleaved 1F1B (simulate_interleaved's record): rank `rank` runs
/// chunk `chunk`'s forward (or backward) of micro-batch `micro_batch` from start_s to
/// compute_end_s, then sends its output until end_s (end_s == compute_end_s without a send).
struct InterleavedPass {
  int rank = 0;
  int chunk = 0;
  int micro_batch = 0;
  bool forward = true;
  double start_s = 0.0;
  double compute_end_s = 0.0;
  double end_s = 0.0;
};

/// Makespan of interleaved 1F1B on per-chunk times: each rank runs its order; a pass starts
/// when the rank is free and its input has arrived (the previous chunk's forward, the next
/// chunk's backward; the last chunk's backward its own forward). A rank is busy for the pass
/// and its send (Megatron's p2p exchange blocks without --overlap-p2p-communication); a
/// steady backward is shortened by pair_hidden_s (at most to nothing). With `passes`, every
/// pass is appended to it as it is simulated (what the timeline draws).
[[nodiscard]] double simulate_interleaved(const InterleavedTimes& times, int micro_batches,
                                          std::vector<InterleavedPass>* passes = nullptr);

} // namespace zerosearch
