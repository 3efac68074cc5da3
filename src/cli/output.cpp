#include "output.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <limits>
#include <unistd.h>

#include <fmt/format.h>

#include "describe.hpp"
#include "zerosearch/core/error.hpp"

namespace zerosearch::cli {

namespace fs = std::filesystem;

OutputPlan make_output_plan(const Options& o, const fs::path& record_file) {
  OutputPlan plan;
  plan.quiet = o.quiet;
  plan.csv.pretty = o.pretty;
  plan.selection.feasible_only = o.feasible;
  if (!o.top.empty()) {
    plan.selection.top = static_cast<std::size_t>(
        parse_int("--top", o.top, 1, std::numeric_limits<long long>::max()));
  }
  if (!record_file.empty()) {
    plan.csv_files.push_back(record_file);
  }
  const bool csv_to_stdout = o.output == "-";
  if (!o.output.empty() && !csv_to_stdout) {
    plan.csv_files.emplace_back(o.output);
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

void check_writable(const fs::path& path) {
  std::error_code ec;
  if (path.empty()) {
    throw InputError("cannot write '': the file name is empty");
  }
  if (fs::is_directory(path, ec)) {
    throw InputError(fmt::format("cannot write '{}': it is a folder", path.string()));
  }
  // The nearest folder that exists: write_file_atomically creates the rest.
  fs::path dir = path.parent_path();
  while (!dir.empty() && !fs::exists(dir, ec)) {
    dir = dir.parent_path();
  }
  if (dir.empty()) {
    dir = ".";
  }
  if (!fs::is_directory(dir, ec)) {
    throw InputError(
        fmt::format("cannot write '{}': '{}' is not a folder", path.string(), dir.string()));
  }
  // Creating a file is the only reliable test (read-only mounts, /proc, ACLs).
  const fs::path probe = dir / fmt::format(".zerosearch-probe.{}", ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw InputError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(errno)));
  }
  ::close(fd);
  fs::remove(probe, ec);
}

void write_file_atomically(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  std::error_code ec;
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) {
    throw InputError(fmt::format("cannot write '{}': cannot create folder '{}': {}",
                                 path.string(), parent.string(), ec.message()));
  }
  if (fs::is_directory(path, ec)) {
    throw InputError(fmt::format("cannot write '{}': it is a folder", path.string()));
  }
  const fs::path tmp = parent / fmt::format(".{}.tmp.{}", path.filename().string(), ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      const int err = errno;
      throw InputError(fmt::format("cannot write '{}': {}", path.string(),
                                   err != 0 ? std::strerror(err) : "cannot create it"));
    }
    try {
      write(out);
      out.flush();
    } catch (...) {
      out.close();
      fs::remove(tmp, ec);
      throw;
    }
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      throw InputError(fmt::format("cannot write '{}': write failed (disk full?)", path.string()));
    }
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      throw InputError(fmt::format("cannot write '{}': write failed (disk full?)", path.string()));
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignore;
    fs::remove(tmp, ignore);
    throw InputError(fmt::format("cannot write '{}': {}", path.string(), ec.message()));
  }
}

void write_outputs(const OutputPlan& plan, const std::vector<RankedRow>& ranked,
                   const std::vector<std::string>& type_names, const SummaryWriter& summary) {
  const std::vector<RankedRow> rows = select_rows(ranked, plan.selection);
  for (const fs::path& file : plan.csv_files) {
    write_file_atomically(file,
                          [&](std::ostream& out) { write_csv(out, rows, type_names, plan.csv); });
    if (!plan.quiet) {
      std::cerr << "zerosearch: wrote " << file.string() << '\n';
    }
  }
  switch (plan.to_stdout) {
  case StdoutFormat::summary: summary(std::cout); break;
  case StdoutFormat::csv: write_csv(std::cout, rows, type_names, plan.csv); break;
  case StdoutFormat::json: write_json(std::cout, rows, type_names, plan.csv); break;
  case StdoutFormat::table: write_table(std::cout, rows, type_names); break;
  case StdoutFormat::none: break;
  }
  std::cout.flush();
  if (!std::cout) {
    throw InputError("cannot write to standard output");
  }
}

void print_summary(std::ostream& out, const SearchPlan& plan, const RunResult& run,
                   const std::vector<RankedRow>& ranked, double seconds, std::size_t top) {
  const EstimateContext& ctx = plan.context;
  std::size_t oom = 0;
  for (const auto& r : ranked) {
    oom += r.row->estimate.oom ? 1 : 0;
  }
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
                     ranked.size() / std::max<std::size_t>(run.placements.size(), 1),
                     run.placements.size(), run.placements.size() == 1 ? "" : "s", ranked.size(),
                     methods, seconds, ranked.size() - oom, oom);
  const std::vector<RankedRow> best = select_rows(ranked, RowSelection{true, top});
  if (best.empty()) {
    out << "no design point fits in GPU memory; try more nodes, GPUs with more memory, or a "
           "smaller --custom_gbs\n";
    return;
  }
  const bool hetero = ctx.cluster.types_present() > 1;
  out << fmt::format("\n{:>4} {:<6} {:>3} {:>3} {:>3} {:>4} {:>4} {:>10} {:>10} {:>8} {:>8} {:>8} "
                     "{:>9}  {}{}\n",
                     "rank", "method", "tp", "pp", "dp", "mbs", "m", "s/step", "pipeline",
                     "dp sync", "emb sync", "mem GiB", "$/step", "partition",
                     hetero ? "  placement" : "");
  for (const RankedRow& row : best) {
    const auto& p = row.row->point;
    const auto& e = row.row->estimate;
    out << fmt::format("{:>4} {:<6} {:>3} {:>3} {:>3} {:>4} {:>4} {:>10.4f} {:>10.4f} {:>8.4f} "
                       "{:>8.4f} {:>8.2f} {:>9.5f}  {}{}\n",
                       row.real_rank, to_string(p.method), p.tp, p.pp, p.dp, p.mbs,
                       p.num_micro_batches, e.step_s, e.pipeline_s, e.dp_sync_s,
                       e.embedding_sync_s, e.gpumem_gib, e.price_per_step_usd,
                       exp_partition(e.partition),
                       hetero ? "  " + compress_placement(
                                           run.cluster,
                                           run.placements[static_cast<std::size_t>(row.row->placement)])
                              : "");
  }
  const auto& b = *best.front().row;
  out << fmt::format("\nbest plan: {} with tp {}, pp {}, dp {}, micro-batch {} ({} micro-batches): "
                     "{:.2f} s/step, {:.1f} GiB per GPU, ${:.4f} per step\n",
                     to_string(b.point.method), b.point.tp, b.point.pp, b.point.dp, b.point.mbs,
                     b.point.num_micro_batches, b.estimate.step_s, b.estimate.gpumem_gib,
                     b.estimate.price_per_step_usd);
}

} // namespace zerosearch::cli
