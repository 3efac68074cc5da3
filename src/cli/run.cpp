#include "run.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include <fmt/format.h>

#include "options.hpp"
#include "output.hpp"
#include "zerosearch/error.hpp"
#include "zerosearch/plan.hpp"
#include "zerosearch/report.hpp"
#include "zerosearch/search.hpp"

#ifndef ZEROSEARCH_SOURCE_PROFILEDB
#define ZEROSEARCH_SOURCE_PROFILEDB ""
#endif

namespace zerosearch::cli {

namespace {

namespace fs = std::filesystem;

/// --profiledb_path, else next to an installed binary (../share/zerosearch/profiledb), else
/// a profiledb/ beside the binary, else the source tree the binary was built from.
fs::path find_profiledb(const Options& o, const char* argv0) {
  if (!o.profiledb_path.empty()) {
    return o.profiledb_path;
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    exe = fs::absolute(argv0, ec);
  }
  const fs::path dir = exe.parent_path();
  for (const fs::path& candidate :
       {dir / ".." / "share" / "zerosearch" / "profiledb", dir / "profiledb",
        fs::path(ZEROSEARCH_SOURCE_PROFILEDB)}) {
    if (!candidate.empty() && fs::is_regular_file(candidate / "models.json", ec)) {
      return candidate;
    }
  }
  throw InputError("cannot find the profile database (models.json, hardware.json, profiles/); "
                   "pass --profiledb_path DIR");
}

Cluster make_cluster(const Options& o) {
  Cluster c;
  c.gpus_per_node = static_cast<int>(parse_int("--gpu_per_node", o.gpu_per_node, 1, 1024));
  if (o.pareto) {
    if (o.node_types.size() != 2) {
      throw InputError(fmt::format("--pareto needs exactly two --node_type values, got {}",
                                   o.node_types.size()));
    }
    return c;
  }
  if (o.node_type_counts.empty()) {
    if (o.node_types.size() != 1) {
      throw InputError(fmt::format("--node_type has {} types; give their node counts with "
                                   "--node_type_num_node",
                                   o.node_types.size()));
    }
    c.groups.push_back(
        {o.node_types[0], static_cast<int>(parse_int("--num_node", o.num_node, 1, 1'000'000))});
    return c;
  }
  if (o.node_types.size() != o.node_type_counts.size()) {
    throw InputError(fmt::format("--node_type has {} values but --node_type_num_node has {}; "
                                 "give one count per node type",
                                 o.node_types.size(), o.node_type_counts.size()));
  }
  for (std::size_t i = 0; i < o.node_types.size(); ++i) {
    for (std::size_t k = 0; k < i; ++k) {
      if (o.node_types[k] == o.node_types[i]) {
        throw InputError(fmt::format("--node_type lists '{}' twice", o.node_types[i]));
      }
    }
    c.groups.push_back({o.node_types[i], static_cast<int>(parse_int(
                                              "--node_type_num_node", o.node_type_counts[i], 1,
                                              1'000'000))});
  }
  return c;
}

PlanInput make_plan_input(const Options& o, const Cluster& cluster) {
  PlanInput in;
  in.model = o.model;
  in.custom_num_layers =
      static_cast<int>(parse_int("--custom_num_layer", o.custom_num_layer, 1, 100'000));
  in.cluster = cluster;
  in.bandwidth_set = o.pareto ? "pareto" : o.comm_type;
  in.framework = parse_framework(o.framework);
  in.global_batch = static_cast<int>(parse_int("--custom_gbs", o.custom_gbs, 1, 1'000'000'000));
  in.precision_bits = static_cast<int>(parse_int("--precision", o.precision, 1, 64));
  in.iterations = parse_int("--iter", o.iter, 0, std::numeric_limits<long long>::max());
  in.partition_method = parse_partition_method(o.search_method);
  return in;
}

/// The original's record file name (SPEC 5).
std::string record_name(const Options& o, const Cluster& cluster) {
  const long long n = o.pareto ? parse_int("--num_node", o.num_node, 1, 1'000'000)
                               : cluster.num_nodes();
  return fmt::format("N{}_M{}_model_{}_comm_{}{}_{}.csv", n, cluster.gpus_per_node, o.model,
                     o.comm_type, o.add_exp_name, o.node_types.size() > 1 ? "hetero" : "homo");
}

int run_search_mode(const Options& o, const char* argv0) {
  const Cluster cluster = make_cluster(o);
  PlanInput in = make_plan_input(o, cluster);
  if (in.partition_method != PartitionMethod::minmax) {
    throw InputError(fmt::format("--search_method {} is not available yet (allowed: minmax)",
                                 o.search_method));
  }
  if (o.pareto || o.exhaustive || o.search_space) {
    throw InputError("--pareto, --exhaustive and --search_space are not available yet");
  }
  const unsigned threads = static_cast<unsigned>(parse_int("--threads", o.threads, 0, 1024));
  const Catalogs catalogs = load_catalogs(find_profiledb(o, argv0));
  const SearchPlan plan = make_plan(in, catalogs);
  for (const auto& note : plan.notes) {
    std::cerr << "zerosearch: note: " << note << '\n';
  }
  const auto points = plan.design_points();
  const auto places = placements(plan.context.cluster);

  const auto t0 = std::chrono::steady_clock::now();
  SearchOptions so;
  so.threads = threads;
  std::vector<RunResult> runs(1);
  runs[0].cluster = plan.context.cluster;
  runs[0].placements = places;
  runs[0].rows = run_search(plan.context, points, places, so);
  const auto ranked = rank_results(runs);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<std::string> type_names;
  for (const auto& g : cluster.groups) {
    type_names.push_back(g.gpu);
  }
  CsvOptions csv;
  csv.pretty = o.pretty;
  bool wrote = false;
  if (o.record) {
    const fs::path path = fs::path("logs") / record_name(o, cluster);
    write_file_atomically(path, [&](std::ostream& out) { write_csv(out, ranked, type_names, csv); });
    std::cerr << "zerosearch: wrote " << path.string() << '\n';
    wrote = true;
  }
  if (!o.output.empty()) {
    if (o.output == "-") {
      write_csv(std::cout, ranked, type_names, csv);
    } else {
      write_file_atomically(o.output,
                            [&](std::ostream& out) { write_csv(out, ranked, type_names, csv); });
      std::cerr << "zerosearch: wrote " << o.output << '\n';
    }
    wrote = true;
  }
  if (!wrote || o.output != "-") {
    print_summary(std::cout, plan, runs[0], ranked, seconds);
  }
  return 0;
}

} // namespace

int run(int argc, const char* const* argv) {
  try {
    const ParseResult parsed = parse_options(argc, argv);
    if (!parsed.options) {
      return parsed.exit_code;
    }
    return run_search_mode(*parsed.options, argc > 0 ? argv[0] : "zerosearch");
  } catch (const InputError& e) {
    std::cerr << "zerosearch: error: " << e.what() << '\n';
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "zerosearch: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "zerosearch: internal error: " << e.what() << '\n';
    return 1;
  }
}

} // namespace zerosearch::cli
