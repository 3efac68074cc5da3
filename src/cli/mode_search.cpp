#include "modes.hpp"

#include <fmt/format.h>

#include "output.hpp"
#include "session.hpp"
#include "setup.hpp"
#include "zerosearch/model/estimator.hpp"

namespace zerosearch::cli {

int run_search_mode(const Options& o, const char* argv0) {
  Session session(o, argv0);
  std::vector<SearchPlan> plans;
  plans.push_back(session.plan(cluster_of(o)));
  session.announce(plans);
  const SessionResult result = session.search(std::move(plans));
  const EstimateContext& ctx = result.plans.front().context;
  std::vector<std::string> gpu_lines;
  if (estimator_info(ctx.estimator).uses_gpu_specs) {
    gpu_lines = gpu_entry_lines(ctx, session.catalogs.hardware);
  }
  if (!o.gpu_per_node_note.empty()) {
    gpu_lines.push_back(o.gpu_per_node_note);
  }
  session.write(result, "search",
                {fmt::format("{} on {} GPUs, global batch {}: {} estimates in {:.1f} s",
                             ctx.model.name, ctx.cluster.world_size(), ctx.global_batch,
                             result.ranked.size(), result.seconds)},
                [&](std::ostream& out) {
                  print_summary(out, result.plans.front(), result.runs.front(), result.ranked,
                                summary_rows(session.output, result.ranked), result.seconds,
                                gpu_lines, &result.intervals, &session.catalogs.hardware);
                  print_run_cost_summary(out, o.run_cost,
                                         summary_rows(session.output, result.ranked));
                });
  return 0;
}

} // namespace zerosearch::cli
