#include "modes.hpp"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "output.hpp"
#include "plan_outputs.hpp"
#include "progress.hpp"
#include "setup.hpp"
#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/io/report.hpp"
#include "zerosearch/search/search.hpp"
#include "zerosearch/search/search_size.hpp"

namespace zerosearch::cli {

namespace fs = std::filesystem;

int run_search_mode(const Options& o, const char* argv0) {
  const Cluster cluster = make_cluster(o);
  PlanInput in = make_plan_input(o, cluster);
  unsigned threads = static_cast<unsigned>(parse_int("--threads", o.threads, 0, 1024));
  OutputPlan output =
      make_output_plan(o, o.record ? fs::path("logs") / record_name(o, cluster) : fs::path());
  check_plan_outputs(o);
  const fs::path profiledb = find_profiledb(o, argv0);
  const Catalogs catalogs = load_catalogs(profiledb, o.hardware, o.calibration);
  const SearchPlan plan = make_plan(in, catalogs);
  output.provenance = provenance(o, run_inputs(o, plan, profiledb));
  check_plan(o, plan);
  print_warnings(o, plan.warnings);
  if (!o.quiet) {
    for (const auto& note : plan.notes) {
      std::cerr << "zerosearch: note: " << note << '\n';
    }
  }
  const auto points = plan.design_points();
  if (points.empty()) {
    throw InputError(no_design_point_message(plan));
  }
  // Refuse before building placements or rows: a search that cannot fit or finish.
  const SearchSize size = measure_search(plan.context.cluster, points);
  check_search_size(size);
  if (threads == 0) {
    threads = std::max(1U, std::thread::hardware_concurrency());
  }
  threads = threads_within_limit(size, threads);

  const auto t0 = std::chrono::steady_clock::now();
  ProgressBar bar(std::cerr, !o.quiet && stderr_is_terminal());
  SearchOptions so;
  so.threads = threads;
  so.on_progress = [&bar](const SearchProgress& p) { bar.update(p); };
  // Keep only the rows the outputs show (--top, --feasible, distinct rows) while searching.
  so.keep = search_filter(output, !o.rank.empty() || !o.emit.empty() || !o.timeline.empty() ||
                                      !o.html.empty());
  std::vector<RunResult> runs(1);
  runs[0].cluster = plan.context.cluster;
  runs[0].placements = placements(plan.context.cluster);
  SearchResult found = search(plan.context, points, runs[0].placements, so);
  runs[0].rows = std::move(found.rows);
  runs[0].left_out = std::move(found.left_out);
  runs[0].estimates = found.estimates;
  runs[0].oom = found.oom;
  runs[0].profile_source = profile_source_text(plan.context);
  bar.finish();
  const auto ranked = rank_results(runs);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<std::string> type_names;
  for (const auto& g : plan.context.cluster.groups) {
    type_names.push_back(g.gpu);
  }
  write_plan_outputs(o, [&](const RankedRow&) -> const EstimateContext& { return plan.context; },
                     ranked, "search",
                     {fmt::format("{} on {} GPUs, global batch {}: {} estimates in {:.1f} s",
                                  plan.context.model.name, plan.context.cluster.world_size(),
                                  plan.context.global_batch, runs[0].estimates, seconds)});
  write_outputs(output, ranked, type_names, [&](std::ostream& out) {
    print_summary(out, plan, runs[0], ranked, summary_rows(output, ranked), seconds);
  });
  return 0;
}

} // namespace zerosearch::cli
