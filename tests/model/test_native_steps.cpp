// The steps of native_estimate (model/native_steps.hpp), one at a time: hand-worked figures
// and the invariants each step must keep.
#include <catch2/catch.hpp>

#include <numeric>

#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/model/native_steps.hpp"
#include "native_fixtures.hpp"

using namespace zerosearch;
using namespace zerosearch::native_steps;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

NativeGpu gpu() { return test::h100_like(); }

ModelSpec llama(std::int64_t layers = 32) { return test::test_llama(layers); }

ModelSpec small_moe() { return test::test_small_moe(); }

NativeContext context(const ModelSpec& m, int gpus = 1) {
  NativeContext c;
  c.model = m;
  c.gpus_per_node = 8;
  c.gpus.assign(static_cast<std::size_t>(gpus), gpu());
  return c;
}

DesignPoint point(DpMethod method, int tp, int pp, int dp, int micro_batches) {
  DesignPoint p;
  p.method = method;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.mbs = 1;
  p.num_micro_batches = micro_batches;
  return p;
}

/// Layer times by hand: a layer 1 s forward, 2 s backward (0.5 s of it weight gradients).
AnalyticLayerTimes hand_times() {
  AnalyticLayerTimes t;
  t.layer = {1.0, 2.0, 0.5};
  t.embedding = {0.1, 0.2, 0.05};
  t.post_process = {0.3, 0.6, 0.1};
  t.attention_forward_s = 0.25;
  t.tp_comm_forward_s = 0.0;
  return t;
}

AnalyticLayerTimes real_times(const NativeContext& c, const DesignPoint& p) {
  return analytic_layer_times(c.model, c.gpus[0].spec, c.gpus[0].calibration,
                              native_layer_settings(c.model, p, c.settings));
}

/// One stage holding the whole model: the embedding, `layers` layers and the head.
StageEntries whole_model(int layers) {
  StageEntries e;
  e.embedding = e.head = true;
  e.layers = e.main = layers;
  return e;
}

StageParams params_of(const ModelSpec& m, const DesignPoint& p, const StageEntries& e) {
  return stage_params(m, p, point_constants(context(m), p), e);
}

/// The in-place steps as functions of their input, so each check reads as one expression.
NativeStage stage_compute(const ModelSpec& m, const DesignPoint& p, const PointConstants& k,
                          const StageEntries& e, const AnalyticLayerTimes& t,
                          const AnalyticLayerTimes& dense) {
  NativeStage st;
  set_compute(st, m, p, k, e, t, dense);
  return st;
}
NativeStage with_moe_comm(NativeStage st, const NativeContext& c, const DesignPoint& p,
                          const PointConstants& k, const NativeGpu& g, const AnalyticLayerTimes& t,
                          int moe_layers) {
  add_moe_comm(st, c, p, k, g, t, moe_layers);
  return st;
}
NativeStage with_cp_exchange(NativeStage st, const NativeContext& c, const DesignPoint& p,
                             const PointConstants& k, const NativeGpu& g,
                             const AnalyticLayerTimes& t, int layers) {
  add_cp_exchange(st, c, p, k, g, t, layers);
  return st;
}
NativeStage with_sharded_comm(NativeStage st, const NativeContext& c, const DesignPoint& p,
                              const PointConstants& k, const NativeGpu& g, const StageParams& sp,
                              int layers) {
  StageEntries e;
  e.layers = layers;
  add_sharded_comm(st, c, p, k, g, sp, e);
  return st;
}
NativeStage with_offload_fetch(NativeStage st, const DesignPoint& p, const PointConstants& k,
                               const NativeGpu& g, const StageParams& sp) {
  add_offload_fetch(st, p, k, g, sp);
  return st;
}
NativeMemory with_activations(NativeMemory mem, const NativeContext& c, const DesignPoint& p,
                              const PointConstants& k, const StageEntries& e, double held) {
  add_activations(mem, c, p, k, e, held);
  return mem;
}

} // namespace

TEST_CASE("stage_entries: the partition entry less the embedding and the head, MoE and dense "
          "layers of an MoE model",
          "[native][steps]") {
  const ModelSpec m = llama(32);
  const DesignPoint p = point(DpMethod::dp, 1, 2, 1, 4);
  const StageEntries first = stage_entries(m, p, {17, 17}, 0, true, false);
  CHECK(first.layers == 16);
  CHECK(first.main == 16);
  CHECK(first.dense == 0);
  CHECK(first.moe == 0);
  const StageEntries both = stage_entries(m, point(DpMethod::dp, 1, 1, 1, 4), {34}, 0, true, true);
  CHECK(both.layers == 32);

  ModelSpec moe = small_moe();
  moe.first_k_dense_layers = 3;
  const StageEntries e = stage_entries(moe, point(DpMethod::dp, 1, 1, 1, 4), {10}, 0, true, true);
  CHECK(e.layers == 8);
  CHECK(e.moe == 5);
  CHECK(e.main == 5);
  CHECK(e.dense == 3);
}

TEST_CASE("set_compute: layers x layer time plus the embedding and the head, recomputation "
          "inside backward",
          "[native][steps]") {
  const ModelSpec m = llama();
  StageEntries e;
  e.embedding = true;
  e.head = true;
  e.layers = e.main = 4;
  const AnalyticLayerTimes t = hand_times();
  DesignPoint p = point(DpMethod::dp, 1, 1, 1, 4);
  NativeStage c = stage_compute(m, p, point_constants(context(m), p), e, t, t);
  CHECK(c.forward_s == Approx(4.0 + 0.1 + 0.3));
  CHECK(c.backward_s == Approx(8.0 + 0.2 + 0.6));
  CHECK(c.weight_s == Approx(2.0 + 0.05 + 0.1));
  CHECK(c.recompute_s == 0.0);
  p.recompute = Recompute::full; // reruns each layer's forward: 1 s a layer
  c = stage_compute(m, p, point_constants(context(m), p), e, t, t);
  CHECK(c.recompute_s == Approx(4.0));
  CHECK(c.backward_s == Approx(12.0 + 0.2 + 0.6));
  CHECK(c.forward_s == Approx(4.4));

  // Dense layers of an MoE model take the dense times.
  AnalyticLayerTimes dense = t;
  dense.layer = {10.0, 20.0, 5.0};
  e.main = 3;
  e.dense = 1;
  p.recompute = Recompute::none;
  c = stage_compute(small_moe(), p, point_constants(context(small_moe()), p), e, t, dense);
  CHECK(c.forward_s == Approx(3.0 + 10.0 + 0.4));
  CHECK(c.backward_s == Approx(6.0 + 20.0 + 0.8));
}

TEST_CASE("add_moe_comm: dispatch and combine per MoE layer, again in backward and in the "
          "recomputed forward",
          "[native][steps]") {
  const NativeContext c = context(small_moe());
  DesignPoint p = point(DpMethod::zero1, 1, 1, 8, 8);
  p.ep = 4;
  const AnalyticLayerTimes t = real_times(c, p);
  const NativeStage none =
      with_moe_comm(NativeStage{}, c, p, point_constants(c, p), c.gpus[0], t, 8);
  REQUIRE(none.moe_comm_s > 0.0);
  // Two passes (forward, backward), each dispatch + combine less the tp collective it replaces.
  const double delta = none.forward_s / 8.0;
  CHECK(none.backward_s == Approx(none.forward_s));
  CHECK(none.recompute_s == 0.0);
  p.recompute = Recompute::full;
  const NativeStage full =
      with_moe_comm(NativeStage{}, c, p, point_constants(c, p), c.gpus[0], real_times(c, p), 8);
  CHECK(full.moe_comm_s == Approx(1.5 * none.moe_comm_s));
  CHECK(full.backward_s == Approx(2.0 * 8.0 * delta));
  CHECK(full.recompute_s == Approx(8.0 * delta));
  // No MoE layers: unchanged.
  NativeStage st;
  st.forward_s = 1.0;
  CHECK(with_moe_comm(st, c, p, point_constants(c, p), c.gpus[0], t, 0).forward_s == 1.0);
}

