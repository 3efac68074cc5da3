#include "zerosearch/io/uncertainty.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/json_fast.hpp"

namespace zerosearch {

std::string scale_bucket(int n) {
  if (n <= 8) return "1-8";
  if (n <= 64) return "9-64";
  if (n <= 512) return "65-512";
  return ">512";
}

std::string framework_family_of_method(const std::string& m) {
  if (m == "dp") return "megatron";
  if (m == "fsdp") return "fsdp";
  return "deepspeed";
}

std::vector<UncertaintyRegime> regime_levels(const std::string& gpu, const std::string& gpu_class,
                                             const std::string& framework,
                                             const std::string& scale) {
  std::vector<UncertaintyRegime> r(6);
  r[0].gpu = r[1].gpu = r[2].gpu = gpu;
  r[0].framework = r[1].framework = r[3].framework = framework;
  r[0].scale = scale;
  r[3].gpu_class = r[4].gpu_class = gpu_class;
  return r;
}

namespace {

bool same(const UncertaintyRegime& a, const UncertaintyRegime& b) {
  return a.gpu == b.gpu && a.gpu_class == b.gpu_class && a.framework == b.framework &&
         a.scale == b.scale;
}

std::string describe(int level, const UncertaintyRegime& r) {
  switch (level) {
  case 0: return "similar published runs";
  case 1: return fmt::format("published runs on {} with {}, any scale", r.gpu, r.framework);
  case 2: return fmt::format("published runs on {}", r.gpu);
  case 3: return fmt::format("published runs on {} GPUs with {}", r.gpu_class, r.framework);
  case 4: return fmt::format("published runs on {} GPUs", r.gpu_class);
  default: return "all published runs";
  }
}

/// "26-35 s" with as many digits as the figures need to differ.
std::string range_text(double lo, double hi) {
  const double m = std::max(std::fabs(lo), std::fabs(hi));
  const int digits = m >= 10 ? 0 : m >= 1 ? 1 : m >= 0.1 ? 2 : 3;
  return fmt::format("{:.{}f}-{:.{}f} s", lo, digits, hi, digits);
}

} // namespace

StepInterval find_interval(const UncertaintyTable& table, const std::string& gpu,
                           const std::string& gpu_class, const std::string& framework,
                           const std::string& scale) {
  StepInterval out;
  out.coverage_percent = static_cast<int>(std::lround(100 * table.coverage));
  out.own = fmt::format("{} x {} x {}", gpu, framework, scale);
  const auto levels = regime_levels(gpu, gpu_class, framework, scale);
  for (std::size_t lvl = 0; lvl < levels.size(); ++lvl) {
    for (const UncertaintyRegime& r : table.regimes) {
      if (!same(r, levels[lvl])) continue;
      if (lvl == 0) out.own_runs = r.runs;
      if (r.runs >= table.min_runs) {
        out.found = true;
        out.low = r.low;
        out.high = r.high;
        out.level = static_cast<int>(lvl);
        out.used = describe(out.level, levels[lvl]);
        return out;
      }
    }
  }
  return out;
}

std::string interval_basis(const StepInterval& i) {
  if (!i.found) {
    return fmt::format("fewer than 10 published runs in its regime {}: no interval", i.own);
  }
  std::string text = fmt::format("{} % of {}", i.coverage_percent, i.used);
  if (i.level > 0) {
    text += fmt::format("; its regime {} has {} run{}", i.own, i.own_runs,
                        i.own_runs == 1 ? "" : "s");
  }
  return text;
}

std::string interval_text(const StepInterval& i, double step_s) {
  if (!i.found) {
    return fmt::format("{:.2f} s/step (fewer than 10 published runs in its regime {}: no "
                       "interval)", step_s, i.own);
  }
  std::string text = fmt::format("{:.2f} s/step ({} % of {}: {}", step_s, i.coverage_percent,
                                 i.used, range_text(step_s * i.low, step_s * i.high));
  if (i.level > 0) {
    text += fmt::format("; its regime {} has {} run{}", i.own, i.own_runs,
                        i.own_runs == 1 ? "" : "s");
  }
  return text + ")";
}

nlohmann::ordered_json to_json(const UncertaintyTable& t) {
  nlohmann::ordered_json j;
  j["format"] = "zerosearch-uncertainty-1";
  j["comment"] = "Written by zerosearch_validate --write-intervals (docs/validation.md): per "
                 "regime, the share `coverage` of published runs has measured / predicted step "
                 "time between `low` and `high`; regimes with fewer than min_runs runs give no "
                 "interval and a plan in one falls back to a coarser regime.";
  j["coverage"] = t.coverage;
  j["min_runs"] = t.min_runs;
  j["regimes"] = nlohmann::ordered_json::array();
  for (const UncertaintyRegime& r : t.regimes) {
    nlohmann::ordered_json e;
    e["gpu"] = r.gpu;
    e["gpu_class"] = r.gpu_class;
    e["framework"] = r.framework;
    e["scale"] = r.scale;
    e["runs"] = r.runs;
    e["low"] = std::round(r.low * 1e4) / 1e4;
    e["high"] = std::round(r.high * 1e4) / 1e4;
    j["regimes"].push_back(e);
  }
  return j;
}

UncertaintyTable load_uncertainty(const std::filesystem::path& file) {
  UncertaintyTable t;
  std::ifstream in(file, std::ios::binary);
  if (!in) return t;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  try {
    // The fast reader, else nlohmann for the value or its error (json_fast.hpp).
    nlohmann::json j;
    if (!json_fast::parse(text, j)) {
      j = nlohmann::json::parse(text);
    }
    t.coverage = j.at("coverage").get<double>();
    t.min_runs = j.at("min_runs").get<int>();
    for (const auto& e : j.at("regimes")) {
      UncertaintyRegime r;
      r.gpu = e.at("gpu").get<std::string>();
      r.gpu_class = e.at("gpu_class").get<std::string>();
      r.framework = e.at("framework").get<std::string>();
      r.scale = e.at("scale").get<std::string>();
      r.runs = e.at("runs").get<int>();
      r.low = e.at("low").get<double>();
      r.high = e.at("high").get<double>();
      t.regimes.push_back(r);
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not an uncertainty table ({})", file.string(), e.what()));
  }
  return t;
}

} // namespace zerosearch
