// float32 throughout, in the original's evaluation order (its figures are torch float32
// tensors), so that stages close to their GPU's limit fall on the same side of it.
#include "zerosearch/model/memory.hpp"

#include "zerosearch/model/comm.hpp"

namespace zerosearch {

namespace {

float fl(std::int64_t v) noexcept { return static_cast<float>(v); }

/// The per-layer terms and the weight formula of one design point. A stage's figure is its
/// layers' terms accumulated in layer order (params = params + term), then weight(params) +
/// activation: every caller accumulates the same way, so all agree to the bit.
class StageMemoryModel {
public:
  StageMemoryModel(const ModelSpec& model, const DesignPoint& p, int gpus_per_node,
                   int global_batch)
      : p_(p), h_(fl(model.hidden_size)), v_(fl(model.vocab_size)),
        s_(fl(model.sequence_length)), a_(fl(model.num_attention_heads)),
        d_(fl(model.ffn_hidden_size)), tp_(fl(p.tp)), pp_(fl(p.pp)), dp_(fl(p.dp)), b_(fl(p.mbs)),
        gpus_per_node_(static_cast<float>(gpus_per_node)),
        llama_(model.memory_formula == MemoryFormula::llama),
        last_layer_(static_cast<int>(model.num_layers) + 1) {
    // The original computes gbs / (dp * mbs) as a float32 tensor.
    const float micro_batches = torch_rdiv(fl(global_batch), dp_ * b_);
    in_flight_ = micro_batches > pp_ ? pp_ : micro_batches;
  }

  /// Adds layer `layer`'s parameters and activations to the running sums.
  void add_layer(int layer, float& params, float& activation) const noexcept {
    const float h = h_, v = v_, s = s_, a = a_, d = d_, tp = tp_, pp = pp_, b = b_;
    if (layer == 0) {
      params = params + (h * v) / tp;
      if (!llama_) {
        activation = activation + (s * b * h * pp * in_flight_) / tp;
      }
    } else if (layer == last_layer_) {
      params = params + (h * v) / tp;
      if (!llama_) {
        activation = activation + ((4.0F * s * b * h) / tp + (4.0F * s * b * v) / tp);
      }
    } else if (llama_) {
      params = params + ((h * 1.0F) + (h * s) * 3.0F / tp + (h * 1.0F) + (h * d * 3.0F) / tp);
      const float kv_value = 8.0F;
      const float act = 10.0F * s * b * h + torch_rdiv(16.0F, tp) * s * b * h +
                        (2.0F * s * b * d / tp) + torch_rdiv(5.0F, tp) * kv_value * s * s * b;
      activation = activation + act * (1.0F + (pp - 1.0F) / (pp * 2.0F));
    } else {
      params = params + (12.0F * (h * h)) / tp;
      activation = activation + (s * b * in_flight_ * h) *
                                    (10.0F + torch_rdiv(24.0F, tp) + 5.0F * (a * s) / (h * tp));
    }
  }

  /// The stage's figure in GiB from its accumulated sums.
  [[nodiscard]] float gib(float params, float activation) const noexcept {
    const float h = h_, v = v_, dp = dp_;
    float weight = 0.0F;
    if (p_.dp > 1) {
      switch (p_.method) {
      case DpMethod::fsdp: weight = params * (4.0F + torch_rdiv(16.0F, dp)); break;
      case DpMethod::zero1:
      case DpMethod::zero2: weight = 4.0F * params + (16.0F * params / dp); break;
      case DpMethod::zero3:
        weight = 4.0F * (h * v) * gpus_per_node_ * 1.5F + (18.0F * params / dp);
        break;
      case DpMethod::dp:
      case DpMethod::zero0: weight = params * 18.0F; break;
      }
    } else {
      weight = params * 18.0F;
    }
    return (weight + activation) / 1024.0F / 1024.0F / 1024.0F;
  }

private:
  DesignPoint p_;
  float h_, v_, s_, a_, d_, tp_, pp_, dp_, b_, gpus_per_node_;
  float in_flight_ = 0.0F;
  bool llama_;
  int last_layer_;
};

} // namespace

MemoryEstimate estimate_memory(const ModelSpec& model, const DesignPoint& p,
                               const std::vector<int>& partition,
                               const std::vector<float>& stage_limit_gib, int gpus_per_node,
                               int global_batch) {
  const StageMemoryModel mm(model, p, gpus_per_node, global_batch);
  MemoryEstimate out;
  int first = 0;
  for (std::size_t stage = 0; stage < partition.size(); ++stage) {
    const int end = first + partition[stage];
    float params = 0.0F;
    float activation = 0.0F;
    for (int layer = first; layer < end; ++layer) {
      mm.add_layer(layer, params, activation);
    }
    first = end;
    const float gib = mm.gib(params, activation);
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

std::vector<float> stage_memory_gib(const ModelSpec& model, const DesignPoint& p,
                                    const std::vector<int>& partition, int gpus_per_node,
                                    int global_batch) {
  const StageMemoryModel mm(model, p, gpus_per_node, global_batch);
  std::vector<float> out;
  int first = 0;
  for (const int count : partition) {
    float params = 0.0F;
    float activation = 0.0F;
    for (int layer = first; layer < first + count; ++layer) {
      mm.add_layer(layer, params, activation);
    }
    first += count;
    out.push_back(mm.gib(params, activation));
  }
  return out;
}

StageMemoryTable::StageMemoryTable(const ModelSpec& model, const DesignPoint& p,
                                   int gpus_per_node, int global_batch)
    : layers_(model.pipeline_layers()) {
  const StageMemoryModel mm(model, p, gpus_per_node, global_batch);
  const auto n = static_cast<std::size_t>(layers_);
  gib_.assign(n * (n + 1), 0.0F);
  for (int first = 0; first < layers_; ++first) {
    float params = 0.0F;
    float activation = 0.0F;
    for (int end = first + 1; end <= layers_; ++end) {
      mm.add_layer(end - 1, params, activation);
      gib_[static_cast<std::size_t>(first) * (n + 1) + static_cast<std::size_t>(end)] =
          mm.gib(params, activation);
    }
  }
}

int StageMemoryTable::max_layers(int first, float limit_gib) const noexcept {
  // The figure grows with every layer added, so the layers that fit are a prefix.
  int count = 0;
  while (first + count < layers_ && gib(first, count + 1) <= limit_gib) {
    ++count;
  }
  return count;
}

} // namespace zerosearch