TEST_CASE("add_cp_exchange: forward, backward and the recomputed forward's exchange, buffers",
          "[native][steps]") {
  const NativeContext c = context(llama());
  DesignPoint p = point(DpMethod::dp, 1, 1, 1, 4);
  NativeStage st;
  st.forward_s = 1.0;
  CHECK(with_cp_exchange(st, c, p, point_constants(c, p), c.gpus[0], real_times(c, p), 32)
            .forward_s == 1.0); // cp 1
  p.cp = 4;
  p.cp_comm = CpComm::a2a; // the all-to-alls do not hide behind attention
  const NativeStage none =
      with_cp_exchange(NativeStage{}, c, p, point_constants(c, p), c.gpus[0], real_times(c, p), 32);
  REQUIRE(none.forward_s > 0.0);
  CHECK(none.recompute_s == 0.0);
  CHECK(none.cp_comm_s == Approx(none.forward_s + none.backward_s));
  CHECK(none.memory.buffers > 0.0);
  p.recompute = Recompute::full;
  const NativeStage full =
      with_cp_exchange(NativeStage{}, c, p, point_constants(c, p), c.gpus[0], real_times(c, p), 32);
  CHECK(full.recompute_s == Approx(full.forward_s));
  CHECK(full.backward_s == Approx(none.backward_s + full.forward_s));
  CHECK(full.cp_comm_s == Approx(full.forward_s + full.backward_s));
}

TEST_CASE("stage_params: a dense stage's parameters over tp, sharded over dp x cp",
          "[native][steps]") {
  const ModelSpec m = llama(32);
  DesignPoint p = point(DpMethod::zero1, 2, 1, 4, 4);
  StageEntries e = whole_model(32);
  const StageParams sp = params_of(m, p, e);
  const double all = static_cast<double>(embedding_parameters(m) + 32 * layer_parameters(m) +
                                         post_process_parameters(m));
  CHECK(sp.local == Approx(all / 2.0));
  CHECK(sp.d == 4.0);
  CHECK(sp.zero_shard(2.0) == Approx(2.0 * all / 2.0 / 4.0));
}

TEST_CASE("grad_accumulation_s: DeepSpeed ZeRO 0-2 add each gradient after the first, memory "
          "bound",
          "[native][steps]") {
  const NativeGpu g = gpu();
  DesignPoint p = point(DpMethod::zero1, 1, 1, 8, 4);
  const double local = 1e9;
  // Read both, write one, bf16: 3 x 2 bytes a parameter, on 3 of 4 micro-batches.
  const double once = 3.0 * 2.0 * local / (3000e9 * g.calibration.memory_efficiency);
  CHECK(grad_accumulation_s(p, point_constants(context(llama()), p), g, local, 32) ==
        Approx(once * 3.0 / 4.0));
  p.num_micro_batches = 1;
  CHECK(grad_accumulation_s(p, point_constants(context(llama()), p), g, local, 32) == 0.0);
  p = point(DpMethod::dp, 1, 1, 8, 4); // Megatron-LM fuses it into the weight-gradient GEMM
  CHECK(grad_accumulation_s(p, point_constants(context(llama()), p), g, local, 32) == 0.0);
}

TEST_CASE("grad_accumulation_s: DeepSpeed's BF16_Optimizer casts and adds every micro-batch's "
          "bf16 gradients into fp32, 18 bytes a parameter",
          "[native][steps]") {
  NativeContext c = context(llama());
  c.settings.grad_accum_fp32 = true;
  const NativeGpu g = gpu();
  DesignPoint p = point(DpMethod::zero1, 1, 1, 8, 4);
  const PointConstants k = point_constants(c, p);
  REQUIRE(k.fw.fp32_grad_accumulation);
  CHECK(k.fw.grad_bytes == 4.0); // the fp32 buffers the step and the tied all-reduce read
  CHECK(k.fw.grad_reduce_bytes == 2.0); // cast to bf16 for the all-reduce
  // 1e9 parameters: read 2 + write 4 (the cast), read 4 + 4 + write 4 (the add) = 18 bytes at
  // 85 % of 3000 GB/s = 7.06 ms, on all 4 micro-batches (no first one free).
  CHECK(g.calibration.memory_efficiency == Approx(0.85));
  CHECK(grad_accumulation_s(p, k, g, 1e9, 32) == Approx(18e9 / 2550e9));
  CHECK(18e9 / 2550e9 == Approx(7.0588e-3).epsilon(1e-4));
  p.num_micro_batches = 1;
  CHECK(grad_accumulation_s(p, point_constants(c, p), g, 1e9, 32) == Approx(18e9 / 2550e9));
  // A small stage is host-bound: two launches (cast, add) per tensor at 8.3 us, 32 layers'
  // tensors and two more.
  CHECK(grad_accumulation_s(p, k, g, 1e3, 32) ==
        Approx(2.0 * (32 * k.tensors_per_layer + 2.0) * 8.3e-6));
  CHECK(stage_tensors(k, 32) == 32 * k.tensors_per_layer + 2.0);
  // Only bf16 with zero1 runs the BF16_Optimizer.
  p.dtype = Dtype::fp16;
  CHECK_FALSE(point_constants(c, p).fw.fp32_grad_accumulation);
  p.dtype = Dtype::bf16;
  p.method = DpMethod::zero2;
  CHECK_FALSE(point_constants(c, p).fw.fp32_grad_accumulation);
}

TEST_CASE("bf16_optimizer_step_bytes: zeroing the fp32 buffers and the reduction's copies once a "
          "step",
          "[native][steps]") {
  // Zero 4; flatten 4 + 4; cast to bf16 4 + 2 and back 2 + 4; average 2 + 2; copy back 4 + 4.
  CHECK(bf16_optimizer_step_bytes(2.0) == 36.0);
  // fp32 on the wire: no casts, the average on 4 bytes.
  CHECK(bf16_optimizer_step_bytes(4.0) == 28.0);
}

