#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "zerosearch/core/enum_table.hpp"

namespace zerosearch {

/// How fp8 training scales the linear layers' inputs (--fp8_recipe, docs/native.md §2).
/// `tensorwise`: one scale per tensor, current scaling (Transformer Engine's
/// Float8CurrentScaling, torchao's default "tensorwise" recipe): the linears run at the GPU's
/// fp8 matmul rate plus the casts of their inputs. `rowwise`: torchao's "rowwise" recipe, one
/// scale per row of each operand (torch._scaled_mm with rowwise scales): each linear takes its
/// 16-bit time over torchao's measured rowwise speedup for its shape (fp8_rowwise_speedup).
enum class Fp8Recipe : std::uint8_t { tensorwise, rowwise };

/// The flag's names, in the enum's order.
inline constexpr std::array<const char*, 2> kFp8RecipeNames{"tensorwise", "rowwise"};

/// The recipe named `text` (one of kFp8RecipeNames), or nullopt.
[[nodiscard]] inline std::optional<Fp8Recipe> fp8_recipe_named(std::string_view text) {
  return enum_named<Fp8Recipe>(kFp8RecipeNames, text);
}

/// The speedup of a linear layer with torchao's rowwise float8 over the same layer in bf16,
/// forward and backward, on an H100, for the forward GEMM of m tokens x k inputs -> n outputs:
/// torchao's measured table (pytorch/ao@6243040 torchao/float8/README.md, "Performance",
/// "Rowwise scaling": docs/static/fp8-rowwise-perf.png, "Speedup observed vs bfloat16 for
/// LayerNorm -> Linear -> Sigmoid fwd + bwd by forward M, K, N", dynamic row-wise scaling,
/// PyTorch 2.8.0a0+git48807d5, torch.compile; made with benchmarks/float8/float8_roofline.py),
/// M, K and N each 1,024 to 32,768 in powers of two. Between them: linear in log2 of each
/// dimension; outside: the nearest edge of the table (a GEMM narrower than 1,024 is charged
/// the 1,024 speedup, which is its upper bound, as speedups fall with the shape). Values below
/// 1 are slowdowns: small shapes lose more to the rowwise casts and kernel than fp8 gains.
[[nodiscard]] double fp8_rowwise_speedup(double m, double k, double n) noexcept;

} // namespace zerosearch
