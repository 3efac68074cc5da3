#include "output.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cerrno>
#include <ctime>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include <fmt/format.h>

#include "describe.hpp"
#include "zerosearch/model/zero_bubble.hpp"
#include "zerosearch/model/estimator.hpp"
#include "zerosearch/model/estimator_ops.hpp"
#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/model/moe.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/core/version.hpp"

namespace zerosearch::cli {

namespace fs = std::filesystem;

OutputTarget check_cli_output(const Options& o, const fs::path& path, const std::string& flag,
                              bool create_folders, const std::string& hint) {
  OutputTarget t = check_output(path, flag, create_folders);
  if (o.no_clobber && t.kind == OutputKind::regular_file) {
    throw InputError(fmt::format("{} '{}' exists and --no_clobber is set{}", flag,
                                 path.string(), hint));
  }
  return t;
}

OutputPlan make_output_plan(const Options& o, const fs::path& record_file) {
  OutputPlan plan;
  plan.quiet = o.quiet;
  plan.csv.pretty = o.pretty;
  plan.csv.distinct = o.distinct;
  plan.csv.threads = o.threads;
  // --top N: the N best plans that fit, unless --include_oom lets OOM rows count. Without
  // --top every row goes out (the original's CSV) unless --feasible.
  plan.include_oom = o.include_oom;
  plan.selection.feasible_only = o.feasible || (o.top.has_value() && !o.include_oom);
  plan.selection.top = o.top.value_or(0);
  const std::string hint = "; remove it, or choose another name (--add_exp_name for --record)";
  if (!record_file.empty()) {
    OutputTarget t = check_cli_output(o, record_file, "--record", true, hint);
    plan.record_replaces = t.kind == OutputKind::regular_file;
    plan.csv_files.push_back(std::move(t));
  }
  const bool csv_to_stdout = o.output == "-";
  if (!o.output.empty() && !csv_to_stdout) {
    OutputTarget t = check_cli_output(o, o.output, "-o", false, hint);
    for (const OutputTarget& other : plan.csv_files) {
      if (same_output(t, other)) {
        throw InputError(fmt::format("-o '{}' and --record '{}' are the same file; give one",
                                     o.output, other.requested.string()));
      }
    }
    plan.csv_files.push_back(std::move(t));
  }
  if (o.format) {
    plan.to_stdout = *o.format;
  } else if (csv_to_stdout) {
    plan.to_stdout = StdoutFormat::csv;
  } else if (o.pretty) {
    plan.to_stdout = StdoutFormat::table;
  } else {
    plan.to_stdout = o.quiet ? StdoutFormat::none : StdoutFormat::summary;
  }
  return plan;
}

OutputTarget check_extra_output(const Options& o, const OutputPlan& plan, const fs::path& path,
                                const std::string& flag) {
  OutputTarget t = check_cli_output(o, path, flag, false, "; remove it, or choose another name");
  for (const OutputTarget& other : plan.csv_files) {
    if (same_output(t, other)) {
      throw InputError(fmt::format("{} '{}' is also the CSV file of this run; give the two "
                                   "outputs different names",
                                   flag, path.string()));
    }
  }
  return t;
}

nlohmann::ordered_json provenance(const Options& o, nlohmann::ordered_json inputs) {
  nlohmann::ordered_json j;
  j["tool"] = "zerosearch";
  j["version"] = kVersion;
  j["command"] = o.command_line;
  std::error_code ec;
  j["working_folder"] = fs::current_path(ec).string();
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  j["date_utc"] = date;
  j["inputs"] = std::move(inputs);
  return j;
}

namespace {

void say_wrote(const OutputPlan& plan, const OutputTarget& t, bool replaced) {
  if (!plan.quiet && t.kind != OutputKind::stream) {
    std::cerr << "zerosearch: " << (replaced ? "replaced " : "wrote ") << t.requested.string()
              << '\n';
  }
}

} // namespace

RowFilter search_filter(const OutputPlan& plan, bool all_rows) {
  if (all_rows) {
    return {};
  }
  const bool full_stdout = info(plan.to_stdout).per_placement;
  const bool any_full = !plan.csv_files.empty() || full_stdout;
  // Outputs of one row per placement: the CSV files, and csv or json on standard output.
  const bool per_placement = any_full && !plan.csv.distinct;
  // Outputs of distinct rows: the summary, the table, and the others with --distinct.
  const bool distinct = info(plan.to_stdout).distinct_rows || (any_full && plan.csv.distinct);
  RowFilter f;
  f.distinct = !per_placement;
  f.feasible_only = plan.selection.feasible_only;
  if (per_placement && distinct) {
    // --top counts each output's own rows: N distinct rows may need more than N placements.
    return f;
  }
  f.top = plan.selection.top;
  if (!any_full && !info(plan.to_stdout).lists_rows && f.top == 0) {
    f.feasible_only = !plan.include_oom; // the summary's 10 best that fit
    f.top = 10;
  }
  return f;
}

void write_outputs(const OutputPlan& plan, const std::vector<RankedRow>& ranked,
                   const std::vector<std::string>& type_names, const SummaryWriter& summary) {
  const ReportFormatInfo& shown = info(plan.to_stdout);
  const bool distinct_rows_needed = plan.csv.distinct || (shown.distinct_rows && shown.lists_rows);
  const std::vector<RankedRow> distinct =
      distinct_rows_needed ? select_rows(distinct_rows(ranked), plan.selection)
                           : std::vector<RankedRow>();
  const std::vector<RankedRow> rows =
      plan.csv.distinct ? distinct : select_rows(ranked, plan.selection);
  for (std::size_t i = 0; i < plan.csv_files.size(); ++i) {
    const OutputTarget& file = plan.csv_files[i];
    const bool replaced = file.kind == OutputKind::regular_file;
    write_output(file, [&](std::ostream& out) { write_csv(out, rows, type_names, plan.csv); });
    if (file.kind != OutputKind::stream) {
      // NAME.csv.json: what produced the file, so a result can be traced.
      nlohmann::ordered_json side = plan.provenance;
      side["rows"] = rows.size();
      side["csv"] = file.requested.filename().string();
      const OutputTarget sidecar =
          check_output(fs::path(file.resolved.string() + ".json"), "sidecar");
      write_output(sidecar, [&](std::ostream& out) { out << side.dump(2) << '\n'; });
    }
    if (replaced && i == 0 && plan.record_replaces && !plan.quiet) {
      std::cerr << "zerosearch: note: replaced the existing record file "
                << file.requested.string()
                << " (--add_exp_name NAME keeps each run's file; --no_clobber refuses)\n";
    } else {
      say_wrote(plan, file, replaced);
    }
  }
  switch (plan.to_stdout) {
  case StdoutFormat::summary: summary(std::cout); break;
  case StdoutFormat::csv: write_csv(std::cout, rows, type_names, plan.csv); break;
  case StdoutFormat::json: write_json(std::cout, rows, type_names, plan.csv); break;
  case StdoutFormat::table: write_table(std::cout, distinct, type_names, true, true); break;
  case StdoutFormat::none: break;
  }
  std::cout.flush();
  if (!std::cout) {
    throw InputError("cannot write to standard output");
  }
}

void write_extra_output(const OutputPlan& plan, const OutputTarget& target,
                        const std::function<void(std::ostream&)>& write) {
  const bool replaced = target.kind == OutputKind::regular_file;
  write_output(target, write);
  say_wrote(plan, target, replaced);
}

std::vector<RankedRow> shown_rows(const OutputPlan& plan, const std::vector<RankedRow>& ranked) {
  switch (plan.to_stdout) {
  case StdoutFormat::summary: return summary_rows(plan, ranked);
  case StdoutFormat::table: return select_rows(distinct_rows(ranked), plan.selection);
  case StdoutFormat::csv:
  case StdoutFormat::json:
  case StdoutFormat::none: break;
  }
  return plan.csv.distinct ? select_rows(distinct_rows(ranked), plan.selection)
                           : select_rows(ranked, plan.selection);
}

std::vector<RankedRow> summary_rows(const OutputPlan& plan, const std::vector<RankedRow>& ranked) {
  if (plan.selection.top != 0) {
    return select_rows(distinct_rows(ranked), plan.selection);
  }
  return select_rows(distinct_rows(ranked), RowSelection{!plan.include_oom, 10});
}

namespace {

/// The recompute and offload settings that make an OOM row's plan fit faster than `limit_s`
/// (the best plan that fits), with their step time and cost against the OOM estimate (native
/// estimator).
std::vector<std::string> fitting_settings(const EstimateContext& ctx, const RunResult& run,
                                          const ResultRow& oom_row, double limit_s) {
  const DesignPoint& p = oom_row.point;
  const Placement& placement = run.placements[static_cast<std::size_t>(oom_row.placement)];
  std::vector<std::string> fits;
  for (const Offload o : {Offload::none, Offload::optimizer, Offload::optimizer_params}) {
    for (const Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
      DesignPoint q = p;
      q.recompute = r;
      q.offload = o;
      if (offload_unsupported(q.method, o) != nullptr ||
          (r == p.recompute && o == p.offload)) {
        continue;
      }
      Estimate e;
      try {
        e = estimate_native(ctx, q, placement);
      } catch (const InputError&) {
        continue;
      }
      // Only settings that beat the best plan that fits: a slower fix is no advice.
      if (!e.oom && e.step_s < limit_s) {
        fits.push_back(fmt::format("--recompute {} --offload {}: {:.2f} s/step ({:+.0f} %), "
                                   "{:.1f} GiB",
                                   to_string(r), to_string(o), e.step_s,
                                   100.0 * (e.step_s / oom_row.estimate.step_s - 1.0),
                                   e.gpumem_gib));
      }
    }
  }
  return fits;
}

/// The fastest OOM plan (ahead of `limit_s`, the best plan that fits, when there is one) that
/// a recompute or offload setting makes fit: which settings, at what cost.
void print_fit_hint(std::ostream& out, const EstimateContext& ctx, const RunResult& run,
                    const std::vector<RankedRow>& ranked, double limit_s) {
  // The OOM rows examined, fastest first: those the search kept apart (RowFilter::oom_top),
  // else those among the ranked rows (a search that kept every row).
  std::vector<const ResultRow*> oom_rows;
  if (!run.oom_rows.empty()) {
    for (const ResultRow& row : run.oom_rows) {
      oom_rows.push_back(&row);
    }
  } else {
    for (const RankedRow& r : ranked) {
      if (r.row->estimate.oom) {
        oom_rows.push_back(r.row);
      }
    }
  }
  std::size_t tried = 0;
  for (const ResultRow* oom_row : oom_rows) {
    const ResultRow& row = *oom_row;
    if (row.estimate.step_s >= limit_s || tried == kFitHintRows) {
      return;
    }
    ++tried;
    const std::vector<std::string> fits = fitting_settings(ctx, run, row, limit_s);
    if (fits.empty()) {
      continue;
    }
    const DesignPoint& p = row.point;
    out << fmt::format("\n{} tp {} pp {} dp {} mbs {} with recompute {}, offload {} would take "
                       "{:.2f} s/step but needs {:.1f} GiB per GPU (OOM); it fits with\n",
                       to_string(p.method), p.tp, p.pp, p.dp, p.mbs, to_string(p.recompute),
                       to_string(p.offload), row.estimate.step_s, row.estimate.gpumem_gib);
    for (const std::string& f : fits) {
      out << "  " << f << '\n';
    }
    return;
  }
}

} // namespace

namespace {

/// When TeraPipe was searched: its best plan that fits against the best (interleaved) 1F1B
/// plan that fits on the same cluster.
void print_terapipe_comparison(std::ostream& out, const std::vector<RankedRow>& ranked) {
  const ResultRow* token = nullptr;
  const ResultRow* other = nullptr;
  for (const RankedRow& r : ranked) {
    if (r.row->estimate.oom) continue;
    const bool tp = r.row->point.schedule == Schedule::terapipe;
    if (tp && token == nullptr) token = r.row;
    if (!tp && other == nullptr) other = r.row;
  }
  if (token == nullptr) {
    out << "\ntoken-level pipelining (terapipe): no plan fits in memory\n";
    return;
  }
  const auto& p = token->point;
  out << fmt::format("\ntoken-level pipelining: best terapipe plan {} tp {} pp {} dp {} mbs {} "
                     "with {} slices per sequence: {:.2f} s/step",
                     to_string(p.method), p.tp, p.pp, p.dp, p.mbs, token->estimate.native.slices.size(),
                     token->estimate.step_s);
  if (other == nullptr) {
    out << "; no 1F1B plan fits\n";
    return;
  }
  const double gain = other->estimate.step_s / token->estimate.step_s - 1.0;
  out << fmt::format("; best {} plan {:.2f} s/step: terapipe is {:.1f} % {}\n",
                     to_string(other->point.schedule), other->estimate.step_s,
                     100.0 * std::abs(gain), gain >= 0 ? "faster" : "slower");
}

} // namespace

StepInterval plan_interval(const UncertaintyTable& intervals, const HardwareCatalog& hardware,
                           const EstimateContext& ctx, DpMethod method) {
  std::string gpu = "mixed";
  std::string gpu_class = "mixed";
  if (ctx.cluster.types_present() == 1) {
    for (const NodeGroup& g : ctx.cluster.groups) {
      if (g.count > 0) {
        const GpuSpec* spec = hardware.find_gpu(g.gpu);
        gpu = spec != nullptr ? spec->name : g.gpu;
        gpu_class = spec != nullptr && !spec->gpu_class.empty() ? spec->gpu_class : "mixed";
      }
    }
  }
  return find_interval(intervals, gpu, gpu_class, framework_family_of_method(to_string(method)),
                       scale_bucket(ctx.cluster.world_size()));
}

namespace {

/// Free GPU memory of a plan using `gpumem` GiB, against the smallest GPU of the run.
double ctx_free_gib(const EstimateContext& ctx, double gpumem) {
  double smallest = std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < ctx.cluster.groups.size() && g < ctx.memory_limit_gib.size(); ++g) {
    if (ctx.cluster.groups[g].count > 0) {
      smallest = std::min(smallest, static_cast<double>(ctx.memory_limit_gib[g]));
    }
  }
  return smallest - gpumem;
}

} // namespace

