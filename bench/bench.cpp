// zerosearch_bench: times the search (enumerate + estimate every point on every placement +
// rank) in-process, as the median of several runs, for clusters from 128 to 4,096 GPUs, and
// the exact `optimal` partitioner on 128 GPUs; the native estimator with and without the
// zero-bubble and DualPipe schedules; and the writers alone.
//
//   zerosearch_bench [--profiledb DIR] [--runs N] [--threads T] [--case NAME] [--writers]
//
// Prints one line per case and thread count: estimates, median / min / max wall time,
// estimates per second, and the bytes the result rows hold. The `writers_*` cases search once,
// keep the ranked rows in memory, then time each writer alone (CSV in the original's format,
// JSON, the table) writing all rows to /dev/null: median ms and MB/s (10^6 bytes per second). Figures are medians so a stray
// slow run (another process on a 2-core machine) does not move them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/io/report.hpp"
#include "zerosearch/io/report_format.hpp"
#include "zerosearch/search/search.hpp"

using namespace zerosearch;

namespace {

struct Case {
  const char* name;
  int a10_nodes;
  int a6000_nodes;
  int global_batch;
  PartitionMethod method = PartitionMethod::minmax;
  /// Time the writers on the rows instead of the search.
  bool writers = false;
  /// What the search keeps (the default: every row, ranked).
  RowFilter keep = {};
  /// Native estimator cases (issue 28): Llama-3 70B on `a10_nodes` nodes of 8 H100-SXM, the
  /// default schedules, or every schedule with `split_schedules`.
  bool native = false;
  bool split_schedules = false;
  /// Issue 27's speed targets: another model on `a10_nodes` nodes of 8 H100-SXM (the
  /// catalog's stand-in for H800-class GPUs), with these context-parallel degrees (empty: the
  /// defaults of the sequence); ep and etp take their default lists.
  const char* native_model = nullptr;
  std::vector<int> cp = {};
};

// The two reference cases, then larger clusters and batches.
const Case kCases[] = {
    {"gpus128", 16, 16, 64},            // 4,128 estimates; the original needs 314 s
    {"gpus128_optimal", 16, 16, 64, PartitionMethod::optimal}, // --search_method optimal
    {"gpus1024", 128, 128, 64},
    {"gpus1024_gbs1024", 128, 128, 1024},
    {"gpus4096", 512, 512, 64},
    {"gpus4096_gbs4096", 512, 512, 4096},
    // Issue 13: 8,192 GPUs, every row kept; then only what the summary needs (10 distinct rows
    // that fit, streamed), as `--top 10` or a plain run keeps.
    {"gpus8192_gbs2048", 1024, 1024, 2048},
    {"gpus8192_gbs2048_top10", 1024, 1024, 2048, PartitionMethod::minmax, false,
     RowFilter{true, true, 10}},
    // The writers alone on the rows of a real search (the 99 MB CSV and a small one).
    {"writers_gpus128", 16, 16, 64, PartitionMethod::minmax, true},
    {"writers_gpus1024_gbs1024", 128, 128, 1024, PartitionMethod::minmax, true},
    // The native estimator (issue 28): Llama-3 70B on 64 nodes of 8 H100-SXM, global batch
    // 1024, with the default schedules, then with the zero-bubble and DualPipe ones added.
    {"native_h100x512", 64, 0, 1024, PartitionMethod::minmax, false, {}, true, false},
    {"native_h100x512_zb", 64, 0, 1024, PartitionMethod::minmax, false, {}, true, true},
    // The same as a plain `zerosearch --estimator native` run keeps them (the summary's 10 best
    // distinct rows that fit and its 256 fastest OOM rows): the split schedules' simulations
    // that cannot rank are skipped (SearchOptions::prune).
    {"native_h100x512_top10", 64, 0, 1024, PartitionMethod::minmax, false,
     RowFilter{true, true, 10, 256}, true, false},
    {"native_h100x512_zb_top10", 64, 0, 1024, PartitionMethod::minmax, false,
     RowFilter{true, true, 10, 256}, true, true},
    // Issue 27's speed targets (under 2 s each): DeepSeek-V3 on 2,048 H100-SXM, global batch
    // 4096 (tp, pp, dp, ep, etp, mbs, methods, recompute; cp 1 at its 4,096 tokens); Llama-3
    // 405B on 16,384, global batch 2048, with cp 1, 2, 4, 8.
    {"native_dsv3_h100x2048", 256, 0, 4096, PartitionMethod::minmax, false, {}, true, false,
     "deepseek_v3"},
    {"native_405b_h100x16384", 2048, 0, 2048, PartitionMethod::minmax, false, {}, true, false,
     "llama3_405B", {1, 2, 4, 8}},
    // DeepSeek-V3 with cp 1, 2, 4 searched as well (the list of dimensions in full).
    {"native_dsv3_h100x2048_cp", 256, 0, 4096, PartitionMethod::minmax, false, {}, true, false,
     "deepseek_v3", {1, 2, 4}},
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

/// Bytes `write` produces, counted without keeping them.
std::size_t bytes_written(const std::function<void(std::ostream&)>& write) {
  struct Counter : std::streambuf {
    std::size_t n = 0;
    std::streamsize xsputn(const char*, std::streamsize k) override {
      n += static_cast<std::size_t>(k);
      return k;
    }
    int_type overflow(int_type c) override {
      ++n;
      return c;
    }
  } counter;
  std::ostream out(&counter);
  write(out);
  return counter.n;
}

/// Times the CSV, JSON and table writers on the ranked rows of one search.
void bench_writers(const Case& c, const SearchPlan& plan, int runs) {
  std::vector<RunResult> result(1);
  result[0].cluster = plan.context.cluster;
  result[0].placements = placements(plan.context.cluster);
  result[0].rows = run_search(plan.context, plan.design_points(), result[0].placements, {});
  const auto ranked = rank_results(result);
  std::vector<std::string> type_names;
  for (const auto& g : plan.context.cluster.groups) {
    type_names.push_back(g.gpu);
  }
  const std::pair<const char*, std::function<void(std::ostream&)>> writers[] = {
      {"csv", [&](std::ostream& out) { write_csv(out, ranked, type_names); }},
      {"json", [&](std::ostream& out) { write_json(out, ranked, type_names); }},
      {"table", [&](std::ostream& out) { write_table(out, ranked, type_names); }},
  };
  for (const auto& [name, write] : writers) {
    const std::size_t bytes = bytes_written(write);
    std::vector<double> ms;
    for (int r = 0; r < runs; ++r) {
      std::ofstream null("/dev/null", std::ios::binary);
      const auto t0 = std::chrono::steady_clock::now();
      write(null);
      null.flush();
      const auto t1 = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    const double med = median(ms);
    fmt::print("{:<26} {:>5} {:>9} rows {:>9.1f} MB {:>9.2f} ms (min {:.2f}, max {:.2f}) {:>8.1f} MB/s\n",
               c.name, name, ranked.size(), static_cast<double>(bytes) / 1e6, med,
               *std::min_element(ms.begin(), ms.end()), *std::max_element(ms.begin(), ms.end()),
               static_cast<double>(bytes) / 1e6 / (med / 1000.0));
    std::fflush(stdout);
  }
}

} // namespace

int main(int argc, char** argv) {
  std::string profiledb = ZEROSEARCH_BENCH_PROFILEDB;
  int runs = 7;
  std::vector<unsigned> thread_counts{1, 0};
  std::string only;
  bool with_writers = false; // the writers_* cases run with --writers or --case
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--profiledb" && i + 1 < argc) profiledb = argv[++i];
    else if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--threads" && i + 1 < argc) thread_counts = {static_cast<unsigned>(std::atoi(argv[++i]))};
    else if (a == "--case" && i + 1 < argc) only = argv[++i];
    else if (a == "--writers") with_writers = true;
    else {
      std::fprintf(stderr, "usage: zerosearch_bench [--profiledb DIR] [--runs N] [--threads T] [--case NAME] [--writers]\n");
      return 2;
    }
  }
  const Catalogs catalogs = load_catalogs(profiledb);
  bool header_printed = false;
  for (const Case& c : kCases) {
    if (!only.empty() && only != c.name) continue;
    if (only.empty() && c.writers && !with_writers) continue;
    PlanInput in;
    in.model = "llama2_13B";
    in.cluster.groups = {{"A10", c.a10_nodes}, {"A6000", c.a6000_nodes}};
    in.cluster.gpus_per_node = 4;
    in.framework = Framework::deepspeed;
    in.global_batch = c.global_batch;
    in.partition_method = c.method;
    if (c.native) {
      in.model = "llama3_70B";
      in.cluster.groups = {{"H100-SXM", c.a10_nodes}};
      in.cluster.gpus_per_node = 8;
      in.framework = Framework::automatic;
      in.estimator = Estimator::native;
      if (c.native_model != nullptr) in.model = c.native_model;
      in.cp = c.cp;
      if (c.split_schedules) {
        in.schedules = {Schedule::one_f_one_b, Schedule::interleaved, Schedule::zb_h1,
                        Schedule::zb_h2,       Schedule::zbv,         Schedule::dualpipe,
                        Schedule::dualpipev};
      }
    }
    const SearchPlan plan = make_plan(in, catalogs);
    if (c.writers) {
      bench_writers(c, plan, runs);
      continue;
    }
    if (!header_printed) {
      fmt::print("{:<18} {:>4} {:>7} {:>9} {:>10} {:>10} {:>10} {:>12} {:>10}\n", "case", "thr", "gpus",
                 "estimates", "median ms", "min ms", "max ms", "estimates/s", "rows MiB");
      header_printed = true;
    }
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
        so.keep = c.keep;
        SearchResult found = search(plan.context, points, result[0].placements, so);
        result[0].rows = std::move(found.rows);
        result[0].left_out = std::move(found.left_out);
        const auto ranked = rank_results(result);
        const auto t1 = std::chrono::steady_clock::now();
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        estimates = found.estimates;
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
