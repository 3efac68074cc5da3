#include <catch2/catch.hpp>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "zerosearch/core/error.hpp"
#include "zerosearch/model/moe.hpp"
#include "zerosearch/model/native.hpp"
#include "zerosearch/model/native_steps.hpp"
#include "zerosearch/model/pipeline_layout.hpp"
#include "native_fixtures.hpp"

using namespace zerosearch;

namespace {

/// Whether `f` throws an InputError whose message contains `part`.
template <typename F>
bool input_error_with(F f, const std::string& part) {
  try {
    f();
  } catch (const InputError& e) {
    return std::string(e.what()).find(part) != std::string::npos;
  }
  return false;
}

} // namespace

TEST_CASE("pipeline layout: Megatron-Bridge's DeepSeek-V3 layout unrolled chunk by chunk",
          "[pipeline_layout]") {
  // "Et*4|(t*4|)*14tmL": E + 4 t, fourteen chunks of 4 t, then t, m and L: 16 chunks, 61 t.
  const PipelineLayout l = parse_pipeline_layout("Et*4|(t*4|)*14tmL");
  REQUIRE(l.chunks.size() == 16);
  CHECK(l.chunks[0].embedding);
  CHECK(l.chunks[0].layers == 4);
  CHECK(l.chunks[0].entries == "Etttt");
  for (std::size_t k = 1; k < 15; ++k) {
    CHECK(l.chunks[k].layers == 4);
    CHECK(l.chunks[k].first_layer == 4 * static_cast<int>(k));
    CHECK_FALSE(l.chunks[k].embedding);
    CHECK_FALSE(l.chunks[k].loss);
  }
  CHECK(l.chunks[15].layers == 1);
  CHECK(l.chunks[15].mtp == 1);
  CHECK(l.chunks[15].loss);
  CHECK(l.chunks[15].first_layer == 60);
  CHECK(l.layers() == 61);
  CHECK(l.mtp_layers() == 1);
  // pp 2: rank 0 holds the even chunks (E + 4 + 7 x 4 = 33 entries), rank 1 the odd ones
  // (7 x 4 + t + L = 30; the MTP layer is not an entry).
  CHECK(l.partition(2) == std::vector<int>{33, 30});
  // pp 4 (v 4): rank 0 E + 16, ranks 1 and 2 16 each, rank 3 12 + t + L.
  CHECK(l.partition(4) == std::vector<int>{17, 16, 16, 14});
  CHECK(pipeline_layout_invalid_reason(l, 2, 8, 61).empty());
  CHECK(pipeline_layout_invalid_reason(l, 4, 4, 61).empty());
  CHECK(pipeline_layout_invalid_reason(l, 16, 1, 61).empty());
}

TEST_CASE("pipeline layout: the parser's rules as Megatron-Core's parse_str_to_list",
          "[pipeline_layout]") {
  // Megatron's own docstring example: [[E,t,t,t]] + [[t,t]] * 29 + [[m], [L]].
  const PipelineLayout doc = parse_pipeline_layout("Ettt|(tt|)*29,m|L");
  REQUIRE(doc.chunks.size() == 32);
  CHECK(doc.chunks[0].entries == "Ettt");
  CHECK(doc.chunks[29].entries == "tt");
  CHECK(doc.chunks[30].entries == "m");
  CHECK(doc.chunks[31].entries == "L");
  CHECK(doc.layers() == 3 + 2 * 29);
  // A group without '|' repeats inside one chunk; x*0 removes x; commas are dropped.
  CHECK(parse_pipeline_layout("E(tt)*3L").chunks.at(0).entries == "EttttttL");
  const PipelineLayout empty_run = parse_pipeline_layout("Et*0|L");
  REQUIRE(empty_run.chunks.size() == 2);
  CHECK(empty_run.chunks[0].entries == "E");
  CHECK(parse_pipeline_layout("E,t,t|t,L").chunks.at(1).entries == "tL");
  // Repeats bind to one character only: "Et*2t" is E t t t.
  CHECK(parse_pipeline_layout("Et*2t").chunks.at(0).layers == 3);
  // Empty chunks are chunks (Megatron's "(empty stage)").
  CHECK(parse_pipeline_layout("Et||tL").chunks.size() == 3);

  CHECK(input_error_with([] { (void)parse_pipeline_layout("Etx|L"); }, "'x' is not a layer"));
  // An unmatched '(' is left as it is and is not a layer character.
  CHECK(input_error_with([] { (void)parse_pipeline_layout("E(t*4|L"); }, "'(' is not"));
  CHECK(input_error_with([] { (void)parse_pipeline_layout("E t|L"); }, "' ' is not"));
  CHECK(input_error_with([] { (void)parse_pipeline_layout("Et*99999999999L"); },
                         "unrolls to more than"));
}

