#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/model/moe.hpp"
#include "zerosearch/model/native.hpp"
#include "native_fixtures.hpp"

using namespace zerosearch;

namespace {

NativeGpu gpu(double memory_gib = 80.0, bool fp8 = true) {
  return test::h100_like(memory_gib, fp8);
}

ModelSpec llama(std::int64_t layers = 32) { return test::test_llama(layers); }

NativeContext context(const ModelSpec& m, std::vector<NativeGpu> gpus, int gpn = 8) {
  NativeContext c;
  c.model = m;
  c.gpus_per_node = gpn;
  c.gpus = std::move(gpus);
  return c;
}

DesignPoint point(DpMethod method, int tp, int pp, int dp, int mbs, int gbs) {
  DesignPoint p;
  p.method = method;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.mbs = mbs;
  p.num_micro_batches = gbs / (dp * mbs);
  return p;
}

NativePlacement same_node_type(const NativeContext& c, const DesignPoint& p, int nodes) {
  return native_placement(c, p, std::vector<int>(static_cast<std::size_t>(nodes), 0));
}

} // namespace

TEST_CASE("1F1B: m micro-batches through the slowest stage plus the fill and drain",
          "[native]") {
  const NativeContext c = context(llama(), {gpu()});
  const DesignPoint p = point(DpMethod::zero1, 1, 4, 2, 1, 32); // 16 micro-batches
  const NativeEstimate e = native_estimate(c, p, same_node_type(c, p, 1));
  double sum = 0.0, worst = 0.0, sends = 0.0, worst_send = 0.0;
  for (const NativeStage& s : e.stages) {
    sum += s.forward_s + s.backward_s;
    worst = std::max(worst, s.forward_s + s.backward_s);
    sends += s.send_s;
    worst_send = std::max(worst_send, s.send_s);
  }
  CHECK(e.pipeline_s == Approx(16 * worst + (sum - worst) + 2 * sends + 2 * 15 * worst_send));
  CHECK(e.step_s == Approx(e.pipeline_s + e.dp_sync_s + e.embedding_sync_s + e.optimizer_s));
  // The last stage carries the LM head over a 128k vocabulary: it is the slowest.
  CHECK(e.stages.back().forward_s > e.stages[1].forward_s);
}

TEST_CASE("interleaving divides the fill and drain by the virtual stages", "[native]") {
  const NativeContext c = context(llama(), {gpu()});
  DesignPoint p = point(DpMethod::zero1, 1, 4, 2, 1, 16); // 8 micro-batches: a large bubble
  const NativeEstimate plain = native_estimate(c, p, same_node_type(c, p, 1));
  p.virtual_stages = 2;
  REQUIRE(native_invalid_reason(c, p, same_node_type(c, p, 1)).empty());
  const NativeEstimate inter = native_estimate(c, p, same_node_type(c, p, 1));
  CHECK(inter.pipeline_s < plain.pipeline_s);
  // ... and keeps more activations in flight (Megatron-LM's 1 + (p - 1) / (p v)).
  CHECK(inter.stages[0].in_flight == Approx(4 * (1 + 3.0 / 8)));
  CHECK(inter.stages[0].memory.activations > plain.stages[0].memory.activations);
}

TEST_CASE("interleaved chunks: equal when they divide the layers, torchtitan's split otherwise",
          "[native]") {
  CHECK(interleaved_chunks(32, 4, 2) == std::vector<int>(8, 4));
  // Llama-3.1-405B over pp 8 x 2 stages per rank (torchtitan 9dec370: 7, then 8 x 14, then 7).
  std::vector<int> expected(16, 8);
  expected.front() = 7;
  expected.back() = 7;
  CHECK(interleaved_chunks(126, 8, 2) == expected);
  for (int layers = 1; layers <= 130; ++layers) {
    for (const auto& [pp, v] : {std::pair{2, 2}, std::pair{4, 3}, std::pair{8, 2}}) {
      if (layers < pp * v) continue;
      const std::vector<int> c = interleaved_chunks(layers, pp, v);
      INFO(layers << " layers, pp " << pp << ", v " << v);
      CHECK(static_cast<int>(c.size()) == pp * v);
      CHECK(std::accumulate(c.begin(), c.end(), 0) == layers);
      CHECK(*std::min_element(c.begin(), c.end()) >= 1);
    }
  }
  // interleaved_chunk gives one chunk of the list without building it: 10 layers in 4 chunks
  // are 2, 3, 3, 2 (extra 2: chunks 1 and 2 one more, nothing left for the last); 11 in 2 are
  // 5, 6 (no middle chunk: the last takes the remainder); 7 in 1 is 7.
  CHECK(interleaved_chunk(10, 4, 0) == 2);
  CHECK(interleaved_chunk(10, 4, 1) == 3);
  CHECK(interleaved_chunk(10, 4, 2) == 3);
  CHECK(interleaved_chunk(10, 4, 3) == 2);
  CHECK(interleaved_chunk(11, 2, 0) == 5);
  CHECK(interleaved_chunk(11, 2, 1) == 6);
  CHECK(interleaved_chunk(7, 1, 0) == 7);
  for (int layers = 0; layers <= 130; ++layers) {
    for (int total = 1; total <= 20; ++total) {
      const std::vector<int> c = interleaved_chunks(layers, total, 1);
      for (int k = 0; k < total; ++k) {
        INFO(layers << " layers, " << total << " chunks, chunk " << k);
        CHECK(interleaved_chunk(layers, total, k) == c[static_cast<std::size_t>(k)]);
      }
    }
  }
  // torchtitan (fsdp) interleaves uneven chunks; Megatron-LM and DeepSpeed need equal ones.
  NativeContext c = context(llama(30), {gpu()});
  DesignPoint p = point(DpMethod::fsdp, 1, 4, 2, 1, 16);
  p.virtual_stages = 2;
  CHECK(native_invalid_reason(c, p, same_node_type(c, p, 1)).empty());
  const NativeEstimate e = native_estimate(c, p, same_node_type(c, p, 1));
  // chunks 3, 4, 4, 4, 4, 4, 4, 3: rank r holds chunks r and r + 4 (+ embedding, post-process)
  CHECK(e.partition == std::vector<int>{3 + 4 + 1, 4 + 4, 4 + 4, 4 + 3 + 1});
  // Megatron-LM counts the embedding and the loss as a layer each when pp x v divides 30 + 2
  // (--account-for-embedding/loss-in-pipeline-split): the same chunks, 3 at either end.
  p.method = DpMethod::zero1;
  CHECK(interleaved_split_accounts(30, 4, 2) == 2);
  CHECK(native_invalid_reason(c, p, same_node_type(c, p, 1)).empty());
  CHECK(native_estimate(c, p, same_node_type(c, p, 1)).partition == e.partition);
  p.virtual_stages = 3; // 12 chunks divide neither 30, 31 nor 32
  CHECK(interleaved_split_accounts(30, 4, 3) == -1);
  CHECK_THAT(native_invalid_reason(c, p, same_node_type(c, p, 1)),
             Catch::Contains("pp x virtual stages must divide them"));
  // Megatron-LM (dp) takes uneven chunks as --pipeline-model-parallel-layout: interleaved_chunks
  // 2, six of 3, five of 2 (rank r: chunks r, r + 4, r + 8; DeepSpeed needs equal chunks)
  p.method = DpMethod::dp;
  CHECK(native_invalid_reason(c, p, same_node_type(c, p, 1)).empty());
  CHECK(native_estimate(c, p, same_node_type(c, p, 1)).partition ==
        std::vector<int>{2 + 3 + 2 + 1, 3 + 3 + 2, 3 + 3 + 2, 3 + 2 + 2 + 1});
  p.method = DpMethod::fsdp;
  p.virtual_stages = 8; // 32 chunks for 30 layers
  p.num_micro_batches = 8;
  CHECK_THAT(native_invalid_reason(c, p, same_node_type(c, p, 1)),
             Catch::Contains("each chunk needs a layer"));
  // Megatron-LM accounts for the embedding and the loss: 32 chunks for 30 layers are the
  // embedding alone, 30 chunks of one layer and the loss alone (layout E|t|...|t|L); rank 0
  // holds chunks 0, 4, ..., 28: 7 layers and the embedding, rank 3 7 layers and the loss.
  p.method = DpMethod::zero1;
  REQUIRE(native_invalid_reason(c, p, same_node_type(c, p, 1)).empty());
  CHECK(interleaved_chunks(30, 4, 8).front() == 0);
  CHECK(interleaved_chunks(30, 4, 8).back() == 0);
  CHECK(native_estimate(c, p, same_node_type(c, p, 1)).partition ==
        std::vector<int>{7 + 1, 8, 8, 7 + 1});
  p.method = DpMethod::dp; // Megatron-LM's layout takes uneven chunks, but not empty ones
  p.virtual_stages = 9;    // 36 chunks: 30 layers and 2 ends leave 4 chunks empty
  p.num_micro_batches = 8;
  CHECK_THAT(native_invalid_reason(c, p, same_node_type(c, p, 1)),
             Catch::Contains("each chunk needs a layer, or the embedding or the loss alone"));
}

