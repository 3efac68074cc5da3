#include "output.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <limits>
#include <unistd.h>

#include <fmt/format.h>

#include "describe.hpp"
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
  plan.selection.feasible_only = o.feasible;
  if (!o.top.empty()) {
    plan.selection.top = static_cast<std::size_t>(
        parse_int("--top", o.top, 1, std::numeric_limits<long long>::max()));
  }
  if (o.output_given && o.output.empty()) {
    throw InputError("-o '': the file name is empty (use -o - for standard output)");
  }
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
  if (!o.format.empty()) {
    if (o.format == "csv") {
      plan.to_stdout = StdoutFormat::csv;
    } else if (o.format == "json") {
      plan.to_stdout = StdoutFormat::json;
    } else if (o.format == "table") {
      plan.to_stdout = StdoutFormat::table;
    } else {
      throw InputError(fmt::format("unknown --format '{}' (allowed: csv, json, table)", o.format));
    }
    if (csv_to_stdout) {
      throw InputError("-o - and --format both write to standard output; use one of them");
    }
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
  const bool full_stdout =
      plan.to_stdout == StdoutFormat::csv || plan.to_stdout == StdoutFormat::json;
  const bool any_full = !plan.csv_files.empty() || full_stdout;
  // Outputs of one row per placement: the CSV files, and csv or json on standard output.
  const bool per_placement = any_full && !plan.csv.distinct;
  // Outputs of distinct rows: the summary, the table, and the others with --distinct.
  const bool distinct = plan.to_stdout == StdoutFormat::summary ||
                        plan.to_stdout == StdoutFormat::table || (any_full && plan.csv.distinct);
  RowFilter f;
  f.distinct = !per_placement;
  f.feasible_only = plan.selection.feasible_only;
  if (per_placement && distinct) {
    // --top counts each output's own rows: N distinct rows may need more than N placements.
    return f;
  }
  f.top = plan.selection.top;
  if (!any_full && plan.to_stdout != StdoutFormat::table && f.top == 0) {
    f.feasible_only = true; // the summary's 10 best that fit
    f.top = 10;
  }
  return f;
}

void write_outputs(const OutputPlan& plan, const std::vector<RankedRow>& ranked,
                   const std::vector<std::string>& type_names, const SummaryWriter& summary) {
  const bool distinct_rows_needed = plan.csv.distinct ||
                                    plan.to_stdout == StdoutFormat::table;
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
  case StdoutFormat::table: write_table(std::cout, distinct, type_names, true); break;
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

std::vector<RankedRow> summary_rows(const OutputPlan& plan, const std::vector<RankedRow>& ranked) {
  if (plan.selection.top != 0) {
    return select_rows(distinct_rows(ranked), plan.selection);
  }
  return select_rows(distinct_rows(ranked), RowSelection{true, 10});
}

void print_summary(std::ostream& out, const SearchPlan& plan, const RunResult& run,
                   const std::vector<RankedRow>& /*ranked*/, const std::vector<RankedRow>& rows,
                   double seconds) {
  const EstimateContext& ctx = plan.context;
  const std::uint64_t estimates = run.estimates;
  const std::uint64_t oom = run.oom;
  out << fmt::format("zerosearch: {} on {} ({} GPUs, {} per node), global batch {}\n",
                     ctx.model.name, cluster_text(ctx.cluster), ctx.cluster.world_size(),
                     ctx.cluster.gpus_per_node, ctx.global_batch);
  out << fmt::format("profiles: {}\n", profile_source_text(ctx));
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
  if (rows.empty()) {
    out << "no design point fits in GPU memory; try more nodes, GPUs with more memory, or a "
           "smaller --custom_gbs\n";
    return;
  }
  // The CSV's columns and names (io/columns.hpp), a subset for the screen.
  using C = ColumnId;
  std::vector<Column> layout;
  for (const ColumnId id : {C::rank, C::real_rank, C::dp_method, C::tp, C::pp, C::dp, C::mbs, C::m,
                            C::step_time, C::pipeline_time, C::dp_sync_time,
                            C::embedding_sync_time, C::gpumem}) {
    layout.emplace_back(id);
  }
  const bool any_oom = std::any_of(rows.begin(), rows.end(),
                                   [](const RankedRow& r) { return r.row->estimate.oom; });
  if (any_oom) {
    layout.emplace_back(C::is_oom);
  }
  layout.emplace_back(C::price_per_step);
  layout.emplace_back(C::partition);
  if (ctx.cluster.types_present() > 1) {
    layout.emplace_back(C::node_placement);
    layout.emplace_back(C::placements);
  }
  out << '\n';
  write_table(out, rows, layout);
  const RankedRow* best_fit = nullptr;
  for (const RankedRow& r : rows) {
    if (!r.row->estimate.oom) {
      best_fit = &r;
      break;
    }
  }
  if (best_fit == nullptr) {
    out << "\nnone of these rows fits in GPU memory (is_oom); drop --top or add --feasible\n";
    return;
  }
  const auto& b = *best_fit->row;
  out << fmt::format("\nbest plan: {} with tp {}, pp {}, dp {}, micro-batch {} ({} micro-batches): "
                     "{:.2f} s/step, {:.1f} GiB per GPU, ${:.4f} per step\n",
                     to_string(b.point.method), b.point.tp, b.point.pp, b.point.dp, b.point.mbs,
                     b.point.num_micro_batches, b.estimate.step_s, b.estimate.gpumem_gib,
                     b.estimate.price_per_step_usd);
}

} // namespace zerosearch::cli
