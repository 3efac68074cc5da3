#include <catch2/catch.hpp>

#include "zerosearch/model/memory.hpp"

using namespace zerosearch;

namespace {
ModelSpec tiny(MemoryFormula f) {
  ModelSpec m;
  m.name = "tiny";
  m.hidden_size = 2;
  m.sequence_length = 4;
  m.num_layers = 1;
  m.vocab_size = 10;
  m.num_attention_heads = 1;
  m.ffn_hidden_size = 8;
  m.memory_formula = f;
  return m;
}
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
} // namespace

TEST_CASE("llama memory of one stage worked by hand", "[memory]") {
  // params: embedding h*v = 20; transformer 2 + 3*h*s + 2 + 3*h*d = 2+24+2+48 = 76; post 20.
  // activation: 10sbh + 16sbh + 2sbd + 5*8*s*s*b = 80+128+64+640 = 912 (pp 1: factor 1).
  // weights with dp 1: 18 * 116 = 2088. Total 3000 bytes.
  const DesignPoint p{DpMethod::zero1, 1, 1, 1, 1, 1};
  const auto mem = estimate_memory(tiny(MemoryFormula::llama), p, {3}, {48.0F}, 4, 1);
  CHECK_FALSE(mem.oom);
  CHECK(mem.gpumem_gib == Approx(3000.0 / kGiB));
}

TEST_CASE("gpt memory of one stage worked by hand", "[memory]") {
  // params: 20 + 12*h^2 = 48 + 20 = 88 -> weights 18*88 = 1584.
  // activation: embedding s*b*h*pp*p = 8; transformer s*b*p*h*(10 + 24 + 5*a*s/h) = 8*44 = 352;
  // post 4sbh + 4sbv = 32 + 160 = 192. Total 1584 + 552 = 2136 bytes.
  const DesignPoint p{DpMethod::dp, 1, 1, 1, 1, 1};
  const auto mem = estimate_memory(tiny(MemoryFormula::gpt), p, {3}, {48.0F}, 4, 1);
  CHECK(mem.gpumem_gib == Approx(2136.0 / kGiB));
}

TEST_CASE("ZeRO sharding shrinks weight memory with more replicas", "[memory]") {
  const ModelSpec m = tiny(MemoryFormula::llama);
  const auto mem_of = [&](DpMethod method, int dp) {
    const DesignPoint p{method, 1, dp, 1, 1, 1};
    return estimate_memory(m, p, {3}, {48.0F}, 4, dp).gpumem_gib;
  };
  CHECK(mem_of(DpMethod::zero1, 4) < mem_of(DpMethod::zero1, 2));
  CHECK(mem_of(DpMethod::fsdp, 8) < mem_of(DpMethod::fsdp, 2));
  CHECK(mem_of(DpMethod::zero0, 8) == mem_of(DpMethod::zero0, 2));
}

TEST_CASE("the scan stops at the first stage over its limit", "[memory]") {
  const DesignPoint p{DpMethod::zero0, 1, 1, 3, 1, 1};
  ModelSpec m = tiny(MemoryFormula::llama);
  m.num_layers = 4; // 6 pipeline layers
  const auto ok = estimate_memory(m, p, {2, 2, 2}, {48.0F, 48.0F, 48.0F}, 4, 1);
  REQUIRE(ok.stage_gib.size() == 3);
  const auto over = estimate_memory(m, p, {2, 2, 2}, {48.0F, 1e-9F, 48.0F}, 4, 1);
  CHECK(over.oom);
  CHECK(over.stage_gib.size() == 2);
  CHECK(over.gpumem_gib == ok.stage_gib[1]);
}

TEST_CASE("the stage table agrees with estimate_memory to the bit", "[memory]") {
  ModelSpec m;
  m.name = "llama-like";
  m.hidden_size = 5120;
  m.sequence_length = 4096;
  m.num_layers = 40;
  m.vocab_size = 32000;
  m.num_attention_heads = 40;
  m.ffn_hidden_size = 13824;
  for (const auto formula : {MemoryFormula::llama, MemoryFormula::gpt}) {
    m.memory_formula = formula;
    for (const DpMethodInfo& row : dp_methods()) {
      const DpMethod method = row.id;
      const DesignPoint p{method, 2, 2, 4, 2, 16};
      const StageMemoryTable table(m, p, 4, 64);
      const std::vector<int> part{3, 17, 1, 21};
      const auto all = stage_memory_gib(m, p, part, 4, 64);
      const auto scan = estimate_memory(m, p, part, {1e9F, 1e9F, 1e9F, 1e9F}, 4, 64);
      int first = 0;
      for (std::size_t s = 0; s < part.size(); ++s) {
        CHECK(table.gib(first, part[s]) == all[s]);
        CHECK(scan.stage_gib[s] == all[s]);
        first += part[s];
      }
      // max_layers: the longest run from a layer within a limit.
      const float limit = table.gib(5, 7);
      CHECK(table.max_layers(5, limit) >= 7);
      CHECK(table.gib(5, table.max_layers(5, limit)) <= limit);
      if (5 + table.max_layers(5, limit) < table.layers()) {
        CHECK(table.gib(5, table.max_layers(5, limit) + 1) > limit);
      }
    }
  }
}
