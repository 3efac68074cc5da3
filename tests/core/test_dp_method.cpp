#include <catch2/catch.hpp>

#include <cstddef>
#include <set>
#include <string>

#include "zerosearch/core/dp_method.hpp"
#include "zerosearch/core/error.hpp"

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

TEST_CASE("dp method table: the original's rules (docs/model.md §2 and §4)") {
  CHECK(info(DpMethod::dp).compute_factor == 3.0);
  CHECK(info(DpMethod::fsdp).compute_factor == 3.0);
  CHECK(info(DpMethod::zero1).compute_factor == 4.0);
  CHECK(info(DpMethod::zero3).compute_factor == (1.0 * 1.6) * 4.0);
  CHECK(info(DpMethod::zero0).forward_share == ForwardShare::quarter);
  CHECK(info(DpMethod::zero2).forward_share == ForwardShare::third);
  CHECK_FALSE(info(DpMethod::zero3).allows_tensor_parallel);
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