TEST_CASE("1F1B stage j holds min(pp - j, m) micro-batches of activations", "[native]") {
  const NativeContext c = context(llama(), {gpu()});
  const DesignPoint p = point(DpMethod::zero1, 1, 4, 2, 1, 32);
  const NativeEstimate e = native_estimate(c, p, same_node_type(c, p, 1));
  for (int j = 0; j < 4; ++j) {
    CHECK(e.stages[static_cast<std::size_t>(j)].in_flight == 4 - j);
  }
  const DesignPoint few = point(DpMethod::zero1, 1, 4, 2, 1, 4); // 2 micro-batches
  const NativeEstimate f = native_estimate(c, few, same_node_type(c, few, 1));
  CHECK(f.stages[0].in_flight == 2);
}

TEST_CASE("ZeRO stages shard what they promise", "[native]") {
  const NativeContext c = context(llama(), {gpu()});
  const auto stage0 = [&](DpMethod m) {
    const DesignPoint p = point(m, 1, 1, 8, 1, 8);
    return native_estimate(c, p, same_node_type(c, p, 1)).stages[0].memory;
  };
  const NativeMemory z0 = stage0(DpMethod::zero0), z1 = stage0(DpMethod::zero1),
                     z2 = stage0(DpMethod::zero2), z3 = stage0(DpMethod::zero3);
  const double params = static_cast<double>(total_parameters(llama()));
  const double gib = 1024.0 * 1024 * 1024;
  CHECK(z0.weights == Approx(2 * params / gib));
  CHECK(z0.optimizer == Approx(12 * params / gib));
  CHECK(z1.optimizer == Approx(z0.optimizer / 8));
  CHECK(z1.gradients == Approx(z0.gradients));
  CHECK(z2.gradients == Approx(z0.gradients / 8));
  CHECK(z3.weights == Approx(z0.weights / 8));
  CHECK(z3.buffers > z0.buffers); // gathered layers
}

TEST_CASE("Megatron-LM reduces fp16 gradients in fp16 and bf16 gradients in fp32", "[native]") {
  const NativeContext c = context(llama(), {gpu()});
  const auto stage0 = [&](DpMethod m, Dtype d) {
    DesignPoint p = point(m, 1, 1, 8, 1, 8);
    p.dtype = d;
    return native_estimate(c, p, same_node_type(c, p, 1)).stages[0];
  };
  const double params = static_cast<double>(total_parameters(llama()));
  const double gib = 1024.0 * 1024 * 1024;
  const NativeStage bf16 = stage0(DpMethod::dp, Dtype::bf16);
  const NativeStage fp16 = stage0(DpMethod::dp, Dtype::fp16);
  CHECK(bf16.memory.gradients == Approx(4 * params / gib)); // fp32 main_grad
  CHECK(fp16.memory.gradients == Approx(2 * params / gib));
  CHECK(fp16.dp_sync_s < 0.6 * bf16.dp_sync_s); // half the bytes, the same latency terms
  CHECK(framework_params(DpMethod::dp, Dtype::fp16).grad_reduce_bytes == 2.0);
  CHECK(framework_params(DpMethod::dp, Dtype::bf16).grad_reduce_bytes == 4.0);
  // Frameworks that do not follow the dtype keep their bytes.
  CHECK(framework_params(DpMethod::fsdp, Dtype::fp16).grad_reduce_bytes == 4.0);
  CHECK(stage0(DpMethod::zero0, Dtype::fp16).memory.gradients ==
        Approx(stage0(DpMethod::zero0, Dtype::bf16).memory.gradients));
}

