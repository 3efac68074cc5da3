// --master_weights (docs/native.md §3): the optimizer's states per parameter, the memory of every
// data-parallel method and offload with and without fp32 master weights, and the optimizer
// step's bytes, against byte counts worked by hand.
#include <catch2/catch.hpp>

#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/model/optimizer_states.hpp"
#include "native_fixtures.hpp"

using namespace zerosearch;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

NativeContext context(bool master_weights) {
  NativeContext c;
  c.model = test::test_llama(8);
  c.gpus_per_node = 8;
  c.gpus = {test::h100_like()};
  c.settings.master_weights = master_weights;
  return c;
}

DesignPoint point(DpMethod method, int dp) {
  DesignPoint p;
  p.method = method;
  p.tp = 1;
  p.pp = 1;
  p.dp = dp;
  p.mbs = 1;
  p.num_micro_batches = 1;
  return p;
}

NativeEstimate estimate(bool master_weights, const DesignPoint& p) {
  const NativeContext c = context(master_weights);
  return native_estimate(c, p, native_placement(c, p, {0}));
}

/// Bytes per parameter of one GPU's model states (weights, gradients, optimizer) and the host's
/// (offload), over `params` parameters.
struct PerParam {
  double weights, gradients, optimizer, host;
};
PerParam per_param(bool master_weights, const DesignPoint& p, double params) {
  const NativeEstimate e = estimate(master_weights, p);
  const NativeMemory& m = e.stages[0].memory;
  // host_gib_per_node: the states of the node's 8 GPUs.
  return {m.weights * kGiB / params, m.gradients * kGiB / params, m.optimizer * kGiB / params,
          e.host_gib_per_node * kGiB / 8.0 / params};
}

} // namespace

TEST_CASE("optimizer states: fp32 master and moments, or pure 16-bit training's",
          "[native][master_weights]") {
  const NativeTraits& megatron = framework_params(DpMethod::dp);
  const NativeTraits& deepspeed = framework_params(DpMethod::zero1);
  const NativeTraits& fsdp = framework_params(DpMethod::fsdp);
  // Mixed precision: 4 (fp32 master) + 8 (fp32 m, v) = 12 B, fp32 gradients on the host.
  const OptimizerStateBytes mixed = optimizer_state_bytes(megatron, 2.0, true);
  CHECK(mixed.master == 4.0);
  CHECK(mixed.moments == 8.0);
  CHECK(mixed.total() == 12.0);
  CHECK(mixed.host_gradient == 4.0);
  // fp32 training: the parameters are the master; m and v 8 B, with or without the flag.
  for (const bool mw : {true, false}) {
    const OptimizerStateBytes fp32 = optimizer_state_bytes(megatron, 4.0, mw);
    CHECK(fp32.master == 0.0);
    CHECK(fp32.total() == 8.0);
  }
  // Pure bf16: torch's AdamW updates the bf16 parameters, m and v in bf16: 2 + 2 = 4 B.
  const OptimizerStateBytes torch = optimizer_state_bytes(megatron, 2.0, false);
  CHECK(torch.master == 0.0);
  CHECK(torch.moments == 4.0);
  CHECK(torch.host_gradient == 2.0);
  CHECK(optimizer_state_bytes(fsdp, 2.0, false).total() == 4.0);
  // DeepSpeed's bf16_master_weights_and_grads clones its partition in bf16: 2 + 4 = 6 B.
  const OptimizerStateBytes ds = optimizer_state_bytes(deepspeed, 2.0, false);
  CHECK(ds.master == 2.0);
  CHECK(ds.total() == 6.0);
  // The step: gradient read, master and moments read and written, 16-bit parameters written
  // (and read, where the optimizer updates them in place).
  CHECK(optimizer_step_bytes(4.0, 2.0, mixed) == 4.0 + 2 * 12.0 + 2.0);        // 30
  CHECK(optimizer_step_bytes(4.0, 4.0, optimizer_state_bytes(megatron, 4.0, true)) ==
        4.0 + 2 * 8.0 + 4.0);                                                   // 24, as before
  CHECK(optimizer_step_bytes(2.0, 2.0, torch) == 2.0 + 2 * 4.0 + 2 * 2.0);     // 14
  CHECK(optimizer_step_bytes(2.0, 2.0, ds) == 2.0 + 2 * 6.0 + 2.0);            // 16
}

TEST_CASE("Megatron-LM's 2021 fp16 step: every pass over the gradients and parameters",
          "[native][master_weights]") {
  // fp16 .grad (2 B): DDP flatten 2 + 2, /= dp 2 + 2, copy back 2 + 2; .float() 2 + 4; unscale
  // 4 + 4; l2 norm 4; FusedAdam 4 + 2 x (4 + 8); master to the fp16 parameters 4 + 2.
  CHECK(megatron_fp16_step_bytes(2.0, 2.0) == 12.0 + 6.0 + 8.0 + 4.0 + 28.0 + 6.0);
  CHECK(megatron_fp16_step_bytes(2.0, 2.0) == 64.0);
  // --accumulate-allreduce-grads-in-fp32: the contiguous fp32 buffer, zero_() 4 and /= dp
  // 4 + 4; .float() returns main_grad itself (no copy): 12 + 8 + 4 + 28 + 6 = 58.
  CHECK(megatron_fp16_step_bytes(4.0, 2.0) == 12.0 + 0.0 + 8.0 + 4.0 + 28.0 + 6.0);
  CHECK(megatron_fp16_step_bytes(4.0, 2.0) == 58.0);
  // Against the states-only count of the other frameworks: 2 + 24 + 2 = 28, 36 fewer.
  CHECK(megatron_fp16_step_bytes(2.0, 2.0) -
            optimizer_step_bytes(
                2.0, 2.0, optimizer_state_bytes(framework_params(DpMethod::dp), 2.0, true)) ==
        36.0);
}

