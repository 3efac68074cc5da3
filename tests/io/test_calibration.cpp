#include <catch2/catch.hpp>

#include <cmath>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/calibration_json.hpp"
#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/io/json_util.hpp"
#include "zerosearch/io/profiledb.hpp"

using namespace zerosearch;

namespace {

const Catalogs& catalogs() {
  static const Catalogs c = load_catalogs(ZEROSEARCH_TEST_PROFILEDB);
  return c;
}

} // namespace

TEST_CASE("the shipped calibration reproduces every measured point within 15 %",
          "[analytic][calibration]") {
  const Catalogs& c = catalogs();
  REQUIRE(c.calibrations.size() == 3);
  std::size_t checked = 0;
  double worst = 0.0;
  for (const GpuProfile& p : c.profiles.all()) {
    const GpuSpec& gpu = c.hardware.gpu(p.gpu);
    const AnalyticCalibration cal = calibration_for(c, gpu);
    CHECK(cal.calibrated);
    for (const PointResidual& r : residuals(gpu, cal, measured_points(p, c.models.find(p.model)))) {
      INFO(p.origin << " tp " << r.tp);
      for (const double e : {r.embedding, r.layer, r.post_process}) {
        CHECK(std::abs(e) <= 0.15);
        worst = std::max(worst, std::abs(e));
        ++checked;
      }
    }
  }
  CHECK(checked == 36); // 4 profiles x 3 tp x (embedding, layer, post-process)
  CHECK(worst > 0.01);  // a fit, not a copy of the measurements
}

TEST_CASE("refitting the measured profiles gives the shipped calibration",
          "[analytic][calibration]") {
  const Catalogs& c = catalogs();
  std::map<std::string, std::vector<MeasuredPoint>> points;
  for (const GpuProfile& p : c.profiles.all()) {
    const auto pts = measured_points(p, c.models.find(p.model));
    points[p.gpu].insert(points[p.gpu].end(), pts.begin(), pts.end());
  }
  for (const auto& [name, pts] : points) {
    INFO(name);
    const CalibrationFit fit = fit_calibration(c.hardware.gpu(name), pts);
    const AnalyticCalibration& shipped = c.calibrations.at(name);
    CHECK(fit.calibration.gemm_e_max == Approx(shipped.gemm_e_max).epsilon(1e-3));
    CHECK(fit.calibration.layer_overhead_s == Approx(shipped.layer_overhead_s).epsilon(1e-3));
    CHECK(fit.calibration.tp_allreduce.at(2).bus_bytes_per_s ==
          Approx(shipped.tp_allreduce.at(2).bus_bytes_per_s).epsilon(1e-3));
    CHECK(fit.rms < 0.1);
  }
}

TEST_CASE("GPUs without measurements use their class prior, uncalibrated",
          "[analytic][calibration]") {
  const AnalyticCalibration h = calibration_for(catalogs(), catalogs().hardware.gpu("H100-SXM"));
  CHECK_FALSE(h.calibrated);
  CHECK(h.source == "class prior hbm-nvlink");
  CHECK(h.tp_allreduce.at(8).bus_bytes_per_s == Approx(0.8 * 450e9));
}

TEST_CASE("a written analytic profile loads as a measured one would", "[analytic][calibration]") {
  const Catalogs& c = catalogs();
  const GpuSpec& gpu = c.hardware.gpu("T4");
  const GpuProfile p = analytic_profile(c.models.find("gpt2XL"), gpu, calibration_for(c, gpu),
                                        Flavour::megatron, {1, 2, 4}, Dtype::fp16);
  const GpuProfile back = parse_profile(profile_json(p), "t4.json");
  CHECK(back.model == "gpt2XL");
  CHECK(back.gpu == "T4");
  CHECK(back.flavour == Flavour::megatron);
  CHECK(back.layer_times_s == p.layer_times_s);
}

TEST_CASE("calibration file errors name the file, GPU and key", "[calibration]") {
  CHECK_THROWS_WITH(parse_calibrations(R"({"format": "zerosearch-calibration/1", "gpus": {"A10":
      {"source": "s", "gemm_e_max": -0.4}}})", "cal.json"),
                    "cal.json: gpu 'A10': 'gemm_e_max' must be a positive number, not -0.4");
  CHECK_THROWS_WITH(parse_calibrations(R"({"format": "x", "gpus": {}})", "cal.json"),
                    "cal.json: 'format' must be \"zerosearch-calibration/1\"");
}

TEST_CASE("a calibration file with the old key name of bus_GBps reads as with the new",
          "[calibration]") {
  // Lines holding an old key carry the marker "units: old name" (the issue 26 rename skips them).
  const std::string now =
      json_util::read_file(ZEROSEARCH_TEST_PROFILEDB "/calibration.json", "calibration");
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = now;
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
      s.replace(at, from.size(), to);
    }
    return s;
  };
  const std::string old = replaced("\"bus_GBps\"", "\"bus_gbps\""); // units: old name
  REQUIRE(old != now);
  const auto a = parse_calibrations(now, "cal.json");
  const auto b = parse_calibrations(old, "cal.json");
  REQUIRE(a.size() == b.size());
  for (const auto& [gpu, c] : a) {
    REQUIRE(b.at(gpu).tp_allreduce.size() == c.tp_allreduce.size());
    for (const auto& [n, fit] : c.tp_allreduce) {
      CHECK(b.at(gpu).tp_allreduce.at(n).bus_bytes_per_s == fit.bus_bytes_per_s);
    }
  }
  CHECK_THROWS_WITH(parse_calibrations(replaced("\"bus_GBps\"", "\"bus_gbps\": 1, \"bus_GBps\""), // units: old name
                                       "cal.json"),
                    Catch::Contains("give 'bus_GBps' or its old name 'bus_gbps', not both")); // units: old name
}
