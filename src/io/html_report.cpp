#include "zerosearch/io/html_report.hpp"
#include "zerosearch/model/estimator.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sstream>

#include "zerosearch/io/markup.hpp"
#include "zerosearch/io/plot.hpp"
#include "zerosearch/search/run_cost_rows.hpp"
#include "zerosearch/io/report_format.hpp"

namespace zerosearch {

namespace {

/// The whole run's dollars against its days (--tokens / --steps), every feasible row, the
/// days/dollars front marked; empty when no row has a run cost.
std::string run_cost_svg(const std::vector<RankedRow>& rows) {
  if (!has_run_cost_rows(rows)) {
    return {};
  }
  const std::vector<bool> front = run_cost_front(rows, false);
  std::vector<PlotPoint> points;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::optional<RunCost> c = run_cost_of(rows[i]);
    if (!c || rows[i].row->estimate.oom || !(c->usd > 0.0) || !std::isfinite(c->days())) {
      continue;
    }
    const DesignPoint& p = rows[i].row->point;
    points.push_back(PlotPoint{
        c->days(), c->usd, front[i],
        front[i] ? fmt::format("{} tp {} pp {} dp {} on {} GPUs: {:.2f} days, ${:.0f}, {:.1f} % "
                               "effective",
                               to_string(p.method), p.tp, p.pp, p.dp,
                               rows[i].run->cluster.world_size(), c->days(), c->usd,
                               100.0 * c->effective_fraction)
                 : std::string()});
  }
  std::ostringstream svg;
  write_scatter_svg(svg, points, "The whole run: dollars against wall-clock days",
                    "wall-clock days (failures, checkpoints and restarts included)", "cost ($)");
  return svg.str();
}

std::string inline_svg(const std::string& svg) {
  const auto start = svg.find("<svg");
  return start == std::string::npos ? svg : svg.substr(start);
}

const char* kStyle = R"(
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; }
th { background: #f3f3f3; cursor: pointer; user-select: none; white-space: nowrap; }
th.asc::after { content: " \25B2"; } th.desc::after { content: " \25BC"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.oom td { color: #a33; }
.chart svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
#count { margin-left: 1em; color: #555; }
)";

// Sorting and filtering; no external code. Every cell carries its sort key in data-v.
const char* kScript = R"(
(function () {
  var table = document.getElementById('rows');
  var body = table.tBodies[0];
  var heads = table.tHead.rows[0].cells;
  var state = { col: -1, dir: 1 };
  function key(row, col) {
    var c = row.cells[col];
    var v = c.getAttribute('data-v');
    return c.classList.contains('num') ? parseFloat(v) : v;
  }
  function sortBy(col) {
    state.dir = state.col === col ? -state.dir : 1;
    state.col = col;
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a, col), y = key(b, col);
      if (x < y) return -state.dir;
      if (x > y) return state.dir;
      return a.getAttribute('data-i') - b.getAttribute('data-i');
    });
    rows.forEach(function (r) { body.appendChild(r); });
    for (var i = 0; i < heads.length; i++) {
      heads[i].classList.remove('asc', 'desc');
    }
    heads[col].classList.add(state.dir > 0 ? 'asc' : 'desc');
  }
  for (var i = 0; i < heads.length; i++) {
    heads[i].addEventListener('click', sortBy.bind(null, i));
  }
  var box = document.getElementById('feasible');
  function filter() {
    var shown = 0;
    Array.prototype.forEach.call(body.rows, function (r) {
      var hide = box.checked && r.classList.contains('oom');
      r.style.display = hide ? 'none' : '';
      if (!hide) shown++;
    });
    document.getElementById('count').textContent = shown + ' of ' + body.rows.length + ' rows shown';
  }
  box.addEventListener('change', filter);
  filter();
  window.zerosearchSort = sortBy;
})();
)";

} // namespace

