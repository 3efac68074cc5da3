#pragma once
// Parameter and FLOP counts of a model from its architecture fields (ModelSpec). Pure functions:
// no I/O, no state. Counts are exact integers for the shapes check_model accepts.
#include <cstdint>

#include "zerosearch/core/model.hpp"

namespace zerosearch {

/// Parameters of the attention block of one layer: Q, K, V and output projections (GQA: K and
/// V are num_key_value_heads x head_dim wide) and their biases, Qwen3's q and k norms; with
/// multi-head latent attention (DeepSeek-V2/V3) its LoRA projections and their norms.
[[nodiscard]] std::int64_t attention_parameters(const ModelSpec& m) noexcept;

/// Parameters of the MLP of one layer, every expert counted: a dense MLP (2 or 3 matrices), or
/// the routed experts, the router (hidden x experts) and the shared expert with its gate.
[[nodiscard]] std::int64_t mlp_parameters(const ModelSpec& m) noexcept;

/// As mlp_parameters, but only the experts_per_token routed experts a token passes through
/// (the router and the shared expert count in full). Equal to mlp_parameters for a dense model.
[[nodiscard]] std::int64_t active_mlp_parameters(const ModelSpec& m) noexcept;

/// The routed experts of one MoE layer (num_experts x one expert's MLP); 0 for a dense model.
/// What expert parallelism shards (ep x etp); the rest of the layer is sharded by tp.
[[nodiscard]] std::int64_t expert_parameters(const ModelSpec& m) noexcept;

/// The non-expert part of an MoE layer's MLP: router (and its score bias), shared expert(s)
/// and their gate; 0 for a dense model.
[[nodiscard]] std::int64_t moe_dense_mlp_parameters(const ModelSpec& m) noexcept;

/// A dense layer of the model (first_k_dense_layers of an MoE model): attention, an
/// ffn_hidden_size MLP, two norms.
[[nodiscard]] std::int64_t dense_layer_parameters(const ModelSpec& m) noexcept;

/// Layer i (0-based): layer_parameters for an MoE layer, dense_layer_parameters otherwise.
[[nodiscard]] std::int64_t layer_parameters_at(const ModelSpec& m, std::int64_t i) noexcept;

/// MoE layers among the `count` transformer layers starting at layer `first` (0-based).
[[nodiscard]] std::int64_t moe_layers_in(const ModelSpec& m, std::int64_t first,
                                         std::int64_t count) noexcept;

/// Parameters of one transformer layer: attention, MLP (all experts) and its two norms (an MoE
/// layer for an MoE model).
[[nodiscard]] std::int64_t layer_parameters(const ModelSpec& m) noexcept;

/// One transformer layer as a token sees it: attention, the active MLP, the two norms.
[[nodiscard]] std::int64_t active_layer_parameters(const ModelSpec& m) noexcept;

/// The first pipeline entry: token embedding (vocab x hidden) plus learned positions.
[[nodiscard]] std::int64_t embedding_parameters(const ModelSpec& m) noexcept;

/// The last pipeline entry: the final norm plus the LM head unless it is tied to the embedding.
[[nodiscard]] std::int64_t post_process_parameters(const ModelSpec& m) noexcept;

/// All parameters: embedding + num_layers x layer + post-process (Hugging Face's num_parameters()).
[[nodiscard]] std::int64_t total_parameters(const ModelSpec& m) noexcept;

/// Parameters a token passes through (MoE: top-k experts); == total_parameters when dense.
[[nodiscard]] std::int64_t active_parameters(const ModelSpec& m) noexcept;

/// Megatron-LM's padded vocabulary: vocab rounded up to a multiple of divisible_by x tp
/// (--make-vocab-size-divisible-by, default 128).
[[nodiscard]] std::int64_t megatron_padded_vocab(std::int64_t vocab, std::int64_t tp = 1,
                                                 std::int64_t divisible_by = 128) noexcept;

/// Forward FLOPs of one sequence of seq_len tokens, by Megatron-LM's formula
/// (num_floating_point_operations in megatron/training/training.py, which returns
/// 3 x this for forward + backward): the GEMMs only, 2 FLOPs per multiply-add,
/// per token and layer
///   h*(q + 2*kv) [QKV] + q*s [QK^T and PV, causal half: s/2 each] + q*h [output]
///   + h*f*(3 if gated else 2) [dense MLP]
///   or h*(f_e*k + f_sh)*(3|2) [MoE: top-k routed experts and the shared expert, no router],
/// plus h*padded_vocab for the logits; q = heads*head_dim, kv = kv_heads*head_dim.
/// Norms, biases, softmax, embedding lookup and the router are not counted.
[[nodiscard]] double forward_flops_per_sequence(const ModelSpec& m, std::int64_t seq_len,
                                                std::int64_t padded_vocab) noexcept;

/// forward_flops_per_sequence with the model's sequence length and Megatron's default padding.
[[nodiscard]] double forward_flops_per_sequence(const ModelSpec& m) noexcept;

/// Megatron-LM's num_floating_point_operations for one sequence: 3 x forward (forward, weight
/// gradient, input gradient GEMMs).
[[nodiscard]] double training_flops_per_sequence(const ModelSpec& m, std::int64_t seq_len,
                                                 std::int64_t padded_vocab) noexcept;

} // namespace zerosearch