TEST_CASE("a reduction in fp32 (grad_reduce_fp32) sets the reduction's bytes, and the buffer's where it is one",
          "[native]") {
  NativeSettings on, off;
  on.grad_reduce_fp32 = true;
  off.grad_reduce_fp32 = false;
  // DeepSpeed (fp32_allreduce): an fp32 copy for the all-reduce, 16-bit gradients kept.
  CHECK(framework_params(DpMethod::zero0, Dtype::fp16, on).grad_reduce_bytes == 4.0);
  CHECK(framework_params(DpMethod::zero0, Dtype::fp16, on).grad_bytes == 2.0);
  CHECK(framework_params(DpMethod::zero1, Dtype::bf16, NativeSettings{}).grad_reduce_bytes == 2.0);
  // Megatron-LM: the gradient buffer has the reduction's dtype (--grad-reduce-in-bf16).
  CHECK(framework_params(DpMethod::dp, Dtype::bf16, off).grad_reduce_bytes == 2.0);
  CHECK(framework_params(DpMethod::dp, Dtype::bf16, off).grad_bytes == 2.0);
  CHECK(framework_params(DpMethod::dp, Dtype::fp16, on).grad_bytes == 4.0);
  // fp32 training has nothing to widen.
  CHECK(framework_params(DpMethod::dp, Dtype::fp32, off).grad_reduce_bytes == 4.0);
  // In an estimate: ZeRO-0's all-reduce moves twice the bytes, the memory stays.
  NativeContext c = context(llama(), {gpu()});
  DesignPoint p = point(DpMethod::zero0, 1, 1, 16, 1, 16); // dp over 4 nodes
  p.dtype = Dtype::fp16;
  const NativeStage plain = native_estimate(c, p, same_node_type(c, p, 4)).stages[0];
  c.settings.grad_reduce_fp32 = true;
  const NativeStage wide = native_estimate(c, p, same_node_type(c, p, 4)).stages[0];
  CHECK(wide.dp_sync_s > 1.8 * plain.dp_sync_s);
  CHECK(wide.dp_sync_s < 2.0 * plain.dp_sync_s); // the latency terms do not double
  CHECK(wide.memory.gradients == plain.memory.gradients);
  // torchtitan's FSDP2 reduces in float32 only.
  c.settings.grad_reduce_fp32 = false;
  p.method = DpMethod::fsdp;
  CHECK(native_invalid_reason(c, p, same_node_type(c, p, 4)).find("--grad_reduce_fp32 off with fsdp") !=
        std::string::npos);
}

TEST_CASE("an overlapped gradient reduction hides behind backward (--overlap_grad_reduce)",
          "[native]") {
  NativeContext c = context(llama(), {gpu()});
  const DesignPoint p = point(DpMethod::dp, 1, 2, 16, 1, 16); // dp over 4 nodes
  const auto sync = [&](std::optional<bool> overlap) {
    c.settings.overlap_grad_reduce = overlap;
    const NativeEstimate e = native_estimate(c, p, same_node_type(c, p, 4));
    return std::pair{e.stages[0].dp_sync_s, e.stages[0].backward_s};
  };
  const auto [deflt, backward] = sync(std::nullopt);
  const auto [off, b_off] = sync(false);
  const auto [on, b_on] = sync(true);
  REQUIRE(deflt > 0.0);
  CHECK(off == deflt); // Megatron-LM's default: no overlap
  CHECK(on == Approx(std::max(0.0, deflt - backward)));
  CHECK(on < deflt);
  CHECK(b_on == b_off); // backward itself is unchanged
}

TEST_CASE("the loss's memory follows the framework's cross-entropy (--fused_loss)", "[native]") {
  NativeContext c = context(llama(), {gpu()});
  const auto last_buffers = [&](DpMethod m) {
    const DesignPoint p = point(m, 1, 2, 4, 1, 8);
    const NativeEstimate e = native_estimate(c, p, same_node_type(c, p, 1));
    return e.stages.back().memory.buffers;
  };
  const double logits = 4096.0 * 128256; // s x mbs x V
  const double gib = 1024.0 * 1024 * 1024;
  const double megatron = last_buffers(DpMethod::zero1);
  const double eager = last_buffers(DpMethod::fsdp);
  c.settings.fused_loss = true;
  const double fused = last_buffers(DpMethod::fsdp);
  // Same logits, different loss: torchtitan's eager cross_entropy(logits.float()) holds three
  // fp32 tensors of their size (12 B) and keeps the freed 16-bit logits' block reserved (2 B)
  // where Megatron-LM's holds 16-bit logits, an fp32 softmax and its gradient (10 B);
  // compiled, 16-bit logits and gradient (4 B).
  CHECK((eager - fused) * gib == Approx(logits * (14.0 - 4.0)).epsilon(0.01));
  CHECK(megatron * gib == Approx(logits * 10.0));
  // A fused loss is a fused loss whatever runs the data parallelism (flash-attn's xentropy or
  // Liger's under DDP): 16-bit logits and gradient, 4 B, and the point stays valid.
  const double megatron_fused = last_buffers(DpMethod::zero1);
  CHECK((megatron - megatron_fused) * gib == Approx(logits * (10.0 - 4.0)).epsilon(0.01));
  const DesignPoint dp = point(DpMethod::zero1, 1, 2, 4, 1, 8);
  CHECK(native_invalid_reason(c, dp, same_node_type(c, dp, 1)).empty());
}

TEST_CASE("torchtitan's loss_parallel holds four fp32 tensors of the logits per tp rank",
          "[native]") {
  NativeContext c = context(llama(), {gpu()});
  const auto last_buffers = [&](int tp, int dp) {
    const DesignPoint p = point(DpMethod::fsdp, tp, 2, dp, 1, 8);
    const NativeEstimate e = native_estimate(c, p, same_node_type(c, p, 1));
    return e.stages.back().memory.buffers;
  };
  const double logits = 4096.0 * 128256; // s x mbs x V
  const double gib = 1024.0 * 1024 * 1024;
  // tp 1: eager cross_entropy(logits.float()), 12 B per logit, and the 16-bit logits' freed
  // block that the caching allocator keeps reserved (2 B). tp 2: DTensor's vocab-parallel
  // loss, (grad_input + exp(x)) * grad_output beside the saved x, 16 B + 2 B per logit of the
  // rank's half of the vocabulary, 9 B per logit of the whole.
  CHECK(last_buffers(1, 4) * gib == Approx(logits * 14.0));
  CHECK(last_buffers(2, 2) * gib == Approx(logits / 2.0 * 18.0));
  // fp32 training has no 16-bit copy to leave behind.
  const auto fp32_buffers = [&](int tp, int dp) {
    DesignPoint p = point(DpMethod::fsdp, tp, 2, dp, 1, 8);
    p.dtype = Dtype::fp32;
    return native_estimate(c, p, same_node_type(c, p, 1)).stages.back().memory.buffers;
  };
  CHECK(fp32_buffers(1, 4) * gib == Approx(logits * 12.0));
  CHECK(fp32_buffers(2, 2) * gib == Approx(logits / 2.0 * 16.0));
  // Compiled (--fused_loss on), the tp split alone: 16-bit logits and gradient.
  c.settings.fused_loss = true;
  CHECK(last_buffers(2, 2) * gib == Approx(logits / 2.0 * 4.0));
}

