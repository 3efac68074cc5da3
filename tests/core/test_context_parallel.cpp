#include <catch2/catch.hpp>

#include "zerosearch/core/context_parallel.hpp"
#include "zerosearch/core/error.hpp"

using namespace zerosearch;

TEST_CASE("cp_comm names parse and print", "[cp]") {
  CHECK(parse_cp_comm("ring") == CpComm::ring);
  CHECK(parse_cp_comm("a2a") == CpComm::a2a);
  CHECK(std::string(to_string(CpComm::a2a)) == "a2a");
  CHECK_THROWS_AS(parse_cp_comm("ulysses"), InputError);
  CHECK_THROWS_WITH(parse_cp_comm("p2p"),
                    "--cp_comm 'p2p' must be ring, a2a, allgather or torch_allgather");
  // Llama 3's all-gather variant; Megatron-LM's names for the three (cp_comm_type).
  CHECK(parse_cp_comm("allgather") == CpComm::allgather);
  CHECK(std::string(to_string(CpComm::allgather)) == "allgather");
  CHECK(std::string(megatron_cp_comm_type(CpComm::ring)) == "p2p");
  CHECK(std::string(megatron_cp_comm_type(CpComm::a2a)) == "a2a");
  CHECK(std::string(megatron_cp_comm_type(CpComm::allgather)) == "all_gather");
  CHECK_THROWS_WITH(parse_cp_comm("all_gather"),
                    "--cp_comm 'all_gather' must be ring, a2a, allgather or torch_allgather");
  // PyTorch's context_parallel with its all-gather rotater (torchtitan's default).
  CHECK(parse_cp_comm("torch_allgather") == CpComm::torch_allgather);
  CHECK(std::string(to_string(CpComm::torch_allgather)) == "torch_allgather");
}

TEST_CASE("default cp degrees: 1 for short sequences, powers of two to seq / 4096 for long",
          "[cp]") {
  CHECK(default_cp_degrees(4096) == std::vector<int>{1});
  CHECK(default_cp_degrees(8192) == std::vector<int>{1});
  CHECK(default_cp_degrees(16383) == std::vector<int>{1});
  CHECK(default_cp_degrees(16384) == std::vector<int>{1, 2, 4});
  CHECK(default_cp_degrees(32768) == std::vector<int>{1, 2, 4, 8});
  CHECK(default_cp_degrees(131072) == std::vector<int>{1, 2, 4, 8, 16, 32});
}

TEST_CASE("cp divisibility rules are one-line reasons", "[cp]") {
  // Llama-3 8B: 32 heads, 8 key/value heads.
  CHECK(cp_invalid_reason(1, CpComm::ring, 4097, 32, 8, 1).empty()); // cp 1 splits nothing
  CHECK(cp_invalid_reason(4, CpComm::ring, 131072, 32, 8, 8).empty());
  // 2 x cp chunks for the causal load balance: 4096 / 6 is not whole.
  CHECK(cp_invalid_reason(3, CpComm::ring, 4096, 32, 8, 1) ==
        "--cp 3: the sequence of 4096 tokens does not split into 2 x cp = 6 equal chunks "
        "(causal load balance)");
  CHECK(cp_invalid_reason(4, CpComm::ring, 4100, 32, 8, 1).find("8 equal chunks") !=
        std::string::npos);
  // a2a splits heads: tp x cp must divide the 8 key/value heads as well as the 32 heads.
  CHECK(cp_invalid_reason(4, CpComm::a2a, 32768, 32, 8, 2).empty());
  CHECK(cp_invalid_reason(8, CpComm::a2a, 32768, 32, 8, 2) ==
        "--cp 8 --cp_comm a2a with tp 2: tp x cp = 16 must divide the 32 attention heads and 8 "
        "key/value heads (all-to-all splits heads)");
  CHECK(cp_invalid_reason(8, CpComm::ring, 32768, 32, 8, 2).empty()); // the ring does not
  CHECK_FALSE(cp_invalid_reason(0, CpComm::ring, 32768, 32, 8, 1).empty());
}
