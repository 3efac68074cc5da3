#pragma once
// DeepSpeed ZeRO-3 as it ran before its stage-3 rewrite (--zero3_impl per_param; docs/native.md
// §2.2 "ZeRO-3 / FSDP gathers"). From ZeRO-3's first release, v0.3.12 (PR #834, March 2021),
// to v0.5.4 (microsoft/DeepSpeed deepspeed/runtime/zero/partition_parameters.py and stage3.py
// at v0.3.14, 0cd9abf, unchanged in these respects to v0.5.4) every parameter was gathered by
// its own
// torch.distributed.all_gather into a list of world-size views, after a
// torch.cuda.synchronize() (`_allgather_param`), every sub-module fetch ended with another
// (`_synchronize_communication`), and every parameter's gradient was reduce-scattered by its
// own torch.distributed.reduce_scatter from a list of world-size views
// (`_reduce_scatter_gradient`). PR #1453 (4912e0ad7, 2022-01-20, in v0.6.0) batched the calls
// "to amortize fixed overhead", moved to the *_base variants "to reduce memory allocations and
// data movement" and made the synchronization "more fine grained". (v0.5.5 to v0.5.10 gathered
// through _all_gather_base where torch has it, PR #1188; the rest is as in v0.5.4.)

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "zerosearch/core/enum_table.hpp"

namespace zerosearch {

struct ModelSpec;

/// Which DeepSpeed ZeRO-3 runs (--zero3_impl): coalesced (v0.6.0 on, the default: the model's
/// overlapped gathers) or per_param (v0.3.12 to v0.5.4).
enum class Zero3Impl : std::uint8_t { coalesced, per_param };

/// The flag's names, in the enum's order.
inline constexpr std::array<const char*, 2> kZero3ImplNames{"coalesced", "per_param"};

/// The implementation named `text` (one of kZero3ImplNames), or nullopt.
[[nodiscard]] inline std::optional<Zero3Impl> zero3_impl_named(std::string_view text) {
  return enum_named<Zero3Impl>(kZero3ImplNames, text);
}

/// stage3_param_persistence_threshold's default (deepspeed/runtime/zero/constants.py at
/// v0.3.14): a parameter of fewer elements stays gathered (`persistent_parameters`:
/// ds_numel < threshold) and is never all-gathered again.
inline constexpr double kZero3PersistenceThreshold = 1e5;
/// stage3_max_reuse_distance's default (the same file): a sub-module's parameters are kept
/// after its forward when the elements of the sub-modules run before its next use are fewer
/// (`_keep_for_later`: reuse_distance_in_numel < max_reuse_distance).
inline constexpr double kZero3MaxReuseDistance = 1e9;

/// The collectives per-parameter ZeRO-3 issues for one transformer layer of the model, as the
/// native model lays a layer out for the DeepSpeed methods (Megatron-DeepSpeed's: a fused qkv,
/// proj, fc1 (gate and up together when gated), fc2; with the model's biases (qkv_bias,
/// attention_output_bias, mlp_bias) and LayerNorm's bias beside each norm's weight).
struct Zero3LayerCalls {
  /// All-gathers per fetch of the layer: its tensors of at least kZero3PersistenceThreshold
  /// elements.
  double gathers = 0.0;
  /// Reduce-scatters per backward: every tensor (the persistent ones' gradients too).
  double reduces = 0.0;
  /// Elements gathered per fetch (the gathered tensors').
  double gathered_elements = 0.0;
  /// All the layer's elements (the persistent tensors' too).
  double elements = 0.0;
  /// Under full recomputation: the all-gathers and elements the rerun forward fetches again,
  /// the linears whose reuse distance to their backward (the elements of the linears after
  /// them, and the second norm, twice: their rerun and their backward) is at least
  /// kZero3MaxReuseDistance.
  double regathers = 0.0;
  double regathered_elements = 0.0;
};
[[nodiscard]] Zero3LayerCalls zero3_per_param_layer(const ModelSpec& m) noexcept;

/// `calls` collectives through PyTorch's list API, each `call_s` (NCCL's time for its bytes)
/// plus `ranks` copies issued one by one at kCudaLaunch_s each: ProcessGroupNCCL's allgather
/// copies the flat output out to each of the world-size views, its reduce_scatter copies the
/// views into a flat input (pytorch/pytorch torch/lib/c10d/ProcessGroupNCCL.cpp at v1.8.0).
[[nodiscard]] double zero3_list_calls_s(double calls, double call_s, int ranks) noexcept;

} // namespace zerosearch