TEST_CASE("offload moves the optimizer states to the host and costs PCIe time", "[native]") {
  const NativeContext c = context(llama(), {gpu()});
  DesignPoint p = point(DpMethod::zero2, 1, 1, 8, 1, 8);
  const NativeEstimate on_gpu = native_estimate(c, p, same_node_type(c, p, 1));
  p.offload = Offload::optimizer;
  const NativeEstimate off = native_estimate(c, p, same_node_type(c, p, 1));
  CHECK(off.stages[0].memory.optimizer == 0.0);
  CHECK(off.peak_memory_gib < on_gpu.peak_memory_gib);
  CHECK(off.offload_s > 0.0);
  CHECK(off.optimizer_s == 0.0);
  CHECK(off.host_gib_per_node > 0.0);
  CHECK(off.step_s > on_gpu.step_s);
}

TEST_CASE("recomputation trades memory for time", "[native]") {
  const NativeContext c = context(llama(), {gpu()});
  DesignPoint p = point(DpMethod::zero1, 1, 2, 4, 1, 32);
  const auto at = [&](Recompute r) {
    p.recompute = r;
    return native_estimate(c, p, same_node_type(c, p, 1));
  };
  const NativeEstimate none = at(Recompute::none), sel = at(Recompute::selective),
                       full = at(Recompute::full);
  CHECK(full.stages[0].memory.activations < none.stages[0].memory.activations);
  CHECK(full.step_s > none.step_s);
  CHECK(full.stages[0].recompute_s > sel.stages[0].recompute_s);
  CHECK(sel.stages[0].recompute_s > 0.0);
  // Full recomputation runs every layer's forward again: about a third more compute.
  CHECK(full.stages[0].backward_s - none.stages[0].backward_s ==
        Approx(full.stages[0].recompute_s));
}

TEST_CASE("activation bytes follow Korthikanti et al. for GPT without flash attention",
          "[native]") {
  // GPT (LayerNorm, dropout, GeLU, 4h MLP), t = 1: s b h (34 + 5 a s / h) bytes.
  ModelSpec g;
  g.architecture = "gpt3";
  g.hidden_size = 2048;
  g.num_attention_heads = 16;
  g.ffn_hidden_size = 4 * 2048;
  g.sequence_length = 1024;
  NativeSettings st;
  st.flash_attention = false;
  DesignPoint p = point(DpMethod::dp, 1, 1, 1, 2, 2);
  const double s = 1024, b = 2, h = 2048, a = 16;
  CHECK(layer_activation_bytes(g, p, st) == Approx(s * b * h * (34 + 5 * a * s / h)));
  p.recompute = Recompute::selective; // Megatron-LM: the s^2 part goes
  CHECK(layer_activation_bytes(g, p, st) == Approx(s * b * h * 34));
}

TEST_CASE("the micro-batch enters through the profile model, not as a factor", "[native]") {
  ModelSpec small = llama(4);
  small.hidden_size = 1024;
  small.num_attention_heads = 8;
  small.num_key_value_heads = 8;
  small.ffn_hidden_size = 4096;
  small.sequence_length = 512;
  const NativeContext c = context(small, {gpu()});
  const DesignPoint one = point(DpMethod::zero0, 1, 1, 1, 1, 8);
  const DesignPoint two = point(DpMethod::zero0, 1, 1, 1, 2, 8);
  const NativeEstimate e1 = native_estimate(c, one, same_node_type(c, one, 1));
  const NativeEstimate e2 = native_estimate(c, two, same_node_type(c, two, 1));
  // Small GEMMs run at a lower efficiency: twice the micro-batch takes less than twice as long.
  CHECK(e2.stages[0].forward_s < 2 * e1.stages[0].forward_s);
  CHECK(e2.pipeline_s < e1.pipeline_s);
}

TEST_CASE("bad combinations are named", "[native]") {
  const NativeContext c = context(llama(), {gpu(80, false)});
  DesignPoint p = point(DpMethod::zero1, 1, 4, 2, 1, 32);
  const NativePlacement w = same_node_type(c, p, 1);
  p.virtual_stages = 3;
  CHECK(native_invalid_reason(c, p, w) ==
        "--virtual_stages 3 with pp 4 does not divide the 32 layers of test-llama (pp x virtual "
        "stages must divide them, or them plus the embedding and the loss counted as a layer "
        "each)");
  p.virtual_stages = 1;
  p.dtype = Dtype::fp8;
  CHECK(native_invalid_reason(c, p, w) == "--dtype fp8: TestGPU has no fp8 tensor cores");
  p.dtype = Dtype::bf16;
  p.method = DpMethod::fsdp;
  p.offload = Offload::optimizer;
  CHECK(native_invalid_reason(c, p, w) ==
        "--offload optimizer with fsdp: offload needs a DeepSpeed ZeRO method (zero1, zero2, "
        "zero3)");
}

TEST_CASE("partitions: uniform when the layers divide, min-max on unlike stages", "[native]") {
  NativeContext c = context(llama(), {gpu(), gpu()});
  c.gpus[1].spec.peak_tflops.bf16 = 250; // a GPU four times slower
  c.gpus[1].spec.name = "Slow";
  const DesignPoint p = point(DpMethod::zero1, 1, 2, 4, 1, 32);
  const NativePlacement alike = native_placement(c, p, {0});
  CHECK(native_partition(c, p, alike) == std::vector<int>{17, 17});
  // 2 nodes of 4 GPUs: stage 0 on the fast node, stage 1 on the slow one.
  NativeContext c4 = c;
  c4.gpus_per_node = 4;
  const NativePlacement mixed = native_placement(c4, p, {0, 1});
  REQUIRE(mixed.stage_gpu == std::vector<int>{0, 1});
  CHECK(mixed.boundary_inter_node == std::vector<char>{1});
  const std::vector<int> part = native_partition(c4, p, mixed);
  CHECK(part[0] > part[1] + 10); // the fast GPU takes most layers
  CHECK(part[0] + part[1] == 34);
}

