#pragma once
// Context parallelism (issue 27, docs/native.md §2.4): the sequence of each micro-batch split
// over cp ranks, attention exchanging keys and values between them. The vocabulary only: how
// the ranks exchange them, and the rules a degree must follow; the costs are in
// model/context_parallel.
#include <cstdint>
#include <string>
#include <vector>

namespace zerosearch {

/// How the cp ranks of one attention exchange what they need (--cp_comm):
/// ring: Ring Attention (Liu et al. 2023) with causal load balance, as Megatron-LM/Transformer
/// Engine (cp_comm_type p2p) and PyTorch's context_parallel (torchtitan) run it: each rank
/// keeps its queries and passes its keys and values round the ring, cp - 1 send/recv steps
/// overlapped with the attention block of the step before;
/// a2a: DeepSpeed-Ulysses (Jacobs et al. 2023; Transformer Engine cp_comm_type a2a,
/// Megatron-DeepSpeed --ds-sequence-parallel-size): all-to-alls turn the sequence split into a
/// head split before attention and back after it;
/// allgather: Llama 3's all-gather context parallelism (Dubey et al. 2024, sec. 3.3.2;
/// Transformer Engine cp_comm_type all_gather, AttnFuncWithCPAndKVAllGather): each rank
/// all-gathers the keys and values of the whole sequence before attention (again in backward)
/// and reduce-scatters their gradients; nothing overlaps;
/// torch_allgather: PyTorch's context_parallel with its all-gather rotater
/// (torch.distributed.tensor.experimental._attention, _AllGatherRotater; the default
/// rotate_method of torchtitan's context_parallel_rotate_method, "allgather", at 9dec370, the
/// commit of its 2024-12 benchmark): one all-gather of the keys and values, issued before the
/// first of the cp attention blocks and waited for before the second, so only that block hides
/// it; backward gathers them again the same way and passes the key/value gradients round the
/// ring in fp32 (_cp_options.convert_to_f32), each hidden behind the next block, the last one
/// exposed.
enum class CpComm : std::uint8_t { ring, a2a, allgather, torch_allgather };
[[nodiscard]] const char* to_string(CpComm c) noexcept;
/// The value of Megatron-LM's --cp-comm-type (TransformerConfig.cp_comm_type): p2p, a2a,
/// all_gather.
[[nodiscard]] const char* megatron_cp_comm_type(CpComm c) noexcept;
/// A few words for reports: "ring attention, causal load balance", ...
[[nodiscard]] const char* cp_comm_description(CpComm c) noexcept;
/// Throws InputError listing ring, a2a, allgather, torch_allgather.
[[nodiscard]] CpComm parse_cp_comm(const std::string& text);

/// The default --cp list for a sequence of `seq_len` tokens (docs/native.md §5): {1} below
/// 16,384 tokens; from there every power of two up to seq_len / 4096 (each rank keeps at least
/// 4,096 tokens: two load-balancing chunks of 2,048).
[[nodiscard]] std::vector<int> default_cp_degrees(long long seq_len);

/// Why cp degree `cp` with exchange `comm` cannot split a model of `seq_len` tokens, `heads`
/// attention heads and `kv_heads` key/value heads at tensor-parallel degree `tp`, or an empty
/// string. Rules: the sequence divides into 2 cp chunks (causal load balance: each rank holds
/// chunk i and chunk 2 cp - 1 - i); a2a splits heads, so tp x cp divides the attention heads
/// and the key/value heads (Transformer Engine's a2a asserts both per rank).
[[nodiscard]] std::string cp_invalid_reason(int cp, CpComm comm, long long seq_len, long long heads,
                                            long long kv_heads, int tp);

} // namespace zerosearch
