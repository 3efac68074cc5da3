#include <catch2/catch.hpp>

#include "zerosearch/search/enumerate.hpp"
#include "zerosearch/core/error.hpp"

using namespace zerosearch;

TEST_CASE("divisors ascending", "[enumerate]") {
  CHECK(divisors(12) == std::vector<int>{1, 2, 3, 4, 6, 12});
  CHECK(divisors(1) == std::vector<int>{1});
  CHECK(divisors(16) == std::vector<int>{1, 2, 4, 8, 16});
  CHECK(divisors(97) == std::vector<int>{1, 97});
  CHECK(divisors(1'000'000'000).size() == 100);
  CHECK(divisors(2'147'483'646).back() == 2'147'483'646);
}

namespace {

/// The golden homo_a10x8 case's search: 8 A10 nodes of 4 GPUs, global batch 64, 40 layers.
EnumerateInput homo_a10x8_input() {
  EnumerateInput in;
  in.methods = {DpMethod::zero0, DpMethod::zero1, DpMethod::zero2, DpMethod::zero3};
  in.tp_degrees = {1, 2, 4};
  in.world_size = 32;
  in.global_batch = 64;
  in.num_layers = 40;
  return in;
}

} // namespace

TEST_CASE("the enumerator follows docs/model.md §2", "[enumerate]") {
  const EnumerateInput in = homo_a10x8_input();
  const auto points = enumerate_design_points(in);
  // 159 design points for 8 A10 nodes of 4 GPUs (the golden homo_a10x8 case).
  CHECK(points.size() == 159);
  for (const auto& p : points) {
    CHECK(p.tp * p.dp * p.pp == 32);
    CHECK(p.num_micro_batches * p.dp * p.mbs == 64);
    if (p.method == DpMethod::zero3) CHECK(p.tp == 1);
    if (p.method == DpMethod::zero2 || p.method == DpMethod::zero3) CHECK(p.pp == 1);
  }
  // Order: method, then tp, then dp, then mbs ascending.
  CHECK(points.front().method == DpMethod::zero0);
  CHECK(points.front().tp == 1);
  CHECK(points.front().dp == 1);
  CHECK(points.front().mbs == 1);
}

TEST_CASE("the native estimator's enumeration takes zero3 with tp > 1", "[enumerate]") {
  // The same cluster as above: zero3 adds, at pp 1 (DeepSpeed's pipeline engine still refuses
  // ZeRO-3), tp 2 x dp 16 with mbs 1, 2, 4 (64 / 16 = 4) and tp 4 x dp 8 with mbs 1, 2, 4, 8:
  // 159 + 3 + 4 = 166 points. The other methods' points are the original's.
  EnumerateInput in = homo_a10x8_input();
  in.estimator = Estimator::native;
  const auto points = enumerate_design_points(in);
  CHECK(points.size() == 166);
  int zero3_tp2 = 0, zero3_tp4 = 0;
  for (const auto& p : points) {
    if (p.method == DpMethod::zero3) {
      CHECK(p.pp == 1);
      zero3_tp2 += p.tp == 2 ? 1 : 0;
      zero3_tp4 += p.tp == 4 ? 1 : 0;
    }
  }
  CHECK(zero3_tp2 == 3);
  CHECK(zero3_tp4 == 4);
  // The original's enumeration is unchanged (the estimator defaults to zerosearch).
  in.estimator = Estimator::zerosearch;
  CHECK(enumerate_design_points(in).size() == 159);
}

TEST_CASE("pp never exceeds the transformer layer count", "[enumerate]") {
  EnumerateInput in{{DpMethod::dp}, {1}, 64, 64, 40};
  for (const auto& p : enumerate_design_points(in)) {
    CHECK(p.pp <= 40);
  }
}

TEST_CASE("method and framework names", "[enumerate]") {
  CHECK(parse_dp_method("zero2") == DpMethod::zero2);
  CHECK_THROWS_AS(parse_dp_method("zero4"), InputError);
  CHECK(parse_framework("d") == Framework::deepspeed);
  CHECK(parse_framework("default") == Framework::automatic);
  CHECK_THROWS_WITH(parse_framework("x"),
                    "unknown framework 'x' (allowed: m = Megatron-LM, d = DeepSpeed, both, default)");
  CHECK(flavour_of(DpMethod::fsdp) == Flavour::megatron);
  CHECK(flavour_of(DpMethod::zero0) == Flavour::deepspeed);
}

TEST_CASE("explicit design points are checked", "[enumerate]") {
  CHECK_FALSE(invalid_reason({DpMethod::zero1, 1, 4, 8, 1, 16}, 32, 64, 40, 4));
  CHECK(invalid_reason({DpMethod::zero3, 2, 16, 1, 1, 4}, 32, 64, 40, 4) ==
        "zero3 needs tp 1 with the zerosearch estimator (the original's rule; --estimator native "
        "takes tp > 1)");
  // The native estimator: Megatron-DeepSpeed's ZeRO-3 and Megatron-FSDP run beside tensor
  // parallelism; the pipeline rule stays (DeepSpeed's PipelineEngine rejects ZeRO-2/3).
  CHECK_FALSE(invalid_reason({DpMethod::zero3, 2, 16, 1, 1, 4}, 32, 64, 40, 4, 0,
                             Estimator::native));
  CHECK(invalid_reason({DpMethod::zero3, 2, 8, 2, 1, 8}, 32, 64, 40, 4, 0, Estimator::native) ==
        "zero3 needs pp 1");
  CHECK(invalid_reason({DpMethod::zero1, 1, 4, 4, 1, 16}, 32, 64, 40, 4) ==
        "tp*dp*pp = 1*4*4 = 16 is not the 32 GPUs of the cluster");
}

TEST_CASE("tp spans whole nodes of a scale-up domain, no more", "[enumerate][network]") {
  // Trays of 4 in an NVLink domain of 72 (GB200 NVL72): tp 8 is two trays; without the domain
  // it is an error as before.
  const DesignPoint tp8{DpMethod::zero1, 8, 18, 1, 1, 8};
  CHECK(invalid_reason(tp8, 144, 144, 40, 4) == "tp 8 does not divide the 4 GPUs per node");
  CHECK(invalid_reason(tp8, 144, 144, 40, 4, 4) == "tp 8 does not divide the 4 GPUs per node");
  CHECK_FALSE(invalid_reason(tp8, 144, 144, 40, 4, 72));
  // tp 16 would straddle the domain's boundary at rank 72; tp 6 is not whole trays.
  CHECK(invalid_reason({DpMethod::zero1, 16, 9, 1, 1, 16}, 144, 144, 40, 4, 72) ==
        "tp 16 neither divides the 4 GPUs per node nor is whole nodes dividing the 72-GPU "
        "NVLink domain");
  CHECK(invalid_reason({DpMethod::zero1, 6, 24, 1, 1, 6}, 144, 144, 40, 4, 72).has_value());
}
