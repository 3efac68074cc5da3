// zerosearch_layer_times: the native estimator's per-layer forward and backward times (and the
// activation bytes a layer keeps) against real transformer layers measured on a GPU by
// scripts/measure_layers.py (docs/validation.md, "Per-layer times on a real GPU").
//
//   zerosearch_layer_times FILE.json [--gpu NAME] [--profiledb DIR] [--hardware FILE]
//                          [--points] [--markdown] [--check MAX]
//
// Each measured point is one transformer layer as one tensor-parallel rank runs it in eager
// PyTorch with no communication, so the estimate is the native estimator's layer time for a
// torchtitan-style (eager) framework at that tp, with the tensor-parallel collectives left
// out. Errors are predicted / measured - 1 (negative: the estimator is too fast).
// --check MAX exits 1 when the median absolute error of forward + backward exceeds MAX.
// Exit status 0, 1 (check failed), or 2 with "zerosearch_layer_times: error: ..." on bad input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/model/analytic_profile.hpp"
#include "zerosearch/model/native.hpp"

using namespace zerosearch;
namespace fs = std::filesystem;

namespace {

struct Args {
  fs::path file;
  fs::path profiledb = ZEROSEARCH_SOURCE_PROFILEDB;
  fs::path hardware;
  std::string gpu = "H100";
  bool points = false;
  bool markdown = false;
  double check = -1.0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InputError(s + " needs a value");
      return argv[++i];
    };
    if (s == "--gpu") a.gpu = value();
    else if (s == "--profiledb") a.profiledb = value();
    else if (s == "--hardware") a.hardware = value();
    else if (s == "--points") a.points = true;
    else if (s == "--markdown") a.markdown = true;
    else if (s == "--check") {
      const std::string v = value();
      try {
        a.check = std::stod(v);
      } catch (const std::exception&) {
        a.check = -1.0;
      }
      if (!(a.check > 0.0)) throw InputError("--check needs a fraction > 0, not '" + v + "'");
    } else if (!s.empty() && s[0] == '-') {
      throw InputError("unknown option '" + s +
                       "'; allowed: --gpu --profiledb --hardware --points --markdown --check");
    } else if (a.file.empty()) {
      a.file = s;
    } else {
      throw InputError("one measurement file only, not also '" + s + "'");
    }
  }
  if (a.file.empty()) throw InputError("no measurement file (scripts/measure_layers.py --out)");
  return a;
}

/// One measured layer and the estimate beside it.
struct Row {
  std::string model;
  int tp = 1, mbs = 1, seq = 0;
  double fwd_ms = 0, bwd_ms = 0, act_mib = -1;
  double est_fwd_ms = 0, est_bwd_ms = 0, est_act_mib = 0;
  bool host_bound = false;
  // The parts alone (measure_layers.py --parts), when measured: the four linear modules and
  // the attention core, forward and backward; -1 when not.
  double gemm_fwd_ms = -1, gemm_bwd_ms = -1, attn_fwd_ms = -1, attn_bwd_ms = -1;
  double est_gemm_fwd_ms = 0, est_attn_fwd_ms = 0, est_elementwise_fwd_ms = 0;
  [[nodiscard]] double err_fwd() const { return est_fwd_ms / fwd_ms - 1; }
  [[nodiscard]] double err_bwd() const { return est_bwd_ms / bwd_ms - 1; }
  [[nodiscard]] double err_total() const {
    return (est_fwd_ms + est_bwd_ms) / (fwd_ms + bwd_ms) - 1;
  }
  [[nodiscard]] double err_act() const { return est_act_mib / act_mib - 1; }
};