TEST_CASE("BF16_Optimizer: all-reduce plus all-gather, fp32 and bf16 gradients held, the step "
          "reads fp32",
          "[native][steps]") {
  NativeContext c = context(llama(32));
  StageEntries e = whole_model(32);
  const DesignPoint p = point(DpMethod::zero1, 1, 1, 8, 4);
  const StageParams sp = params_of(c.model, p, e);
  c.settings.overlap_grad_reduce = false;
  const double off_sync = dp_sync(c, p, point_constants(c, p), c.gpus[0], sp, 0.0).sync_s;
  const ModelStates off_ms = model_states(c, p, point_constants(c, p), c.gpus[0], sp);
  const double off_step = optimizer_step_s(p, point_constants(c, p), c.gpus[0], sp, 32);
  c.settings.grad_accum_fp32 = true;
  const PointConstants k = point_constants(c, p);
  // ZeRO-1: reduce-scatter + all-gather, two halves; BF16_Optimizer: an all-reduce (two
  // halves) + the all-gather, three (to within NCCL's per-call latency).
  CHECK(dp_sync(c, p, k, c.gpus[0], sp, 0.0).sync_s == Approx(1.5 * off_sync).epsilon(1e-3));
  // Gradients: bf16 2 bytes a parameter -> fp32 4 + bf16 2, unsharded.
  CHECK(off_ms.gradients == Approx(2.0 * sp.local));
  CHECK(model_states(c, p, k, c.gpus[0], sp).gradients == Approx(6.0 * sp.local));
  // The step reads the fp32 gradient partition (2 bytes more on 1/8 of the parameters) and
  // moves 36 bytes a parameter over the whole buffer.
  const double bw = 3000e9 * c.gpus[0].calibration.memory_efficiency;
  CHECK(optimizer_step_s(p, k, c.gpus[0], sp, 32) - off_step ==
        Approx((2.0 * sp.local / 8.0 + 36.0 * sp.local) / bw));
}

TEST_CASE("add_sharded_comm: ZeRO-3 gathers per micro-batch, FSDP with a pipeline once a step",
          "[native][steps]") {
  const NativeContext c = context(llama(32));
  StageEntries e = whole_model(32);
  NativeStage st;
  st.layers = 34;
  st.forward_s = 0.5;
  st.backward_s = 1.0;
  DesignPoint p = point(DpMethod::zero3, 1, 1, 1, 4);
  CHECK(with_sharded_comm(st, c, p, point_constants(c, p), c.gpus[0], params_of(c.model, p, e), 32)
            .forward_s == 0.5);
  p.dp = 8;
  const NativeStage z3 =
      with_sharded_comm(st, c, p, point_constants(c, p), c.gpus[0], params_of(c.model, p, e), 32);
  CHECK(z3.forward_s > 0.5);
  CHECK(z3.sharded_comm_s == Approx((z3.forward_s - 0.5) + (z3.backward_s - 1.0)));
  CHECK(z3.dp_sync_s == 0.0);

  p = point(DpMethod::fsdp, 1, 2, 4, 4);
  REQUIRE(keeps_unsharded(p, point_constants(c, p), params_of(c.model, p, e)));
  e.head = false;
  const NativeStage kept =
      with_sharded_comm(st, c, p, point_constants(c, p), c.gpus[0], params_of(c.model, p, e), 16);
  CHECK(kept.forward_s == 0.5);
  CHECK(kept.backward_s == 1.0);
  CHECK(kept.dp_sync_s > 0.0);
}

TEST_CASE("add_sharded_comm: FSDP with a pipeline gathers experts sharded over edp once a step, "
          "also with dp x cp = 1",
          "[native][steps][moe]") {
  // small_moe: 16 experts of 3 x 1024 x 1024 (gated) per MoE layer = 50,331,648 parameters.
  // fsdp, tp 4, pp 2, dp 1, ep 2, etp 1: the dense part is not sharded (dp x cp = 1), the
  // routed experts are, over edp = tp x cp x dp / (etp x ep) = 2 ranks 2 apart (torchtitan's
  // efsdp mesh). torchtitan's apply_fsdp gives the experts' fully_shard the same
  // reshard_after_forward = not pp_enabled as the rest (llama4/infra/parallelize.py at v0.2.2),
  // so with pp 2 they are gathered before the first micro-batch and kept: one gather and one
  // reduce-scatter a step, not one per micro-batch.
  const NativeContext c = context(small_moe());
  const double expert_layer = static_cast<double>(expert_parameters(c.model));
  REQUIRE(expert_layer == 16.0 * 3 * 1024 * 1024);
  StageEntries e;
  e.layers = e.moe = e.main = 4;
  DesignPoint p = point(DpMethod::fsdp, 4, 2, 1, 8);
  p.ep = 2;
  p.etp = 1;
  const PointConstants k = point_constants(c, p);
  const StageParams sp = params_of(c.model, p, e);
  CHECK(sp.d == 1.0);
  CHECK(sp.edp == 2.0);
  const double expert = 4.0 * expert_layer / 2.0; // 4 MoE layers, half the experts each
  CHECK(sp.shards.expert == Approx(expert));
  CHECK(shards_some(p, sp));
  REQUIRE(keeps_unsharded(p, k, sp));
  NativeStage st;
  st.layers = 4;
  st.forward_s = 0.5;
  st.backward_s = 1.0;
  // The experts' collectives over 2 ranks inside the node (NVLink): NCCL's ring, bf16 gather,
  // fp32 reduce-scatter (torchtitan's reduce_dtype), half the bytes cross per rank.
  const NativeGpu g = gpu();
  const auto& fits = g.calibration.tp_allreduce;
  auto it = fits.upper_bound(2);
  REQUIRE(it != fits.begin());
  --it;
  const double bus = it->second.bus_bytes_per_s;
  const auto ring2 = [&](double bytes) {
    return nccl_collective_s(bytes / 2.0, 1, bus, nccl_latency(Transport::nvlink));
  };
  const double gather = ring2(2.0 * expert), reduce = ring2(4.0 * expert);
  REQUIRE(gather < 0.5);
  REQUIRE(reduce < 1.0);
  // FSDP2's copy-out of the gathered parameters (read + write, bf16) of the whole stage.
  const double copy_out = 2.0 * 2.0 * sp.local / (3000e9 * g.calibration.memory_efficiency);
  const NativeStage kept = with_sharded_comm(st, c, p, k, g, sp, 4);
  // Nothing per micro-batch; once a step: the first layer's gather (a quarter of the stage's)
  // and the copy-out; the rest hides behind the first forward and the last backward.
  CHECK(kept.forward_s == 0.5);
  CHECK(kept.backward_s == 1.0);
  CHECK(kept.sharded_comm_s == 0.0);
  CHECK(kept.dp_sync_s == Approx(gather / 4.0 + copy_out));
  // Memory as FSDP2 keeps it with a pipeline: the fp32 shards (dense / 1, experts / 2), plus
  // the gathered bf16 parameters and the unsharded fp32 gradient accumulators of the stage.
  const ModelStates ms = model_states(c, p, k, g, sp);
  const double shard = sp.shards.dense + expert / 2.0;
  CHECK(ms.weights == Approx(4.0 * shard + 2.0 * sp.local));
  CHECK(ms.gradients == Approx(4.0 * shard + 4.0 * sp.local));
  CHECK(ms.buffers == 0.0);
  // Without the pipeline FSDP2 reshards after forward: per micro-batch, as before.
  p.pp = 1;
  const StageParams sp1 = params_of(c.model, p, e);
  REQUIRE_FALSE(keeps_unsharded(p, point_constants(c, p), sp1));
  const NativeStage per_mb = with_sharded_comm(st, c, p, point_constants(c, p), g, sp1, 4);
  CHECK(per_mb.sharded_comm_s == Approx(2.0 * copy_out + gather / 4.0 + reduce / 4.0));
  CHECK(per_mb.dp_sync_s == 0.0);
  // ep x etp = tp: the experts share the dense group (dp x cp = 1): nothing sharded at all.
  p.pp = 2;
  p.ep = 4;
  const StageParams whole = params_of(c.model, p, e);
  CHECK_FALSE(shards_some(p, whole));
  const NativeStage none = with_sharded_comm(st, c, p, point_constants(c, p), g, whole, 4);
  CHECK(none.dp_sync_s == 0.0);
  CHECK(none.forward_s == 0.5);
}

