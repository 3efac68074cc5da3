#include "plan_outputs.hpp"

#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "output.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/io/html_report.hpp"
#include "zerosearch/io/launch.hpp"
#include "zerosearch/io/output_file.hpp"
#include "zerosearch/io/report_format.hpp"
#include "zerosearch/io/timeline.hpp"

namespace zerosearch::cli {

void check_plan_outputs(const Options& o) {
  if (!o.emit.empty()) {
    check_launch_dir(o.emit);
  }
  // The timeline and the report follow the rules of every output, checked before the search.
  for (const auto& [flag, path] : {std::pair<const char*, const std::string*>{"--timeline", &o.timeline},
                                   {"--html", &o.html}}) {
    if (!path->empty()) {
      (void)check_cli_output(o, *path, flag);
    }
  }
  if (!o.timeline.empty() && !o.html.empty() &&
      same_output(check_output(o.timeline, "--timeline"), check_output(o.html, "--html"))) {
    throw InputError("--timeline and --html name the same file; give two names");
  }
}

void write_plan_outputs(const Options& o,
                        const std::function<const EstimateContext&(const RankedRow&)>& context_of,
                        const std::vector<RankedRow>& ranked,
                        const std::vector<RankedRow>& shown, const std::string& origin,
                        const HardwareCatalog& hardware,
                        const std::vector<std::string>& summary, const std::string& pareto_svg) {
  if (o.emit.empty() && o.timeline.empty() && o.html.empty()) {
    return;
  }
  if (ranked.empty()) {
    throw InputError("no rows: nothing to emit, draw or report");
  }
  // The plan: the row shown as # --rank (the N-th row standard output shows), or the best that
  // fits.
  const RankedRow* chosen = nullptr;
  std::size_t position = 0;
  if (o.rank) {
    position = *o.rank;
    if (position > shown.size()) {
      throw InputError(fmt::format("--rank {} is past the last row shown ({} row{}; --top N "
                                   "shows more, --include_oom shows OOM rows too)",
                                   position, shown.size(), shown.size() == 1 ? "" : "s"));
    }
    chosen = &shown[position - 1];
  } else {
    for (std::size_t i = 0; i < shown.size(); ++i) {
      if (!shown[i].row->estimate.oom) {
        chosen = &shown[i];
        position = i + 1;
        break;
      }
    }
    if (chosen == nullptr) {
      // Not among the rows shown (--top with --include_oom): the best that fits of all.
      for (const RankedRow& r : ranked) {
        if (!r.row->estimate.oom) {
          chosen = &r;
          position = 0;
          break;
        }
      }
    }
  }
  if (chosen == nullptr && (!o.emit.empty() || !o.timeline.empty())) {
    throw InputError("no plan fits in memory: nothing to emit or draw (pick one with --rank)");
  }
  const EstimateContext& ctx = context_of(chosen != nullptr ? *chosen : ranked.front());
  std::vector<LaunchFile> files;
  std::string timeline;
  LaunchPlan plan;
  if (chosen != nullptr) {
    plan.ctx = &ctx;
    plan.point = chosen->row->point;
    plan.placement = chosen->run->placements[static_cast<std::size_t>(chosen->row->placement)];
    plan.estimate = chosen->row->estimate;
    plan.hardware = &hardware;
    plan.origin = origin == "--exhaustive" ? std::string("zerosearch --exhaustive")
                  : position != 0
                      ? fmt::format("row #{} of the {} rows zerosearch showed (rank {})", position,
                                    shown.size(), chosen->rank)
                      : fmt::format("the best plan that fits (rank {})", chosen->rank);
    if (!o.emit.empty()) {
      files = launch_files(plan); // throws when a framework rejects the plan
    }
    if (!o.timeline.empty() || !o.html.empty()) {
      timeline = timeline_svg(timeline_input(ctx, plan.point, plan.placement, plan.estimate));
    }
  }
  std::string html;
  if (!o.html.empty()) {
    HtmlReportInput in;
    in.title = fmt::format("zerosearch: {} on {} GPUs", ctx.model.name, ctx.cluster.world_size());
    in.summary = summary;
    // The rows of the other outputs: --top (plans that fit unless --include_oom), --feasible,
    // --distinct (distinct rows also when the rows are many: one per design point and
    // estimate), at most kHtmlMaxRows.
    RowSelection selection;
    selection.feasible_only = o.feasible || (o.top.has_value() && !o.include_oom);
    selection.top = o.top.value_or(0);
    const bool distinct = o.distinct || ranked.size() > kHtmlMaxRows;
    std::vector<RankedRow> rows = select_rows(distinct ? distinct_rows(ranked) : ranked, selection);
    const std::size_t all = rows.size();
    if (rows.size() > kHtmlMaxRows) {
      rows.resize(kHtmlMaxRows);
    }
    if (rows.size() < ranked.size()) {
      std::vector<std::string> why;
      if (distinct) why.emplace_back("distinct rows (one per design point and estimate)");
      if (selection.feasible_only) why.emplace_back("plans that fit in memory");
      if (selection.top != 0) why.push_back(fmt::format("the --top {} best", selection.top));
      if (all > rows.size()) {
        why.push_back(fmt::format("the first {} of {} (a page stays small; --top N chooses, the "
                                  "CSV has every row)",
                                  rows.size(), all));
      }
      in.rows_note = fmt::format("{} of {} rows: {}", rows.size(), ranked.size(),
                                 fmt::join(why, "; "));
    }
    in.rows = std::move(rows);
    in.timeline_svg = timeline;
    in.pareto_svg = pareto_svg;
    in.timeline_caption = chosen == nullptr
                              ? std::string()
                              : fmt::format("{} (one lane per pipeline stage; hover a box for "
                                            "its times).",
                                            plan.origin);
    html = html_report(in);
  }
  // Everything is built: now write.
  if (!o.emit.empty()) {
    write_launch_files(o.emit, files);
    if (!o.quiet) {
      std::cerr << fmt::format("zerosearch: wrote {} launch files for {} to {}/ (see "
                               "{}/PLAN.md)\n",
                               files.size(), plan.origin, o.emit, o.emit);
    }
  }
  if (!o.timeline.empty()) {
    write_launch_file(o.timeline, timeline);
    if (!o.quiet) {
      std::cerr << "zerosearch: wrote " << o.timeline << '\n';
    }
  }
  if (!o.html.empty()) {
    write_launch_file(o.html, html);
    if (!o.quiet) {
      std::cerr << "zerosearch: wrote " << o.html << '\n';
    }
  }
}

} // namespace zerosearch::cli