ModelSpec layer_model(const nlohmann::json& p) {
  ModelSpec m;
  const std::string arch = p.at("arch").get<std::string>();
  if (arch != "llama" && arch != "gpt") {
    throw InputError("point arch '" + arch + "' is not one of: llama, gpt");
  }
  m.name = p.at("model").get<std::string>();
  m.hidden_size = p.at("hidden").get<std::int64_t>();
  m.num_attention_heads = p.at("heads").get<std::int64_t>();
  m.num_key_value_heads = p.at("kv_heads").get<std::int64_t>();
  m.ffn_hidden_size = p.at("ffn").get<std::int64_t>();
  m.sequence_length = p.at("seq").get<std::int64_t>();
  if (m.hidden_size <= 0 || m.num_attention_heads <= 0 || m.num_key_value_heads <= 0 ||
      m.ffn_hidden_size <= 0 || m.sequence_length <= 0 ||
      m.hidden_size % m.num_attention_heads != 0) {
    throw InputError("point '" + m.name + "' has a shape that is not a transformer layer");
  }
  m.head_dim = m.hidden_size / m.num_attention_heads;
  m.num_layers = 1;
  m.vocab_size = 32000; // the layer only: the vocabulary does not enter
  m.max_position_embeddings = m.sequence_length;
  if (arch == "llama") {
    m.architecture = "llama";
    m.gated_mlp = true;
    m.norm = Norm::rmsnorm;
    m.memory_formula = MemoryFormula::llama;
  } else {
    m.architecture = "gpt3";
    m.gated_mlp = false;
    m.norm = Norm::layernorm;
    m.qkv_bias = m.attention_output_bias = m.mlp_bias = true;
    m.memory_formula = MemoryFormula::gpt;
  }
  return m;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Summary {
  std::size_t n = 0;
  double fwd = 0, bwd = 0, total = 0, abs_total = 0, within10 = 0;
};

template <class Pred> Summary summarise(const std::vector<Row>& rows, Pred keep) {
  std::vector<double> f, b, t, at;
  std::size_t in10 = 0;
  for (const Row& r : rows) {
    if (!keep(r)) continue;
    f.push_back(r.err_fwd());
    b.push_back(r.err_bwd());
    t.push_back(r.err_total());
    at.push_back(std::abs(r.err_total()));
    if (std::abs(r.err_total()) <= 0.10) ++in10;
  }
  Summary s;
  s.n = t.size();
  if (s.n == 0) return s;
  s.fwd = median(f);
  s.bwd = median(b);
  s.total = median(t);
  s.abs_total = median(at);
  s.within10 = static_cast<double>(in10) / static_cast<double>(s.n);
  return s;
}

std::string pct(double x) { return std::isnan(x) ? "-" : fmt::format("{:+.1f} %", 100 * x); }

int run(const Args& a) {
  std::ifstream in(a.file);
  if (!in) throw InputError("cannot read '" + a.file.string() + "'");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(a.file.string() + ": not JSON (" + e.what() + ")");
  }
  if (doc.value("format", "") != "zerosearch-layer-times/1") {
    throw InputError(a.file.string() + ": format is not zerosearch-layer-times/1");
  }
  const Catalogs catalogs = load_catalogs(a.profiledb, a.hardware);
  const GpuSpec* gpu = catalogs.hardware.find_gpu(a.gpu);
  if (gpu == nullptr || !gpu->has_specs) {
    throw InputError("--gpu '" + a.gpu + "' is not a catalog GPU with specifications; known: " +
                     catalogs.hardware.gpu_names());
  }
  AnalyticCalibration calibration = calibration_for(catalogs, *gpu);
  // The measured layers run no collective: the estimate leaves the tp all-reduces out.
  calibration.tp_allreduce.clear();
  NativeSettings settings;
  settings.flash_attention = true;
  settings.sequence_parallel = false;
  settings.tp_comm_overlap = false;

  std::vector<Row> rows;
  std::size_t failed = 0;
  for (const nlohmann::json& p : doc.at("points")) {
    if (p.contains("error")) {
      ++failed;
      continue;
    }
    const ModelSpec m = layer_model(p);
    DesignPoint dp;
    dp.method = DpMethod::fsdp; // eager PyTorch modules, torchtitan's framework
    dp.tp = p.at("tp").get<int>();
    dp.mbs = p.at("mbs").get<int>();
    dp.dtype = Dtype::bf16;
    if (dp.tp <= 0 || dp.mbs <= 0) throw InputError("point with tp or mbs <= 0");
    const AnalyticLayerTimes t =
        analytic_layer_times(m, *gpu, calibration, native_layer_settings(m, dp, settings));
    Row r;
    r.model = m.name;
    r.tp = dp.tp;
    r.mbs = dp.mbs;
    r.seq = static_cast<int>(m.sequence_length);
    r.fwd_ms = p.at("forward_ms").get<double>();
    r.bwd_ms = p.at("backward_ms").get<double>();
    if (p.contains("activation_mib") && p.at("activation_mib").is_number()) {
      r.act_mib = p.at("activation_mib").get<double>();
    }
    if (!(r.fwd_ms > 0) || !(r.bwd_ms > 0)) {
      throw InputError("point '" + r.model + "' has a time <= 0");
    }
    r.est_fwd_ms = 1e3 * t.layer.forward_s;
    r.est_bwd_ms = 1e3 * t.layer.backward_s;
    r.est_act_mib = layer_activation_bytes(m, dp, settings) / (1024.0 * 1024.0);
    r.host_bound = t.host_bound_forward || t.host_bound_backward;
    const auto part = [&](const char* k) {
      return p.contains(k) && p.at(k).is_number() ? p.at(k).get<double>() : -1.0;
    };
    r.gemm_fwd_ms = part("gemm_forward_ms");
    r.gemm_bwd_ms = part("gemm_backward_ms");
    r.attn_fwd_ms = part("attention_forward_ms");
    r.attn_bwd_ms = part("attention_backward_ms");
    r.est_gemm_fwd_ms = 1e3 * t.gemm_forward_s;
    r.est_attn_fwd_ms = 1e3 * t.attention_forward_s;
    r.est_elementwise_fwd_ms = 1e3 * t.elementwise_forward_s;
    rows.push_back(r);
  }
  if (rows.empty()) throw InputError(a.file.string() + ": no measured point");

  const auto& env = doc.at("environment");
  const auto str = [&](const char* k) {
    return env.contains(k) && env.at(k).is_string() ? env.at(k).get<std::string>()
                                                    : std::string("?");
  };
  fmt::print("{} points measured on {} (driver {}, torch {}, CUDA {}, {}), {} failed; "
             "estimated as catalog GPU {} ({}).\n",
             rows.size(), str("device"), str("driver"), str("torch"), str("cuda"), str("date"),
             failed, a.gpu, calibration.source);
  fmt::print("Error = estimate / measured - 1 (negative: the estimate is too fast).\n\n");

  const auto table = [&](const std::string& title, const std::vector<std::string>& keys,
                         const auto& key_of) {
    if (a.markdown) {
      fmt::print("| {} | points | forward | backward | fwd+bwd | abs. fwd+bwd | within 10 % |\n"
                 "|---|---|---|---|---|---|---|\n",
                 title);
    } else {
      fmt::print("{:<14} {:>6} {:>9} {:>9} {:>9} {:>12} {:>11}\n", title, "points", "forward",
                 "backward", "fwd+bwd", "abs fwd+bwd", "within 10%");
    }
    for (const std::string& k : keys) {
      const Summary s = summarise(rows, [&](const Row& r) { return key_of(r) == k; });
      if (s.n == 0) continue;
      if (a.markdown) {
        fmt::print("| {} | {} | {} | {} | {} | {:.1f} % | {:.0f} % |\n", k, s.n, pct(s.fwd),
                   pct(s.bwd), pct(s.total), 100 * s.abs_total, 100 * s.within10);
      } else {
        fmt::print("{:<14} {:>6} {:>9} {:>9} {:>9} {:>10.1f} % {:>9.0f} %\n", k, s.n,
                   pct(s.fwd), pct(s.bwd), pct(s.total), 100 * s.abs_total, 100 * s.within10);
      }
    }
    fmt::print("\n");
  };
  std::vector<std::string> models, tps, mbss, seqs;
  const auto add = [](std::vector<std::string>& v, const std::string& k) {
    if (std::find(v.begin(), v.end(), k) == v.end()) v.push_back(k);
  };
  for (const Row& r : rows) {
    add(models, r.model);
    add(tps, fmt::format("tp {}", r.tp));
    add(mbss, fmt::format("mbs {}", r.mbs));
    add(seqs, fmt::format("seq {}", r.seq));
  }
  table("all", {"all"}, [](const Row&) { return std::string("all"); });
  table("model", models, [](const Row& r) { return r.model; });
  table("tp", tps, [](const Row& r) { return fmt::format("tp {}", r.tp); });
  table("micro-batch", mbss, [](const Row& r) { return fmt::format("mbs {}", r.mbs); });
  table("sequence", seqs, [](const Row& r) { return fmt::format("seq {}", r.seq); });

  std::vector<double> act;
  for (const Row& r : rows) {
    if (r.act_mib > 0) act.push_back(r.err_act());
  }
  if (!act.empty()) {
    std::vector<double> abs_act(act.size());
    std::transform(act.begin(), act.end(), abs_act.begin(), [](double x) { return std::abs(x); });
    fmt::print("Activation memory of one layer ({} points): median error {}, median abs. {:.1f} %, "
               "range {} .. {}\n\n",
               act.size(), pct(median(act)), 100 * median(abs_act),
               pct(*std::min_element(act.begin(), act.end())),
               pct(*std::max_element(act.begin(), act.end())));
  }
  // The parts: the estimate's GEMM and attention shares against the parts timed alone, and
  // the backward-to-forward ratios the estimate assumes (GEMMs 2, attention kFlashBackwardRatio).
  std::vector<double> gf, af, gratio, aratio, rest, est_rest, rest_ratio;
  for (const Row& r : rows) {
    if (r.gemm_fwd_ms <= 0 || r.attn_fwd_ms <= 0) continue;
    gf.push_back(r.est_gemm_fwd_ms / r.gemm_fwd_ms - 1);
    af.push_back(r.est_attn_fwd_ms / r.attn_fwd_ms - 1);
    if (r.gemm_bwd_ms > 0) gratio.push_back(r.gemm_bwd_ms / r.gemm_fwd_ms);
    if (r.attn_bwd_ms > 0) aratio.push_back(r.attn_bwd_ms / r.attn_fwd_ms);
    rest.push_back(r.fwd_ms - r.gemm_fwd_ms - r.attn_fwd_ms);
    est_rest.push_back(r.est_fwd_ms - r.est_gemm_fwd_ms - r.est_attn_fwd_ms);
    rest_ratio.push_back(est_rest.back() / rest.back());
  }
  if (!gf.empty()) {
    fmt::print("Parts timed alone ({} points): estimate error of the GEMMs (forward) median {}, "
               "of the attention core (forward) median {};\n  measured backward/forward: GEMMs "
               "median {:.2f} (estimate 2), attention median {:.2f} (estimate {}); forward "
               "outside GEMMs and attention: median {:.3f} ms (estimate {:.3f} ms; estimate / measured, "
               "median {:.2f})\n\n",
               gf.size(), pct(median(gf)), pct(median(af)), median(gratio), median(aratio),
               kFlashBackwardRatio,
               median(rest), median(est_rest), median(rest_ratio));
  }
  if (a.points) {
    fmt::print("{:<12} {:>3} {:>4} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {}\n", "model", "tp",
               "mbs", "seq", "fwd ms", "est", "bwd ms", "est", "act MiB", "est", "host-bound");
    for (const Row& r : rows) {
      fmt::print("{:<12} {:>3} {:>4} {:>6} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.1f} {:>9.1f} {}\n",
                 r.model, r.tp, r.mbs, r.seq, r.fwd_ms, r.est_fwd_ms, r.bwd_ms, r.est_bwd_ms,
                 r.act_mib, r.est_act_mib, r.host_bound ? "yes" : "");
    }
  }
  const Summary all = summarise(rows, [](const Row&) { return true; });
  if (a.check > 0 && all.abs_total > a.check) {
    std::cerr << fmt::format("zerosearch_layer_times: check failed: median abs. error of "
                             "forward + backward {:.2f} % > {:.2f} %\n",
                             100 * all.abs_total, 100 * a.check);
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const InputError& e) {
    std::cerr << "zerosearch_layer_times: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "zerosearch_layer_times: error: " << e.what() << "\n";
    return 2;
  }
}
