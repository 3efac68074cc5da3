// float32 throughout, in the original's evaluation order (its figures are torch float32
// tensors), so that stages close to their GPU's limit fall on the same side of it.
#include "zerosearch/memory.hpp"

#include "zerosearch/comm.hpp"

namespace zerosearch {

namespace {
float fl(std::int64_t v) noexcept { return static_cast<float>(v); }
} // namespace

MemoryEstimate estimate_memory(const ModelSpec& model, const DesignPoint& p,
                               const std::vector<int>& partition,
                               const std::vector<float>& stage_limit_gib, int gpus_per_node,
                               int global_batch) {
  const float h = fl(model.hidden_size);
  const float v = fl(model.vocab_size);
  const float s = fl(model.sequence_length);
  const float a = fl(model.num_attention_heads);
  const float d = fl(model.ffn_hidden_size);
  const float tp = fl(p.tp);
  const float pp = fl(p.pp);
  const float dp = fl(p.dp);
  const float b = fl(p.mbs);
  // The original computes gbs / (dp * mbs) as a float32 tensor.
  const float micro_batches = torch_rdiv(fl(global_batch), dp * b);
  const float in_flight = micro_batches > pp ? pp : micro_batches;
  const bool llama = model.memory_formula == MemoryFormula::llama;
  const int last_layer = static_cast<int>(model.num_layers) + 1;

  MemoryEstimate out;
  int first = 0;
  for (std::size_t stage = 0; stage < partition.size(); ++stage) {
    const int end = first + partition[stage];
    float params = 0.0F;
    float activation = 0.0F;
    for (int layer = first; layer < end; ++layer) {
      if (layer == 0) {
        params = params + (h * v) / tp;
        if (!llama) {
          activation = activation + (s * b * h * pp * in_flight) / tp;
        }
      } else if (layer == last_layer) {
        params = params + (h * v) / tp;
        if (!llama) {
          activation = activation + ((4.0F * s * b * h) / tp + (4.0F * s * b * v) / tp);
        }
      } else if (llama) {
        params = params + ((h * 1.0F) + (h * s) * 3.0F / tp + (h * 1.0F) + (h * d * 3.0F) / tp);
        const float kv_value = 8.0F;
        const float act = 10.0F * s * b * h + torch_rdiv(16.0F, tp) * s * b * h + (2.0F * s * b * d / tp) +
                          torch_rdiv(5.0F, tp) * kv_value * s * s * b;
        activation = activation + act * (1.0F + (pp - 1.0F) / (pp * 2.0F));
      } else {
        params = params + (12.0F * (h * h)) / tp;
        activation = activation + (s * b * in_flight * h) *
                                      (10.0F + torch_rdiv(24.0F, tp) + 5.0F * (a * s) / (h * tp));
      }
    }
    first = end;

    float weight = 0.0F;
    if (p.dp > 1) {
      switch (p.method) {
      case DpMethod::fsdp: weight = params * (4.0F + torch_rdiv(16.0F, dp)); break;
      case DpMethod::zero1:
      case DpMethod::zero2: weight = 4.0F * params + (16.0F * params / dp); break;
      case DpMethod::zero3:
        weight = 4.0F * (h * v) * static_cast<float>(gpus_per_node) * 1.5F + (18.0F * params / dp);
        break;
      case DpMethod::dp:
      case DpMethod::zero0: weight = params * 18.0F; break;
      }
    } else {
      weight = params * 18.0F;
    }
    const float gib = (weight + activation) / 1024.0F / 1024.0F / 1024.0F;
    out.stage_gib.push_back(gib);
    if (gib > stage_limit_gib[stage]) {
      out.oom = true;
      out.gpumem_gib = gib;
      return out;
    }
  }
  for (const float g : out.stage_gib) {
    out.gpumem_gib = std::max(out.gpumem_gib, g);
  }
  return out;
}

} // namespace zerosearch