TEST_CASE("pipeline layout: invalid layouts for the point and the model", "[pipeline_layout]") {
  const auto why = [](const char* text, int pp, int v, long long layers) {
    return pipeline_layout_invalid_reason(parse_pipeline_layout(text), pp, v, layers);
  };
  CHECK(why("Et*4|(t*4|)*14tmL", 2, 4, 61).find("has 16 chunks but pp 2 x virtual stages 4 is 8") !=
        std::string::npos);
  CHECK(why("Et*4|(t*4|)*14tmL", 2, 8, 60).find("has 61 transformer layers (t) but the model "
                                                "has 60") != std::string::npos);
  CHECK(why("t|tL", 2, 1, 2).find("first entry must be the embedding") != std::string::npos);
  CHECK(why("EtL|t", 2, 1, 2).find("last entry must be the loss") != std::string::npos);
  CHECK(why("EEt|tL", 2, 1, 2).find("exactly one embedding E") != std::string::npos);
  CHECK(why("Etm|tL", 2, 1, 2).find("a transformer layer t after an MTP layer") !=
        std::string::npos);
  // pp 2, v 2: chunk 1 is rank 1's first virtual stage, where Megatron-Core refuses MTP.
  CHECK(why("Et|tm||L", 2, 2, 2).find("rank 1's virtual stage 0") != std::string::npos);
  // Two MTP layers in two chunks (both last virtual stages, pp 2, v 1).
  CHECK(why("Etm|mL", 2, 1, 1).find("must all be in one chunk") != std::string::npos);
  CHECK(why("Et|tmL", 2, 1, 2).empty());
}

TEST_CASE("pipeline layout: MTP layers need rotary positions, as Megatron-LM's arguments",
          "[pipeline_layout]") {
  ModelSpec m = test::test_llama(2);
  const PipelineLayout with_mtp = parse_pipeline_layout("Et|tmL");
  CHECK(pipeline_layout_model_reason(with_mtp, m).empty());
  CHECK(pipeline_layout_model_reason(parse_pipeline_layout("Et|tL"), m).empty());
  m.learned_position_embeddings = true;
  m.name = "learned";
  CHECK(pipeline_layout_model_reason(with_mtp, m) ==
        "--pipeline_layout 'Et|tmL': MTP layers (m) on learned, whose positions are learned "
        "absolute embeddings; Megatron-LM takes multi-token prediction only with rotary "
        "positions (or none): leave the m out");
  CHECK(pipeline_layout_model_reason(parse_pipeline_layout("Et|tL"), m).empty());
}