TEST_CASE("a stage spanning node types: its slowest GPU, on the slowest network of its nodes",
          "[native]") {
  // Type 0: the fast GPU on a 10 Gbit/s network; type 1: a four times slower GPU on 400 GB/s.
  NativeContext c = context(llama(), {gpu(), gpu()}, 4);
  c.gpus[0].inter_node_bytes_per_s = 10e9 / 8;
  c.gpus[1].spec.peak_tflops.bf16 = 250;
  c.gpus[1].spec.name = "Slow";
  c.settings.overlap_grad_reduce = false;
  const DesignPoint p = point(DpMethod::dp, 1, 1, 8, 1, 32); // one stage over both nodes
  const NativePlacement both = native_placement(c, p, {0, 1});
  REQUIRE(both.stage_gpu == std::vector<int>{1});
  CHECK(both.net_gpu(0) == 0);
  // The same as a cluster of the slow GPU on the slow network: the gradient ring crosses the
  // 10 Gbit/s node, so it runs at that node's share of its network.
  NativeContext slow = c;
  slow.gpus[1].inter_node_bytes_per_s = c.gpus[0].inter_node_bytes_per_s;
  const double spanning = native_estimate(c, p, both).dp_sync_s;
  CHECK(spanning == Approx(native_estimate(slow, p, native_placement(slow, p, {1, 1})).dp_sync_s));
  // Hand-worked: Megatron-LM all-reduces fp32 gradients (4 B a parameter); hierarchically, the
  // ring over the 2 nodes carries 2 x 1/2 of each GPU's quarter, 4P/4 bytes, at its share of
  // the 10 Gbit/s network (1.25e9/4 B/s): 4P/1.25e9 s, plus the NVLink steps inside the nodes.
  const double ring_s = 4.0 * static_cast<double>(total_parameters(c.model)) / 1.25e9;
  CHECK(spanning > ring_s);
  CHECK(spanning < 1.05 * ring_s);
  // On the fast network alone the sync is two orders of magnitude shorter.
  const double fast = native_estimate(c, p, native_placement(c, p, {1, 1})).dp_sync_s;
  CHECK(fast * 100 < spanning);
  // A placement of one type per stage keeps stage_net empty.
  CHECK(native_placement(c, point(DpMethod::dp, 1, 2, 4, 1, 32), {0, 1}).stage_net.empty());
}

TEST_CASE("terapipe with one slice is the synchronous pipeline of the stages' times",
          "[native][terapipe]") {
  const NativeContext c = context(llama(), {gpu()});
  DesignPoint p = point(DpMethod::zero1, 1, 4, 2, 1, 8); // 4 micro-batches
  p.schedule = Schedule::terapipe;
  const NativePlacement w = same_node_type(c, p, 1);
  REQUIRE(native_invalid_reason(c, p, w).empty());
  const NativeEstimate e = native_estimate(c, p, w);
  const TokenPipeline pipe = native_token_pipeline(c, p, e);
  // The same stages as fixed per-slice times: GPipe over whole sequences.
  TokenPipeline gpipe = pipe;
  for (std::size_t j = 0; j < gpipe.stages.size(); ++j) {
    const NativeStage& st = e.stages[j];
    gpipe.stages[j] = SliceCost{st.forward_s, 0.0, 0.0, st.backward_s / st.forward_s};
  }
  const std::int64_t s = llama().sequence_length;
  CHECK(simulate_token_pipeline(pipe, {s}) == Approx(simulate_token_pipeline(gpipe, {s})));
  // ... and with identical stages and no sends it is (m + pp - 1) (F + B).
  TokenPipeline alike = gpipe;
  alike.link_s_per_token.assign(alike.link_s_per_token.size(), 0.0);
  for (auto& stage : alike.stages) stage = alike.stages[1];
  CHECK(simulate_token_pipeline(alike, {s}) ==
        Approx((4 + 4 - 1) * (e.stages[1].forward_s + e.stages[1].backward_s)));
}

TEST_CASE("terapipe fills a deep pipeline that 1F1B cannot", "[native][terapipe]") {
  const NativeContext c = context(llama(), {gpu()});
  DesignPoint p = point(DpMethod::zero1, 1, 8, 1, 1, 1); // one micro-batch, eight stages
  const NativeEstimate plain = native_estimate(c, p, same_node_type(c, p, 1));
  p.schedule = Schedule::terapipe;
  const NativeEstimate token = native_estimate(c, p, same_node_type(c, p, 1));
  CHECK(token.slices.size() > 1);
  std::int64_t sum = 0;
  for (const auto l : token.slices) sum += l;
  CHECK(sum == llama().sequence_length);
  CHECK(token.pipeline_s < 0.5 * plain.pipeline_s);
  // GPipe order: every micro-batch's activations stay on every stage (here: one).
  CHECK(token.stages[3].in_flight == 1);
}

TEST_CASE("terapipe needs a pipeline and does not interleave", "[native][terapipe]") {
  const NativeContext c = context(llama(), {gpu()});
  DesignPoint p = point(DpMethod::zero1, 1, 1, 8, 1, 8);
  p.schedule = Schedule::terapipe;
  CHECK(native_invalid_reason(c, p, same_node_type(c, p, 1)) ==
        "the terapipe schedule needs a pipeline (pp > 1)");
  DesignPoint q = point(DpMethod::zero1, 1, 4, 2, 1, 16);
  q.schedule = Schedule::terapipe;
  q.virtual_stages = 2;
  CHECK(native_invalid_reason(c, q, same_node_type(c, q, 1)) ==
        "the terapipe schedule does not interleave (--virtual_stages 1)");
}

TEST_CASE("FSDP with a pipeline keeps parameters gathered and gradients unsharded", "[native]") {
  // torchtitan's apply_fsdp: reshard_after_forward=False with pp > 1; the pipeline schedule
  // syncs gradients after the last micro-batch only.
  const NativeContext c = context(llama(), {gpu()});
  const DesignPoint piped = point(DpMethod::fsdp, 1, 2, 4, 1, 32);
  const NativeEstimate e = native_estimate(c, piped, same_node_type(c, piped, 1));
  const NativeStage& s = e.stages[1];
  const double gib = 1024.0 * 1024 * 1024;
  // per GPU before sharding: the last stage's layers and the LM head (and final norm)
  const double local = s.memory.optimizer * gib / 8.0 * 4; // fp32 Adam m and v over dp 4
  CHECK(s.memory.weights == Approx((4.0 * local / 4 + 2.0 * local) / gib));
  CHECK(s.memory.gradients == Approx((4.0 * local / 4 + 4.0 * local) / gib));
  CHECK(s.sharded_comm_s == 0.0); // no per-micro-batch gathers
  CHECK(s.dp_sync_s > 0.0);       // one gather and one reduce-scatter per step
  // Without a pipeline: sharded states, per-micro-batch gathers.
  const DesignPoint flat = point(DpMethod::fsdp, 1, 1, 8, 1, 32);
  const NativeEstimate f = native_estimate(c, flat, same_node_type(c, flat, 1));
  CHECK(f.stages[0].memory.weights == Approx(f.stages[0].memory.gradients));
  CHECK(f.stages[0].dp_sync_s == 0.0);
}

