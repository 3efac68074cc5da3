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

/// Bytes per parameter of Megatron-LM's fp16 step with fp32 master weights and its local DDP,
/// pass by pass as NVIDIA/Megatron-LM runs it in 2021 (@8aa4619, March; @63121a9, May; @de7dc40,
/// August: megatron/optimizer/optimizer.py step, megatron/optimizer/clip_grads.py,
/// megatron/model/distributed.py allreduce_gradients): the local DDP's passes over the
/// gradients (fp16 `.grad`, `use_contiguous_buffers_in_ddp` off, its default until e8fb052 of
/// 2021-08-18 and on only with --accumulate-allreduce-grads-in-fp32: flatten, `/= dp`, copy
/// back, each reading and writing `grad_bytes`; fp32 main_grad in the contiguous buffer:
/// zero_() and `/= dp`), the cast to an fp32 `.grad` (`.float()`: read `grad_bytes`, write 4;
/// none for an fp32 main_grad), the loss-scale unscale and inf check
/// (`_amp_foreach_non_finite_check_and_unscale_`: read and write 4), the gradient norm for
/// clipping (`multi_tensor_l2norm`: read 4; the rescale when the norm exceeds --clip-grad is
/// conditional and not counted), Apex FusedAdam (read the fp32 gradient 4, read and write the
/// master and m and v, 24), the master copied to the 16-bit parameters (`multi_tensor_scale`:
/// read 4, write `elem_bytes`). 64 bytes with fp16 gradients, 58 with fp32 ones, where
/// optimizer_step_bytes counts 28 and 30 (docs/native.md §2).
[[nodiscard]] double megatron_fp16_step_bytes(double grad_bytes, double elem_bytes) noexcept;

} // namespace zerosearch