std::string html_report(const HtmlReportInput& in) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  o += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
       "'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n";
  o += "<title>" + escape_markup(in.title) + "</title>\n<style>" + kStyle +
       "</style>\n</head>\n<body>\n";
  o += "<h1>" + escape_markup(in.title) + "</h1>\n<h2>Summary</h2>\n<ul id=\"summary\">\n";
  for (const auto& line : in.summary) {
    o += "<li>" + escape_markup(line) + "</li>\n";
  }
  o += "</ul>\n";
  if (!in.timeline_svg.empty()) {
    o += "<h2>Timeline of the best plan</h2>\n<p>" + escape_markup(in.timeline_caption) + "</p>\n";
    o += "<div class=\"chart\" id=\"timeline\">" + inline_svg(in.timeline_svg) + "</div>\n";
  }
  if (!in.pareto_svg.empty()) {
    o += "<h2>Price against step time</h2>\n<div class=\"chart\" id=\"pareto\">" +
         inline_svg(in.pareto_svg) + "</div>\n";
  }
  if (const std::string run_svg = run_cost_svg(in.rows); !run_svg.empty()) {
    o += "<h2>The whole run: dollars against days</h2>\n<div class=\"chart\" id=\"run_cost\">" +
         inline_svg(run_svg) + "</div>\n";
  }
  o += "<h2>Ranked plans</h2>\n";
  if (!in.rows_note.empty()) {
    o += "<p id=\"rows_note\">" + escape_markup(in.rows_note) + "</p>\n";
  }
  o += "<p><label><input type=\"checkbox\" id=\"feasible\"> fits in memory "
       "only</label><span id=\"count\"></span> (click a column to sort)</p>\n";
  // Native rows add their own dimensions after the method.
  const bool native = std::any_of(in.rows.begin(), in.rows.end(), [](const RankedRow& r) {
    return estimator_info(r.run->estimator).extended_points;
  });
  o += "<table id=\"rows\">\n<thead><tr>";
  std::vector<const char*> heads = {"#", "rank", "method"};
  if (native) {
    heads.insert(heads.end(), {"recompute", "offload", "virtual stages", "dtype"});
  }
  heads.insert(heads.end(), {"tp", "pp", "dp", "micro-batch", "micro-batches", "placement",
                             "partition", "step (s)", "tokens/s per GPU", "MFU (%)",
                             "memory (GiB)", "fits", "price ($/step)"});
  const bool run_cost = has_run_cost_rows(in.rows);
  if (run_cost) {
    heads.insert(heads.end(), {"run (days)", "run ($)", "run (MWh)", "effective (%)"});
  }
  for (const char* h : heads) {
    o += fmt::format("<th>{}</th>", h);
  }
  o += "</tr></thead>\n<tbody>\n";
  int i = 0;
  for (const RankedRow& r : in.rows) {
    const ResultRow& row = *r.row;
    const DesignPoint& p = row.point;
    const Estimate& e = row.estimate;
    const Placement& pl = r.run->placements[static_cast<std::size_t>(row.placement)];
    const auto num = [](const std::string& v, const std::string& shown) {
      return fmt::format("<td class=\"num\" data-v=\"{}\">{}</td>", v, shown);
    };
    const auto text = [](const std::string& v) {
      return fmt::format("<td data-v=\"{0}\">{0}</td>", escape_markup(v));
    };
    o += fmt::format("<tr data-i=\"{}\"{}>", i, e.oom ? " class=\"oom\"" : "");
    ++i;
    o += num(std::to_string(i), std::to_string(i));
    o += num(std::to_string(r.rank), std::to_string(r.rank));
    o += text(to_string(p.method));
    if (native) {
      o += text(to_string(p.recompute));
      o += text(to_string(p.offload));
      o += num(std::to_string(p.virtual_stages), std::to_string(p.virtual_stages));
      o += text(to_string(p.dtype));
    }
    o += num(std::to_string(p.tp), std::to_string(p.tp));
    o += num(std::to_string(p.pp), std::to_string(p.pp));
    o += num(std::to_string(p.dp), std::to_string(p.dp));
    o += num(std::to_string(p.mbs), std::to_string(p.mbs));
    o += num(std::to_string(p.num_micro_batches), std::to_string(p.num_micro_batches));
    o += text(compress_placement(r.run->cluster, pl));
    o += text(fmt::format("{}", fmt::join(e.partition, "-")));
    o += num(fmt::format("{:.17g}", e.step_s), fmt::format("{:.4f}", e.step_s));
    const double tokens = r.run->throughput.tokens_per_gpu_s(e.step_s);
    const double mfu = r.run->throughput.mfu_percent(e.step_s);
    o += num(fmt::format("{:.17g}", tokens), fmt::format("{:.0f}", tokens));
    o += std::isfinite(mfu) ? num(fmt::format("{:.17g}", mfu), fmt::format("{:.1f}", mfu))
                            : num("0", "-");
    o += num(fmt::format("{:.17g}", e.gpumem_gib), fmt::format("{:.2f}", e.gpumem_gib));
    o += text(memory_fit(*r.run, e));
    o += num(fmt::format("{:.17g}", e.price_per_step_usd), fmt::format("{:.6f}", e.price_per_step_usd));
    if (run_cost) {
      const std::optional<RunCost> c = run_cost_of(r);
      for (const auto& [v, digits] :
           {std::pair{c ? c->days() : std::nan(""), 2}, std::pair{c ? c->usd : std::nan(""), 0},
            std::pair{c ? c->energy_mwh : std::nan(""), 1},
            std::pair{c ? 100.0 * c->effective_fraction : std::nan(""), 2}}) {
        o += std::isfinite(v) ? num(fmt::format("{:.17g}", v), fmt::format("{:.{}f}", v, digits))
                              : num("0", "-");
      }
    }
    o += "</tr>\n";
  }
  o += "</tbody>\n</table>\n<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return o;
}

} // namespace zerosearch