TEST_CASE("sequence parallelism and FlashAttention are settings of the native model",
          "[native]") {
  NativeContext c = context(llama(), {gpu()});
  const DesignPoint p = point(DpMethod::dp, 4, 1, 2, 1, 8);
  const NativeEstimate on = native_estimate(c, p, same_node_type(c, p, 1));
  c.settings.sequence_parallel = false;
  const NativeEstimate no_sp = native_estimate(c, p, same_node_type(c, p, 1));
  CHECK(no_sp.stages[0].memory.activations > on.stages[0].memory.activations);
  CHECK(no_sp.step_s == on.step_s);
  c.settings.flash_attention = false;
  const NativeEstimate unfused = native_estimate(c, p, same_node_type(c, p, 1));
  CHECK(unfused.step_s > no_sp.step_s);
  CHECK(unfused.stages[0].memory.activations > no_sp.stages[0].memory.activations);
}

TEST_CASE("collectives follow NCCL's latency model by transport and protocol",
          "[native][collectives]") {
  const NcclLatency nvlink = nccl_latency(Transport::nvlink);
  // An all-reduce of 1 KiB over 8 GPUs: 14 ring steps moving 2 x 7/8 x 1024 = 1792 bytes.
  // Simple: 8.4 + 14 x 3.4 = 56 us; LL: 6.6 + 14 x 0.6 = 15 us plus 1792 B at a quarter of
  // 240 GB/s: LL wins.
  CHECK(nccl_collective_s(1792, 14, 240e9, nvlink) == Approx(15e-6 + 1792 / 60e9));
  // 1 GiB: the bandwidth term decides, Simple wins.
  const double big = 2.0 * 7 / 8 * 1073741824.0;
  CHECK(nccl_collective_s(big, 14, 240e9, nvlink) == Approx(56e-6 + big / 240e9));
  // PCIe and the network step latencies (5.7 and 14 us with Simple).
  CHECK(nccl_collective_s(big, 14, 24e9, nccl_latency(Transport::pci)) ==
        Approx(8.4e-6 + 14 * 5.7e-6 + big / 24e9));
  CHECK(nccl_collective_s(big, 14, 24e9, nccl_latency(Transport::net)) ==
        Approx(8.4e-6 + 14 * 14e-6 + big / 24e9));
  // 64 nodes: the ring's 126 network steps (1772 us with Simple) against the tree's
  // 2 log2(64) = 12 (176.4 us).
  const double mid = 100e6;
  CHECK(nccl_collective_s(mid, 126, 25e9, nccl_latency(Transport::net), 64) ==
        Approx(8.4e-6 + 12 * 14e-6 + mid / 25e9));
  CHECK(nccl_collective_s(mid, 126, 25e9, nccl_latency(Transport::net)) ==
        Approx(8.4e-6 + 126 * 14e-6 + mid / 25e9));
}

TEST_CASE("the optimizer step launches a multi-tensor apply per 320 chunks or 36 tensors",
          "[native][kernels]") {
  // 1e9 parameters in 300 tensors: 15259 chunks of 65536 plus one partial chunk per tensor at
  // most (300): ceil(15559 / 320) = 49 launches; 300 tensors need 9.
  CHECK(optimizer_launches(1e9, 300) == 49.0);
  CHECK(optimizer_launches(1000, 100) == 3.0); // tensors decide: ceil(100 / 36)
  CHECK(optimizer_launches(0, 10) == 0.0);
}

TEST_CASE("ZeRO-3 exposes the first gather and the last reduce-scatter", "[native]") {
  const NativeContext c = context(llama(), {gpu()});
  const DesignPoint p = point(DpMethod::zero3, 1, 1, 8, 1, 8);
  const NativeEstimate e = native_estimate(c, p, same_node_type(c, p, 1));
  const NativeStage& s = e.stages[0];
  // Both collectives move 2 bytes per parameter over 8 GPUs on NVLink (the prior's bus:
  // 80 % of 450 GB/s) and hide behind compute except one layer's share each (34 entries:
  // embedding, 32 layers, post-process).
  const double params = static_cast<double>(total_parameters(llama()));
  const double one = nccl_collective_s(7.0 / 8 * 2 * params, 7, 0.8 * 450e9,
                                       nccl_latency(Transport::nvlink));
  REQUIRE(one < s.forward_s);
  CHECK(s.sharded_comm_s == Approx(one / 34 + one / 34));
}

TEST_CASE("ZeRO-3 with tensor parallelism shards each tp rank's slice over dp",
          "[native][zero3]") {
  // Megatron-DeepSpeed's ZeRO-3 (zero.Init(mpu=...)) and Megatron-FSDP: tp 2 x dp 4 on the 8
  // GPUs of one node. Each GPU holds 1/2 of the model's parameters as its tp slice and keeps
  // 1/4 of that slice: 1/8 of 2 + 2 + 12 bytes per parameter (DeepSpeed: 16-bit weights and
  // gradients, fp32 master and Adam m, v).
  const NativeContext c = context(llama(), {gpu()});
  const DesignPoint p = point(DpMethod::zero3, 2, 1, 4, 1, 4);
  REQUIRE(native_invalid_reason(c, p, same_node_type(c, p, 1)).empty());
  const NativeStage s = native_estimate(c, p, same_node_type(c, p, 1)).stages[0];
  const double params = static_cast<double>(total_parameters(llama()));
  const double gib = 1024.0 * 1024 * 1024;
  CHECK(s.memory.weights == Approx(2 * params / 8 / gib));
  CHECK(s.memory.gradients == Approx(2 * params / 8 / gib));
  CHECK(s.memory.optimizer == Approx(12 * params / 8 / gib));
  // The gathers and reduce-scatters move the tp slice (2 bytes x params / 2) over the 4 ranks
  // of the dp group (stride 2 on the node: NVLink, the prior's 80 % of 450 GB/s): a ring of 3
  // steps carrying 3/4 of it. Both hide behind compute except one layer's share each (34
  // entries: embedding, 32 layers, post-process).
  const double one = nccl_collective_s(3.0 / 4 * 2 * params / 2, 3, 0.8 * 450e9,
                                       nccl_latency(Transport::nvlink));
  REQUIRE(2 * one < s.backward_s);
  CHECK(s.sharded_comm_s == Approx(one / 34 + one / 34));
  // Against tp 1 x dp 8: each GPU gathers half as many bytes (its tp slice) over half as many
  // ranks, so the exposed share falls from 2 x 7/8 to 3/4 of the parameters' bytes per entry.
  const DesignPoint flat = point(DpMethod::zero3, 1, 1, 8, 1, 8);
  const NativeStage f = native_estimate(c, flat, same_node_type(c, flat, 1)).stages[0];
  CHECK(s.sharded_comm_s < f.sharded_comm_s);
  CHECK(f.memory.weights == Approx(s.memory.weights)); // 1/8 of the weights either way
}

