#include <catch2/catch.hpp>

#include <cstdint>

#include "zerosearch/core/parity.hpp"

using namespace zerosearch;

namespace {

/// n copies of x added one by one, starting from 0.
double sequential(double x, std::int64_t n) {
  double s = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    s += x;
  }
  return s;
}

constexpr double kTwo52 = 4503599627370496.0; // 2^52: from here up, doubles are integers

} // namespace

// x = 2^52 + 2 = u + 2. Worked by hand (round half to even; the spacing of doubles is 2 in
// [2^53, 2^54), 4 in [2^54, 2^55), 8 in [2^55, 2^56)):
//   one by one: u+2, 2u+4, 3u+6, 4u+8, 5u+10 -> 5u+8 (tie, 5u+8 has the even mantissa),
//   6u+10 -> 6u+8, 7u+10 -> 7u+8, 8u+10 -> 8u+8. So 8 copies one by one give 8x - 8.
//   row_sum: rows as (2, 4): each partial is x + x = 2u+4; then 4u+8, 6u+12, 8u+16, all exact:
//   8x. Divided by 8: u+1 against u+2.
TEST_CASE("8 copies: one by one rounds, row_sum's four partials do not", "[parity]") {
  const double x = kTwo52 + 2.0;
  CHECK(torch_cascade_sum_identical(x, 8) == 8.0 * kTwo52 + 8.0);
  CHECK(torch_row_sum_identical(x, 8) == 8.0 * kTwo52 + 16.0);
  CHECK(torch_cascade_sum_identical(x, 8) == sequential(x, 8));
  // Continuing the same hand computation to 16 rows: one by one gives 16x - 16.
  CHECK(torch_cascade_sum_identical(x, 16) == 16.0 * kTwo52 + 16.0);
  CHECK(torch_row_sum_identical(x, 16) == 16.0 * kTwo52 + 32.0);
}

TEST_CASE("the 16-column chunk boundary of the AVX2 outer sum", "[parity]") {
  const double x = kTwo52 + 2.0;
  SECTION("42 columns (a 40-layer model): 0-31 in two full chunks, 32-41 after them") {
    for (std::int64_t c = 0; c < 32; ++c) {
      CHECK(torch_mean_column(x, 8, c, 42) == kTwo52 + 1.0);
    }
    for (std::int64_t c = 32; c < 42; ++c) {
      CHECK(torch_mean_column(x, 8, c, 42) == kTwo52 + 2.0);
    }
  }
  SECTION("exactly 16 columns: all in the chunk") {
    CHECK(torch_mean_column(x, 8, 0, 16) == kTwo52 + 1.0);
    CHECK(torch_mean_column(x, 8, 15, 16) == kTwo52 + 1.0);
  }
  SECTION("15 columns: no full chunk, every column by row_sum") {
    CHECK(torch_mean_column(x, 8, 0, 15) == kTwo52 + 2.0);
    CHECK(torch_mean_column(x, 8, 14, 15) == kTwo52 + 2.0);
  }
  SECTION("17 columns: the last column alone is after the chunk") {
    CHECK(torch_mean_column(x, 16, 15, 17) == kTwo52 + 1.0);
    CHECK(torch_mean_column(x, 16, 16, 17) == kTwo52 + 2.0);
  }
  SECTION("fewer than 4 columns: the scalar outer sum, row_sum for each column") {
    CHECK(torch_mean_column(x, 8, 0, 3) == kTwo52 + 2.0);
    CHECK(torch_mean_column(x, 8, 1, 2) == kTwo52 + 2.0);
  }
  SECTION("one column: the contiguous inner sum (4 lanes of 2 rows each, then the lanes)") {
    CHECK(torch_mean_column(x, 8, 0, 1) == kTwo52 + 2.0);
  }
}

TEST_CASE("a decimal cost: 0.1 over 8 and 16 rows", "[parity]") {
  // 0.1 is not a binary fraction, so its sums round: one by one, 8 copies give
  // 0x1.9999999999999p-1 and row_sum's (0.1 + 0.1) x 4 gives 0x1.999999999999ap-1.
  CHECK(torch_cascade_sum_identical(0.1, 8) == 0x1.9999999999999p-1);
  CHECK(torch_row_sum_identical(0.1, 8) == 0x1.999999999999ap-1);
  CHECK(torch_mean_column(0.1, 8, 0, 42) == 0x1.9999999999999p-1 / 8.0);
  CHECK(torch_mean_column(0.1, 8, 41, 42) == 0x1.999999999999ap-1 / 8.0);
  CHECK(torch_mean_column(0.1, 8, 41, 42) == 0.1);
  CHECK(torch_mean_column(0.1, 8, 0, 42) != 0.1);
}

TEST_CASE("row_sum: leftover rows go to the first partial before the other three", "[parity]") {
  const double x = 0.1;
  const double p = sequential(x, 2); // 9 rows: partials over 2 rows each, 1 left over
  CHECK(torch_row_sum_identical(x, 9) == (((p + x) + p) + p) + p);
  CHECK(torch_row_sum_identical(x, 3) == sequential(x, 3)); // no full row of 4
}

TEST_CASE("multi_row_sum carries blocks of 16 up through four levels", "[parity]") {
  const double x = 0.1;
  const double block = sequential(x, 16);
  // Two blocks meet in level 1.
  CHECK(torch_cascade_sum_identical(x, 32) == block + block);
  // 16 blocks fill level 1, which is carried to level 2; 3 rows are left in level 0 and the
  // levels are added from the bottom: ((0.1 + 0.1 + 0.1) + 0) + sum of the 16 blocks.
  CHECK(torch_cascade_sum_identical(x, 256) == sequential(block, 16));
  CHECK(torch_cascade_sum_identical(x, 259) == sequential(x, 3) + sequential(block, 16));
  // 17 rows: one block in level 1 plus one row in level 0.
  CHECK(torch_cascade_sum_identical(x, 17) == x + block);
}

TEST_CASE("multi_row_sum's block grows to 32 rows above 2^20 rows", "[parity]") {
  // ceil(log2(2^20 + 1)) / 4 = 5: blocks of 32 rows, each level holding 32 blocks.
  const double x = 0.1;
  const std::int64_t n = (std::int64_t{1} << 20) + 1;
  double expected = sequential(x, 32);
  for (int level = 1; level < 4; ++level) {
    expected = sequential(expected, 32);
  }
  CHECK(torch_cascade_sum_identical(x, n) == x + expected);
}

TEST_CASE("torch mean of a power of two is exact for any row count", "[parity]") {
  for (std::int64_t n = 1; n <= 300; ++n) {
    for (std::int64_t c : {0, 15, 16, 31, 32, 41}) {
      CHECK(torch_mean_column(0.25, n, c, 42) == 0.25);
    }
    CHECK(torch_mean_column(0.25, n, 0, 1) == 0.25);
  }
}

TEST_CASE("one row: the mean is the value itself", "[parity]") {
  for (double x : {0.1, 0.0599515644 * 8.0, 3.0e-3}) {
    CHECK(torch_mean_column(x, 1, 0, 42) == x);
    CHECK(torch_mean_column(x, 1, 41, 42) == x);
  }
}
