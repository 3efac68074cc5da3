// zerosearch_calibrate: fits the analytic per-layer model (docs/analytic.md) to measured
// profiles, GPU by GPU, and reports how well it fits and how well it predicts held-out points.
//
//   zerosearch_calibrate [--profiledb DIR] [--hardware FILE] [-o FILE] [--holdout] [--bench]
//                        [PROFILE.json ...]
//
// Profiles default to every file in DIR/profiles (DIR: the source tree's profiledb). Models
// and GPUs come from DIR/models.json and DIR/hardware.json (+ --hardware FILE). -o writes the
// fitted parameters and their residuals in the calibration.json format; --holdout adds
// leave-one-tp-out and leave-one-model-out errors; --bench times analytic profile generation.
// Exit status 0, or 2 with "zerosearch_calibrate: error: ..." on bad input.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/calibration_json.hpp"
#include "zerosearch/io/hardware_json.hpp"
#include "zerosearch/io/json_util.hpp"
#include "zerosearch/io/model_json.hpp"
#include "zerosearch/io/output_file.hpp"
#include "zerosearch/io/profiledb.hpp"
#include "zerosearch/model/analytic_profile.hpp"

using namespace zerosearch;
namespace fs = std::filesystem;

namespace {

struct Args {
  fs::path profiledb = ZEROSEARCH_SOURCE_PROFILEDB;
  fs::path hardware;
  fs::path output;
  bool holdout = false;
  bool bench = false;
  std::vector<fs::path> profiles;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InputError(s + " needs a value");
      return argv[++i];
    };
    if (s == "--profiledb") a.profiledb = value();
    else if (s == "--hardware") a.hardware = value();
    else if (s == "-o" || s == "--output") a.output = value();
    else if (s == "--holdout") a.holdout = true;
    else if (s == "--bench") a.bench = true;
    else if (s == "-h" || s == "--help") {
      std::cout << "usage: zerosearch_calibrate [--profiledb DIR] [--hardware FILE] [-o FILE] "
                   "[--holdout] [--bench] [PROFILE.json ...]\n";
      std::exit(0);
    } else if (!s.empty() && s[0] == '-') throw InputError("unknown option " + s);
    else a.profiles.emplace_back(s);
  }
  return a;
}

double max_abs(const std::vector<PointResidual>& rs) {
  double m = 0.0;
  for (const auto& r : rs) {
    m = std::max({m, std::abs(r.embedding), std::abs(r.layer), std::abs(r.post_process)});
  }
  return m;
}

void print_residuals(const std::vector<PointResidual>& rs) {
  for (const auto& r : rs) {
    fmt::print("    {:<12} tp {}  embedding {:+6.1f} %  layer {:+6.1f} %  post {:+6.1f} %\n",
               r.model, r.tp, 100 * r.embedding, 100 * r.layer, 100 * r.post_process);
  }
}

} // namespace