namespace {

/// Per-parameter ZeRO-3's calls on one node of the prior's NVLink (80 % of 450 GB/s): 130
/// gathers of the large tensors (32 layers x 4 linear weights, the embedding and the LM head)
/// and as many reduce-scatters, plus 65 reduce-scatters of the small ones (the norms, which
/// persist), each an NCCL ring over the dp group's `ranks` GPUs plus `ranks` copies at 3.8 us
/// (PyTorch's list API).
struct PerParamCalls {
  double gather, reduce;
};

PerParamCalls per_param_calls(double large, double small, const FrameworkParams& f, int ranks) {
  const double n = ranks;
  const auto call = [n](double bytes) {
    return nccl_collective_s((n - 1) / n * bytes, static_cast<int>(n) - 1, 0.8 * 450e9,
                             nccl_latency(Transport::nvlink)) +
           n * 3.8e-6;
  };
  return {130 * call(2 * large / 130),
          130 * call(f.grad_reduce_bytes * large / 130) +
              65 * call(f.grad_reduce_bytes * small / 65)};
}

} // namespace

TEST_CASE("per-parameter ZeRO-3 with tp > 1: the same calls, each of the tp slice",
          "[native][zero3]") {
  // DeepSpeed v0.3.17 with Megatron-LM v1.1.5's tensor parallelism (BigScience's 52B rows):
  // each tp rank's ColumnParallelLinear / RowParallelLinear weight is its own parameter,
  // gathered and reduce-scattered on its own over the dp group.
  NativeContext c = context(llama(), {gpu()});
  c.settings.zero3_impl = Zero3Impl::per_param;
  const DesignPoint p = point(DpMethod::zero3, 2, 1, 4, 1, 4);
  const NativeStage s = native_estimate(c, p, same_node_type(c, p, 1)).stages[0];
  // As the tp 1 test above: 130 gathers and 130 + 65 reduce-scatters, now of half the
  // elements, each a ring over the 4 GPUs of the dp group plus 4 copies of 3.8 us.
  const double params = static_cast<double>(total_parameters(llama()));
  const double small = (32 * 2 * 4096 + 4096) / 2.0;
  const PerParamCalls calls = per_param_calls(params / 2 - small, small,
                                              framework_params(DpMethod::zero3, p.dtype), 4);
  CHECK(s.sharded_comm_s == Approx(calls.gather + calls.gather + calls.reduce));
}

TEST_CASE("ZeRO-3 on an MoE model keeps tp 1 (AutoEP takes no tensor parallelism)",
          "[native][zero3][moe]") {
  ModelSpec m = llama(4);
  m.num_experts = 8;
  m.experts_per_token = 2;
  m.moe_ffn_hidden_size = m.ffn_hidden_size;
  REQUIRE(m.is_moe());
  DesignPoint p = point(DpMethod::zero3, 2, 1, 4, 1, 4);
  p.etp = 2;
  CHECK(moe_invalid_reason(m, p) ==
        "tp 2 with zero3 on an MoE model: DeepSpeed ZeRO-3 runs MoE layers only as AutoEP "
        "layers, which take no tensor parallelism ('AutoEP with ZeRO Stage 3 does not support "
        "AutoTP yet', deepspeed/runtime/engine.py); tp 1");
  p.method = DpMethod::fsdp; // torchtitan's FSDP2 runs experts beside tp
  CHECK(moe_invalid_reason(m, p).empty());
}

TEST_CASE("per-parameter ZeRO-3 (--zero3_impl per_param) exposes every call in full",
          "[native][zero3]") {
  NativeContext c = context(llama(), {gpu()});
  DesignPoint p = point(DpMethod::zero3, 1, 1, 8, 1, 8);
  const NativeStage coalesced = native_estimate(c, p, same_node_type(c, p, 1)).stages[0];
  c.settings.zero3_impl = Zero3Impl::per_param;
  const NativeStage s = native_estimate(c, p, same_node_type(c, p, 1)).stages[0];
  // Calls: 32 layers x 4 linear weights + the embedding + the (untied) LM head = 130 gathers
  // and as many reduce-scatters of the same tensors; the norms' weights (2 per layer of 4096
  // elements and the final one: 266,240 elements) persist and are only reduce-scattered, 65
  // calls. Each call an NCCL ring over the 8 GPUs of the node (NVLink, the prior's 80 % of
  // 450 GB/s) on its kind's share of the bytes, plus 8 copies at 3.8 us (PyTorch's list API).
  const double params = static_cast<double>(total_parameters(llama()));
  const double small = 32 * 2 * 4096 + 4096;
  REQUIRE(small == 266240);
  const PerParamCalls calls = per_param_calls(params - small, small,
                                              framework_params(DpMethod::zero3, p.dtype), 8);
  const double gather = calls.gather;
  const double reduce = calls.reduce;
  // Nothing overlaps: forward adds the gathers, backward the gathers again and the reductions.
  CHECK(s.sharded_comm_s == Approx(gather + gather + reduce));
  CHECK(s.forward_s - coalesced.forward_s ==
        Approx(gather - (coalesced.sharded_comm_s / 2)).epsilon(1e-6));
  // Full recompute: this layer's linears are within 1e9 elements of their backward, so the
  // rerun's gathers stay for it and nothing more is gathered (tests/model/
  // test_deepspeed_zero3.cpp); the rerun's compute is the same either way.
  p.recompute = Recompute::full;
  const NativeStage full = native_estimate(c, p, same_node_type(c, p, 1)).stages[0];
  CHECK(full.sharded_comm_s == Approx(gather + gather + reduce));
}

TEST_CASE("overlapping tensor-parallel collectives with GEMMs (--tp_comm_overlap)",
          "[native][kernels]") {
  NativeContext c = context(llama(), {gpu()});
  const DesignPoint p = point(DpMethod::zero1, 2, 1, 4, 1, 8);
  const NativeEstimate off = native_estimate(c, p, same_node_type(c, p, 1));
  c.settings.tp_comm_overlap = true;
  const NativeEstimate on = native_estimate(c, p, same_node_type(c, p, 1));
  CHECK(on.step_s < off.step_s);
  // At tp 2 the GEMMs beside each collective are longer than it: what stays is its first
  // chunk, half of it.
  AnalyticSettings st;
  st.tp = 2;
  st.sequence_length = 4096;
  st.flash_attention = true;
  st.sequence_parallel = true;
  st.gemm_shapes = true;
  const NativeGpu g = gpu();
  const AnalyticLayerTimes full = analytic_layer_times(c.model, g.spec, g.calibration, st);
  st.tp_comm_overlap = true;
  const AnalyticLayerTimes hidden = analytic_layer_times(c.model, g.spec, g.calibration, st);
  CHECK(hidden.tp_comm_forward_s == Approx(full.tp_comm_forward_s / 2));
  CHECK(full.layer.forward_s - hidden.layer.forward_s == Approx(full.tp_comm_forward_s / 2));
  // At tp 8 the 8B model's GEMMs are too short to cover the rest: more than an eighth shows.
  st.tp = 8;
  const double full8 = analytic_layer_times(c.model, g.spec, g.calibration, st).tp_comm_forward_s;
  st.tp_comm_overlap = false;
  const double none8 = analytic_layer_times(c.model, g.spec, g.calibration, st).tp_comm_forward_s;
  CHECK(full8 > none8 / 8);
  CHECK(full8 < none8);
}

