#pragma once
// The optimizer's states per parameter (docs/native.md §3): mixed precision's fp32 master copy
// and fp32 Adam moments (the default), or pure 16-bit training's (--master_weights off), and the
// bytes the optimizer step moves. Pure functions.
#include "zerosearch/core/dp_method.hpp"

namespace zerosearch {

/// Bytes per parameter the optimizer keeps for the parameters it updates.
struct OptimizerStateBytes {
  /// The master copy of the parameters: fp32 (4) with mixed precision; with --master_weights
  /// off DeepSpeed's 16-bit clone of its partition (bf16_master_weights_and_grads:
  /// stage_1_and_2.py and stage3.py clone the partition in master_weights_and_grads_dtype), and
  /// none where the optimizer updates the 16-bit parameters themselves (torch.optim.AdamW on a
  /// bf16 model: torchtune, Hugging Face with torch_dtype bfloat16, torchtitan's
  /// training.dtype bfloat16); 0 with fp32 training, whose parameters are the master.
  double master = 0.0;
  /// Adam's m and v together: 8 in fp32; 2 x the training dtype's bytes with --master_weights
  /// off (torch's AdamW keeps them in the parameters' dtype; DeepSpeed's bf16_optimizer_states).
  double moments = 0.0;
  /// The gradient bytes ZeRO-Offload keeps in host memory beside the states: fp32 (4), or the
  /// 16-bit master's dtype with --master_weights off.
  double host_gradient = 0.0;
  [[nodiscard]] double total() const noexcept { return master + moments; }
};

/// The states of framework `fw` training with `elem_bytes` per element (4: fp32 training; 2:
/// 16-bit, fp8 included) with or without fp32 master weights. fp32 training ignores
/// `master_weights`: its states are in the training dtype either way.
[[nodiscard]] OptimizerStateBytes optimizer_state_bytes(const NativeTraits& fw, double elem_bytes,
                                                        bool master_weights) noexcept;

/// Bytes the optimizer step reads and writes per parameter it updates: the gradient read
/// (`grad_bytes`), the master and the moments read and written, the 16-bit parameters written,
/// and read as well where they are what the optimizer updates (16-bit training without a master
/// copy).
[[nodiscard]] double optimizer_step_bytes(double grad_bytes, double elem_bytes,
                                          const OptimizerStateBytes& states) noexcept;

} // namespace zerosearch
