#include <catch2/catch.hpp>

#include <string>

#include "zerosearch/io/hardware_json.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/core/hardware.hpp"

using namespace zerosearch;

namespace {

std::string hardware(const std::string& gpu = R"({"memory_gib": 24, "price_per_node_hour_usd": 1.4})",
                     const std::string& links = R"({"inter_node": 1e9, "intra_node": 2e9})") {
  return R"({"format": "zerosearch-hardware/1", "gpus": {"A10": )" + gpu +
         R"(}, "bandwidth_sets": {"ib": {"description": "d", "links_bps": {"A10": )" + links +
         "}}}}";
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_hardware_catalog(text, "hardware.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("the shipped hardware catalog loads", "[hardware]") {
  const HardwareCatalog c = load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  CHECK(c.gpu("A10").memory_gib == Approx(22.2));
  CHECK_FALSE(c.gpu("L4").memory_gib.has_value());
  CHECK(c.bandwidth_set("ib").links.at("A6000").inter_node_bps == 120e9);
}

TEST_CASE("unknown node types and comm types list the known ones", "[hardware]") {
  const HardwareCatalog c = parse_hardware_catalog(hardware(), "hardware.json");
  CHECK_THROWS_WITH(c.gpu("B200"), "unknown node type 'B200' (known: A10)");
  CHECK_THROWS_WITH(c.bandwidth_set("eth"), "unknown comm type 'eth' (allowed: ib)");
}

TEST_CASE("hardware catalog errors name the file, entry and key", "[hardware]") {
  CHECK(error_of(hardware(R"({"memory_gib": 24})")) ==
        "hardware.json: gpu 'A10': missing key 'price_per_node_hour_usd'");
  CHECK(error_of(hardware(R"({"memory_gib": 0, "price_per_node_hour_usd": 1})")) ==
        "hardware.json: gpu 'A10': 'memory_gib' must be a positive number, not 0");
  CHECK(error_of(hardware(R"({"memory_gib": 24, "price_per_node_hour_usd": -1})")) ==
        "hardware.json: gpu 'A10': 'price_per_node_hour_usd' must be a finite number >= 0, not -1");
  CHECK(error_of(hardware(R"({"memory_gib": 24, "price_per_node_hour_usd": 1, "tdp": 1})")) ==
        "hardware.json: gpu 'A10': unknown key 'tdp' (allowed: memory_gib, price_per_node_hour_usd)");
  CHECK(error_of(hardware(R"({"memory_gib": 24, "price_per_node_hour_usd": 1})",
                          R"({"inter_node": -1e9, "intra_node": 2e9})")) ==
        "hardware.json: bandwidth set 'ib': links of 'A10': 'inter_node' must be a positive "
        "number, not -1000000000.0");
  CHECK(error_of(hardware(R"({"memory_gib": 24, "price_per_node_hour_usd": 1})",
                          R"({"inter_node": "fast", "intra_node": 2e9})")) ==
        "hardware.json: bandwidth set 'ib': links of 'A10': 'inter_node' must be a positive "
        "number, not \"fast\"");
  CHECK(error_of(R"({"format": "zerosearch-hardware/1", "gpus": {}, "bandwidth_sets": {"ib":
        {"description": "d", "links_bps": {"X": {"inter_node": 1, "intra_node": 1}}}}})") ==
        "hardware.json: bandwidth set 'ib': 'X' is not in gpus (known: )");
  CHECK(error_of("{\"format\": \"zerosearch-hardware/1\",\n\"gpus\": {\"A10\": {\"memory_gib\": 24,}}}") ==
        "hardware.json:2: malformed JSON: syntax error while parsing object key - unexpected '}'; "
        "expected string literal");
}