std::string margin_note(const EstimateContext& ctx, const RunResult& run, std::size_t in_margin,
                        std::size_t shown) {
  const MemoryMargin& m = run.memory_margin;
  std::string per_gpu;
  for (std::size_t g = 0; g < ctx.cluster.groups.size() && g < ctx.memory_limit_gib.size(); ++g) {
    if (ctx.cluster.groups[g].count > 0) {
      const auto gib = static_cast<double>(ctx.memory_limit_gib[g]);
      per_gpu += fmt::format("{}{:.1f} of {}'s {:.1f} GiB", per_gpu.empty() ? "" : ", ",
                             m.of(gib), ctx.cluster.groups[g].gpu, gib);
    }
  }
  const std::string what =
      m.gib > 0.0 ? fmt::format("{:g} GiB", m.gib) : fmt::format("{:g} % of GPU memory", m.percent);
  return fmt::format("memory margin: {} ({}) kept free for the CUDA context, NCCL buffers and "
                     "allocator fragmentation (--memory_margin); {} of the {} rows shown fit "
                     "only within it{}",
                     what, per_gpu, in_margin, shown,
                     ctx.cluster.types_present() > 1
                         ? " (mixed cluster: against the smallest GPU, --exhaustive shows each "
                           "stage)"
                         : "");
}

