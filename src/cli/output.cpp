#include "output.hpp"

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include <fmt/format.h>

#include "zerosearch/error.hpp"

namespace zerosearch::cli {

namespace fs = std::filesystem;

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
      throw InputError(fmt::format("cannot write '{}': permission denied or no such folder",
                                   path.string()));
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
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignore;
    fs::remove(tmp, ignore);
    throw InputError(fmt::format("cannot write '{}': {}", path.string(), ec.message()));
  }
}

namespace {

std::string cluster_text(const Cluster& c) {
  std::string out;
  for (const auto& g : c.groups) {
    out += out.empty() ? "" : " + ";
    out += fmt::format("{} x {}", g.count, g.gpu);
  }
  return out;
}

std::string compress_placement(const Cluster& c, const Placement& p) {
  std::string out;
  std::size_t i = 0;
  while (i < p.size()) {
    std::size_t j = i;
    while (j < p.size() && p[j] == p[i]) {
      ++j;
    }
    out += out.empty() ? "" : " ";
    out += fmt::format("{}x{}", c.groups[static_cast<std::size_t>(p[i])].gpu, j - i);
    i = j;
  }
  return out;
}

} // namespace

void print_summary(std::ostream& out, const SearchPlan& plan, const RunResult& run,
                   const std::vector<RankedRow>& ranked, double seconds) {
  const EstimateContext& ctx = plan.context;
  std::size_t oom = 0;
  for (const auto& r : ranked) {
    oom += r.row->estimate.oom ? 1 : 0;
  }
  out << fmt::format("zerosearch: {} on {} ({} GPUs, {} per node), global batch {}\n",
                     ctx.model.name, cluster_text(ctx.cluster), ctx.cluster.world_size(),
                     ctx.cluster.gpus_per_node, ctx.global_batch);
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
  std::vector<const RankedRow*> best;
  for (const auto& r : ranked) {
    if (!r.row->estimate.oom) {
      best.push_back(&r);
      if (best.size() == 10) {
        break;
      }
    }
  }
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
  for (const RankedRow* r : best) {
    const auto& p = r->row->point;
    const auto& e = r->row->estimate;
    out << fmt::format("{:>4} {:<6} {:>3} {:>3} {:>3} {:>4} {:>4} {:>10.4f} {:>10.4f} {:>8.4f} "
                       "{:>8.4f} {:>8.2f} {:>9.5f}  {}{}\n",
                       r->real_rank, to_string(p.method), p.tp, p.pp, p.dp, p.mbs,
                       p.num_micro_batches, e.step_s, e.pipeline_s, e.dp_sync_s,
                       e.embedding_sync_s, e.gpumem_gib, e.price_per_step_usd,
                       exp_partition(e.partition),
                       hetero ? "  " + compress_placement(
                                           run.cluster,
                                           run.placements[static_cast<std::size_t>(r->row->placement)])
                              : "");
  }
  const auto& b = *best.front()->row;
  out << fmt::format("\nbest plan: {} with tp {}, pp {}, dp {}, micro-batch {} ({} micro-batches): "
                     "{:.2f} s/step, {:.1f} GiB per GPU, ${:.4f} per step\n",
                     to_string(b.point.method), b.point.tp, b.point.pp, b.point.dp, b.point.mbs,
                     b.point.num_micro_batches, b.estimate.step_s, b.estimate.gpumem_gib,
                     b.estimate.price_per_step_usd);
}

} // namespace zerosearch::cli