TEST_CASE("add_offload_fetch: ZeRO-Infinity's forward and backward take at least the PCIe fetch",
          "[native][steps]") {
  const NativeContext c = context(llama(32));
  StageEntries e = whole_model(32);
  DesignPoint p = point(DpMethod::zero3, 1, 1, 8, 4);
  const StageParams sp = params_of(c.model, p, e);
  NativeStage st;
  st.forward_s = 1e-6;
  st.backward_s = 1e3;
  CHECK(with_offload_fetch(st, p, point_constants(c, p), c.gpus[0], sp).forward_s ==
        1e-6); // no offload
  p.offload = Offload::optimizer_params;
  const NativeStage f = with_offload_fetch(st, p, point_constants(c, p), c.gpus[0], sp);
  CHECK(f.forward_s == Approx(2.0 * sp.local / 8.0 / c.gpus[0].host_link_bytes_per_s));
  CHECK(f.backward_s == 1e3);
}

TEST_CASE("send_s: one latency plus the boundary activations over the link", "[native][steps]") {
  const NativeContext c = context(llama(32));
  const DesignPoint p = point(DpMethod::dp, 2, 2, 1, 4);
  const NativePlacement where = native_placement(c, p, {0});
  // bf16, 4096 tokens x 4096 hidden / tp 2, over NVLink at 80 % of 450 GB/s.
  const double bytes = 2.0 * 4096.0 * 4096.0 / 2.0;
  CHECK(send_s(c, p, point_constants(c, p), where, 0) == Approx(20e-6 + bytes / (0.8 * 450e9)));
  CHECK(send_s(c, p, point_constants(c, p), where, 1) == 0.0);
}

TEST_CASE("send_s: Megatron-LM v1.1.5's GPT2ModelPipe also sends its fp16 causal mask forward",
          "[native][steps]") {
  // DeepSpeed's pipeline engine in the AMP fork sends the 1 x 1 x s x s mask as half with every
  // activation and not with the gradient (pipe_mask_send_bytes): half a message a direction.
  NativeContext c = context(llama(32));
  c.settings.layer_impl = LayerImpl::megatron_unfused;
  const DesignPoint p = point(DpMethod::dp, 2, 2, 1, 4);
  const NativePlacement where = native_placement(c, p, {0});
  // Hidden states: 2 B x 4096 x 4096 / tp 2 = 16,777,216 B; mask: 2 B x 4096^2 = 33,554,432 B
  // (whole on every tp rank); NVLink at 0.8 x 450 GB/s = 360 GB/s:
  // 20 us + 46.603 us + (20 us + 93.207 us) / 2 = 123.207 us.
  CHECK(send_s(c, p, point_constants(c, p), where, 0) == Approx(123.2067556e-6));
  CHECK(send_s(c, p, point_constants(c, p), where, 1) == 0.0);
  CHECK(pipe_mask_send_bytes(LayerImpl::megatron_unfused, 1024.0) == 2097152.0);
  for (const LayerImpl other : {LayerImpl::framework, LayerImpl::hf_gpt2, LayerImpl::hf_gpt2_amp,
                                LayerImpl::megatron_v1}) {
    CHECK(pipe_mask_send_bytes(other, 1024.0) == 0.0);
  }
}

TEST_CASE("dp_sync: what overlapping backward hides is not charged, none for ZeRO-3",
          "[native][steps]") {
  NativeContext c = context(llama(32));
  StageEntries e = whole_model(32);
  const DesignPoint p = point(DpMethod::dp, 1, 1, 8, 4);
  const StageParams sp = params_of(c.model, p, e);
  c.settings.overlap_grad_reduce = false;
  const DpSync exposed = dp_sync(c, p, point_constants(c, p), c.gpus[0], sp, 1e3);
  REQUIRE(exposed.sync_s > 0.0);
  CHECK(exposed.sync_s == dp_sync(c, p, point_constants(c, p), c.gpus[0], sp, 0.0).sync_s);
  CHECK(exposed.expert_s == 0.0);
  c.settings.overlap_grad_reduce = true;
  CHECK(dp_sync(c, p, point_constants(c, p), c.gpus[0], sp, 1e3).sync_s == 0.0);
  CHECK(dp_sync(c, p, point_constants(c, p), c.gpus[0], sp, exposed.sync_s / 4.0).sync_s ==
        Approx(0.75 * exposed.sync_s));
  const DesignPoint z3 = point(DpMethod::zero3, 1, 1, 8, 4);
  CHECK(dp_sync(c, z3, point_constants(c, z3), c.gpus[0], params_of(c.model, z3, e), 0.0).sync_s ==
        0.0);
}

TEST_CASE("model_states: replicated, ZeRO-sharded and offloaded states", "[native][steps]") {
  const NativeContext c = context(llama(32));
  StageEntries e = whole_model(32);
  DesignPoint p = point(DpMethod::dp, 1, 1, 4, 4);
  StageParams sp = params_of(c.model, p, e);
  const FrameworkParams fw = framework_params(p.method, p.dtype);
  ModelStates ms = model_states(c, p, point_constants(c, p), c.gpus[0], sp);
  CHECK(ms.weights == Approx(2.0 * sp.local));
  CHECK(ms.gradients == Approx(fw.grad_bytes * sp.local));
  CHECK(ms.optimizer == Approx(12.0 * sp.local)); // fp32 master, Adam m and v
  CHECK(ms.host_bytes == 0.0);

  p.method = DpMethod::zero1;
  sp = params_of(c.model, p, e);
  ms = model_states(c, p, point_constants(c, p), c.gpus[0], sp);
  CHECK(ms.optimizer == Approx(12.0 * sp.local / 4.0));
  CHECK(ms.weights == Approx(2.0 * sp.local));

  p.method = DpMethod::zero2;
  p.offload = Offload::optimizer;
  sp = params_of(c.model, p, e);
  ms = model_states(c, p, point_constants(c, p), c.gpus[0], sp);
  CHECK(ms.optimizer == 0.0);
  CHECK(ms.gradients == Approx(2.0 * sp.local / 4.0));
  CHECK(ms.host_bytes == Approx(16.0 * sp.local / 4.0));
  CHECK(ms.offload_s > 0.0);
}

TEST_CASE("model_states: FSDP2 keeps the root module (embedding, norm, head) gathered",
          "[native][steps]") {
  const NativeContext c = context(llama(32));
  REQUIRE(layer_parameters(c.model) == 218112000); // q, o 4096^2; k, v 4096 x 1024; MLP; norms
  StageEntries e = whole_model(32);
  DesignPoint p = point(DpMethod::fsdp, 1, 1, 8, 1);
  StageParams sp = params_of(c.model, p, e);
  // Root: embedding and LM head 128256 x 4096 each, the final norm 4096.
  CHECK(sp.root == 1050677248.0);
  REQUIRE_FALSE(keeps_unsharded(p, point_constants(c, p), sp));
  // bf16: the two layers being computed (2 x 2 B x 218,112,000 = 872,448,000 bytes) and the
  // root, gathered from its forward to the end of backward (2 B x 1,050,677,248).
  ModelStates ms = model_states(c, p, point_constants(c, p), c.gpus[0], sp);
  CHECK(ms.buffers == Approx(872448000.0 + 2101354496.0));
  // tp 2 splits both.
  p.tp = 2;
  sp = params_of(c.model, p, e);
  ms = model_states(c, p, point_constants(c, p), c.gpus[0], sp);
  CHECK(ms.buffers == Approx((872448000.0 + 2101354496.0) / 2.0));
  // A stage without the embedding and the head gathers its layers only.
  p.tp = 1;
  StageEntries mid;
  mid.layers = mid.main = 32;
  sp = params_of(c.model, p, mid);
  CHECK(sp.root == 0.0);
  CHECK(model_states(c, p, point_constants(c, p), c.gpus[0], sp).buffers == Approx(872448000.0));
}