std::string mfu_note(const RunThroughput& t, const std::string& model) {
  if (t.peak_flops <= 0.0) {
    return fmt::format("MFU: unknown (a GPU of this cluster has no {} peak in the catalog)",
                       t.peak_dtype);
  }
  return fmt::format("MFU = model FLOPs per step ({}: {:.3g} FLOPs, Megatron-LM's formula, no "
                     "recompute) / (step time x {} GPUs' dense {} peak, {:.4g} TFLOP/s in all)",
                     model, t.model_flops_per_step, t.gpus, t.peak_dtype, t.peak_flops / 1e12);
}

std::string moe_note(const ModelSpec& m) {
  return fmt::format(
      "mixture of experts without expert parallelism: {} has {} experts, {} per token; each "
      "plan is costed as a dense model of the active experts ({:.1f} B of {:.1f} B parameters "
      "per token) with all {} experts' weights on every GPU of a layer's stage; expert "
      "parallelism and its all-to-all are not modelled yet",
      m.name, m.num_experts, m.experts_per_token,
      static_cast<double>(active_parameters(m)) / 1e9,
      static_cast<double>(total_parameters(m)) / 1e9, m.num_experts);
}

std::string moe_native_note(const ModelSpec& m, const SearchPlan& plan, double imbalance) {
  std::vector<std::string> etp;
  for (const int x : plan.etp) etp.push_back(x == 0 ? "tp" : std::to_string(x));
  return fmt::format("mixture of experts: {} has {} experts, {} per token ({:.1f} B of {:.1f} B "
                     "parameters per token); expert parallelism searched over ep {} and etp {} "
                     "(experts on etp x ep x edp of each stage's GPUs, docs/moe.md), "
                     "router imbalance {:g}",
                     m.name, m.num_experts, m.experts_per_token,
                     static_cast<double>(active_parameters(m)) / 1e9,
                     static_cast<double>(total_parameters(m)) / 1e9, fmt::join(plan.ep, ","),
                     fmt::join(etp, ","), imbalance);
}

