#include "zerosearch/core/parity.hpp"

#include <algorithm>
#include <bit>

// Read from pytorch/pytorch, aten/src/ATen/native/cpu/SumKernel.cpp at commits
// 018dc4193eee9146cce14554ed434616e4e1930d and eb720578cea26093f0a91b9cb66476b62fd61627 (the
// summation orders below are the same in both), with ReduceOps.cpp (mean_out: sum_out, then
// div_ by the row count), BinaryOpsKernel.cpp (div_true_kernel: a / b for float64) and
// cpu/utils.h (CeilLog2). This is a re-derivation of the order of additions, not ATen's code.
//
// cascade_sum fills the output with 0, then for a reduction over the rows of a contiguous
// [rows x columns] float64 tensor with at least one vector (4 lanes under AVX2) of columns
// takes vectorized_outer_sum:
//   - columns in full chunks of 4 vectors (16 columns): multi_row_sum over all rows, one lane
//     per column;
//   - the next full vectors of 4 columns: row_sum of vectors, one lane per column;
//   - the last columns (fewer than 4): row_sum of scalars.
// The last two give a column the same order, so there are two orders: multi_row_sum for the
// columns before the last full 16-column chunk ends, row_sum for the rest. With fewer than 4
// columns the kernel is scalar_outer_sum (multi_row_sum per group of 4 columns, here none, then
// row_sum), and with one column the rows are contiguous: vectorized_inner_sum.
// Each result is added to the 0-filled output, then divided by the row count.

namespace zerosearch {

namespace {

constexpr std::int64_t kLanes = 4;          // float64 lanes of a 256-bit AVX2 vector
constexpr std::int64_t kRowsPerChunk = 4;   // vectors per multi_row_sum call (nrows)
constexpr std::int64_t kChunkColumns = kLanes * kRowsPerChunk; // 16 columns
constexpr std::int64_t kIlp = 4;            // row_sum's partial sums (ilp_factor)

/// ceil(log2(x)), but 1 for x <= 2 (ATen's utils::CeilLog2).
std::int64_t ceil_log2(std::int64_t x) noexcept {
  if (x <= 2) {
    return 1;
  }
  return static_cast<std::int64_t>(std::bit_width(static_cast<std::uint64_t>(x - 1)));
}

} // namespace

double torch_cascade_sum_identical(double x, std::int64_t n) noexcept {
  constexpr int kLevels = 4;
  const std::int64_t power = std::max<std::int64_t>(4, ceil_log2(n) / kLevels);
  const std::int64_t step = std::int64_t{1} << power;
  const std::int64_t mask = step - 1;
  double acc[kLevels] = {0.0, 0.0, 0.0, 0.0};
  std::int64_t i = 0;
  while (i + step <= n) {
    for (std::int64_t j = 0; j < step; ++j, ++i) {
      acc[0] += x;
    }
    // Carry the finished block up; stop at the first level whose block is not complete.
    for (int level = 1; level < kLevels; ++level) {
      acc[level] += acc[level - 1];
      acc[level - 1] = 0.0;
      if ((i & (mask << (level * power))) != 0) {
        break;
      }
    }
  }
  for (; i < n; ++i) {
    acc[0] += x;
  }
  for (int level = 1; level < kLevels; ++level) {
    acc[0] += acc[level];
  }
  return acc[0];
}

double torch_row_sum_identical(double x, std::int64_t n) noexcept {
  // The four partial sums see the same n / kIlp copies of x, so they are equal.
  const double partial = torch_cascade_sum_identical(x, n / kIlp);
  double sum = partial;
  for (std::int64_t i = (n / kIlp) * kIlp; i < n; ++i) {
    sum += x;
  }
  for (std::int64_t k = 1; k < kIlp; ++k) {
    sum += partial;
  }
  return sum;
}

double torch_mean_column(double x, std::int64_t n_rows, std::int64_t column,
                         std::int64_t n_columns) noexcept {
  double sum = 0.0;
  if (n_columns == 1) {
    // One column: the rows are contiguous, a vectorized (or, below 4 rows, scalar) inner sum.
    if (n_rows < kLanes) {
      sum = torch_row_sum_identical(x, n_rows);
    } else {
      const double lane = torch_row_sum_identical(x, n_rows / kLanes);
      for (std::int64_t i = (n_rows / kLanes) * kLanes; i < n_rows; ++i) {
        sum += x;
      }
      for (std::int64_t k = 0; k < kLanes; ++k) {
        sum += lane;
      }
    }
  } else {
    // Columns summed by multi_row_sum: full 16-column chunks on the vector path, full groups
    // of 4 on the scalar path (fewer than 4 columns, so none).
    const std::int64_t group = n_columns >= kLanes ? kChunkColumns : kRowsPerChunk;
    const bool cascade = column < (n_columns / group) * group;
    sum = cascade ? torch_cascade_sum_identical(x, n_rows) : torch_row_sum_identical(x, n_rows);
  }
  const double stored = 0.0 + sum; // added to the zero-filled output
  return stored / static_cast<double>(n_rows);
}

} // namespace zerosearch