TEST_CASE("in_flight: 1F1B, interleaved, TeraPipe's GPipe order", "[native][steps]") {
  DesignPoint p = point(DpMethod::dp, 1, 4, 1, 8);
  CHECK(in_flight(p, 0, false, 0.0) == 4.0);
  CHECK(in_flight(p, 3, false, 0.0) == 1.0);
  p.num_micro_batches = 2;
  CHECK(in_flight(p, 0, false, 0.0) == 2.0);
  p.num_micro_batches = 8;
  p.virtual_stages = 2;
  p.schedule = Schedule::interleaved;
  CHECK(in_flight(p, 0, false, 0.0) == Approx(4.0 * (1.0 + 3.0 / 8.0)));
  // The last rank: (v - 1) pp + 1 = 5 chunk forwards, 2.5 micro-batches of the stage (the
  // first stage's factor carried over would give 1.375).
  CHECK(in_flight(p, 3, false, 0.0) == 2.5);
  p.virtual_stages = 1;
  p.schedule = Schedule::terapipe;
  CHECK(in_flight(p, 3, false, 0.0) == 8.0);
  p.schedule = Schedule::zb_h1;
  CHECK(in_flight(p, 1, true, 2.5) == 2.5);
  CHECK(in_flight(point(DpMethod::dp, 1, 1, 1, 8), 0, false, 0.0) == 1.0);
}

TEST_CASE("interleaved_held_forwards: Megatron-Core's warm-up plus one forward, rank by rank",
          "[native][steps]") {
  // pp 4, v 2, 8 micro-batches (16 chunk passes a rank): warm-up (4 - r - 1) 2 + (2 - 1) 4 =
  // 10, 8, 6, 4 chunk forwards, then the steady phase's first forward before any backward.
  CHECK(interleaved_held_forwards(4, 2, 8, 0) == 11);
  CHECK(interleaved_held_forwards(4, 2, 8, 1) == 9);
  CHECK(interleaved_held_forwards(4, 2, 8, 2) == 7);
  CHECK(interleaved_held_forwards(4, 2, 8, 3) == 5);
  // In micro-batches of the stage (each chunk half its layers): 5.5, 4.5, 3.5, 2.5, where
  // the first stage's 1.375 carried over gave 5.5, 4.125, 2.75, 1.375.
  DesignPoint p = point(DpMethod::dp, 1, 4, 1, 8);
  p.virtual_stages = 2;
  p.schedule = Schedule::interleaved;
  const double expected[] = {5.5, 4.5, 3.5, 2.5};
  for (int j = 0; j < 4; ++j) CHECK(in_flight(p, j, false, 0.0) == expected[j]);
  // m == pp (4): ranks 0 and 1 warm up with all 8 chunk forwards (10 and 8 >= 8); ranks 2
  // and 3 with 6 and 4, then one more (Megatron-Core has no "m == pp: all in warm-up" rule
  // since NVIDIA/Megatron-LM 4295be1a6c).
  CHECK(interleaved_held_forwards(4, 2, 4, 0) == 8);
  CHECK(interleaved_held_forwards(4, 2, 4, 1) == 8);
  CHECK(interleaved_held_forwards(4, 2, 4, 2) == 7);
  CHECK(interleaved_held_forwards(4, 2, 4, 3) == 5);
  // pp 4, v 3, 8 micro-batches: rank 0 6 + 8 + 1 = 15 (5 micro-batches of the stage, the
  // closed form 4 (1 + 3/12)), the last rank 8 + 1 = 9 (3 micro-batches).
  CHECK(interleaved_held_forwards(4, 3, 8, 0) == 15);
  CHECK(interleaved_held_forwards(4, 3, 8, 3) == 9);
  // pp 2, v 2, 4 micro-batches: 2 + 2 + 1 = 5 and 0 + 2 + 1 = 3 (interleaved_held_peak's
  // walk in test_pipeline_layout.cpp: (4, 1) and (2, 1)).
  CHECK(interleaved_held_forwards(2, 2, 4, 0) == 5);
  CHECK(interleaved_held_forwards(2, 2, 4, 1) == 3);
  // Rank 0's first chunk (the embedding's): pp 4, v 2, 8 micro-batches: 4 + 2 in the warm-up
  // (forwards 0-3 and 8-9), the steady forwards 10 and 11 add two more before a backward of
  // the first chunk (backward 4): 8 = 2 pp. pp 2, v 2, 4: 4; m == pp: every one, pp.
  CHECK(interleaved_first_chunk_held(4, 8) == 8);
  CHECK(interleaved_first_chunk_held(2, 4) == 4);
  CHECK(interleaved_first_chunk_held(4, 4) == 4);
}

TEST_CASE("add_activations: in-flight layers, the recomputed layer, embedding output and logits",
          "[native][steps]") {
  const NativeContext c = context(llama(32));
  DesignPoint p = point(DpMethod::dp, 1, 4, 1, 8);
  const LayerActivations act = layer_activations(c, p);
  CHECK(act.full_layer == act.layer); // no recomputation
  StageEntries mid;
  mid.layers = mid.main = 8;
  const NativeMemory m = with_activations(NativeMemory{}, c, p, point_constants(c, p), mid, 3.0);
  CHECK(m.activations == Approx(3.0 * 8.0 * act.layer));
  CHECK(m.buffers == 0.0);
  StageEntries first = mid;
  first.embedding = true;
  // bf16 embedding output of each micro-batch in flight: 3 x 2 bytes x 4096 x 4096
  CHECK(with_activations(NativeMemory{}, c, p, point_constants(c, p), first, 3.0).buffers ==
        Approx(3.0 * 2.0 * 4096.0 * 4096.0));
  p.recompute = Recompute::full;
  const LayerActivations full = layer_activations(c, p);
  CHECK(full.layer < full.full_layer);
  CHECK(with_activations(NativeMemory{}, c, p, point_constants(c, p), mid, 3.0).activations ==
        Approx(3.0 * 8.0 * full.layer + full.full_layer));
}

