#pragma once
// Hand-built inputs of the native estimator's tests (tests/model/): an H100-like GPU with its
// class prior and two small models, so the tests do not read the catalog.
#include <cstdint>

#include "zerosearch/core/model.hpp"
#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/native.hpp"

namespace zerosearch::test {

/// An H100-like GPU (1,000 TFLOPS 16-bit, 3 TB/s, NVLink 450 GB/s per direction, 8 x 400
/// Gbit/s per node) with its class prior; `fp8` gives it an fp8 peak of 2,000 TFLOPS.
inline NativeGpu h100_like(double memory_gib = 80.0, bool fp8 = true) {
  NativeGpu g;
  g.spec.name = "TestGPU";
  g.spec.has_specs = true;
  g.spec.gpu_class = "hbm-nvlink";
  g.spec.memory_gib = memory_gib;
  g.spec.peak_tflops.fp32 = 60;
  g.spec.peak_tflops.fp16 = 1000;
  g.spec.peak_tflops.bf16 = 1000;
  if (fp8) g.spec.peak_tflops.fp8 = 2000;
  g.spec.memory_GBps = 3000;
  g.spec.intra_node = {"nvlink4", true, 450};
  g.calibration = prior_calibration(g.spec);
  g.memory_gib = memory_gib;
  g.inter_node_bytes_per_s = 400e9;
  g.host_link_bytes_per_s = host_link_bytes_per_s(g.spec);
  return g;
}

/// A Llama-3-8B-shaped model with `layers` layers at 4,096 tokens.
inline ModelSpec test_llama(std::int64_t layers = 32) {
  ModelSpec m;
  m.name = "test-llama";
  m.architecture = "llama";
  m.hidden_size = 4096;
  m.num_layers = layers;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden_size = 14336;
  m.gated_mlp = true;
  m.vocab_size = 128256;
  m.sequence_length = 4096;
  m.max_position_embeddings = 8192;
  return m;
}

/// A small MoE model: 8 layers, 16 experts of width 1024, top-2, hidden 1024.
inline ModelSpec test_small_moe() {
  ModelSpec m;
  m.name = "test-moe";
  m.architecture = "mixtral";
  m.hidden_size = 1024;
  m.num_layers = 8;
  m.num_attention_heads = 16;
  m.num_key_value_heads = 4;
  m.head_dim = 64;
  m.ffn_hidden_size = 4096;
  m.gated_mlp = true;
  m.vocab_size = 32000;
  m.sequence_length = 2048;
  m.max_position_embeddings = 4096;
  m.num_experts = 16;
  m.experts_per_token = 2;
  m.moe_ffn_hidden_size = 1024;
  return m;
}

/// The hand-worked layer of the analytic tests: hidden 4, sequence 8, 2 heads, ffn 8, a GPT-style
/// (ungated) MLP, vocabulary 16, one layer.
inline ModelSpec hand_worked_layer_model() {
  ModelSpec m;
  m.name = "tiny";
  m.hidden_size = 4;
  m.sequence_length = 8;
  m.num_layers = 1;
  m.num_attention_heads = 2;
  m.ffn_hidden_size = 8;
  m.vocab_size = 16;
  m.gated_mlp = false;
  return m;
}

/// A GPU of 1 TFLOP/s (fp32 and bf16) and 1 TB/s, for hand-worked figures.
inline GpuSpec unit_gpu() {
  GpuSpec g;
  g.name = "unit";
  g.has_specs = true;
  g.peak_tflops.fp32 = 1.0;
  g.peak_tflops.bf16 = 1.0;
  g.memory_GBps = 1000.0;
  return g;
}

/// Full efficiency everywhere and no per-layer overhead: times are FLOPs and bytes at the peaks.
inline AnalyticCalibration ideal_calibration() {
  AnalyticCalibration c;
  c.gemm_e_max = 1.0;
  c.gemm_x0_flops = 1e-3;
  c.attention_efficiency = 1.0;
  c.memory_efficiency = 1.0;
  c.layer_overhead_s = 0.0;
  return c;
}

/// GPT-2 medium's shape (the AMP paper's model): 24 layers, hidden 1024, 16 heads, FFN 4096,
/// 1,024 tokens, tied embeddings.
inline ModelSpec gpt2_medium() {
  ModelSpec m;
  m.name = "test-gpt2-medium";
  m.architecture = "gpt2";
  m.hidden_size = 1024;
  m.num_layers = 24;
  m.num_attention_heads = 16;
  m.num_key_value_heads = 16;
  m.head_dim = 64;
  m.ffn_hidden_size = 4096;
  m.vocab_size = 50304;
  m.sequence_length = 1024;
  m.max_position_embeddings = 1024;
  m.tied_embeddings = true;
  return m;
}

} // namespace zerosearch::test
