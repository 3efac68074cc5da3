// zerosearch_validate: the native estimator against published measured training runs
// (validation/corpus/*.tsv, docs/validation.md), in-sample and leave-one-source-out.
//
//   zerosearch_validate [--corpus DIR] [--published FILE]... [--tuned FILE]
//                       [--zerosearch PATH] [--markdown] [--check FILE]
//                       [--write-intervals FILE] [--keep DIR]
//
// Every row becomes one call of the documented contract
//   zerosearch --exhaustive --estimator native --type MODEL.json --seq_len S --node_type GPU
//     --num_node N --gpu_per_node G --dp_method M --tp T --pp P --dp D --mbs B
//     --custom_gbs GBS --recompute R --virtual_stages V --dtype D [settings] --format json -q
// (the program next to this one unless --zerosearch says otherwise), one process per distinct
// argument list, two at a time. Each corpus file is one source group. In-sample: the tuned
// knobs of --tuned (validation/tuned.json) at their shipped values. Leave-one-source-out: for
// each group, each knob re-chosen among its candidates by the median |error| on the other
// groups' rows it applies to, and the group run with those values. Prints per-row errors, both
// figures per source, GPU, framework and scale, ranking quality (Kendall's tau, top-1 regret)
// and memory error; --markdown as the tables of docs/validation.md. --check FILE fails (exit 1)
// when the leave-one-source-out median is worse than FILE's loso_median_abs_step_error.
// --write-intervals FILE writes the step-time intervals per regime (profiledb/uncertainty.json).
// Exit 2 on bad input.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "validate/cases.hpp"
#include "validate/corpus.hpp"
#include "validate/knobs.hpp"
#include "validate/metrics.hpp"
#include "validate/runner.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/io/hardware_json.hpp"
#include "zerosearch/io/output_file.hpp"
#include "zerosearch/io/uncertainty.hpp"

namespace fs = std::filesystem;
using namespace zerosearch::validate;

namespace {

struct Args {
  fs::path corpus;
  std::vector<fs::path> published;
  fs::path tuned = ZEROSEARCH_SOURCE_DIR "/validation/tuned.json";
  fs::path zerosearch, check, keep, intervals;
  bool markdown = false;
};

Args parse(int argc, char** argv) {
  Args a;
  bool corpus_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw BadInput(s + " needs a value");
      return argv[++i];
    };
    if (s == "--corpus") {
      a.corpus = value();
      corpus_given = true;
    } else if (s == "--published") {
      a.published.emplace_back(value());
    } else if (s == "--tuned") {
      a.tuned = value();
    } else if (s == "--zerosearch") {
      a.zerosearch = value();
    } else if (s == "--check") {
      a.check = value();
    } else if (s == "--keep") {
      a.keep = value();
    } else if (s == "--write-intervals") {
      a.intervals = value();
    } else if (s == "--markdown") {
      a.markdown = true;
    } else if (s == "-h" || s == "--help") {
      std::cout << "usage: zerosearch_validate [--corpus DIR] [--published FILE]... [--tuned "
                   "FILE] [--zerosearch PATH] [--markdown] [--check FILE] [--write-intervals "
                   "FILE] [--keep DIR]\n"
                   "  --corpus DIR      one TSV per source group (default validation/corpus)\n"
                   "  --published FILE  a TSV file, its name the source group (repeatable; "
                   "without --corpus only these files)\n"
                   "  --tuned FILE      the tuned knobs (default validation/tuned.json)\n";
      std::exit(0);
    } else {
      throw BadInput(fmt::format("unknown argument '{}' (allowed: --corpus, --published, "
                                 "--tuned, --zerosearch, --markdown, --check, "
                                 "--write-intervals, --keep)", s));
    }
  }
  if (!corpus_given && a.published.empty()) a.corpus = ZEROSEARCH_SOURCE_DIR "/validation/corpus";
  if (corpus_given && !fs::is_directory(a.corpus)) {
    throw BadInput(fmt::format("--corpus '{}' is not a folder", a.corpus.string()));
  }
  if (a.zerosearch.empty()) a.zerosearch = fs::path(argv[0]).parent_path() / "zerosearch";
  return a;
}