std::string native_estimator_text(const EstimateContext& ctx) {
  std::vector<std::string> calibrated, prior;
  for (std::size_t g = 0; g < ctx.cluster.groups.size() && g < ctx.profile_source.size(); ++g) {
    if (ctx.cluster.groups[g].count == 0) {
      continue;
    }
    (ctx.profile_source[g] == "native (calibrated)" ? calibrated : prior)
        .push_back(ctx.cluster.groups[g].gpu);
  }
  std::string text = "native, an analytic model (docs/native.md)";
  if (!calibrated.empty()) {
    text += fmt::format(", calibrated for {} (profiledb/calibration.json)",
                        fmt::join(calibrated, " and "));
  }
  if (!prior.empty()) {
    text += fmt::format("{} not calibrated for {} (the prior of {} GPU class)",
                        calibrated.empty() ? "," : ";", fmt::join(prior, " and "),
                        prior.size() == 1 ? "its" : "each");
  }
  return text + "; its error against published runs: docs/validation.md";
}

namespace {
/// The summary's line on where the estimates come from, by estimator.
std::string estimator_line(OriginalEstimator, const EstimateContext& ctx) {
  return fmt::format("profiles: {} (estimator: zerosearch, the original's formulas)",
                     profile_source_text(ctx));
}
std::string estimator_line(NativeEstimator, const EstimateContext& ctx) {
  return "estimator: " + native_estimator_text(ctx);
}
} // namespace