int main(int argc, char** argv) {
  try {
    install_output_cleanup();
    const Args a = parse(argc, argv);
    if (!a.output.empty()) {
      (void)check_output(a.output, "-o"); // before the fit, so a bad path fails at once
    }
    const ModelCatalog models = load_model_catalog(a.profiledb / "models.json");
    HardwareCatalog hw = load_hardware_catalog(a.profiledb / "hardware.json");
    if (!a.hardware.empty()) hw = merge_catalogs(std::move(hw), load_hardware_catalog(a.hardware));

    std::vector<GpuProfile> profiles;
    if (a.profiles.empty()) {
      const ProfileDb db = load_profile_db(a.profiledb / "profiles");
      profiles = db.all();
    } else {
      for (const fs::path& p : a.profiles) {
        profiles.push_back(parse_profile(json_util::read_file(p, "profile"), p.string()));
      }
    }
    // Points per GPU, in the catalog's spelling.
    std::map<std::string, std::vector<MeasuredPoint>> points;
    std::map<std::string, std::vector<std::string>> files;
    for (const GpuProfile& p : profiles) {
      const GpuSpec& gpu = hw.gpu(p.gpu);
      if (!gpu.has_specs) {
        throw InputError(fmt::format("{}: GPU '{}' has no specifications in hardware.json",
                                     p.origin, gpu.name));
      }
      const auto pts = measured_points(p, models.find(p.model));
      points[gpu.name].insert(points[gpu.name].end(), pts.begin(), pts.end());
      files[gpu.name].push_back(fs::path(p.origin).filename().string());
    }

    std::map<std::string, CalibrationRecord> records;
    double worst_all = 0.0;
    for (const auto& [name, pts] : points) {
      const GpuSpec& gpu = hw.gpu(name);
      CalibrationRecord rec;
      rec.fit = fit_calibration(gpu, pts);
      rec.fit.calibration.source =
          fmt::format("fit of {} measured layer times ({})", pts.size() * 3,
                      fmt::join(files[name], ", "));
      rec.profiles = files[name];
      const AnalyticCalibration& c = rec.fit.calibration;
      fmt::print("{}: e_max {:.3f}  x0 {:.3g} FLOP  attention {:.3f}  memory {:.3f}  "
                 "layer overhead {:.0f} us  LM head {:.3f}\n",
                 name, c.gemm_e_max, c.gemm_x0_flops, c.attention_efficiency, c.memory_efficiency,
                 c.layer_overhead_s * 1e6, c.lm_head_efficiency);
      for (const auto& [n, cf] : c.tp_allreduce) {
        fmt::print("    tp {}: all-reduce alpha {:.0f} us, bus {:.1f} GB/s; embedding bus {:.1f} GB/s\n",
                   n, cf.alpha_s * 1e6, cf.bus_bytes_per_s / 1e9,
                   c.embedding_allreduce.at(n).bus_bytes_per_s / 1e9);
      }
      fmt::print("  fit: rms {:.1f} %, worst {:+.1f} %\n", 100 * rec.fit.rms, 100 * rec.fit.worst);
      print_residuals(rec.fit.residuals);
      worst_all = std::max(worst_all, std::abs(rec.fit.worst));
      if (a.holdout) {
        std::set<int> tps;
        std::set<std::string> names;
        for (const auto& p : pts) {
          tps.insert(p.tp);
          names.insert(p.model.name);
        }
        for (const int tp : tps) {
          std::vector<MeasuredPoint> train, test;
          for (const auto& p : pts) (p.tp == tp ? test : train).push_back(p);
          const CalibrationFit f = fit_calibration(gpu, train);
          const auto r = residuals(gpu, f.calibration, test);
          fmt::print("  leave tp {} out: max error {:.1f} %\n", tp, 100 * max_abs(r));
          print_residuals(r);
          rec.holdout[fmt::format("tp{}", tp)] = max_abs(r);
        }
        if (names.size() > 1) {
          for (const auto& m : names) {
            std::vector<MeasuredPoint> train, test;
            for (const auto& p : pts) (p.model.name == m ? test : train).push_back(p);
            const CalibrationFit f = fit_calibration(gpu, train);
            const auto r = residuals(gpu, f.calibration, test);
            fmt::print("  leave {} out: max error {:.1f} %\n", m, 100 * max_abs(r));
            print_residuals(r);
            rec.holdout[m] = max_abs(r);
          }
        }
        // The class prior alone, for comparison with uncalibrated GPUs.
        const auto r = residuals(gpu, prior_calibration(gpu), pts);
        fmt::print("  class prior only: max error {:.1f} %\n", 100 * max_abs(r));
        rec.holdout["class_prior"] = max_abs(r);
      }
      records.emplace(name, std::move(rec));
    }
    fmt::print("worst fitted point: {:.1f} %\n", 100 * worst_all);

    if (a.bench) {
      const ModelSpec& m = models.find("llama2_13B");
      const GpuSpec& g = hw.gpu("H100-SXM");
      const AnalyticCalibration c = prior_calibration(g);
      const int n = 20000;
      double sink = 0.0;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) {
        const GpuProfile p = analytic_profile(m, g, c, Flavour::deepspeed, {1, 2, 4, 8}, Dtype::bf16);
        sink += p.layer_times_s.at(1)[1];
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      fmt::print("bench: one analytic profile (llama2_13B, 42 layers, tp 1/2/4/8) in {:.2f} us "
                 "(mean of {}; checksum {:.3g})\n",
                 s / n * 1e6, n, sink);
    }
    if (!a.output.empty()) {
      // The rules of every zerosearch output (io/output_file.hpp).
      const std::string text = calibration_json(records);
      write_output(check_output(a.output, "-o"), [&](std::ostream& out) { out << text; });
      fmt::print("wrote {}\n", a.output.string());
    }
    return 0;
  } catch (const InputError& e) {
    std::cerr << "zerosearch_calibrate: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "zerosearch_calibrate: internal error: " << e.what() << '\n';
    return 1;
  }
}
