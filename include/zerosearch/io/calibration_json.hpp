#pragma once
// Fitted analytic parameters per GPU (profiledb/calibration.json; docs/analytic.md).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "zerosearch/model/analytic_profile.hpp"

namespace zerosearch {

/// One GPU's entry: the fit and the errors it leaves, for people and for the loader.
struct CalibrationRecord {
  CalibrationFit fit;
  /// The profile files the fit used.
  std::vector<std::string> profiles;
  /// Hold-out errors (max |relative error| of the held-out points), when computed.
  std::map<std::string, double> holdout;
};

[[nodiscard]] std::map<std::string, AnalyticCalibration>
parse_calibrations(const std::string& text, const std::string& origin);
/// An absent file is no calibration (every GPU uses its prior).
[[nodiscard]] std::map<std::string, AnalyticCalibration>
load_calibrations(const std::filesystem::path& file);

/// The file's text for `records`, keyed by GPU name.
[[nodiscard]] std::string calibration_json(const std::map<std::string, CalibrationRecord>& records);

/// A profile in the profiledb format (docs/profiledb.md) with "source": "analytic".
[[nodiscard]] std::string profile_json(const GpuProfile& profile);

} // namespace zerosearch
