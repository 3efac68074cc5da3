#include "zerosearch/core/context_parallel.hpp"

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"

namespace zerosearch {

const char* to_string(CpComm c) noexcept {
  switch (c) {
  case CpComm::ring: return "ring";
  case CpComm::a2a: return "a2a";
  case CpComm::allgather: return "allgather";
  case CpComm::torch_allgather: return "torch_allgather";
  }
  return "ring";
}

const char* megatron_cp_comm_type(CpComm c) noexcept {
  switch (c) {
  case CpComm::ring: return "p2p";
  case CpComm::a2a: return "a2a";
  case CpComm::allgather: return "all_gather";
  case CpComm::torch_allgather: return "all_gather"; // Megatron-LM's nearest; its launch refuses
  }
  return "p2p";
}

const char* cp_comm_description(CpComm c) noexcept {
  switch (c) {
  case CpComm::ring: return "ring attention, causal load balance";
  case CpComm::a2a: return "all-to-all, DeepSpeed-Ulysses";
  case CpComm::allgather: return "all-gathered keys and values, Llama 3";
  case CpComm::torch_allgather:
    return "all-gathered keys and values, PyTorch context_parallel";
  }
  return "ring attention, causal load balance";
}

CpComm parse_cp_comm(const std::string& text) {
  if (text == "ring") return CpComm::ring;
  if (text == "a2a") return CpComm::a2a;
  if (text == "allgather") return CpComm::allgather;
  if (text == "torch_allgather") return CpComm::torch_allgather;
  throw InputError(
      fmt::format("--cp_comm '{}' must be ring, a2a, allgather or torch_allgather", text));
}

std::vector<int> default_cp_degrees(long long seq_len) {
  std::vector<int> out{1};
  if (seq_len < 16384) return out;
  for (long long cp = 2; cp <= seq_len / 4096; cp *= 2) {
    out.push_back(static_cast<int>(cp));
  }
  return out;
}

std::string cp_invalid_reason(int cp, CpComm comm, long long seq_len, long long heads,
                              long long kv_heads, int tp) {
  if (cp < 1) return fmt::format("--cp {} must be at least 1", cp);
  if (cp == 1) return {};
  if (seq_len % (2LL * cp) != 0) {
    return fmt::format("--cp {}: the sequence of {} tokens does not split into 2 x cp = {} equal "
                       "chunks (causal load balance)",
                       cp, seq_len, 2LL * cp);
  }
  if (comm == CpComm::a2a) {
    const long long split = static_cast<long long>(tp) * cp;
    if (heads % split != 0 || kv_heads % split != 0) {
      return fmt::format("--cp {} --cp_comm a2a with tp {}: tp x cp = {} must divide the {} "
                         "attention heads and {} key/value heads (all-to-all splits heads)",
                         cp, tp, split, heads, kv_heads);
    }
  }
  return {};
}

} // namespace zerosearch
