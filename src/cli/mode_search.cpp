#include "modes.hpp"

#include <chrono>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "output.hpp"
#include "setup.hpp"
#include "zerosearch/error.hpp"
#include "zerosearch/plan.hpp"
#include "zerosearch/report.hpp"
#include "zerosearch/search.hpp"

namespace zerosearch::cli {

namespace fs = std::filesystem;

int run_search_mode(const Options& o, const char* argv0) {
  const Cluster cluster = make_cluster(o);
  PlanInput in = make_plan_input(o, cluster);
  const unsigned threads = static_cast<unsigned>(parse_int("--threads", o.threads, 0, 1024));
  const Catalogs catalogs = load_catalogs(find_profiledb(o, argv0));
  const SearchPlan plan = make_plan(in, catalogs);
  if (!o.quiet) {
    for (const auto& note : plan.notes) {
      std::cerr << "zerosearch: note: " << note << '\n';
    }
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
    if (!o.quiet) {
      std::cerr << "zerosearch: wrote " << path.string() << '\n';
    }
    wrote = true;
  }
  if (!o.output.empty()) {
    if (o.output == "-") {
      write_csv(std::cout, ranked, type_names, csv);
    } else {
      write_file_atomically(o.output,
                            [&](std::ostream& out) { write_csv(out, ranked, type_names, csv); });
      if (!o.quiet) {
        std::cerr << "zerosearch: wrote " << o.output << '\n';
      }
    }
    wrote = true;
  }
  if (!o.quiet && (!wrote || o.output != "-")) {
    print_summary(std::cout, plan, runs[0], ranked, seconds);
  }
  return 0;
}

} // namespace zerosearch::cli