TEST_CASE("add_activations: with full recompute the loss and the recomputed layer are not live "
          "together",
          "[native][steps]") {
  NativeContext c = context(llama(32));
  DesignPoint p = point(DpMethod::dp, 1, 4, 1, 8);
  p.recompute = Recompute::full;
  const LayerActivations full = layer_activations(c, p);
  StageEntries last;
  last.layers = last.main = 8;
  last.head = true;
  // Megatron-LM's loss: 10 B per logit, 4096 tokens x 128,256 = 5,253,365,760 bytes, more
  // than one layer's working set: the loss is the peak, the recomputed layer comes after it.
  const double loss = 4096.0 * 128256.0 * 10.0;
  REQUIRE(full.full_layer < loss);
  NativeMemory m = with_activations(NativeMemory{}, c, p, point_constants(c, p), last, 3.0);
  CHECK(m.buffers == Approx(loss));
  CHECK(m.activations == Approx(3.0 * 8.0 * full.layer));
  // A vocabulary of 1,000: 4096 x 1000 x 10 = 40,960,000 bytes, less than the layer: the
  // recomputed layer is the peak and the loss is not counted.
  c.model.vocab_size = 1000;
  const LayerActivations small = layer_activations(c, p);
  REQUIRE(small.full_layer > 40960000.0);
  m = with_activations(NativeMemory{}, c, p, point_constants(c, p), last, 3.0);
  CHECK(m.buffers == 0.0);
  CHECK(m.activations == Approx(3.0 * 8.0 * small.layer + small.full_layer));
  // Without recompute both are live at the loss.
  p.recompute = Recompute::none;
  const LayerActivations none = layer_activations(c, p);
  m = with_activations(NativeMemory{}, c, p, point_constants(c, p), last, 3.0);
  CHECK(m.buffers == Approx(40960000.0));
  CHECK(m.activations == Approx(3.0 * 8.0 * none.layer));
}

TEST_CASE("to_gib: bytes to GiB, the framework overhead set", "[native][steps]") {
  NativeMemory m;
  m.weights = 2.0 * kGiB;
  m.activations = kGiB / 2.0;
  NativeMemory g = m;
  to_gib(g, 3.0);
  CHECK(g.weights == 2.0);
  CHECK(g.activations == 0.5);
  CHECK(g.total() == 5.5);
}

TEST_CASE("optimizer_step_s: memory bound over the states it updates, the host steps with offload",
          "[native][steps]") {
  const NativeContext c = context(llama(32));
  StageEntries e = whole_model(32);
  DesignPoint p = point(DpMethod::dp, 1, 1, 4, 4);
  const StageParams sp = params_of(c.model, p, e);
  const FrameworkParams fw = framework_params(p.method, p.dtype);
  const double memory_s = sp.local * (fw.grad_bytes + 2 * 12.0 + 2.0) /
                          (3000e9 * c.gpus[0].calibration.memory_efficiency);
  CHECK(optimizer_step_s(p, point_constants(c, p), c.gpus[0], sp, 32) == Approx(memory_s));
  p.method = DpMethod::zero2;
  p.offload = Offload::optimizer;
  CHECK(optimizer_step_s(p, point_constants(c, p), c.gpus[0], sp, 32) == 0.0);
}

TEST_CASE("optimizer_step_s: Megatron-LM's fp16 step with loss scaling moves 64 bytes a parameter",
          "[native][steps]") {
  const NativeContext c = context(llama(32));
  StageEntries e = whole_model(32);
  DesignPoint p = point(DpMethod::dp, 1, 1, 4, 4);
  p.dtype = Dtype::fp16;
  const StageParams sp = params_of(c.model, p, e);
  const double bw = 3000e9 * c.gpus[0].calibration.memory_efficiency;
  // fp16 .grad: DDP flatten, scale, copy back 12, cast 6, unscale 8, norm 4, FusedAdam 28,
  // copy back 6.
  CHECK(optimizer_step_s(p, point_constants(c, p), c.gpus[0], sp, 32) ==
        Approx(sp.local * 64.0 / bw));
  // bf16 keeps the states-only count: fp32 main_grad 4 + 24 + 2 = 30.
  p.dtype = Dtype::bf16;
  CHECK(optimizer_step_s(p, point_constants(c, p), c.gpus[0], sp, 32) ==
        Approx(sp.local * 30.0 / bw));
  // DeepSpeed's fp16 engine is another code path: the states' 2 + 24 + 2 = 28, plus its
  // FP16_Optimizer (the next test: 10 + 32 bytes and 290 tensors' host checks, 10.063 ms).
  p.dtype = Dtype::fp16;
  p.method = DpMethod::zero0;
  CHECK(optimizer_step_s(p, point_constants(c, p), c.gpus[0], sp, 32) ==
        Approx(sp.local * (28.0 + 42.0) / bw + 10.063e-3));
}

TEST_CASE("optimizer_step_s: DeepSpeed's FP16_Optimizer checks each gradient for overflow on the "
          "host, then copies, norms and unscales the fp32 gradients",
          "[native][steps]") {
  NativeContext c = context(llama(32));
  StageEntries e = whole_model(32);
  DesignPoint p = point(DpMethod::zero0, 1, 1, 4, 4);
  const StageParams sp = params_of(c.model, p, e);
  p.dtype = Dtype::bf16;
  const PointConstants k_bf16 = point_constants(c, p);
  CHECK_FALSE(deepspeed_fp16_optimizer(p, k_bf16));
  const double bf16_step = optimizer_step_s(p, k_bf16, c.gpus[0], sp, 32);
  p.dtype = Dtype::fp16;
  const PointConstants k = point_constants(c, p);
  CHECK(deepspeed_fp16_optimizer(p, k));
  // The check: cast (read 2, write 4) and sum (read 4) per gradient element: 10 bytes. After it:
  // cast to fp32 (2 + 4), flatten (4 + 4), norm (4), unscale (4 + 4), Adam's fp32 gradient (4
  // against the 2 counted) and the master read for the 16-bit copy (4): 32 bytes.
  CHECK(kFp16OverflowCheckBytes == 10.0);
  CHECK(kFp16OptimizerStepBytes == 32.0);
  // Llama's layer has 7 matmul weights and 2 norms (no biases): 32 x 9 + 2 = 290 tensors, each
  // with three launches (8.3 us) and one wait (6 + 3.8 us) on the host: 34.7 us, 10.063 ms.
  CHECK(fp16_overflow_check_s(c.gpus[0], 0.0, 290.0) == Approx(10.063e-3));
  // A 7B stage is memory bound: both steps add their bytes to the same 28 (2 + 2 x 12 + 2).
  const double bw = 3000e9 * c.gpus[0].calibration.memory_efficiency;
  CHECK(optimizer_step_s(p, k, c.gpus[0], sp, 32) - bf16_step ==
        Approx(10.063e-3 + 42.0 * sp.local / bw));
  // Not with ZeRO 1 (the ZeRO optimizer) nor with the optimizer offloaded (the host steps).
  p.method = DpMethod::zero1;
  CHECK_FALSE(deepspeed_fp16_optimizer(p, point_constants(c, p)));
  p.method = DpMethod::zero0;
  p.offload = Offload::optimizer;
  CHECK_FALSE(deepspeed_fp16_optimizer(p, point_constants(c, p)));
  // Nor without an fp32 master (--master_weights off).
  p.offload = Offload::none;
  c.settings.master_weights = false;
  CHECK_FALSE(deepspeed_fp16_optimizer(p, point_constants(c, p)));
}

