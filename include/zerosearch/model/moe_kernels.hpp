#pragma once
// What one MoE layer launches per GPU and where its host waits on the device (issue 27;
// docs/native.md §2.2, docs/moe.md §3): the kernels of the framework's router, token
// dispatcher and experts, counted from the frameworks' code, in place of the dense MLP's, and
// the device-to-host synchronisation the dispatcher needs for its all-to-all's split sizes.
// Priced as the other kernels of a layer (analytic_layer_times: the host issues them, a layer
// takes the longer of the GPU's time and the host's), plus kHostSync_s per synchronisation.
#include "zerosearch/core/model.hpp"

namespace zerosearch {

/// One CUDA kernel launched from C++ without PyTorch's dispatch, seconds: 3.8 us, the launch
/// rate when launches set the pace (NVIDIA, "Getting Started with CUDA Graphs",
/// developer.nvidia.com/blog/cuda-graphs). Transformer Engine's grouped GEMM launches one cuBLAS
/// GEMM per expert this way (nvte_multi_stream_cublas_gemm, a loop over the groups,
/// transformer_engine/common/gemm/cublaslt_gemm.cpp).
inline constexpr double kCudaLaunch_s = 3.8e-6;

/// The GPU time lost at one device-to-host synchronisation, seconds. At the sync the host
/// waits for the device: the stream has drained when the small copy of the split sizes
/// completes, the host wakes, and the GPU idles until the next kernel it issues arrives. A
/// small cudaMemcpyAsync takes 5-7 us from submission to completion (Wu et al. 2026, DualPath,
/// arXiv:2602.21548, §5.2: 6 us taken), and the next kernel's launch kCudaLaunch_s. Charged in
/// full: nothing is queued on the GPU to hide it.
inline constexpr double kHostSync_s = 6.0e-6 + kCudaLaunch_s;

/// The MLP part of one MoE layer's forward on one GPU, beyond the attention and norms.
struct MoeLayerKernels {
  /// Kernels issued one by one through PyTorch (element-wise, reductions, copies, collectives,
  /// the device-to-host copies): kHostPerKernel_s each on the host.
  int kernels = 0;
  /// Linear module calls (the router's gate, each grouped-GEMM module, the shared expert's):
  /// kHostPerLinear_s each.
  int linear = 0;
  /// GEMMs a library launches in its own C++ loop after the module call's first: kCudaLaunch_s
  /// each.
  int loop = 0;
  /// Times the host waits for the device (a device-to-host copy it reads).
  int syncs = 0;
};

/// One MoE layer's forward, per GPU. `fused`: Megatron-Core's MoE layer (the path of dp and the
/// DeepSpeed methods: megatron/core/transformer/moe at d98e8a64, TopKRouter, the all-to-all
/// MoEAlltoAllTokenDispatcher with --moe-permute-fusion and --moe-router-fusion, TEGroupedMLP);
/// else torchtitan's (v0.2.2 torchtitan/models/moe/moe.py, TokenChoiceTopKRouter,
/// TokenReorderer, GroupedExperts with torch._grouped_mm, and
/// torchtitan/distributed/expert_parallel.py's dispatch). `etp`: the experts' tensor-parallel
/// degree (0: tp). Precondition: m.is_moe().
[[nodiscard]] MoeLayerKernels moe_layer_kernels(const ModelSpec& m, bool fused, int tp, int ep,
                                                int etp) noexcept;

/// The dense MLP an MoE layer replaces, as layer_kernels counts it: its GEMMs (fused: fc1 with
/// gate and up, fc2; eager: w1, w3, w2) and its activation kernels.
struct DenseMlpKernels {
  int gemms = 0;
  int other = 0;
};
[[nodiscard]] DenseMlpKernels dense_mlp_kernels(const ModelSpec& m, bool fused) noexcept;

} // namespace zerosearch
