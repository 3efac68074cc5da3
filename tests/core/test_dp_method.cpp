#include <catch2/catch.hpp>

#include <cstddef>
#include <set>
#include <string>

#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/model/zero_bubble.hpp"

using namespace zerosearch;

TEST_CASE("dp method table: one row per method, in enumeration order") {
  const auto rows = dp_methods();
  REQUIRE(rows.size() == 6);
  std::set<std::string> names;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    // info() indexes the table by the enum: the rows must be in enum order.
    CHECK(static_cast<std::size_t>(rows[i].id) == i);
    CHECK(&info(rows[i].id) == &rows[i]);
    CHECK(parse_dp_method(rows[i].name) == rows[i].id);
    names.insert(rows[i].name);
  }
  CHECK(names.size() == rows.size());
  CHECK(dp_method_names() == "dp, fsdp, zero0, zero1, zero2, zero3");
}

TEST_CASE("dp method table: the original's six methods are the rows marked original",
          "[dp_method]") {
  // The zerosearch estimator's search enumerates these rows only (methods_for_framework): a
  // method the original lacked must end its row with `false`, or the original's goldens
  // change (docs/ARCHITECTURE.md, "A new data-parallel method").
  CHECK(dp_method_names_where([](const DpMethodInfo& m) { return m.original; }) ==
        "dp, fsdp, zero0, zero1, zero2, zero3");
}

TEST_CASE("dp method table: the original's rules (docs/model.md §2 and §4)") {
  CHECK(info(DpMethod::dp).compute_factor == 3.0);
  CHECK(info(DpMethod::fsdp).compute_factor == 3.0);
  CHECK(info(DpMethod::zero1).compute_factor == 4.0);
  CHECK(info(DpMethod::zero3).compute_factor == (1.0 * 1.6) * 4.0);
  CHECK(info(DpMethod::zero0).forward_share == ForwardShare::quarter);
  CHECK(info(DpMethod::zero2).forward_share == ForwardShare::third);
  CHECK_FALSE(info(DpMethod::zero3).allows_tensor_parallel);
  // The original's rule binds the zerosearch estimator only; the native estimator follows the
  // frameworks (Megatron-DeepSpeed's zero.Init(mpu=...), Megatron-FSDP beside tp).
  CHECK_FALSE(allows_tensor_parallel(DpMethod::zero3, Estimator::zerosearch));
  CHECK(allows_tensor_parallel(DpMethod::zero3, Estimator::native));
  for (const DpMethodInfo& m : dp_methods()) {
    // every method the original allows with tp > 1 stays allowed in the native estimator
    if (m.allows_tensor_parallel) CHECK(allows_tensor_parallel(m.id, Estimator::native));
  }
  CHECK_FALSE(info(DpMethod::zero2).allows_pipeline_parallel);
  CHECK(info(DpMethod::zero1).allows_pipeline_parallel);
  CHECK(flavour_of(DpMethod::fsdp) == Flavour::megatron);
  CHECK(flavour_of(DpMethod::zero0) == Flavour::deepspeed);
  CHECK_THROWS_WITH(parse_dp_method("zero4"),
                    "unknown data-parallel method 'zero4' (allowed: dp, fsdp, zero0, zero1, zero2, "
                    "zero3)");
}

TEST_CASE("a design point stays packed: the native fields share its padding", "[dp_method]") {
  // Every estimate and result row holds one (docs/usage.md's search-size limit counts them):
  // the one-byte enums (recompute, offload, dtype, schedule, cp_comm) fill the gaps between
  // the 16-bit degrees (virtual_stages, ep, etp, cp), so issue 27's ep, etp, cp and cp_comm
  // add 8 bytes to the 32 of the original's fields and settings.
  CHECK(sizeof(DesignPoint) == 40);
  CHECK(offsetof(DesignPoint, cp_comm) == offsetof(DesignPoint, schedule) + 1);
}

namespace {

// -Wswitch-enum: a new Schedule fails to compile here until it is counted (and kSchedules
// has its row: the test below checks the count).
constexpr std::size_t schedule_count(Schedule s) {
  switch (s) {
  case Schedule::one_f_one_b:
  case Schedule::interleaved:
  case Schedule::terapipe:
  case Schedule::zb_h1:
  case Schedule::zb_h2:
  case Schedule::zbv:
  case Schedule::dualpipe:
  case Schedule::dualpipev: return 8;
  }
  return 0;
}

} // namespace

TEST_CASE("schedule table: one row per schedule, a unique name that parse_schedule reads back",
          "[dp_method]") {
  REQUIRE(kSchedules.size() == schedule_count(Schedule::one_f_one_b));
  std::set<std::string> names;
  std::set<std::string> torchtitan;
  for (std::size_t i = 0; i < kSchedules.size(); ++i) {
    const ScheduleInfo& s = kSchedules[i];
    CAPTURE(s.name);
    CHECK(static_cast<std::size_t>(s.id) == i);
    CHECK(&info(s.id) == &s);
    CHECK(names.insert(s.name).second);
    CHECK(parse_schedule(s.name) == s.id);
    CHECK(std::string(to_string(s.id)) == s.name);
    CHECK(schedule_names().find(s.name) != std::string::npos);
    CHECK(std::string(s.title).size() > 0);
    CHECK(std::string(s.summary).size() > 0);
    if (s.torchtitan != nullptr) {
      CHECK(torchtitan.insert(s.torchtitan).second);
    } else {
      CHECK(std::string(s.torchtitan_note).empty());
    }
  }
  CHECK(schedule_names() == "1f1b, interleaved, terapipe, zb-h1, zb-h2, zbv, dualpipe, dualpipev");
  CHECK_THROWS_WITH(parse_schedule("gpipe"),
                    "unknown schedule 'gpipe' (allowed: " + schedule_names() + ")");
}

TEST_CASE("schedule table: its columns agree with each other and with their readers",
          "[dp_method]") {
  for (const ScheduleInfo& s : schedules()) {
    CAPTURE(s.name);
    // The simulated schedules are exactly those that split the backward; TeraPipe holds every
    // micro-batch; the others hold 1F1B's warm-up.
    CHECK((s.in_flight == InFlight::simulated) == s.splits_backward);
    CHECK((s.in_flight == InFlight::all) == s.token_slices);
    // Megatron-LM and DeepSpeed pipeline whole micro-batches with a fused backward.
    CHECK(s.megatron == (!s.splits_backward && !s.token_slices));
    CHECK((s.interleaves ? s.chunks_per_rank == 1 : true));
    CHECK((s.bidirectional ? s.chunks_per_rank == 2 : true));
    CHECK(is_split_schedule(s.id) == s.splits_backward);
    CHECK(schedule_chunks_per_rank(s.id) == s.chunks_per_rank);
    CHECK(schedule_model_chunks(s.id, 4) == (s.bidirectional ? 4 : 4 * s.chunks_per_rank));
    // A split schedule torchtitan cannot run says where it runs (PLAN.md names it).
    if (s.splits_backward && s.torchtitan == nullptr) {
      CHECK(std::string(s.elsewhere).size() > 0);
    }
  }
  CHECK(info(Schedule::interleaved).interleaves);
  CHECK_FALSE(info(Schedule::one_f_one_b).interleaves);
  CHECK(schedule_model_chunks(Schedule::dualpipe, 4) == 4);
  CHECK(schedule_model_chunks(Schedule::zbv, 4) == 8);
  CHECK(info(Schedule::zb_h1).torchtitan == std::string("InterleavedZeroBubble"));
}
