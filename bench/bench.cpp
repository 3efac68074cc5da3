// zerosearch_bench: times the search (enumerate + estimate every point on every placement +
// rank) in-process, as the median of several runs, for clusters from 128 to 4,096 GPUs, and
// the exact `optimal` partitioner on 128 GPUs.
//
//   zerosearch_bench [--profiledb DIR] [--runs N] [--threads T] [--case NAME]
//
// Prints one line per case and thread count: estimates, median / min / max wall time,
// estimates per second, and the bytes the result rows hold. Figures are medians so a stray
// slow run (another process on a 2-core machine) does not move them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/io/report.hpp"
#include "zerosearch/search/search.hpp"

using namespace zerosearch;

namespace {

struct Case {
  const char* name;
  int a10_nodes;
  int a6000_nodes;
  int global_batch;
  PartitionMethod method = PartitionMethod::minmax;
};

// The two reference cases, then larger clusters and batches.
const Case kCases[] = {
    {"gpus128", 16, 16, 64},            // 4,128 estimates; the original needs 314 s
    {"gpus128_optimal", 16, 16, 64, PartitionMethod::optimal}, // --search_method optimal
    {"gpus1024", 128, 128, 64},
    {"gpus1024_gbs1024", 128, 128, 1024},
    {"gpus4096", 512, 512, 64},
    {"gpus4096_gbs4096", 512, 512, 4096},
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::size_t row_bytes(const std::vector<ResultRow>& rows) {
  std::size_t bytes = rows.capacity() * sizeof(ResultRow);
  for (const auto& r : rows) {
    bytes += r.estimate.partition.capacity() * sizeof(int);
  }
  return bytes;
}

} // namespace

int main(int argc, char** argv) {
  std::string profiledb = ZEROSEARCH_BENCH_PROFILEDB;
  int runs = 7;
  std::vector<unsigned> thread_counts{1, 0};
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--profiledb" && i + 1 < argc) profiledb = argv[++i];
    else if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--threads" && i + 1 < argc) thread_counts = {static_cast<unsigned>(std::atoi(argv[++i]))};
    else if (a == "--case" && i + 1 < argc) only = argv[++i];
    else {
      std::fprintf(stderr, "usage: zerosearch_bench [--profiledb DIR] [--runs N] [--threads T] [--case NAME]\n");
      return 2;
    }
  }
  const Catalogs catalogs = load_catalogs(profiledb);
  fmt::print("{:<18} {:>4} {:>7} {:>9} {:>10} {:>10} {:>10} {:>12} {:>10}\n", "case", "thr", "gpus",
             "estimates", "median ms", "min ms", "max ms", "estimates/s", "rows MiB");
  for (const Case& c : kCases) {
    if (!only.empty() && only != c.name) continue;
    PlanInput in;
    in.model = "llama2_13B";
    in.cluster.groups = {{"A10", c.a10_nodes}, {"A6000", c.a6000_nodes}};
    in.cluster.gpus_per_node = 4;
    in.framework = Framework::deepspeed;
    in.global_batch = c.global_batch;
    in.partition_method = c.method;
    const SearchPlan plan = make_plan(in, catalogs);
    for (const unsigned threads : thread_counts) {
      std::vector<double> ms;
      std::size_t estimates = 0;
      std::size_t bytes = 0;
      for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto points = plan.design_points();
        std::vector<RunResult> result(1);
        result[0].cluster = plan.context.cluster;
        result[0].placements = placements(plan.context.cluster);
        SearchOptions so;
        so.threads = threads;
        result[0].rows = run_search(plan.context, points, result[0].placements, so);
        const auto ranked = rank_results(result);
        const auto t1 = std::chrono::steady_clock::now();
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        estimates = ranked.size();
        bytes = row_bytes(result[0].rows) + ranked.capacity() * sizeof(RankedRow);
      }
      const double med = median(ms);
      fmt::print("{:<18} {:>4} {:>7} {:>9} {:>10.2f} {:>10.2f} {:>10.2f} {:>12.0f} {:>10.2f}\n", c.name,
                 threads == 0 ? std::string("all") : std::to_string(threads),
                 plan.context.cluster.world_size(), estimates, med,
                 *std::min_element(ms.begin(), ms.end()), *std::max_element(ms.begin(), ms.end()),
                 static_cast<double>(estimates) / (med / 1000.0), static_cast<double>(bytes) / (1 << 20));
      std::fflush(stdout);
    }
  }
  return 0;
}
