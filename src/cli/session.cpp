#include "session.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <chrono>
#include <limits>
#include <iostream>
#include <thread>

#include "output.hpp"
#include <fmt/format.h>

#include "plan_outputs.hpp"
#include "progress.hpp"
#include "setup.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/model/estimator.hpp"
#include "zerosearch/model/estimator_ops.hpp"
#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/search/search.hpp"
#include "zerosearch/search/search_size.hpp"

namespace zerosearch::cli {

namespace fs = std::filesystem;

const EstimateContext& SessionResult::context_of(const RankedRow& r) const {
  return plans[static_cast<std::size_t>(r.run - runs.data())].context;
}

Session::Session(const Options& o, const char* argv0)
    : options(o),
      output(make_output_plan(o, o.record ? fs::path("logs") / record_name(o, cluster_of(o))
                                          : fs::path())) {
  check_plan_outputs(o);
  profiledb = find_profiledb(o, argv0);
  catalogs = o.loaded_hardware ? load_catalogs(profiledb, *o.loaded_hardware, o.calibration)
                               : load_catalogs(profiledb, o.hardware, o.calibration);
}

SearchPlan Session::plan(PlanInput in) const {
  // Model names are case-insensitive, as GPU names are: the catalog's spelling.
  if (!in.model_spec && !catalogs.models.contains(in.model)) {
    for (const ModelSpec& m : catalogs.models.models) {
      if (same_name_ignoring_case(m.name, in.model)) {
        in.model = m.name;
        break;
      }
    }
  }
  SearchPlan p = make_plan(in, catalogs);
  // --seq_len away from the length the measured profiles were taken at: their layer times
  // are for that length, so the run goes to the native estimator, which models any length
  // (refused when --estimator zerosearch asks for the profiles).
  if (in.sequence_length > 0 && estimator_info(p.context.estimator).fixed_sequence_length) {
    const std::int64_t measured_at =
        in.model_spec ? in.model_spec->sequence_length
                      : catalogs.models.find(p.context.model.name).sequence_length;
    const bool measured = std::find(p.context.profile_source.begin(),
                                    p.context.profile_source.end(),
                                    "measured") != p.context.profile_source.end();
    if (measured && in.sequence_length != measured_at) {
      if (in.estimator || in.profile_source == ProfileSource::measured) {
        throw InputError(fmt::format(
            "--seq_len {}: the measured profiles of {} were taken at {} tokens and {} asks for "
            "them; drop it (the native estimator models any length) or --seq_len",
            in.sequence_length, p.context.model.name, measured_at,
            in.estimator ? "--estimator zerosearch" : "--profile_source measured"));
      }
      in.estimator = analytic_estimator();
      in.profile_source = ProfileSource::automatic;
      p = make_plan(in, catalogs);
      p.notes.push_back(fmt::format("--seq_len {}: the measured profiles of {} were taken at {} "
                                    "tokens, so this run uses the native estimator (analytic, "
                                    "docs/native.md), not the original's formulas",
                                    in.sequence_length, p.context.model.name, measured_at));
    }
  }
  check_plan(options, p);
  return p;
}

SearchPlan Session::plan(const Cluster& cluster) const {
  return plan(make_plan_input(options, cluster));
}

void Session::announce(const std::vector<SearchPlan>& plans, const std::string& cluster_text,
                       bool notes) {
  if (!plans.empty()) {
    nlohmann::ordered_json inputs = run_inputs(options, plans.front(), profiledb);
    if (!cluster_text.empty()) {
      inputs["cluster"] = cluster_text;
    }
    output.provenance = provenance(options, std::move(inputs));
  }
  const auto lines_of = [&](auto member) {
    std::vector<std::string> out;
    for (const SearchPlan& p : plans) {
      for (const std::string& line : p.*member) {
        if (std::find(out.begin(), out.end(), line) == out.end()) {
          out.push_back(line);
        }
      }
    }
    return out;
  };
  print_warnings(options, lines_of(&SearchPlan::warnings));
  if (notes && !options.quiet) {
    for (const std::string& n : lines_of(&SearchPlan::notes)) {
      std::cerr << "zerosearch: note: " << n << '\n';
    }
  }
}

bool same_name_ignoring_case(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

double margin_limit_gib(const EstimateContext& ctx, const MemoryMargin& margin) {
  double limit = std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < ctx.cluster.groups.size() && g < ctx.memory_limit_gib.size(); ++g) {
    if (ctx.cluster.groups[g].count > 0) {
      const auto gib = static_cast<double>(ctx.memory_limit_gib[g]);
      limit = std::min(limit, gib - margin.of(gib));
    }
  }
  return limit;
}

/// A search expected to take this long (wall seconds) announces itself when not on a terminal.
constexpr double kStartLineSeconds = 2.0;

unsigned search_threads(unsigned requested, const SearchSize& size) {
  const unsigned threads = requested != 0 ? requested : std::max(1U, std::thread::hardware_concurrency());
  return threads_within_limit(size, threads);
}

SessionResult Session::search(std::vector<SearchPlan> plans, bool front) const {
  SessionResult result;
  std::vector<std::vector<DesignPoint>> points;
  SearchSize size;
  for (const SearchPlan& p : plans) {
    points.push_back(p.design_points());
    size += measure_search(p.context.cluster, points.back());
  }
  if (plans.size() == 1 && points.front().empty()) {
    throw InputError(no_design_point_message(plans.front()));
  }
  SearchOptions so;
  // Keep only the rows the outputs show (--top, --feasible, distinct rows) while searching; a
  // plan output (--rank, --emit, --timeline, --html) and the comparison of TeraPipe's best plan
  // with the best other plan need every row. The native estimator's summary also keeps its
  // fastest OOM rows apart, to name the settings that make them fit.
  const SearchPlan& first = plans.front();
  const EstimatorInfo& estimator = estimator_info(first.context.estimator);
  const bool terapipe = std::find(first.schedules.begin(), first.schedules.end(),
                                  Schedule::terapipe) != first.schedules.end();
  // A sweep without `front` (a front of the whole run's days, --front days-usd|days-mwh) and
  // the whole run's --budget_usd / --deadline_days filters need every row.
  const bool all_rows = (plans.size() != 1 && !front) || options.rank ||
                        !options.emit.empty() || !options.timeline.empty() ||
                        !options.html.empty() || (estimator.terapipe && terapipe) ||
                        options.run_cost.budget_usd || options.run_cost.deadline_days;
  so.keep = search_filter(output, all_rows);
  if (front && !all_rows) {
    // A sweep's front, its limits and its front column need each run's front besides the rows
    // shown; its chart draws every plan that fits: their two figures, not their rows.
    so.keep.front = true;
    so.keep.points = !options.plot.empty();
    result.points = so.keep.points;
  }
  // A sweep that keeps every row but whose only output is its summary (the front, the limits,
  // the counts: rows that fit) keeps only the rows that fit; OOM rows count in ranks and totals
  // without being held.
  const bool summary_only = output.csv_files.empty() && !info(output.to_stdout).lists_rows &&
                            options.plot.empty() && options.html.empty() && !options.rank &&
                            options.emit.empty() && options.timeline.empty();
  if (plans.size() != 1 && !front && summary_only) {
    so.keep.feasible_only = true;
  }
  if (estimator.extended_points && !all_rows && plans.size() == 1) {
    so.keep.oom_top = kFitHintRows;
  }
  // A search that streams its --top rows holds only those (and one point's groups per worker).
  // (Each run of a sweep keeps its own --top rows.)
  size.keep_top(so.keep.top * plans.size(), search_threads(options.threads, size));
  // Refuse before building placements or rows: a search that cannot fit or finish.
  check_search_size(size);
  so.threads = search_threads(options.threads, size);

  // The whole run's prices, power and failure rates (--tokens): refused before any search when
  // a GPU lacks the asked price.
  std::vector<std::optional<RunCostSpec>> run_costs;
  for (const SearchPlan& p : plans) {
    run_costs.push_back(run_cost_spec(options.run_cost, p.context,
                                      run_throughput(p.context, catalogs.hardware),
                                      catalogs.hardware));
  }
  const auto t0 = std::chrono::steady_clock::now();
  result.runs.resize(plans.size());
  // Native estimates carry their interval from the published runs (docs/validation.md).
  if (estimator.step_intervals) {
    result.intervals = load_uncertainty(profiledb / "uncertainty.json");
  }
  const UncertaintyTable& intervals = result.intervals;
  {
    const bool terminal = stderr_is_terminal();
    // Not on a terminal (a log, a CI job): a start line when the search is expected to take
    // a while (its CPU-time model over the threads), then a progress line every 10 s.
    if (!options.quiet && !terminal &&
        (size.cpu_s / so.threads >= kStartLineSeconds || log_interval().count() == 0)) {
      std::cerr << fmt::format("zerosearch: searching {} estimates ({} design points x {} "
                               "placements) on {} thread{}, about {:.0f} s; progress every {:g} s "
                               "on stderr (-q hides it)\n",
                               size.estimates, size.design_points, size.placements, so.threads,
                               so.threads == 1 ? "" : "s",
                               size.cpu_s / so.threads,
                               std::chrono::duration<double>(log_interval()).count())
                << std::flush;
    }
    ProgressBar bar(std::cerr, !options.quiet, terminal);
    std::size_t done_before = 0;
    const auto total = static_cast<std::size_t>(size.estimates);
    so.on_progress = [&](const SearchProgress& sp) {
      bar.update(SearchProgress{done_before + sp.done, total});
    };
    for (std::size_t i = 0; i < plans.size(); ++i) {
      RunResult& run = result.runs[i];
      run.cluster = plans[i].context.cluster;
      run.placements = placements(run.cluster);
      zerosearch::SearchResult found = zerosearch::search(plans[i].context, points[i],
                                                          run.placements, so);
      run.rows = std::move(found.rows);
      run.left_out = std::move(found.left_out);
      run.oom_rows = std::move(found.oom_rows);
      run.points = std::move(found.points);
      run.estimates = found.estimates;
      run.oom = found.oom;
      run.profile_source = profile_source_text(plans[i].context);
      run.estimator = plans[i].context.estimator;
      run.throughput = run_throughput(plans[i].context, catalogs.hardware);
      run.run_cost = std::move(run_costs[i]);
      run.margin_limit_gib = margin_limit_gib(plans[i].context, options.memory_margin);
      run.memory_margin = options.memory_margin;
      run.overlap_grad_reduce = overlap_grad_reduce(plans[i].context);
      if (const NativeSettings* st = plan_settings(plans[i].context)) {
        run.master_weights = st->master_weights;
      }
      if (estimator_info(run.estimator).step_intervals) {
        for (const DpMethod m : {DpMethod::dp, DpMethod::zero1, DpMethod::fsdp}) {
          const StepInterval si = plan_interval(intervals, catalogs.hardware,
                                                plans[i].context, m);
          StepSpread& s = run.step_spread[step_spread_index(m)];
          s.low = si.found ? si.low : 0.0;
          s.high = si.found ? si.high : 0.0;
          s.basis = interval_basis(si);
        }
      }
      done_before += static_cast<std::size_t>(found.estimates);
    }
    bar.finish();
  }
  result.ranked = rank_results(result.runs);
  filter_run_cost(result.ranked, options.run_cost.budget_usd, options.run_cost.deadline_days);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.plans = std::move(plans);
  return result;
}

std::vector<std::string> Session::type_names() const {
  std::vector<std::string> out;
  for (const std::string& t : options.node_types) {
    out.push_back(catalogs.hardware.gpu(t).name);
  }
  return out;
}

void Session::write(const SessionResult& result, const std::string& origin,
                    const std::vector<std::string>& summary_lines, const SummaryWriter& summary,
                    const std::string& pareto_svg) const {
  write_plan_outputs(
      options, [&](const RankedRow& r) -> const EstimateContext& { return result.context_of(r); },
      result.ranked,
      // The rows shown (distinct rows of every row: not free), only for a plan output.
      options.emit.empty() && options.timeline.empty() && options.html.empty()
          ? std::vector<RankedRow>()
          : shown_rows(output, result.ranked),
      origin, catalogs.hardware, summary_lines, pareto_svg);
  write_outputs(output, result.ranked, type_names(), summary);
}

} // namespace zerosearch::cli
