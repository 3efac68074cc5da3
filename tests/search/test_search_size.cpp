#include <catch2/catch.hpp>

#include <string>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/report.hpp"
#include "zerosearch/search/search.hpp"
#include "zerosearch/search/search_size.hpp"

using namespace zerosearch;

namespace {

DesignPoint point(int pp, int micro_batches) {
  DesignPoint p;
  p.pp = pp;
  p.num_micro_batches = micro_batches;
  return p;
}

std::string message_of(const SearchSize& size, const SearchLimits& limits = {}) {
  try {
    check_search_size(size, limits);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("placements are counted without building them", "[search_size]") {
  CHECK(placement_count(Cluster{{{"A10", 8}}, 4, {}}) == 1);
  CHECK(placement_count(Cluster{{{"A10", 3}, {"A6000", 5}}, 4, {}}) == 8);
  CHECK(placement_count(Cluster{{{"A10", 0}, {"A6000", 5}}, 4, {}}) == 1);
  CHECK(placement_count(Cluster{{{"A10", 3}, {"A6000", 5}}, 4, {}}) ==
        placements(Cluster{{{"A10", 3}, {"A6000", 5}}, 4, {}}).size());
}

TEST_CASE("a row costs the row, two rank entries and its partition's heap chunk", "[search_size]") {
  const std::uint64_t fixed = sizeof(ResultRow) + 2 * sizeof(RankedRow);
  CHECK(row_bytes(1) == fixed + 32);  // malloc's smallest chunk
  CHECK(row_bytes(8) == fixed + 48);  // 32 bytes + 8 of header, rounded to 16
  CHECK(row_bytes(40) == fixed + 176);
}

TEST_CASE("estimates are points x placements, scratch is the largest simulation", "[search_size]") {
  const Cluster cluster{{{"A10", 3}, {"A6000", 5}}, 4, {}};
  const std::vector<DesignPoint> points = {point(1, 64), point(8, 16), point(2, 32)};
  const SearchSize size = measure_search(cluster, points);
  CHECK(size.design_points == 3);
  CHECK(size.placements == 8);
  CHECK(size.estimates == 24);
  CHECK(size.scratch_pp == 8);
  CHECK(size.scratch_micro_batches == 16);
  CHECK(size.scratch_bytes == 8 * 16 * 64);
  const std::uint64_t placement_bytes = 8 * (sizeof(Placement) + 48);
  CHECK(size.rows_bytes == placement_bytes + 8 * (row_bytes(1) + row_bytes(8) + row_bytes(2)));
  CHECK(size.memory_bytes(4) == size.rows_bytes + 4 * size.scratch_bytes);
  CHECK(size.cpu_s > 0.0);
}

TEST_CASE("sizes of several runs add up, scratch is the largest", "[search_size]") {
  SearchSize a = measure_search(Cluster{{{"A10", 8}}, 4, {}}, {point(4, 16)});
  const SearchSize b = measure_search(Cluster{{{"A10", 8}}, 4, {}}, {point(8, 32), point(1, 1)});
  const double cpu = a.cpu_s + b.cpu_s;
  a += b;
  CHECK(a.estimates == 3);
  CHECK(a.scratch_pp == 8);
  CHECK(a.scratch_micro_batches == 32);
  CHECK(a.cpu_s == Approx(cpu));
}

TEST_CASE("the 1,024-GPU benchmark case is well inside the limits", "[search_size]") {
  // 128 A10 + 128 A6000 nodes of 4 GPUs, llama2_13B, global batch 64: 38 points x 256 placements.
  std::vector<DesignPoint> points(38, point(32, 16));
  const SearchSize size = measure_search(Cluster{{{"A10", 128}, {"A6000", 128}}, 4, {}}, points);
  CHECK(size.estimates == 9728);
  CHECK_NOTHROW(check_search_size(size));
  CHECK(threads_within_limit(size, 16) == 16);
}

TEST_CASE("a search above the memory limit is refused with the limit named", "[search_size]") {
  SearchSize size;
  size.design_points = 1000;
  size.placements = 100000;
  size.estimates = 100'000'000;
  size.rows_bytes = std::uint64_t{20} << 30;
  CHECK(message_of(size) ==
        "search too large: 100000000 estimates (1000 design points x 100000 placements) need "
        "20.0 GiB of memory (20.0 GiB of rows), above the limit of 16.0 GiB; --top N keeps only "
        "the N best rows while searching (not with a file of every placement: -o, --record); or "
        "use fewer nodes or a smaller --custom_gbs");
}

TEST_CASE("one simulation too large for memory is refused", "[search_size]") {
  const SearchSize size = measure_search(Cluster{{{"A10", 8}}, 4, {}}, {point(32, 16'777'216)});
  CHECK(message_of(size) ==
        "search too large: 1 estimate (1 design point x 1 placement) need 32.0 GiB of memory "
        "(480 B of rows + 32.0 GiB to simulate 32 stages x 16777216 micro-batches), above the "
        "limit of 16.0 GiB; use fewer nodes or a smaller --custom_gbs");
}

TEST_CASE("a search above the CPU limit is refused", "[search_size]") {
  SearchSize size;
  size.design_points = 10;
  size.placements = 1;
  size.estimates = 10;
  size.cpu_s = 20 * 3600.0;
  CHECK(message_of(size) ==
        "search too large: 10 estimates (10 design points x 1 placement) need about 20 "
        "CPU-hours, above the limit of 8 CPU-hours; --top and --feasible do not reduce it "
        "(every estimate is computed); use fewer nodes or a smaller --custom_gbs");
}

TEST_CASE("workers are reduced until their simulations fit", "[search_size]") {
  SearchSize size;
  size.rows_bytes = std::uint64_t{8} << 30;
  size.scratch_bytes = std::uint64_t{3} << 30;
  CHECK(threads_within_limit(size, 8) == 2);
  CHECK(threads_within_limit(size, 1) == 1);
  CHECK(threads_within_limit(size, 0) == 1);
}

TEST_CASE("bytes are written for people", "[search_size]") {
  CHECK(format_bytes(100) == "100 B");
  CHECK(format_bytes(12 * 1024) == "12 KiB");
  CHECK(format_bytes(std::uint64_t{340} << 20) == "340 MiB");
  CHECK(format_bytes(std::uint64_t{3} << 29) == "1.5 GiB");
}

TEST_CASE("a search that keeps its --top rows is sized by them, not by every estimate",
          "[search_size]") {
  SearchSize size;
  size.design_points = 1000;
  size.placements = 100000;
  size.estimates = 100'000'000;
  size.max_pp = 8;
  size.rows_bytes = std::uint64_t{20} << 30;
  size.keep_top(10, 2);
  CHECK(size.kept_rows == 10 * 3 + 100000 * 2);
  CHECK(size.rows_bytes == size.kept_rows * row_bytes(8));
  CHECK(message_of(size).empty());
  // Keeping more rows than the search has changes nothing.
  SearchSize small;
  small.placements = 4;
  small.estimates = 40;
  small.rows_bytes = 40 * row_bytes(2);
  small.keep_top(100, 2);
  CHECK(small.kept_rows == 0);
  CHECK(small.rows_bytes == 40 * row_bytes(2));
}