constexpr double kFailed = std::numeric_limits<double>::infinity();

/// The figures of one case: in-sample and leave-one-source-out.
struct Outcome {
  Prediction in, loso;
  [[nodiscard]] double error_in(const Case& c) const { return in.step_s / c.measured_s - 1.0; }
  [[nodiscard]] double error_loso(const Case& c) const {
    return loso.ok ? loso.step_s / c.measured_s - 1.0 : kFailed;
  }
};

std::string pct(double e, bool sign = true) {
  if (std::isinf(e)) return "failed";
  return sign ? fmt::format("{:+.1f}%", 100 * e) : fmt::format("{:.1f}%", 100 * e);
}

int main_(int argc, char** argv) {
  const Args args = parse(argc, argv);
  // The intervals file is written like every output (io/output_file: atomically, the old file
  // kept on failure), and checked before the runs.
  std::optional<zerosearch::OutputTarget> intervals_file;
  if (!args.intervals.empty()) {
    zerosearch::install_output_cleanup();
    intervals_file = zerosearch::check_output(args.intervals, "--write-intervals");
  }
  std::vector<fs::path> files = args.published;
  if (!args.corpus.empty()) {
    const auto in_folder = corpus_files(args.corpus);
    files.insert(files.end(), in_folder.begin(), in_folder.end());
  }
  if (files.empty()) throw BadInput("no corpus file (validation/corpus/*.tsv or --published)");
  const std::vector<Row> rows = load_corpus(files);
  const auto knobs = load_knobs(args.tuned);
  const zerosearch::HardwareCatalog catalog =
      zerosearch::load_hardware_catalog(ZEROSEARCH_SOURCE_DIR "/profiledb/hardware.json");

  fs::path dir = args.keep;
  bool remove_dir = false;
  if (dir.empty()) {
    char tmpl[] = "/tmp/zerosearch_validate.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
    remove_dir = true;
  } else {
    fs::create_directories(dir);
  }
  std::vector<Case> cases;
  std::vector<fs::path> models;
  for (const Row& r : rows) {
    cases.push_back(make_case(r, catalog));
    models.push_back(dir / fmt::format("{}_row{:03}.json", r.group, r.line));
    if (cases.back().not_modelled.empty() && cases.back().catalog_model.empty()) {
      std::ofstream(models.back()) << model_file(cases.back()).dump(1) << '\n';
    }
  }
  const std::size_t n = cases.size();
  // The knobs' values for a case: setting[k] = candidate index of knob k.
  const auto argv_of = [&](std::size_t i, const std::vector<int>& setting) {
    std::vector<Flag> extra;
    for (std::size_t k = 0; k < knobs.size(); ++k) {
      if (knobs[k].applies(cases[i])) {
        extra.emplace_back(knobs[k].flag, knobs[k].candidates[static_cast<std::size_t>(setting[k])]);
      }
    }
    return contract(cases[i], args.zerosearch, models[i], extra);
  };
  std::vector<int> shipped;
  for (const Knob& k : knobs) shipped.push_back(k.shipped_index());

  Runner runner(dir);
  // In-sample: the shipped values.
  std::vector<std::vector<std::string>> batch;
  std::vector<std::size_t> runnable;
  for (std::size_t i = 0; i < n; ++i) {
    if (cases[i].not_modelled.empty()) {
      runnable.push_back(i);
      batch.push_back(argv_of(i, shipped));
    }
  }
  runner.run_all(batch);
  std::vector<Outcome> out(n);
  std::vector<std::size_t> modelled;
  for (const std::size_t i : runnable) {
    out[i].in = runner.at(argv_of(i, shipped));
    if (out[i].in.ok) {
      modelled.push_back(i);
    } else {
      cases[i].not_modelled = out[i].in.error;
    }
  }
  // Each knob's candidates, the other knobs at their shipped values.
  batch.clear();
  for (std::size_t k = 0; k < knobs.size(); ++k) {
    for (std::size_t j = 0; j < knobs[k].candidates.size(); ++j) {
      std::vector<int> s = shipped;
      s[k] = static_cast<int>(j);
      for (const std::size_t i : modelled) {
        if (knobs[k].applies(cases[i])) batch.push_back(argv_of(i, s));
      }
    }
  }
  runner.run_all(batch);
  // Leave-one-source-out.
  std::set<std::string> groups;
  for (const std::size_t i : modelled) groups.insert(cases[i].group);
  std::map<std::string, std::vector<int>> chosen;
  for (const std::string& g : groups) {
    std::vector<int> s = shipped;
    for (std::size_t k = 0; k < knobs.size(); ++k) {
      std::vector<std::vector<double>> errs(knobs[k].candidates.size());
      for (std::size_t j = 0; j < errs.size(); ++j) {
        std::vector<int> sj = shipped;
        sj[k] = static_cast<int>(j);
        for (const std::size_t i : modelled) {
          if (cases[i].group == g || !knobs[k].applies(cases[i])) continue;
          const Prediction& p = runner.at(argv_of(i, sj));
          errs[j].push_back(p.ok ? std::fabs(p.step_s / cases[i].measured_s - 1.0) : kFailed);
        }
      }
      s[k] = choose_candidate(errs, shipped[k]);
    }
    chosen[g] = s;
    batch.clear();
    for (const std::size_t i : modelled) {
      if (cases[i].group == g) batch.push_back(argv_of(i, s));
    }
    runner.run_all(batch);
    for (const std::size_t i : modelled) {
      if (cases[i].group == g) out[i].loso = runner.at(argv_of(i, s));
    }
  }
  if (remove_dir) fs::remove_all(dir);

  const bool md = args.markdown;
  // Per-row table.
  if (md) {
    std::cout << "| row | framework | model | GPU x n | tp/pp/dp/mbs/gbs | method | recompute | v "
                 "| dtype | measured s | predicted s | error | LOSO error | measured GiB | "
                 "predicted GiB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  } else {
    std::cout << fmt::format("{:<20} {:<15} {:<20} {:<18} {:>16} {:<6} {:<9} {:>2} {:<5} {:>9} "
                             "{:>9} {:>7} {:>7} {:>6} {:>6}\n",
                             "row", "framework", "model", "GPU x n", "tp/pp/dp/mbs/gbs",
                             "method", "recompute", "v", "dtype", "meas. s", "pred. s", "error",
                             "LOSO", "GiB", "pred.");
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Case& c = cases[i];
    const Outcome& o = out[i];
    const bool ok = c.not_modelled.empty();
    const std::string shape = fmt::format("{}/{}/{}/{}/{}", c.tp, c.pp, c.dp, c.mbs, c.gbs);
    const std::string gpu = fmt::format(
        "{} x{}", c.catalog_gpu.empty() ? c.gpu.substr(0, 10) : c.catalog_gpu, c.num_gpus);
    const std::string err = ok ? pct(o.error_in(c)) : "-";
    const std::string lerr = ok ? pct(o.error_loso(c)) : "-";
    const std::string pred = ok ? fmt::format("{:.3f}", o.in.step_s) : "-";
    const std::string gib = c.measured_gib > 0 ? fmt::format("{:.1f}", c.measured_gib) : "-";
    const std::string pgib = ok ? fmt::format("{:.1f}", o.in.gib) : "-";
    if (md) {
      std::cout << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3f} | {} | {} "
                               "| {} | {} | {} |\n",
                               c.id, c.framework, c.model, gpu, shape, c.method, c.recompute, c.v,
                               c.dtype, c.measured_s, pred,
                               ok ? err : "not modelled: " + c.not_modelled, lerr, gib, pgib);
    } else {
      std::cout << fmt::format("{:<20.20} {:<15.15} {:<20.20} {:<18.18} {:>16} {:<6} {:<9} {:>2} "
                               "{:<5} {:>9.3f} {:>9} {:>7} {:>7} {:>6} {:>6}{}\n",
                               c.id, c.framework, c.model, gpu, shape, c.method, c.recompute, c.v,
                               c.dtype, c.measured_s, pred, err, lerr, gib, pgib,
                               ok ? (c.assumption.empty() ? "" : "  (" + c.assumption + ")")
                                  : "  not modelled: " + c.not_modelled);
    }
  }

  // Summaries: leave-one-source-out beside in-sample.
  const auto both = [&](const std::vector<std::size_t>& idx) {
    std::vector<double> ein, eloso;
    for (const std::size_t i : idx) {
      ein.push_back(out[i].error_in(cases[i]));
      eloso.push_back(out[i].error_loso(cases[i]));
    }
    return std::pair{error_stats(eloso), error_stats(ein)};
  };
  const auto line = [&](const std::string& name, const std::vector<std::size_t>& idx) {
    const auto [l, s] = both(idx);
    if (md) {
      return fmt::format("| {} | {} | {:.1f}% | {:.0f}% | {:+.1f}% | {:.1f}% | {:.0f}% | {:+.1f}% "
                         "|\n", name, l.rows, 100 * l.median_abs, 100 * l.within25,
                         100 * l.median_signed, 100 * s.median_abs, 100 * s.within25,
                         100 * s.median_signed);
    }
    return fmt::format("  {:<28.28} {:>5}  {:>6.1f}% {:>5.0f}% {:>+7.1f}%   {:>6.1f}% {:>5.0f}% "
                       "{:>+7.1f}%\n", name, l.rows, 100 * l.median_abs, 100 * l.within25,
                       100 * l.median_signed, 100 * s.median_abs, 100 * s.within25,
                       100 * s.median_signed);
  };
  const auto header = [&](const std::string& what) {
    if (md) {
      std::cout << fmt::format("\n| {} | runs | LOSO median abs. error | LOSO within 25 % | LOSO "
                               "median error | in-sample median abs. error | in-sample within "
                               "25 % | in-sample median error |\n|---|---|---|---|---|---|---|---"
                               "|\n", what);
    } else {
      std::cout << fmt::format("\n  {:<28} {:>5}  {:>7} {:>6} {:>8}   {:>7} {:>6} {:>8}\n", what,
                               "runs", "LOSO|e|", "<=25%", "signed", "in |e|", "<=25%", "signed");
    }
  };
  std::cout << (md ? "\n" : "\nstep time, modelled runs: leave-one-source-out (LOSO) beside "
                            "in-sample\n");
  header("all");
  std::cout << line("all modelled runs", modelled);
  using Key = std::string (*)(const Case&);
  const std::vector<std::pair<std::string, Key>> splits = {
      {"source group", [](const Case& c) { return c.group; }},
      {"GPU", [](const Case& c) { return c.catalog_gpu; }},
      {"framework", [](const Case& c) { return c.framework; }},
      {"GPUs", [](const Case& c) { return zerosearch::scale_bucket(c.num_gpus); }}};
  for (const auto& [what, key] : splits) {
    std::map<std::string, std::vector<std::size_t>> by;
    for (const std::size_t i : modelled) by[key(cases[i])].push_back(i);
    header(what);
    std::vector<std::string> order;
    for (const auto& kv : by) order.push_back(kv.first);
    if (what == "GPUs") order = {"1-8", "9-64", "65-512", ">512"};
    for (const std::string& k : order) {
      if (by.count(k) > 0) std::cout << line(k, by[k]);
    }
  }
  const auto [loso_all, in_all] = both(modelled);

  // Tuned knobs.
  if (knobs.empty()) {
    std::cout << "\nno tuned knob (the --tuned file lists none): no parameter is fitted to the "
                 "corpus, so leave-one-source-out equals in-sample. Model choices made while "
                 "looking at the rows are listed in docs/validation.md.\n";
  } else {
    std::cout << fmt::format("\ntuned knobs ({}), shipped value and the value chosen without "
                             "each source group:\n", args.tuned.filename().string());
    for (std::size_t k = 0; k < knobs.size(); ++k) {
      std::string per;
      int differ = 0;
      for (const auto& [g, s] : chosen) {
        const auto& v = knobs[k].candidates[static_cast<std::size_t>(s[k])];
        differ += v != knobs[k].shipped;
        per += fmt::format(" {}={}", g, v);
      }
      std::cout << fmt::format("  {} (shipped {}, candidates {}): {} of {} held-out groups choose "
                               "another value;{}\n", knobs[k].flag, knobs[k].shipped,
                               fmt::join(knobs[k].candidates, "/"), differ, chosen.size(), per);
    }
  }

  // Ranking: runs of the same model, cluster and batch, at least 3 distinct layouts.
  std::vector<RankItem> items_in, items_loso;
  for (const std::size_t i : modelled) {
    const Case& c = cases[i];
    const std::string g = fmt::format("{} {} L{} h{} s{} on {} x{} gbs {} {}", c.group, c.model,
                                      c.layers, c.hidden, c.seq, c.catalog_gpu, c.num_gpus,
                                      c.gbs, c.dtype);
    const std::string layout = fmt::format("{} tp{} pp{} dp{} mbs{} v{} {} sp{} fa{} ogr{} fl{}",
                                           c.method, c.tp, c.pp, c.dp, c.mbs, c.v, c.recompute,
                                           c.sequence_parallel, c.flash_attention,
                                           c.overlap_grad_reduce, c.fused_loss);
    items_in.push_back({g, layout, c.measured_s, out[i].in.step_s});
    if (out[i].loso.ok) items_loso.push_back({g, layout, c.measured_s, out[i].loso.step_s});
  }
  const auto rank_in = ranking_groups(items_in);
  const auto rank_loso = ranking_groups(items_loso);
  const RankSummary rs_in = rank_summary(rank_in), rs_loso = rank_summary(rank_loso);
  std::cout << (md ? "\n| ranking group | layouts | Kendall's tau (LOSO) | top-1 regret (LOSO) "
                     "|\n|---|---|---|---|\n"
                   : "\nranking (same model, GPU, GPUs, batch and dtype within a source; at "
                     "least 3 layouts):\n");
  for (const RankGroup& g : rank_loso) {
    std::cout << (md ? fmt::format("| {} | {} | {:+.2f} | {:.1f}% |\n", g.group, g.layouts, g.tau,
                                   100 * g.regret)
                     : fmt::format("  {:<70.70} {:>3} layouts  tau {:+.2f}  regret {:5.1f}%\n",
                                   g.group, g.layouts, g.tau, 100 * g.regret));
  }
  std::cout << fmt::format("ranking: {} groups, {} layouts; Kendall's tau {:.2f} (in-sample "
                           "{:.2f}), top-1 regret {:.1f}% (in-sample {:.1f}%), means weighted by "
                           "layouts\n",
                           rs_loso.groups, rs_loso.layouts, rs_loso.tau, rs_in.tau,
                           100 * rs_loso.regret, 100 * rs_in.regret);

  // Memory.
  std::vector<double> mem_err;
  for (const std::size_t i : modelled) {
    if (cases[i].measured_gib > 0) mem_err.push_back(std::fabs(out[i].in.gib / cases[i].measured_gib - 1.0));
  }
  std::cout << fmt::format("\n{} of {} runs modelled ({} source groups), {} not modelled "
                           "(reasons in the table); {} zerosearch processes.\n",
                           modelled.size(), n, groups.size(), n - modelled.size(),
                           runner.processes());
  std::vector<std::size_t> worst = modelled;
  std::sort(worst.begin(), worst.end(), [&](std::size_t a, std::size_t b) {
    return std::fabs(out[a].error_loso(cases[a])) > std::fabs(out[b].error_loso(cases[b]));
  });
  std::cout << "worst runs (LOSO):";
  for (std::size_t w = 0; w < std::min<std::size_t>(5, worst.size()); ++w) {
    std::cout << fmt::format(" {} ({})", cases[worst[w]].id,
                             pct(out[worst[w]].error_loso(cases[worst[w]])));
  }
  std::cout << '\n';
  const double mem_median = median(mem_err);
  if (mem_err.empty()) {
    std::cout << "peak memory: no row with a measurement\n";
  } else {
    std::cout << fmt::format("peak memory: {} runs with a measurement, median |error| {:.1f}%, "
                             "within 10%: {:.0f}%\n", mem_err.size(), 100 * mem_median,
                             100.0 * static_cast<double>(std::count_if(
                                         mem_err.begin(), mem_err.end(),
                                         [](double e) { return e <= 0.10; })) /
                                 static_cast<double>(mem_err.size()));
  }
  const int in25 = static_cast<int>(std::lround(loso_all.within25 * loso_all.rows));
  std::cout << fmt::format("headline (leave-one-source-out): median |error| {:.1f}%, {} of {} "
                           "runs = {:.1f}% within 25%, median signed error {:+.1f}%; in-sample: "
                           "median |error| {:.1f}%, within 25% {:.1f}%, median signed {:+.1f}%\n",
                           100 * loso_all.median_abs, in25, loso_all.rows,
                           100 * loso_all.within25, 100 * loso_all.median_signed,
                           100 * in_all.median_abs, 100 * in_all.within25,
                           100 * in_all.median_signed);

  // Intervals per regime from the leave-one-source-out residuals (measured / predicted).
  if (intervals_file) {
    zerosearch::UncertaintyTable table;
    std::map<std::vector<std::string>, std::vector<double>> ratios;
    for (const std::size_t i : modelled) {
      const Case& c = cases[i];
      if (!out[i].loso.ok) continue;
      const auto levels = zerosearch::regime_levels(c.catalog_gpu, c.gpu_family,
                                                    framework_family(c.framework),
                                                    zerosearch::scale_bucket(c.num_gpus));
      for (const auto& r : levels) {
        ratios[{r.gpu, r.gpu_class, r.framework, r.scale}].push_back(c.measured_s / out[i].loso.step_s);
      }
    }
    for (const auto& [key, v] : ratios) {
      zerosearch::UncertaintyRegime r;
      r.gpu = key[0];
      r.gpu_class = key[1];
      r.framework = key[2];
      r.scale = key[3];
      r.runs = static_cast<int>(v.size());
      r.low = quantile(v, 0.1);
      r.high = quantile(v, 0.9);
      table.regimes.push_back(r);
    }
    zerosearch::write_output(*intervals_file, [&](std::ostream& f) {
      f << zerosearch::to_json(table).dump(1) << '\n';
    });
    int small = 0;
    for (const auto& r : table.regimes) small += r.runs < table.min_runs;
    std::cout << fmt::format("intervals: {} regimes written to {} ({} with fewer than {} runs, "
                             "which fall back to a coarser regime)\n", table.regimes.size(),
                             args.intervals.string(), small, table.min_runs);
  }

  if (!args.check.empty()) {
    std::ifstream in(args.check);
    if (!in) throw BadInput(fmt::format("cannot read {}", args.check.string()));
    const auto recorded = nlohmann::json::parse(in);
    const double limit = recorded.at("loso_median_abs_step_error").get<double>();
    if (loso_all.median_abs > limit + 1e-9) {
      std::cerr << fmt::format("zerosearch_validate: leave-one-source-out median step-time error "
                               "{:.4f} is worse than the recorded {:.4f} ({})\n",
                               loso_all.median_abs, limit, args.check.string());
      return 1;
    }
    std::cout << fmt::format("check: leave-one-source-out median step-time error {:.4f} <= "
                             "recorded {:.4f}\n", loso_all.median_abs, limit);
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return main_(argc, argv);
  } catch (const BadInput& e) {
    std::cerr << "zerosearch_validate: error: " << e.what() << '\n';
    return 2;
  } catch (const zerosearch::InputError& e) {
    std::cerr << "zerosearch_validate: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "zerosearch_validate: error: " << e.what() << '\n';
    return 1;
  }
}