TEST_CASE("DeepSpeed accumulates gradients into .grad after the first micro-batch",
          "[native][kernels]") {
  const NativeContext c = context(llama(), {gpu()});
  // zero1, dp 8, 4 micro-batches: 3 of 4 micro-batches add 2 + 2 bytes read and 2 written per
  // parameter at 85 % of 3000 GB/s; averaged over the 4 micro-batches.
  const DesignPoint p = point(DpMethod::zero1, 1, 1, 8, 1, 32);
  const NativeStage s = native_estimate(c, p, same_node_type(c, p, 1)).stages[0];
  const double params = static_cast<double>(total_parameters(llama()));
  CHECK(s.grad_accumulation_s == Approx(6.0 * params / (3000e9 * 0.85) * 3 / 4));
  // One micro-batch, or Megatron-LM's fused accumulation: nothing.
  const DesignPoint one = point(DpMethod::zero1, 1, 1, 8, 1, 8);
  CHECK(native_estimate(c, one, same_node_type(c, one, 1)).stages[0].grad_accumulation_s == 0.0);
  const DesignPoint megatron = point(DpMethod::dp, 1, 1, 8, 1, 32);
  CHECK(native_estimate(c, megatron, same_node_type(c, megatron, 1)).stages[0].grad_accumulation_s ==
        0.0);
}

TEST_CASE("a stage's backward splits into input gradient and W, adding up to backward",
          "[native][zb]") {
  const NativeContext c = context(llama(), {gpu()});
  for (const DpMethod method : {DpMethod::dp, DpMethod::zero1}) {
    const DesignPoint p = point(method, 2, 4, 2, 1, 32);
    const NativeEstimate e = native_estimate(c, p, same_node_type(c, p, 1));
    for (const NativeStage& s : e.stages) {
      CHECK(s.weight_s > 0.0);
      CHECK(s.weight_s < 0.5 * s.backward_s); // W is one of the backward's two GEMM halves
    }
  }
}

TEST_CASE("zero-bubble schedules: simulated on the stages, memory as each holds it",
          "[native][zb]") {
  const NativeContext c = context(llama(), {gpu()});
  DesignPoint p = point(DpMethod::zero1, 1, 4, 2, 1, 32); // 16 micro-batches
  const NativePlacement where = same_node_type(c, p, 1);
  const NativeEstimate one = native_estimate(c, p, where);
  const auto with = [&](Schedule s) {
    DesignPoint q = p;
    q.schedule = s;
    REQUIRE(native_invalid_reason(c, q, where).empty());
    return native_estimate(c, q, where);
  };
  const NativeEstimate h1 = with(Schedule::zb_h1);
  const NativeEstimate h2 = with(Schedule::zb_h2);
  const NativeEstimate v = with(Schedule::zbv);
  const NativeEstimate dual = with(Schedule::dualpipe);
  const NativeEstimate dualv = with(Schedule::dualpipev);
  CHECK(h1.pipeline_s < one.pipeline_s);
  // ZB-H1 holds 1F1B's activations plus, on rank j, the j weight passes it keeps back (Qi et
  // al.: (p - i + 1) M_B + (i - 1) M_W on worker i from 1); M_W / M_B about 1 for a gated MLP.
  const double w = layer_weight_pass_bytes(c.model, p, c.settings) / layer_activation_bytes(c.model, p, c.settings);
  CHECK(w > 0.9);
  CHECK(w < 1.0);
  for (std::size_t j = 0; j < 4; ++j) {
    CHECK(h1.stages[j].in_flight == Approx(one.stages[j].in_flight + static_cast<double>(j) * w));
  }
  CHECK(h1.stages[0].memory.total() == one.stages[0].memory.total());
  CHECK(h1.stages[3].memory.total() > one.stages[3].memory.total() + 2.5 * one.stages[3].memory.activations);
  CHECK(h2.stages[0].in_flight == 7);
  CHECK(h2.stages[0].memory.activations > 1.5 * one.stages[0].memory.activations);
  // ZB-V and DualPipeV: the embedding and the LM head both on rank 0, in flight p everywhere
  // (ZB-V), 2 pp chunks split as torchtitan splits them.
  CHECK(v.partition == std::vector<int>{10, 8, 8, 8});
  CHECK(v.stages[0].in_flight == 4);
  CHECK(v.stages[3].in_flight == 4);
  CHECK(dualv.partition == v.partition);
  // DualPipe: each rank holds two stages, so twice the parameters, and pp + 1 stage-sized
  // micro-batches of activations on the end ranks.
  CHECK(dual.partition == std::vector<int>{18, 16, 16, 18});
  CHECK(dual.stages[1].memory.weights == Approx(2 * one.stages[1].memory.weights));
  CHECK(dual.stages[0].in_flight == 2.5);
  // Every schedule does the same work: no pipeline is shorter than its slowest rank's passes.
  for (const NativeEstimate* e : {&one, &h1, &h2, &v, &dual, &dualv}) {
    double slowest = 0.0;
    // (DualPipe: a micro-batch passes one of a rank's two stages.)
    const double m = e == &dual ? 8 : 16;
    for (const NativeStage& s : e->stages) slowest = std::max(slowest, m * (s.forward_s + s.backward_s));
    CHECK(e->pipeline_s >= slowest);
  }
}

TEST_CASE("split schedules name their conditions", "[native][zb]") {
  const NativeContext c = context(llama(), {gpu()});
  DesignPoint p = point(DpMethod::zero1, 1, 4, 2, 1, 12); // 6 micro-batches
  const NativePlacement where = same_node_type(c, p, 1);
  p.schedule = Schedule::dualpipe;
  CHECK(native_invalid_reason(c, p, where) ==
        "the dualpipe schedule needs an even number of micro-batches, at least 2 x pp = 8 (half "
        "enter from each end), not 6");
  p.schedule = Schedule::zbv;
  p.virtual_stages = 2;
  CHECK(native_invalid_reason(c, p, where) ==
        "the zbv schedule sets its own model chunks (--virtual_stages 1)");
}
