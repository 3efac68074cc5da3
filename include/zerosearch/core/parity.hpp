#pragma once
// Reproductions of the rounding of torch operations the original Python applies to its cost
// tensors, so the port's figures equal the original's bit for bit (docs/model.md §7).
//
// torch.mean(t, dim=0) of a float64 CPU tensor is ATen's sum followed by a true division by
// the number of rows (ReduceOps.cpp, mean_out: sum_out(...).div_(dim_prod); the float64 CPU
// divide is a / b, not a multiply by 1/b). The sum is ATen's "cascade sum"
// (aten/src/ATen/native/cpu/SumKernel.cpp), whose order of additions depends on where a column
// sits: for a contiguous [rows x columns] tensor, columns in full chunks of 4 vectors are summed
// by multi_row_sum, the rest by row_sum (src/core/parity.cpp describes both).
//
// Vector width: the references were produced on an x86-64 machine with AVX2 (256-bit vectors,
// 4 float64 lanes), so a full chunk is 4 x 4 = 16 columns. ATen dispatches this kernel to its
// AVX2 build on AVX-512 machines too (SumKernel.cpp registers no AVX-512 sum); a build with
// another vector width (e.g. ARM NEON, 2 lanes) would chunk differently.
#include <cstdint>

namespace zerosearch {

/// ATen's multi_row_sum of n copies of x for one lane: additions in blocks of 2^p rows
/// (p = max(4, ceil(log2 n) / 4)), block sums carried up through four levels, then the levels
/// added together. Used for the columns in full 16-column chunks.
[[nodiscard]] double torch_cascade_sum_identical(double x, std::int64_t n) noexcept;

/// ATen's row_sum of n copies of x: the rows viewed as (n/4, 4), four partial sums each taken
/// by multi_row_sum over n/4 rows, the n mod 4 leftover rows added to the first partial one
/// by one, then the other three partials added to it. Used for the columns after the last
/// full 16-column chunk (and for tensors of fewer than 4 columns).
[[nodiscard]] double torch_row_sum_identical(double x, std::int64_t n) noexcept;

/// Element `column` of torch.mean(t, dim=0) where t is a contiguous float64 CPU tensor of
/// n_rows x n_columns whose rows all equal x in this column (other columns do not matter:
/// each column is summed on its own). Preconditions: 0 <= column < n_columns, n_rows >= 1.
/// A single-column tensor is reduced as a contiguous inner sum, also reproduced here.
[[nodiscard]] double torch_mean_column(double x, std::int64_t n_rows, std::int64_t column,
                                       std::int64_t n_columns) noexcept;

} // namespace zerosearch
