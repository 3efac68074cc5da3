#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "describe.hpp"
#include "mode_options.hpp"
#include "modes.hpp"
#include "output.hpp"
#include "plan_outputs.hpp"
#include "setup.hpp"
#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/io/report.hpp"
#include "zerosearch/io/report_format.hpp"

namespace zerosearch::cli {

int run_exhaustive_mode(const Options& o, const char* argv0) {
  const Cluster cluster = make_cluster(o);
  PlanInput in = make_plan_input(o, cluster);
  // The point names its own method: search-wide framework choices do not apply.
  in.framework = Framework::automatic;
  OutputPlan output =
      make_output_plan(o, o.record ? std::filesystem::path("logs") / record_name(o, cluster)
                                   : std::filesystem::path());
  check_plan_outputs(o);
  const std::filesystem::path profiledb = find_profiledb(o, argv0);
  const Catalogs catalogs = load_catalogs(profiledb, o.hardware, o.calibration);
  const SearchPlan plan = make_plan(in, catalogs);
  output.provenance = provenance(o, run_inputs(o, plan, profiledb));
  print_warnings(o, plan.warnings);
  const EstimateContext& ctx = plan.context;
  const DesignPoint p =
      parse_design_point(o, cluster.world_size(), ctx.global_batch,
                         static_cast<int>(ctx.model.num_layers), cluster.gpus_per_node);
  const Placement placement =
      o.placement.empty() ? placements(cluster).front() : parse_placement(o.placement, cluster);
  const std::vector<int> given =
      o.partition.empty() ? std::vector<int>{}
                          : parse_partition(o.partition, p.pp, ctx.model.pipeline_layers());
  const LayerCosts costs = layer_costs(ctx, p); // InputError when the method or tp has no profile
  EstimateDetail d;
  const Estimate e = estimate(ctx, p, costs, placement, given, &d);

  // The row in the original's CSV format, for --record and -o.
  std::vector<RunResult> runs(1);
  runs[0].cluster = cluster;
  runs[0].placements = PlacementSet(placement);
  runs[0].rows = {ResultRow{p, 0, 1, e}};
  runs[0].profile_source = profile_source_text(ctx);
  const auto ranked = rank_results(runs);
  std::vector<std::string> type_names;
  for (const auto& g : cluster.groups) {
    type_names.push_back(g.gpu);
  }
  // The detailed report is this mode's summary; --format, -o and --record write the row.
  const auto report = [&](std::ostream& out) {
    out << fmt::format("zerosearch: {} on {} ({} GPUs, {} per node), global batch {}\n",
                       ctx.model.name, cluster_text(cluster), cluster.world_size(), cluster.gpus_per_node,
                       ctx.global_batch);
    out << fmt::format("profiles: {}\n", profile_source_text(ctx));
    out << fmt::format("design point: {}, tp {}, pp {}, dp {}, micro-batch {} ({} micro-batches)\n",
                       to_string(p.method), p.tp, p.pp, p.dp, p.mbs, p.num_micro_batches);
    out << fmt::format("placement:    {}\n", compress_placement(cluster, placement));
    out << fmt::format("partition:    {} ({})\n", python_int_list(e.partition),
                       given.empty() ? fmt::format("chosen by {}", to_string(ctx.partition_method))
                                     : std::string("as given"));
    out << '\n';
    out << fmt::format("step time           {:>14.6f} s/step\n", e.step_s);
    out << fmt::format("  pipeline          {:>14.6f} s\n", e.pipeline_s);
    out << fmt::format("  data-parallel     {:>14.6f} s\n", e.dp_sync_s);
    out << fmt::format("  embedding sync    {:>14.6f} s\n", e.embedding_sync_s);
    if (e.oom) {
      std::size_t s = 0;
      while (s < d.stage_mem_gib.size() && d.stage_mem_gib[s] <= d.stage_limit_gib[s]) {
        ++s;
      }
      out << fmt::format("memory              {:>14.2f} GiB: OOM, stage {} needs more than its "
                         "{}'s {:.2f} GiB\n",
                         e.gpumem_gib, s, cluster.groups[static_cast<std::size_t>(d.stage_gpu[s])].gpu,
                         d.stage_limit_gib[s]);
    } else {
      out << fmt::format("memory              {:>14.2f} GiB on the fullest stage: fits\n",
                         e.gpumem_gib);
    }
    out << fmt::format("price               {:>14.6f} $ per step, ${:.0f} for {} iterations\n",
                       e.price_per_step_usd, e.train_cost_usd, ctx.iterations);
    out << '\n';
    out << fmt::format("{:>5} {:>6} {:>7}  {:<7} {:>11} {:>11} {:>11} {:>11} {:>12} {:>16}\n",
                       "stage", "layers", "from-to", "GPU", "compute s", "carried s", "fwd send s",
                       "bwd send s", "end s", "memory GiB");
    int first = 0;
    for (std::size_t s = 0; s < e.partition.size(); ++s) {
      const int count = e.partition[s];
      const bool over = d.stage_mem_gib[s] > d.stage_limit_gib[s];
      out << fmt::format("{:>5} {:>6} {:>7}  {:<7} {:>11.6f} {:>11.6f} {:>11.6f} {:>11.6f} {:>12.6f} "
                         "{:>7.2f} / {:<5.2f}{}\n",
                         s, count, fmt::format("{}-{}", first, first + count - 1),
                         cluster.groups[static_cast<std::size_t>(d.stage_gpu[s])].gpu,
                         d.times.comp_s[s], d.times.comm_s[s], d.times.for_send_s[s],
                         d.times.back_send_s[s], d.stage_end_s[s], d.stage_mem_gib[s],
                         d.stage_limit_gib[s], over ? " OOM" : "");
      first += count;
    }
    out << "\nlayers count from 0 (the embedding) to " << ctx.model.pipeline_layers() - 1
        << " (post_process). A middle stage carries its incoming link time; stage 0 sends forward "
           "and the last stage sends backward.\n";
  };
  write_plan_outputs(o, [&](const RankedRow&) -> const EstimateContext& { return ctx; }, ranked,
                     "--exhaustive",
                     {fmt::format("{} on {} GPUs, global batch {}: one design point (--exhaustive)",
                                  ctx.model.name, cluster.world_size(), ctx.global_batch)});
  write_outputs(output, ranked, type_names, report);
  return 0;
}

} // namespace zerosearch::cli