TEST_CASE("pipeline layout: interleaved 1F1B order of Megatron-Core", "[pipeline_layout]") {
  // pp 2, v 2, 4 micro-batches, rank 0: warm-up (2 - 0 - 1) x 2 + (2 - 1) x 2 = 4 forwards,
  // chunk (k mod 4) / 2, micro-batch (k / 4) x 2 + k mod 2; backwards chunk 1 - that.
  const std::vector<InterleavedOp> r0 = interleaved_order(2, 2, 4, 0);
  REQUIRE(r0.size() == 16);
  const int f_chunk[] = {0, 0, 1, 1, 0, 0, 1, 1};
  const int f_mb[] = {0, 1, 0, 1, 2, 3, 2, 3};
  std::vector<InterleavedOp> forwards, backwards;
  for (const InterleavedOp& o : r0) (o.forward ? forwards : backwards).push_back(o);
  for (int k = 0; k < 8; ++k) {
    CHECK(forwards[static_cast<std::size_t>(k)].chunk == f_chunk[k]);
    CHECK(forwards[static_cast<std::size_t>(k)].micro_batch == f_mb[k]);
    CHECK(backwards[static_cast<std::size_t>(k)].chunk == 1 - f_chunk[k]);
    CHECK(backwards[static_cast<std::size_t>(k)].micro_batch == f_mb[k]);
  }
  // Four warm-up forwards, then forward-backward pairs (steady), then the cool-down backwards.
  for (int i = 0; i < 4; ++i) CHECK(r0[static_cast<std::size_t>(i)].forward);
  CHECK(r0[4].forward);
  CHECK_FALSE(r0[5].forward);
  // The first steady backward runs unpaired (combined 1F1B), the next three are pairs: as many
  // as moe_a2a_overlap_pairs counts.
  CHECK_FALSE(r0[5].steady);
  CHECK(r0[7].steady);
  CHECK_FALSE(r0[15].steady);
  int pairs = 0;
  for (const InterleavedOp& o : r0) pairs += o.steady ? 1 : 0;
  CHECK(pairs == 3);
  CHECK(moe_a2a_overlap_pairs(2, 0, 2, 4) == Approx(3.0));
  // Rank 1 warms up with (v - 1) x pp = 2 forwards.
  const std::vector<InterleavedOp> r1 = interleaved_order(2, 2, 4, 1);
  CHECK(r1[0].forward);
  CHECK(r1[1].forward);
  CHECK(r1[2].forward);
  CHECK_FALSE(r1[3].forward);
}

TEST_CASE("pipeline layout: interleaved 1F1B simulated on uneven chunks", "[pipeline_layout]") {
  SECTION("one chunk per rank is 1F1B: (m + pp - 1) (f + b)") {
    InterleavedTimes t;
    t.pp = 2;
    t.virtual_stages = 1;
    t.forward_s = {1.0, 1.0};
    t.backward_s = {2.0, 2.0};
    t.link_s = {0.0, 0.0};
    CHECK(simulate_interleaved(t, 2) == Approx(9.0));
    CHECK(simulate_interleaved(t, 4) == Approx(15.0));
    // One chunk per rank is Megatron-Core's plain 1F1B: rank 0 warms up with pp - 0 - 1 = 1
    // forward (F0 F1 B0 F2 B1 F3 B2 B3), rank 1 with none (F0 B0 F1 B1 ...). Each paired
    // backward (all steady ones but the first: rank 0's B1 and B2, rank 1's B1 to B3) hides
    // 0.5 s. By hand, pass by pass: rank 0 F0 [0,1] F1 [1,2]; rank 1 F0 [1,2] B0 [2,4]; rank 0
    // B0 [4,6]; rank 1 F1 [4,5] B1 [5,6.5]; rank 0 F2 [6,7] B1 [7,8.5]; rank 1 F2 [7,8] B2
    // [8,9.5]; rank 0 F3 [8.5,9.5] B2 [9.5,11]; rank 1 F3 [9.5,10.5] B3 [10.5,12]; rank 0 B3
    // (cool-down, unpaired) [12,14].
    t.pair_hidden_s = {0.5, 0.5};
    CHECK(simulate_interleaved(t, 4) == Approx(14.0));
    const std::vector<InterleavedOp> r0 = interleaved_order(2, 1, 4, 0);
    REQUIRE(r0.size() == 8);
    CHECK(r0[0].forward);
    CHECK(r0[1].forward);
    CHECK_FALSE(r0[2].forward);
    CHECK(r0[3].forward);
    CHECK(interleaved_order(2, 1, 4, 1)[1].forward == false);
    // Any number of micro-batches (no multiple of pp needed): 3 on 2 ranks, (3 + 1) x 3 s.
    t.pair_hidden_s.clear();
    CHECK(simulate_interleaved(t, 3) == Approx(12.0));
  }
  SECTION("pp 2, v 2, rank 0's second chunk twice as slow") {
    // Chunk (rank, virtual stage): (0,0) 1+2 s, (1,0) 1+2, (0,1) 2+4, (1,1) 1+2; m = pp = 2:
    // rank 0 warms up with all 4 forwards, rank 1 with (v - 1) pp = 2 (Megatron-Core since
    // 4295be1a6c), then F c1, B c1, F c1, B c1. By hand: rank 0 forwards end 1, 2, 4, 6; rank
    // 1's first chunk 2, 3; rank 1 F c1 4-5, B c1 5-7, F c1 7-8, B c1 8-10; rank 0's backwards
    // of its second chunk 7-11, 11-15; rank 1's first chunk 11-13, 15-17; rank 0's first
    // chunk 15-17, 17-19.
    InterleavedTimes t;
    t.pp = 2;
    t.virtual_stages = 2;
    t.forward_s = {1.0, 2.0, 1.0, 1.0};   // [r * v + c]
    t.backward_s = {2.0, 4.0, 2.0, 2.0};
    t.link_s = {0.0, 0.0};
    CHECK(simulate_interleaved(t, 2) == Approx(19.0));
    // The same chunks made even (rank 0's second chunk as fast as the others) finish sooner.
    InterleavedTimes even = t;
    even.forward_s[1] = 1.0;
    even.backward_s[1] = 2.0;
    CHECK(simulate_interleaved(even, 2) < simulate_interleaved(t, 2));
    // A send keeps its rank busy: 0.25 s a boundary adds to every pass but the ends'.
    InterleavedTimes linked = t;
    linked.link_s = {0.25, 0.25};
    CHECK(simulate_interleaved(linked, 2) > simulate_interleaved(t, 2));
  }
}

