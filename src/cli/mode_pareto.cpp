#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "describe.hpp"
#include "mode_options.hpp"
#include "modes.hpp"
#include "output.hpp"
#include "plan_outputs.hpp"
#include "progress.hpp"
#include "setup.hpp"
#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/search/pareto.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/io/plot.hpp"
#include "zerosearch/io/report.hpp"
#include "zerosearch/io/report_format.hpp"
#include "zerosearch/search/search.hpp"
#include "zerosearch/search/search_size.hpp"

namespace zerosearch::cli {

namespace fs = std::filesystem;

namespace {

std::string composition_text(const Cluster& c) {
  std::string out;
  for (const auto& g : c.groups) {
    out += out.empty() ? "" : " + ";
    out += fmt::format("{} {}", g.count, g.gpu);
  }
  return out;
}

/// One line naming a row's plan and figures.
std::string plan_text(const RankedRow& r) {
  const auto& p = r.row->point;
  const auto& e = r.row->estimate;
  return fmt::format("{} ({}), {} tp {} pp {} dp {} mbs {}: {:.4f} s/step, ${:.5f}/step, "
                     "train cost ${:.0f}, {:.2f} GiB, partition {}",
                     composition_text(r.run->cluster),
                     compress_placement(r.run->cluster,
                                    r.run->placements[static_cast<std::size_t>(r.row->placement)]),
                     to_string(p.method), p.tp, p.pp, p.dp, p.mbs, e.step_s,
                     e.price_per_step_usd, e.train_cost_usd, e.gpumem_gib,
                     python_int_list(e.partition));
}

void print_front(std::ostream& out, const std::vector<RankedRow>& ranked,
                 const std::vector<std::string>& type_names) {
  std::string head;
  for (const auto& t : type_names) {
    head += fmt::format("{:>6} ", t);
  }
  out << fmt::format("{}{:<6} {:>3} {:>3} {:>3} {:>4} {:>4} {:>10} {:>10} {:>8}  {}\n", head,
                     "method", "tp", "pp", "dp", "mbs", "m", "s/step", "$/step", "mem GiB",
                     "placement");
  for (const auto& r : ranked) {
    if (!r.on_front) {
      continue;
    }
    const auto& p = r.row->point;
    const auto& e = r.row->estimate;
    std::string counts;
    for (const auto& g : r.run->cluster.groups) {
      counts += fmt::format("{:>6} ", g.count);
    }
    out << fmt::format(
        "{}{:<6} {:>3} {:>3} {:>3} {:>4} {:>4} {:>10.4f} {:>10.5f} {:>8.2f}  {}\n", counts,
        to_string(p.method), p.tp, p.pp, p.dp, p.mbs, p.num_micro_batches, e.step_s,
        e.price_per_step_usd, e.gpumem_gib,
        compress_placement(r.run->cluster, r.run->placements[static_cast<std::size_t>(r.row->placement)]));
  }
}

} // namespace

int run_pareto_mode(const Options& o, const char* argv0) {
  const Cluster shape = make_cluster(o); // checks the two node types, sets the GPUs per node
  if (!o.node_type_counts.empty()) {
    throw InputError("--node_type_num_node is not used with --pareto; it sweeps 0..--num_node "
                     "nodes of each type");
  }
  if (o.node_types[0] == o.node_types[1]) {
    throw InputError(fmt::format("--pareto needs two different node types, got '{}' twice",
                                 o.node_types[0]));
  }
  const int bound = static_cast<int>(parse_int("--num_node", o.num_node, 1, 1000));
  std::optional<double> max_step, max_price, budget;
  if (!o.max_step_time.empty()) {
    max_step = parse_positive_real("--max_step_time", o.max_step_time);
  }
  if (!o.max_price_per_step.empty()) {
    max_price = parse_positive_real("--max_price_per_step", o.max_price_per_step);
  }
  if (!o.budget.empty()) {
    budget = parse_positive_real("--budget", o.budget);
  }
  if (!o.plot.empty() && fs::path(o.plot).extension() != ".svg") {
    throw InputError(fmt::format("--plot '{}' must name an .svg file", o.plot));
  }
  const unsigned threads = static_cast<unsigned>(parse_int("--threads", o.threads, 0, 1024));
  OutputPlan output =
      make_output_plan(o, o.record ? fs::path("logs") / record_name(o, shape) : fs::path());
  output.csv.pareto_column = true;
  std::optional<OutputTarget> plot_target;
  if (!o.plot.empty()) {
    plot_target = check_extra_output(o, output, o.plot, "--plot");
  }
  check_plan_outputs(o);
  const fs::path profiledb = find_profiledb(o, argv0);
  const Catalogs catalogs = load_catalogs(profiledb, o.hardware, o.calibration);

  // Every composition's plan first, so that bad input fails before the sweep starts.
  const std::vector<Cluster> clusters =
      pareto_compositions(o.node_types[0], o.node_types[1], bound, shape.gpus_per_node);
  std::vector<SearchPlan> plans;
  std::vector<std::string> notes;
  std::size_t total = 0;
  for (const Cluster& c : clusters) {
    plans.push_back(make_plan(make_plan_input(o, c), catalogs));
    for (const auto& n : plans.back().notes) {
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) {
        notes.push_back(n);
      }
    }
    total += plans.back().design_points().size() * placements(c).size();
  }
  {
    nlohmann::ordered_json inputs = run_inputs(o, plans.front(), profiledb);
    inputs["cluster"] = fmt::format("Pareto sweep: 0..{} {} and 0..{} {} nodes", bound,
                                    o.node_types[0], bound, o.node_types[1]);
    output.provenance = provenance(o, std::move(inputs));
  }
  if (!o.quiet) {
    for (const auto& n : notes) {
      std::cerr << "zerosearch: note: " << n << '\n';
    }
  }
  if (!plans.empty()) {
    print_warnings(o, plans.front().warnings);
  }
  // Refuse a sweep that cannot fit or finish, before running any of it.
  SearchSize size;
  for (std::size_t i = 0; i < clusters.size(); ++i) {
    size += measure_search(clusters[i], plans[i].design_points());
  }
  check_search_size(size);

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<RunResult> runs(clusters.size());
  {
    ProgressBar bar(std::cerr, !o.quiet && stderr_is_terminal());
    std::size_t done_before = 0;
    for (std::size_t i = 0; i < clusters.size(); ++i) {
      SearchOptions so;
      so.threads = threads;
      so.on_progress = [&](const SearchProgress& sp) {
        bar.update(SearchProgress{done_before + sp.done, total});
      };
      runs[i].cluster = plans[i].context.cluster;
      runs[i].placements = placements(runs[i].cluster);
      runs[i].rows = run_search(plans[i].context, plans[i].design_points(), runs[i].placements, so);
      runs[i].profile_source = profile_source_text(plans[i].context);
      runs[i].estimator = plans[i].context.estimator;
      done_before += runs[i].rows.size();
    }
  }
  std::vector<RankedRow> ranked = rank_results(runs);
  mark_pareto_front(ranked);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const std::vector<std::string> type_names{catalogs.hardware.gpu(o.node_types[0]).name,
                                            catalogs.hardware.gpu(o.node_types[1]).name};
  std::string chart;
  if (!o.plot.empty() || !o.html.empty()) {
    std::vector<PlotPoint> points;
    for (const auto& r : ranked) {
      if (!r.row->estimate.oom) {
        points.push_back(PlotPoint{r.row->estimate.step_s, r.row->estimate.price_per_step_usd,
                                   r.on_front, plan_text(r)});
      }
    }
    const std::string title =
        fmt::format("{}: price per step vs step time, {} and {} nodes (0..{} each)",
                    plans.front().context.model.name, o.node_types[0], o.node_types[1], bound);
    std::ostringstream svg;
    write_price_time_svg(svg, points, title);
    chart = svg.str();
  }
  if (!o.plot.empty()) {
    write_extra_output(output, *plot_target, [&](std::ostream& out) { out << chart; });
  }
  if (!o.html.empty()) {
    // The best plan's timeline comes from its own composition's context.
    const auto context_of = [&](const RankedRow& r) -> const EstimateContext& {
      return plans[static_cast<std::size_t>(r.run - runs.data())].context;
    };
    write_plan_outputs(o, context_of, ranked, "--pareto",
                       {fmt::format("Pareto sweep of {} over 0..{} {} and 0..{} {} nodes: {} "
                                    "compositions, {} estimates in {:.1f} s",
                                    plans.front().context.model.name, bound, o.node_types[0],
                                    bound, o.node_types[1], clusters.size(), ranked.size(),
                                    seconds)},
                       chart);
  }
  const auto summary = [&](std::ostream& out) {

    std::size_t feasible = 0, on_front = 0;
    for (const auto& r : ranked) {
      feasible += r.row->estimate.oom ? 0 : 1;
      on_front += r.on_front ? 1 : 0;
    }
    out << fmt::format("zerosearch: Pareto sweep of {} over 0..{} {} and 0..{} {} nodes "
                             "({} compositions, {} GPUs per node, 'pareto' links), global batch {}\n",
                             plans.front().context.model.name, bound, o.node_types[0], bound,
                             o.node_types[1], clusters.size(), shape.gpus_per_node,
                             plans.front().context.global_batch);
    // Where each type's profiles came from, from a composition that has it.
    std::vector<std::string> sources;
    for (std::size_t g = 0; g < 2; ++g) {
      for (const auto& plan : plans) {
        const EstimateContext& c = plan.context;
        if (g < c.cluster.groups.size() && c.cluster.groups[g].count > 0) {
          sources.push_back(c.cluster.groups[g].gpu + " " + c.profile_source[g]);
          break;
        }
      }
    }
    out << fmt::format("profiles: {}\n", fmt::join(sources, ", "));
    out << fmt::format("searched {} estimates in {:.3f} s: {} fit in memory, {} OOM; {} on "
                             "the price/step-time front\n",
                             ranked.size(), seconds, feasible, ranked.size() - feasible, on_front);
    if (feasible == 0) {
      out << "no design point fits in GPU memory; try a larger --num_node or a smaller "
                   "--custom_gbs\n";
      return;
    }
    out << "\nfront (no other feasible plan is both faster and cheaper per step):\n";
    print_front(out, ranked, type_names);
    out << '\n';
    const RankedRow* fastest = nullptr;
    for (const auto& r : ranked) {
      if (!r.row->estimate.oom) {
        fastest = &r;
        break;
      }
    }
    const RankedRow* const cheapest = [&] {
      const RankedRow* best = nullptr;
      for (const auto& r : ranked) {
        if (!r.row->estimate.oom &&
            (best == nullptr || r.row->estimate.price_per_step_usd < best->row->estimate.price_per_step_usd)) {
          best = &r;
        }
      }
      return best;
    }();
    if (fastest == nullptr || cheapest == nullptr) {
      return; // no feasible row: said above
    }
    out << "fastest: " << plan_text(*fastest) << '\n';
    if (max_step) {
      const auto i = cheapest_within_time(ranked, *max_step);
      out << fmt::format("cheapest within {} s/step: {}\n", *max_step,
                               i ? plan_text(ranked[*i])
                                 : fmt::format("none (the fastest feasible plan takes {:.4f} s/step)",
                                               fastest->row->estimate.step_s));
    }
    if (max_price) {
      const auto i = fastest_within_price(ranked, *max_price);
      out << fmt::format("fastest within ${}/step: {}\n", *max_price,
                               i ? plan_text(ranked[*i])
                                 : fmt::format("none (the cheapest feasible plan costs ${:.5f}/step)",
                                               cheapest->row->estimate.price_per_step_usd));
    }
    if (budget) {
      const auto i = fastest_within_budget(ranked, *budget);
      out << fmt::format("fastest within a ${} training budget: {}\n", *budget,
                               i ? plan_text(ranked[*i])
                                 : fmt::format("none (the cheapest feasible plan costs ${:.0f} to "
                                               "train)",
                                               cheapest->row->estimate.train_cost_usd));
    }
  };
  write_outputs(output, ranked, type_names, summary);
  return 0;
}

} // namespace zerosearch::cli
