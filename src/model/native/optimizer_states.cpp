#include "zerosearch/model/optimizer_states.hpp"

#include <string_view>

namespace zerosearch {

OptimizerStateBytes optimizer_state_bytes(const NativeTraits& fw, double elem_bytes,
                                          bool master_weights) noexcept {
  OptimizerStateBytes s;
  const bool sixteen_bit = elem_bytes < 4.0;
  if (!sixteen_bit || master_weights) {
    s.master = sixteen_bit ? 4.0 : 0.0; // fp32 master copy (fp32 training: the parameters)
    s.moments = 8.0;                    // fp32 Adam m and v
    s.host_gradient = 4.0;
    return s;
  }
  // Pure 16-bit training: DeepSpeed clones its partition in the 16-bit dtype; torch's AdamW on
  // a 16-bit model (under DDP, FSDP2 or one GPU) updates the parameters in place.
  s.master = std::string_view(fw.framework) == "deepspeed" ? elem_bytes : 0.0;
  s.moments = 2.0 * elem_bytes;
  s.host_gradient = elem_bytes;
  return s;
}

double optimizer_step_bytes(double grad_bytes, double elem_bytes,
                            const OptimizerStateBytes& states) noexcept {
  const bool updates_params = states.master == 0.0 && elem_bytes < 4.0;
  return grad_bytes + 2.0 * (states.master + states.moments) +
         (updates_params ? 2.0 * elem_bytes : elem_bytes);
}

double megatron_fp16_step_bytes(double grad_bytes, double elem_bytes) noexcept {
  // fp16 gradients: PyTorch's .grad, all-reduced by flattening into one tensor, scaled and
  // copied back (6 passes of grad_bytes); fp32 ones live in the contiguous buffer (zeroed,
  // then scaled: 3 passes) and are the fp32 gradient the optimizer reads, so no cast.
  const bool fp16_grads = grad_bytes < 4.0;
  const double ddp = (fp16_grads ? 6.0 : 3.0) * grad_bytes;
  const double to_fp32_grad = fp16_grads ? grad_bytes + 4.0 : 0.0;
  const double unscale = 4.0 + 4.0;
  const double norm = 4.0;
  const double fused_adam = 4.0 + 2.0 * (4.0 + 8.0);
  const double to_model = 4.0 + elem_bytes;
  return ddp + to_fp32_grad + unscale + norm + fused_adam + to_model;
}

} // namespace zerosearch