TEST_CASE("pipeline layout: the forwards a rank holds at its peak, chunk by chunk",
          "[pipeline_layout]") {
  // pp 2, v 2, 4 micro-batches (the order of the test above). Rank 0 holds, after its four
  // warm-up forwards, 2 of each chunk; the steady pairs then run F c0, B c1, F c0, B c1, F c1,
  // B c0, F c1, B c0: held (3, 2), (3, 1), (4, 1), (4, 0), (4, 1), (3, 1), (3, 2), (2, 2).
  SECTION("rank 0, a heavy first chunk: 4 of it and 1 of the second") {
    const std::vector<double> bytes = {8.0, 1.0}; // (4, 1): 33 beats (3, 2): 26
    CHECK(interleaved_held_peak(2, 2, 4, 0, bytes) == std::vector<int>{4, 1});
  }
  SECTION("rank 0, a heavy second chunk: 3 of the first and 2 of it") {
    const std::vector<double> bytes = {1.0, 8.0}; // (3, 2): 19 beats (4, 1): 12, (2, 2): 18
    CHECK(interleaved_held_peak(2, 2, 4, 0, bytes) == std::vector<int>{3, 2});
  }
  SECTION("even chunks on rank 0: Megatron-LM's pp (1 + (pp - 1) / (pp v)) micro-batches") {
    // pp 4, v 2, 8 micro-batches: (v - 1) pp + 2 (pp - 1) + 1 = 11 chunk forwards, 5.5
    // micro-batches of the stage = 4 x (1 + 3/8).
    const std::vector<double> bytes = {1.0, 1.0};
    const std::vector<int> held = interleaved_held_peak(4, 2, 8, 0, bytes);
    CHECK(held[0] + held[1] == 11);
    CHECK(held == std::vector<int>{7, 4});
  }
  SECTION("the last rank warms up with (v - 1) pp forwards of its first chunk") {
    // pp 2, v 2, rank 1: F c0, F c0, then F c1, B c1 twice, then F c0, B c0: held (2, 0),
    // (2, 1), (2, 0), (2, 1), (2, 0), (3, 0), (2, 0)...
    CHECK(interleaved_held_peak(2, 2, 4, 1, std::vector<double>{1.0, 1.0}) ==
          std::vector<int>{2, 1});
    CHECK(interleaved_held_peak(2, 2, 4, 1, std::vector<double>{4.0, 1.0}) ==
          std::vector<int>{3, 0});
  }
  SECTION("m = pp: rank 0 runs every forward first, the last rank still (v - 1) pp + 1") {
    // pp 2, v 2, 2 micro-batches: rank 0's warm-up 2 + 2 = 4 = m v; rank 1's 0 + 2, then F c1,
    // B c1, F c1, B c1, B c0, B c0: held (2, 1) at most (Megatron-Core since 4295be1a6c).
    CHECK(interleaved_held_peak(2, 2, 2, 0, std::vector<double>{1.0, 3.0}) ==
          std::vector<int>{2, 2});
    CHECK(interleaved_held_peak(2, 2, 2, 1, std::vector<double>{1.0, 3.0}) ==
          std::vector<int>{2, 1});
  }
  SECTION("even chunks: the closed form's forwards on every rank, the first chunk's on rank 0") {
    for (const int pp : {2, 4, 8}) {
      for (const int v : {2, 3, 4}) {
        for (const int m : {pp, 2 * pp, 4 * pp}) {
          for (int r = 0; r < pp; ++r) {
            const std::vector<double> even(static_cast<std::size_t>(v), 1.0);
            const std::vector<int> held = interleaved_held_peak(pp, v, m, r, even);
            CHECK(std::accumulate(held.begin(), held.end(), 0) ==
                  native_steps::interleaved_held_forwards(pp, v, m, r));
          }
          // A first chunk heavier by the embedding's output: the peak with most of it.
          std::vector<double> first(static_cast<std::size_t>(v), 1.0);
          first[0] = 1.01;
          CHECK(interleaved_held_peak(pp, v, m, 0, first)[0] ==
                native_steps::interleaved_first_chunk_held(pp, m));
        }
      }
    }
  }
}