TEST_CASE("optimizer_step_s: an fp32 module under autocast steps an eager per-tensor Adam",
          "[native][steps]") {
  NativeContext c = context(llama(32));
  c.settings.layer_impl = LayerImpl::hf_gpt2_amp;
  StageEntries e = whole_model(32);
  DesignPoint p = point(DpMethod::dp, 1, 1, 4, 4);
  p.dtype = Dtype::fp16;
  const StageParams sp = params_of(c.model, p, e);
  const PointConstants k = point_constants(c, p);
  // GradScaler's unscale (read and write the fp32 gradient: 8), then per tensor exp_avg.mul_
  // (8), .add_(grad) (12), exp_avg_sq.mul_ (8), .addcmul_(grad, grad) (16), sqrt (8),
  // .add_(eps) (8), p.addcdiv_(m, denom) (16): 84 bytes per parameter; 7 launches per tensor.
  const double bytes = 8.0 + 8 + 12 + 8 + 16 + 8 + 8 + 16;
  CHECK(bytes == 84.0);
  const double memory_s = sp.local * bytes / (3000e9 * c.gpus[0].calibration.memory_efficiency);
  const double host_s = (32 * k.tensors_per_layer + 2) * 7 * kHostPerKernel_s;
  CHECK(optimizer_step_s(p, k, c.gpus[0], sp, 32) == Approx(std::max(memory_s, host_s)));
  // The fp32 module's gradients: kept and all-reduced in 4 bytes (torch DDP reduces .grad).
  CHECK(k.fw.grad_bytes == 4.0);
  CHECK(k.fw.grad_reduce_bytes == 4.0);
  CHECK(framework_params(DpMethod::dp, Dtype::fp16, NativeSettings{}).grad_reduce_bytes == 2.0);
  // In 16 bits (DeepSpeed's fp16 engine) the framework's own step and gradients stay.
  c.settings.layer_impl = LayerImpl::hf_gpt2;
  const FrameworkParams fw = framework_params(p.method, p.dtype, c.settings);
  CHECK(fw.grad_bytes == 2.0);
}

TEST_CASE("one_f_one_b_s: slowest stage x micro-batches, fill and drain over v, sends",
          "[native][steps]") {
  std::vector<NativeStage> st(3);
  st[0].forward_s = 0.5;
  st[0].backward_s = 0.5;
  st[1].forward_s = 1.0;
  st[1].backward_s = 1.0;
  st[2].forward_s = 0.25;
  st[2].backward_s = 0.75;
  st[0].send_s = 0.1;
  st[1].send_s = 0.1;
  // 4 x 2 + (1 + 1) + 2 x 0.2 + 2 x 3 x 0.1
  CHECK(one_f_one_b_s(st, 1, 4.0) == Approx(11.0));
  // interleaved v = 2: fill and drain halved, the slowest send 2 v (m - 1) times
  CHECK(one_f_one_b_s(st, 2, 4.0) == Approx(8.0 + 1.0 + 0.4 + 1.2));
  st.resize(1);
  CHECK(one_f_one_b_s(st, 1, 4.0) == Approx(4.0 + 0.2));
}

TEST_CASE("terapipe_run: slices cover the sequence, one slice is the stage's pipeline",
          "[native][steps]") {
  const NativeContext c = context(llama(8));
  DesignPoint p = point(DpMethod::dp, 1, 4, 1, 4);
  p.schedule = Schedule::terapipe;
  const NativeEstimate est = native_estimate(c, p, native_placement(c, p, {0}));
  const TeraPipeRun run = terapipe_run(c, p, est);
  REQUIRE_FALSE(run.slices.empty());
  CHECK(std::accumulate(run.slices.begin(), run.slices.end(), std::int64_t{0}) == 4096);
  CHECK(run.pipeline_s > 0.0);
  CHECK(run.pipeline_s == est.pipeline_s);
}

TEST_CASE("embedding_sync_s: only tied embeddings across a pipeline", "[native][steps]") {
  ModelSpec m = llama(32);
  NativeContext c = context(m);
  DesignPoint p = point(DpMethod::dp, 1, 2, 1, 4);
  CHECK(embedding_sync_s(c, p, point_constants(c, p), native_placement(c, p, {0})) == 0.0);
  c.model.tied_embeddings = true;
  CHECK(embedding_sync_s(c, p, point_constants(c, p), native_placement(c, p, {0})) > 0.0);
  p.pp = 1;
  CHECK(embedding_sync_s(c, p, point_constants(c, p), native_placement(c, p, {0})) == 0.0);
}

TEST_CASE("embedding_sync_s: the node's network shared by the first stage's GPUs on it",
          "[native][steps]") {
  // 8 GPUs, 4 per node, pp 4: stages 0-1 on node 0, stages 2-3 on node 1, so the first and
  // the last stage sync their tied embeddings across the network. Each of the first stage's
  // tp x dp GPUs on node 0 syncs its own copy at the same time: with dp 2 they share the
  // node's 400e9 B/s two ways, not four (the node's other two GPUs hold stage 1 and send
  // nothing across).
  ModelSpec m = llama(32);
  m.tied_embeddings = true;
  NativeContext c = context(m, 8);
  c.gpus_per_node = 4;
  const DesignPoint p = point(DpMethod::dp, 1, 4, 2, 4);
  const PointConstants k = point_constants(c, p);
  const double bytes = k.fw.grad_reduce_bytes * static_cast<double>(m.vocab_size) *
                       static_cast<double>(m.hidden_size);
  // A 2-rank ring all-reduce: bytes on the wire once each way, 2 steps, at 400e9 / 2.
  const double expected = nccl_collective_s(bytes, 2, 400e9 / 2, nccl_latency(Transport::net));
  CHECK(embedding_sync_s(c, p, k, native_placement(c, p, {0})) == Approx(expected));
  // A stage wider than the node: every GPU of it crosses, the share is the node's over 4.
  NativeContext wide = context(m, 16);
  wide.gpus_per_node = 4;
  const DesignPoint q = point(DpMethod::dp, 1, 2, 8, 4);
  const PointConstants kq = point_constants(wide, q);
  CHECK(embedding_sync_s(wide, q, kq, native_placement(wide, q, {0})) ==
        Approx(nccl_collective_s(bytes, 2, 400e9 / 4, nccl_latency(Transport::net))));
}

TEST_CASE("with_totals: the slowest stage's parts, the memory peak and its stage, the step",
          "[native][steps]") {
  const NativeContext c = context(llama(32));
  DesignPoint p = point(DpMethod::dp, 1, 2, 1, 4);
  NativeEstimate est;
  est.stages.resize(2);
  est.stages[0].dp_sync_s = 1.0;
  est.stages[1].dp_sync_s = 2.0;
  est.stages[0].optimizer_s = 0.5;
  est.stages[0].memory.weights = 10.0;
  est.stages[1].memory.weights = 30.0;
  est.stages[0].memory_limit_gib = est.stages[1].memory_limit_gib = 20.0;
  est.pipeline_s = 10.0;
  est.embedding_sync_s = 0.25;
  const NativeEstimate t = with_totals(est, c, p);
  CHECK(t.dp_sync_s == 2.0);
  CHECK(t.step_s == Approx(10.0 + 2.0 + 0.25 + 0.5));
  CHECK(t.peak_stage == 1);
  CHECK(t.peak_memory_gib == 30.0);
  CHECK(t.oom);
  CHECK_FALSE(t.host_oom);
  // Offload: host memory per node against 2 x the node's GPU memory.
  est.stages[1].memory.weights = 5.0;
  est.stages[0].host_gib = 41.0; // x 8 GPUs > 2 x 20 x 8
  p.offload = Offload::optimizer;
  const NativeEstimate h = with_totals(est, c, p);
  CHECK(h.host_gib_per_node == 328.0);
  CHECK(h.host_oom);
  CHECK(h.oom);
}