TEST_CASE("pure 16-bit training keeps and reduces gradients in the training dtype",
          "[native][master_weights]") {
  NativeSettings pure;
  pure.master_weights = false;
  // Megatron-LM's fp32 main_grad (4 B) becomes the bf16 gradient (PyTorch DDP on a bf16 model).
  CHECK(framework_params(DpMethod::dp, Dtype::bf16, NativeSettings{}).grad_bytes == 4.0);
  CHECK(framework_params(DpMethod::dp, Dtype::bf16, pure).grad_bytes == 2.0);
  CHECK(framework_params(DpMethod::dp, Dtype::bf16, pure).grad_reduce_bytes == 2.0);
  // FSDP2: bf16 gradient shards, reduced in float32 all the same.
  CHECK(framework_params(DpMethod::fsdp, Dtype::bf16, pure).grad_bytes == 2.0);
  CHECK(framework_params(DpMethod::fsdp, Dtype::bf16, pure).grad_reduce_bytes == 4.0);
  CHECK(framework_params(DpMethod::zero1, Dtype::bf16, pure).grad_bytes == 2.0);
  // fp32 training is unchanged.
  CHECK(framework_params(DpMethod::dp, Dtype::fp32, pure).grad_bytes == 4.0);
  // --grad_reduce_fp32 on keeps Megatron-LM's buffer fp32; FSDP2's shards stay bf16.
  pure.grad_reduce_fp32 = true;
  CHECK(framework_params(DpMethod::dp, Dtype::bf16, pure).grad_bytes == 4.0);
  CHECK(framework_params(DpMethod::fsdp, Dtype::bf16, pure).grad_bytes == 2.0);
}

TEST_CASE("memory per GPU with and without fp32 master weights, every method",
          "[native][master_weights]") {
  // P parameters, all on the one stage (pp 1, tp 1): the 16-bit weights are 2P bytes.
  const double P = static_cast<double>(total_parameters(test::test_llama(8)));
  REQUIRE(estimate(true, point(DpMethod::dp, 8)).stages[0].memory.weights * kGiB ==
          Approx(2.0 * P));
  const double d = 8.0;
  SECTION("dp (Megatron-LM DDP / PyTorch DDP): nothing sharded") {
    const PerParam on = per_param(true, point(DpMethod::dp, 8), P);
    const PerParam off = per_param(false, point(DpMethod::dp, 8), P);
    CHECK(on.weights == Approx(2.0));
    CHECK(on.gradients == Approx(4.0));  // fp32 main_grad
    CHECK(on.optimizer == Approx(12.0)); // fp32 master, m, v
    CHECK(off.weights == Approx(2.0));
    CHECK(off.gradients == Approx(2.0)); // bf16 gradients
    CHECK(off.optimizer == Approx(4.0)); // bf16 m, v: 16 B -> 8 B in all
  }
  SECTION("zero1: the states over dp; DeepSpeed's bf16 master partition") {
    const PerParam on = per_param(true, point(DpMethod::zero1, 8), P);
    const PerParam off = per_param(false, point(DpMethod::zero1, 8), P);
    CHECK(on.gradients == Approx(2.0));
    CHECK(on.optimizer == Approx(12.0 / d));
    CHECK(off.gradients == Approx(2.0));
    CHECK(off.optimizer == Approx(6.0 / d)); // 2 (bf16 master) + 4 (bf16 m, v)
  }
  SECTION("zero2 and zero3: gradients (and weights) over dp too") {
    const PerParam z2 = per_param(false, point(DpMethod::zero2, 8), P);
    CHECK(z2.gradients == Approx(2.0 / d));
    CHECK(z2.optimizer == Approx(6.0 / d));
    const PerParam z3 = per_param(false, point(DpMethod::zero3, 8), P);
    CHECK(z3.weights == Approx(2.0 / d));
    CHECK(z3.optimizer == Approx(6.0 / d));
  }
  SECTION("fsdp: the sharded parameters are the master, bf16 without one") {
    const PerParam on = per_param(true, point(DpMethod::fsdp, 8), P);
    const PerParam off = per_param(false, point(DpMethod::fsdp, 8), P);
    CHECK(on.weights == Approx(4.0 / d));
    CHECK(on.gradients == Approx(4.0 / d));
    CHECK(on.optimizer == Approx(8.0 / d));
    CHECK(off.weights == Approx(2.0 / d));
    CHECK(off.gradients == Approx(2.0 / d));
    CHECK(off.optimizer == Approx(4.0 / d));
  }
  SECTION("offload: the host holds the master, m, v and gradients of the partition") {
    DesignPoint p = point(DpMethod::zero2, 8);
    p.offload = Offload::optimizer;
    const PerParam on = per_param(true, p, P);
    const PerParam off = per_param(false, p, P);
    CHECK(on.optimizer == 0.0);
    CHECK(off.optimizer == 0.0);
    CHECK(on.host == Approx((4.0 + 8.0 + 4.0) / d));  // fp32 master, m, v, gradients
    CHECK(off.host == Approx((2.0 + 4.0 + 2.0) / d)); // bf16 master, m, v, gradients
  }
  SECTION("the optimizer step reads and writes fewer bytes") {
    const NativeEstimate on = estimate(true, point(DpMethod::dp, 8));
    const NativeEstimate off = estimate(false, point(DpMethod::dp, 8));
    // Memory-bound here: 30 B per parameter with mixed precision, 14 B in pure bf16.
    CHECK(off.stages[0].optimizer_s == Approx(on.stages[0].optimizer_s * 14.0 / 30.0));
  }
}