void print_summary(std::ostream& out, const SearchPlan& plan, const RunResult& run,
                   const std::vector<RankedRow>& ranked, const std::vector<RankedRow>& rows,
                   double seconds, const std::vector<std::string>& gpu_lines,
                   const UncertaintyTable* intervals, const HardwareCatalog* hardware) {
  const EstimateContext& ctx = plan.context;
  const std::uint64_t estimates = run.estimates;
  const std::uint64_t oom = run.oom;
  const RunThroughput& tput = run.throughput;
  out << fmt::format("zerosearch: {} on {} ({} GPUs, {} per node), global batch {} x seq {} = "
                     "{} tokens per step\n",
                     ctx.model.name, cluster_text(ctx.cluster), ctx.cluster.world_size(),
                     ctx.cluster.gpus_per_node, ctx.global_batch, tput.seq_len,
                     tput.tokens_per_step);
  out << visit_estimator(ctx.estimator, [&](auto e) { return estimator_line(e, ctx); }) << '\n';
  if (!run.master_weights) {
    out << "precision: pure 16-bit training (--master_weights off): parameters, gradients and "
           "Adam's m and v in the training dtype, no fp32 master copy (docs/native.md section 3)\n";
  }
  for (const std::string& line : gpu_lines) {
    out << line << '\n';
  }
  if (ctx.model.is_moe()) {
    const std::optional<double> imbalance = moe_imbalance(ctx);
    out << (imbalance ? moe_native_note(ctx.model, plan, *imbalance) : moe_note(ctx.model))
        << '\n';
  }
  std::string methods;
  for (const auto m : plan.methods) {
    methods += methods.empty() ? "" : ", ";
    methods += to_string(m);
  }
  out << fmt::format("searched {} design points x {} placement{} = {} estimates ({}) in {:.3f} s: "
                     "{} fit in memory, {} OOM\n",
                     estimates / std::max<std::uint64_t>(run.placements.size(), 1),
                     run.placements.size(), run.placements.size() == 1 ? "" : "s", estimates,
                     methods, seconds, estimates - oom, oom);
  if (rows.empty() && estimates > oom) {
    // Plans fit, but --budget_usd / --deadline_days left none (run_cost_options.hpp).
    return;
  }
  if (rows.empty()) {
    out << "no design point fits in GPU memory; try more nodes, GPUs with more memory, or a "
           "smaller --custom_gbs\n";
    if (estimator_info(ctx.estimator).extended_points) {
      print_fit_hint(out, ctx, run, ranked, std::numeric_limits<double>::infinity());
    }
    return;
  }
  // The CSV's columns and names (io/columns.hpp), a subset for the screen.
  using C = ColumnId;
  std::vector<Column> layout;
  const bool native = estimator_info(ctx.estimator).extended_points;
  for (const ColumnId id : {C::rank, C::real_rank, C::dp_method, C::tp, C::pp, C::dp, C::mbs, C::m}) {
    layout.emplace_back(id);
  }
  if (native) {
    layout.emplace_back(C::recompute);
    if (std::any_of(rows.begin(), rows.end(),
                    [](const RankedRow& r) { return r.row->point.offload != Offload::none; })) {
      layout.emplace_back(C::offload);
    }
    layout.emplace_back(C::virtual_stages);
    layout.emplace_back(C::dtype);
    if (std::any_of(plan.cp.begin(), plan.cp.end(), [](int c) { return c > 1; })) {
      layout.emplace_back(C::cp);
      layout.emplace_back(C::cp_comm);
    }
    if (std::find(plan.schedules.begin(), plan.schedules.end(), Schedule::terapipe) !=
        plan.schedules.end()) {
      layout.emplace_back(C::schedule);
      layout.emplace_back(C::slices);
    }
  }
  for (const ColumnId id : {C::step_time, C::pipeline_time, C::dp_sync_time,
                            C::embedding_sync_time, C::gpumem}) {
    layout.emplace_back(id);
    if (native && id == C::step_time) {
      layout.emplace_back(C::step_time_low);
      layout.emplace_back(C::step_time_high);
    }
  }
  const auto within_margin = [&](const RankedRow& r) {
    return !r.row->estimate.oom && r.row->estimate.gpumem_gib > run.margin_limit_gib;
  };
  const bool any_oom = std::any_of(rows.begin(), rows.end(),
                                   [](const RankedRow& r) { return r.row->estimate.oom; });
  const std::size_t in_margin =
      static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), within_margin));
  if (any_oom || in_margin > 0) {
    layout.emplace_back(C::memory_fit);
  }
  layout.emplace_back(C::price_per_step);
  layout.emplace_back(C::tokens_per_gpu_s);
  layout.emplace_back(C::mfu);
  if (run.run_cost) {
    for (const ColumnId id : {C::run_days, C::run_usd, C::run_mwh, C::run_effective}) {
      layout.emplace_back(id);
    }
  }
  layout.emplace_back(C::partition);
  if (ctx.cluster.types_present() > 1) {
    layout.emplace_back(C::node_placement);
    layout.emplace_back(C::placements);
  }
  out << '\n';
  write_table(out, rows, layout, true);
  out << '\n' << mfu_note(tput, ctx.model.name) << '\n';
  out << margin_note(ctx, run, in_margin, rows.size()) << '\n';
  const RankedRow* best_fit = nullptr;
  for (const RankedRow& r : rows) {
    if (!r.row->estimate.oom) {
      best_fit = &r;
      break;
    }
  }
  if (best_fit == nullptr) {
    out << "\nnone of these rows fits in GPU memory (is_oom); drop --include_oom\n";
    if (native) {
      print_fit_hint(out, ctx, run, ranked, std::numeric_limits<double>::infinity());
    }
    return;
  }
  const auto& b = *best_fit->row;
  out << fmt::format("\nbest plan: {} with tp {}, pp {}, dp {}, micro-batch {} ({}){}: "
                     "{:.2f} s/step, {:.1f} GiB per GPU, ${:.4f} per step, {:.0f} tokens/s per "
                     "GPU, MFU {}\n",
                     to_string(b.point.method), b.point.tp, b.point.pp, b.point.dp, b.point.mbs,
                     micro_batches_text(b.point.num_micro_batches),
                     native ? fmt::format(", recompute {}, offload {}, virtual stages {}, {}{}{}{}",
                                          to_string(b.point.recompute), to_string(b.point.offload),
                                          b.point.virtual_stages, to_string(b.point.dtype),
                                          b.point.pp > 1 && is_split_schedule(b.point.schedule)
                                              ? fmt::format(", schedule {}", to_string(b.point.schedule))
                                              : std::string(),
                                          b.point.ep > 1 || b.point.etp > 1
                                              ? fmt::format(", ep {}, etp {}", b.point.ep, b.point.etp)
                                              : std::string(),
                                          b.point.cp > 1
                                              ? fmt::format(", cp {} ({})", b.point.cp,
                                                            to_string(b.point.cp_comm))
                                              : std::string())
                            : std::string(),
                     b.estimate.step_s, b.estimate.gpumem_gib, b.estimate.price_per_step_usd,
                     tput.tokens_per_gpu_s(b.estimate.step_s),
                     std::isfinite(tput.mfu_percent(b.estimate.step_s))
                         ? fmt::format("{:.1f} %", tput.mfu_percent(b.estimate.step_s))
                         : std::string("unknown"));
  if (native && intervals != nullptr && hardware != nullptr) {
    out << "step time: "
        << interval_text(plan_interval(*intervals, *hardware, ctx, b.point.method),
                         b.estimate.step_s)
        << '\n';
  }
  if (within_margin(*best_fit)) {
    // The best plan leaves less free than the margin: the best one that leaves it, if kept.
    const auto safe = std::find_if(ranked.begin(), ranked.end(), [&](const RankedRow& r) {
      return !r.row->estimate.oom && !within_margin(r);
    });
    out << fmt::format("  it leaves {:.1f} GiB free, less than the memory margin",
                       ctx_free_gib(ctx, b.estimate.gpumem_gib));
    if (safe != ranked.end()) {
      const DesignPoint& q = safe->row->point;
      out << fmt::format("; the best plan outside it: {} tp {} pp {} dp {} mbs {}, rank {}: "
                         "{:.2f} s/step ({:+.1f} %), {:.1f} GiB\n",
                         to_string(q.method), q.tp, q.pp, q.dp, q.mbs, safe->rank,
                         safe->row->estimate.step_s,
                         100.0 * (safe->row->estimate.step_s / b.estimate.step_s - 1.0),
                         safe->row->estimate.gpumem_gib);
    } else {
      out << "; no plan kept for this summary fits outside it (--top N shows more)\n";
    }
  }
  if (native && std::find(plan.schedules.begin(), plan.schedules.end(), Schedule::terapipe) !=
                    plan.schedules.end()) {
    print_terapipe_comparison(out, ranked);
  }
  // A faster plan that does not fit: say which memory-saving setting would make it fit.
  if (native) {
    print_fit_hint(out, ctx, run, ranked, b.estimate.step_s);
  }
}

} // namespace zerosearch::cli