namespace {

/// minmax_layers' definition: a heap of each stage's next cost, (cost, index) ascending.
std::vector<int> minmax_by_heap(const std::vector<double>& fixed,
                                const std::vector<double>& per_layer, int layers) {
  std::vector<int> n(fixed.size(), 1);
  for (int left = layers - static_cast<int>(fixed.size()); left > 0; --left) {
    std::size_t best = 0;
    double best_cost = fixed[0] + (n[0] + 1) * per_layer[0];
    for (std::size_t j = 1; j < fixed.size(); ++j) {
      const double cost = fixed[j] + (n[j] + 1) * per_layer[j];
      if (cost < best_cost) {
        best = j;
        best_cost = cost;
      }
    }
    ++n[best];
  }
  return n;
}

} // namespace

TEST_CASE("minmax_layers: each layer to the stage whose time grows least, the lowest stage "
          "among equals",
          "[native][steps]") {
  // 10 layers, 4 stages alike but for the ends' fixed costs: the middle stages take more.
  CHECK(minmax_layers({1.5, 0.0, 0.0, 1.5}, {1.0, 1.0, 1.0, 1.0}, 10) ==
        std::vector<int>{2, 3, 3, 2});
  // Equal costs go to the lowest stage first.
  CHECK(minmax_layers({0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}, 5) == std::vector<int>{2, 2, 1});
  // A slower stage (2 s a layer) takes fewer.
  CHECK(minmax_layers({0.0, 0.0}, {1.0, 2.0}, 9) == std::vector<int>{6, 3});
  // Against the definition on random stages whose costs repeat (classes of alike stages),
  // with per-layer costs of 0 and fixed costs that swamp them (where turns do not hold).
  std::uint64_t state = 12345;
  const auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % 1000);
  };
  const double per_values[] = {1.0, 0.5, 0.1, 0.0, 3.0e-3};
  const double fixed_values[] = {0.0, 0.25, 1.5, 1e18, 0.1};
  for (int trial = 0; trial < 2000; ++trial) {
    const std::size_t pp = 1 + static_cast<std::size_t>(next() % 24);
    const int kinds = 1 + next() % 5;
    std::vector<double> fixed(pp), per(pp);
    for (std::size_t j = 0; j < pp; ++j) {
      fixed[j] = fixed_values[next() % kinds];
      per[j] = per_values[next() % kinds];
    }
    const int layers = static_cast<int>(pp) + next() % 120;
    INFO("trial " << trial);
    REQUIRE(minmax_layers(fixed, per, layers) == minmax_by_heap(fixed, per, layers));
  }
}

TEST_CASE("native_estimate: its stages are the steps composed stage by stage, bit for bit",
          "[native][steps]") {
  // native_estimate runs a stage's GPU- and entry-dependent steps once per distinct stage of
  // a point and copies them: the result must be what running every step on every stage gives.
  for (const bool moe : {false, true}) {
    const ModelSpec m = moe ? small_moe() : llama(30);
    const NativeContext c = context(m);
    for (const DpMethod method : {DpMethod::zero1, DpMethod::zero3, DpMethod::fsdp}) {
      // DeepSpeed ZeRO-3 runs an MoE model at tp 1 only (AutoEP): tp 1 x dp 8 there.
      const bool tp1 = moe && method == DpMethod::zero3;
      DesignPoint p = point(method, tp1 ? 1 : 2, moe ? 4 : 6, tp1 ? 8 : 4, 12);
      p.recompute = Recompute::selective;
      if (moe) { // expert parallelism where the method allows it (zero1)
        const bool ep = method == DpMethod::zero1;
        p.ep = ep ? 2 : 1;
        p.etp = static_cast<std::int16_t>(ep ? 1 : p.tp);
      }
      const NativePlacement where = native_placement(c, p, std::vector<int>(6, 0));
      INFO(native_invalid_reason(c, p, where));
      REQUIRE(native_invalid_reason(c, p, where).empty());
      const NativeEstimate est = native_estimate(c, p, where);
      const PointConstants k = point_constants(c, p);
      const AnalyticLayerTimes t = real_times(c, p);
      REQUIRE(est.stages.size() == static_cast<std::size_t>(p.pp));
      for (int j = 0; j < p.pp; ++j) {
        INFO("moe " << moe << " method " << to_string(method) << " stage " << j);
        NativeStage st;
        st.gpu = 0;
        st.layers = est.partition[static_cast<std::size_t>(j)];
        st.memory_limit_gib = c.gpus[0].memory_gib;
        const StageEntries e = stage_entries(m, p, est.partition, j, j == 0, j == p.pp - 1);
        st.moe_layers = e.moe;
        REQUIRE(e.dense == 0); // the test models have no dense-first layers
        set_compute(st, m, p, k, e, t, t);
        add_moe_comm(st, c, p, k, c.gpus[0], t, e.moe);
        add_cp_exchange(st, c, p, k, c.gpus[0], t, e.layers);
        const StageParams params = stage_params(m, p, k, e);
        st.grad_accumulation_s =
            grad_accumulation_s(p, k, c.gpus[0], params.local, e.layers);
        st.backward_s += st.grad_accumulation_s;
        st.weight_s += st.grad_accumulation_s;
        add_sharded_comm(st, c, p, k, c.gpus[0], params, e);
        add_offload_fetch(st, p, k, c.gpus[0], params);
        st.send_s = send_s(c, p, k, where, j);
        if (method == DpMethod::zero1) {
          const DpSync sync = dp_sync(c, p, k, c.gpus[0], params, st.backward_s);
          st.dp_sync_s = sync.sync_s;
          st.expert_dp_sync_s = sync.expert_s;
        }
        const ModelStates states = model_states(c, p, k, c.gpus[0], params);
        st.memory.weights = states.weights;
        st.memory.gradients = states.gradients;
        st.memory.optimizer = states.optimizer;
        st.memory.buffers += states.buffers;
        st.offload_s = states.offload_s;
        st.host_gib = states.host_bytes / kGiB;
        st.in_flight = in_flight(p, j, false, 0.0);
        add_activations(st.memory, c, p, k, e, st.in_flight);
        to_gib(st.memory, c.settings.framework_overhead_gib);
        st.optimizer_s = optimizer_step_s(p, k, c.gpus[0], params, e.layers);
        const NativeStage& got = est.stages[static_cast<std::size_t>(j)];
        CHECK(got.layers == st.layers);
        CHECK(got.moe_layers == st.moe_layers);
        CHECK(got.forward_s == st.forward_s);
        CHECK(got.backward_s == st.backward_s);
        CHECK(got.recompute_s == st.recompute_s);
        CHECK(got.weight_s == st.weight_s);
        CHECK(got.sharded_comm_s == st.sharded_comm_s);
        CHECK(got.grad_accumulation_s == st.grad_accumulation_s);
        CHECK(got.moe_comm_s == st.moe_comm_s);
        CHECK(got.send_s == st.send_s);
        CHECK(got.dp_sync_s == st.dp_sync_s);
        CHECK(got.expert_dp_sync_s == st.expert_dp_sync_s);
        CHECK(got.optimizer_s == st.optimizer_s);
        CHECK(got.in_flight == st.in_flight);
        CHECK(got.memory.weights == st.memory.weights);
        CHECK(got.memory.gradients == st.memory.gradients);
        CHECK(got.memory.optimizer == st.memory.optimizer);
        CHECK(got.memory.activations == st.memory.activations);
        CHECK(got.memory.buffers == st.memory.buffers);
        CHECK(got.memory.overhead == st.memory.overhead);
      }
    }
  }
}