TEST_CASE("pipeline layout: the native estimator's stages and chunks follow the layout",
          "[pipeline_layout][native]") {
  NativeContext c;
  c.model = test::test_llama(16);
  c.gpus = {test::h100_like()};
  DesignPoint p;
  p.method = DpMethod::dp;
  p.tp = 1;
  p.pp = 2;
  p.dp = 4;
  p.mbs = 1;
  p.num_micro_batches = 8;
  const NativePlacement where = native_placement(c, p, {0});

  SECTION("one chunk per rank: the layout is the partition it gives") {
    const NativeEstimate by_partition = native_estimate(c, p, where, {10, 8});
    c.settings.pipeline_layout =
        std::make_shared<const PipelineLayout>(parse_pipeline_layout("Et*9|t*7L"));
    REQUIRE(native_invalid_reason(c, p, where).empty());
    const NativeEstimate by_layout = native_estimate(c, p, where);
    CHECK(by_layout.partition == std::vector<int>{10, 8});
    CHECK(by_layout.step_s == by_partition.step_s);
    CHECK(by_layout.peak_memory_gib == by_partition.peak_memory_gib);
  }
  SECTION("an MTP layer: one more layer and one more pass through the head on its rank") {
    c.settings.pipeline_layout =
        std::make_shared<const PipelineLayout>(parse_pipeline_layout("Et*8|t*8L"));
    const NativeEstimate plain = native_estimate(c, p, where);
    c.settings.pipeline_layout =
        std::make_shared<const PipelineLayout>(parse_pipeline_layout("Et*8|t*8mL"));
    const native_steps::StageEntries e =
        native_steps::layout_stage_entries(c.model, *c.settings.pipeline_layout, 2, 1);
    CHECK(e.layers == 9);
    CHECK(e.mtp == 1);
    CHECK(e.head);
    const NativeEstimate mtp = native_estimate(c, p, where);
    CHECK(mtp.partition == plain.partition);
    CHECK(mtp.stages[0].forward_s == plain.stages[0].forward_s);
    CHECK(mtp.stages[1].forward_s > plain.stages[1].forward_s);
    CHECK(mtp.stages[1].memory.buffers > plain.stages[1].memory.buffers);
  }
  SECTION("interleaved: chunks of one rank's layers placed unevenly take longer") {
    p.schedule = Schedule::interleaved;
    p.virtual_stages = 2;
    // Rank 0 holds E + 4 + 4 and rank 1 4 + 4 + L in both, but the second layout makes
    // rank 0's first chunk 7 layers and its second 1: the pipeline waits on that chunk.
    c.settings.pipeline_layout =
        std::make_shared<const PipelineLayout>(parse_pipeline_layout("Et*4|t*4|t*4|t*4L"));
    const NativeEstimate even = native_estimate(c, p, where);
    c.settings.pipeline_layout =
        std::make_shared<const PipelineLayout>(parse_pipeline_layout("Et*7|t*4|t|t*4L"));
    REQUIRE(native_invalid_reason(c, p, where).empty());
    const NativeEstimate uneven = native_estimate(c, p, where);
    CHECK(uneven.partition == even.partition);
    CHECK(uneven.stages[0].forward_s == even.stages[0].forward_s);
    CHECK(uneven.pipeline_s > even.pipeline_s);
  }
  SECTION("interleaved: each chunk's activations held as the schedule holds them") {
    p.schedule = Schedule::interleaved;
    p.virtual_stages = 2;
    p.num_micro_batches = 4; // pp 2 x dp 4 x 4 = 32 sequences
    const double gib = 1024.0 * 1024.0 * 1024.0;
    const native_steps::LayerActivations act = native_steps::layer_activations(c, p);
    // One micro-batch's embedding output (no sequence parallelism at tp 1), bytes.
    const double embedding = 2.0 * static_cast<double>(c.model.sequence_length) *
                             static_cast<double>(c.model.hidden_size);
    const NativeEstimate plain = native_estimate(c, p, where, {9, 9}); // the closed form
    // Even chunks: rank 0 (E + 4 | 4) peaks at 4 of chunk 0 and 1 of chunk 1 (worked in the
    // test above): 20 layers, Megatron-LM's 2 x (1 + 1/4) x 8, as the closed form; the
    // embedding output 4 times, as the closed form's first-chunk count.
    c.settings.pipeline_layout =
        std::make_shared<const PipelineLayout>(parse_pipeline_layout("Et*4|t*4|t*4|t*4L"));
    const NativeEstimate even = native_estimate(c, p, where);
    CHECK(even.stages[0].memory.activations == Approx(20.0 * act.layer / gib));
    CHECK(even.stages[0].memory.activations == Approx(plain.stages[0].memory.activations));
    CHECK(even.stages[0].memory.buffers == Approx(plain.stages[0].memory.buffers));
    // Rank 1 (4 | 4 + L) peaks at 2 of its first chunk and 1 of its second: 12 layers, as the
    // closed form's (v - 1) pp + 1 = 3 chunk forwards of the last rank.
    CHECK(even.stages[1].memory.activations == Approx(12.0 * act.layer / gib));
    CHECK(even.stages[1].memory.activations == Approx(plain.stages[1].memory.activations));
    CHECK(even.stages[1].in_flight == Approx(1.5));
    CHECK(plain.stages[1].in_flight == Approx(1.5));
    // Rank 0 with 7 layers in its first chunk and 1 in its second (E + 7 | 1): 4 x 7 + 1 x 1
    // = 29 layers held, and the embedding output 4 times; rank 1 (4 | 4 + L) as before.
    c.settings.pipeline_layout =
        std::make_shared<const PipelineLayout>(parse_pipeline_layout("Et*7|t*4|t|t*4L"));
    const NativeEstimate uneven = native_estimate(c, p, where);
    CHECK(uneven.stages[0].memory.activations == Approx(29.0 * act.layer / gib));
    CHECK(uneven.stages[0].memory.buffers == Approx(even.stages[0].memory.buffers));
    CHECK(uneven.stages[0].in_flight ==
          Approx((4.0 * (7.0 * act.layer + embedding) + act.layer) /
                 (8.0 * act.layer + embedding)));
    CHECK(uneven.stages[1].memory.activations == Approx(12.0 * act.layer / gib));
    CHECK(uneven.stages[0].memory.total() > even.stages[0].memory.total());
    CHECK(uneven.peak_memory_gib > even.peak_memory_gib);
  }
  SECTION("the layout must fit the point") {
    c.settings.pipeline_layout =
        std::make_shared<const PipelineLayout>(parse_pipeline_layout("Et*4|t*4|t*4|t*4L"));
    CHECK(native_invalid_reason(c, p, where).find("has 4 chunks but pp 2 x virtual stages 1") !=
          std::string::npos);
    p.schedule = Schedule::zb_h1;
    CHECK(native_invalid_reason(c, p, where).find("with the zb-h1 schedule") !=
          std::string::npos);
  }
}
