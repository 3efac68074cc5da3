#include "zerosearch/io/calibration_json.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/json_util.hpp"

namespace zerosearch {

namespace {

using json_util::Json;
using OJson = nlohmann::ordered_json;

// The old name of "bus_GBps" (GB/s, not Gbit/s), still read. The marker "units: old name" keeps
// the mechanical rename off this line.
constexpr const char* kOldBusKey = "bus_gbps"; // units: old name

std::map<int, CollectiveFit> parse_collectives(const Json& j, const std::string& where) {
  using namespace json_util;
  require_object(j, where);
  std::map<int, CollectiveFit> out;
  for (const auto& [n, given] : j.items()) {
    const std::string w = fmt::format("{}[\"{}\"]", where, n);
    int gpus = 0;
    try {
      gpus = std::stoi(n);
    } catch (const std::exception&) {
      gpus = 0;
    }
    if (gpus < 2 || std::to_string(gpus) != n) {
      throw InputError(fmt::format("{}: key '{}' must be a group size >= 2", where, n));
    }
    require_object(given, w);
    Json renamed;
    const Json& c = with_renamed_key(given, "bus_GBps", kOldBusKey, w, renamed);
    reject_unknown_keys(c, {"alpha_s", "bus_GBps"}, w);
    out[gpus] = CollectiveFit{get_positive_number(c, "alpha_s", w),
                              get_positive_number(c, "bus_GBps", w) * 1e9};
  }
  return out;
}

OJson collectives_json(const std::map<int, CollectiveFit>& m) {
  OJson out = OJson::object();
  for (const auto& [n, c] : m) {
    out[std::to_string(n)] = OJson{{"alpha_s", c.alpha_s}, {"bus_GBps", c.bus_bytes_per_s / 1e9}};
  }
  return out;
}

} // namespace

std::map<std::string, AnalyticCalibration> parse_calibrations(const std::string& text,
                                                              const std::string& origin) {
  using namespace json_util;
  const Json doc = parse(text, origin);
  require_object(doc, origin);
  reject_unknown_keys(doc, {"format", "comment", "command", "gpus"}, origin);
  if (get_string(doc, "format", origin) != "zerosearch-calibration/1") {
    throw InputError(fmt::format("{}: 'format' must be \"zerosearch-calibration/1\"", origin));
  }
  std::map<std::string, AnalyticCalibration> out;
  const Json& gpus = field(doc, "gpus", origin);
  require_object(gpus, origin + ": gpus");
  for (const auto& [name, g] : gpus.items()) {
    const std::string where = fmt::format("{}: gpu '{}'", origin, name);
    require_object(g, where);
    reject_unknown_keys(g, {"source", "profiles", "gemm_e_max", "gemm_x0_flops",
                            "attention_efficiency", "memory_efficiency", "layer_overhead_s",
                            "tp_allreduce", "embedding_allreduce", "embedding_overhead_s",
                            "lm_head_efficiency", "post_overhead_s", "residuals", "rms_error",
                            "worst_error", "holdout_max_error"},
                        where);
    AnalyticCalibration c;
    c.gpu = name;
    c.calibrated = true;
    c.source = get_string(g, "source", where);
    c.gemm_e_max = get_positive_number(g, "gemm_e_max", where);
    c.gemm_x0_flops = get_positive_number(g, "gemm_x0_flops", where);
    c.attention_efficiency = get_positive_number(g, "attention_efficiency", where);
    c.memory_efficiency = get_positive_number(g, "memory_efficiency", where);
    c.layer_overhead_s = get_positive_number(g, "layer_overhead_s", where);
    c.tp_allreduce = parse_collectives(field(g, "tp_allreduce", where), where + ": tp_allreduce");
    c.embedding_allreduce =
        parse_collectives(field(g, "embedding_allreduce", where), where + ": embedding_allreduce");
    c.embedding_overhead_s = get_positive_number(g, "embedding_overhead_s", where);
    c.lm_head_efficiency = get_positive_number(g, "lm_head_efficiency", where);
    c.post_overhead_s = get_positive_number(g, "post_overhead_s", where);
    out.emplace(name, std::move(c));
  }
  return out;
}

std::map<std::string, AnalyticCalibration> load_calibrations(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return {};
  }
  return parse_calibrations(json_util::read_file(file, "calibration file"), file.string());
}

std::string calibration_json(const std::map<std::string, CalibrationRecord>& records) {
  OJson doc = OJson::object();
  doc["format"] = "zerosearch-calibration/1";
  doc["comment"] = "Analytic-profile parameters fitted to measured profiles; written by "
                   "zerosearch_calibrate (docs/analytic.md). Errors are (predicted - measured) "
                   "/ measured of the forward time.";
  OJson gpus = OJson::object();
  for (const auto& [name, rec] : records) {
    const AnalyticCalibration& c = rec.fit.calibration;
    OJson g = OJson::object();
    g["source"] = c.source;
    g["profiles"] = rec.profiles;
    g["gemm_e_max"] = c.gemm_e_max;
    g["gemm_x0_flops"] = c.gemm_x0_flops;
    g["attention_efficiency"] = c.attention_efficiency;
    g["memory_efficiency"] = c.memory_efficiency;
    g["layer_overhead_s"] = c.layer_overhead_s;
    g["tp_allreduce"] = collectives_json(c.tp_allreduce);
    g["embedding_allreduce"] = collectives_json(c.embedding_allreduce);
    g["embedding_overhead_s"] = c.embedding_overhead_s;
    g["lm_head_efficiency"] = c.lm_head_efficiency;
    g["post_overhead_s"] = c.post_overhead_s;
    OJson res = OJson::array();
    for (const PointResidual& r : rec.fit.residuals) {
      res.push_back(OJson{{"model", r.model}, {"tp", r.tp}, {"embedding", r.embedding},
                          {"layer", r.layer}, {"post_process", r.post_process}});
    }
    g["residuals"] = res;
    g["rms_error"] = rec.fit.rms;
    g["worst_error"] = rec.fit.worst;
    if (!rec.holdout.empty()) {
      OJson h = OJson::object();
      for (const auto& [k, v] : rec.holdout) h[k] = v;
      g["holdout_max_error"] = h;
    }
    gpus[name] = g;
  }
  doc["gpus"] = gpus;
  return doc.dump(2) + "\n";
}

std::string profile_json(const GpuProfile& p) {
  OJson doc = OJson::object();
  doc["model"] = p.model;
  doc["gpu"] = p.gpu;
  doc["framework"] = to_string(p.flavour);
  doc["ends_per_micro_batch"] = p.ends_per_micro_batch;
  doc["sources"] = OJson::array({p.origin});
  OJson times = OJson::object();
  for (const auto& [tp, v] : p.layer_times_s) {
    times[std::to_string(tp)] = v;
  }
  doc["layer_times_s"] = times;
  return doc.dump(2) + "\n";
}

} // namespace zerosearch
