#include "zerosearch/io/catalogs.hpp"

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/calibration_json.hpp"
#include "zerosearch/io/hardware_json.hpp"
#include "zerosearch/io/model_json.hpp"
#include "zerosearch/io/profiledb.hpp"

namespace zerosearch {

Catalogs load_catalogs(const std::filesystem::path& profiledb,
                       const std::filesystem::path& hardware_file,
                       const std::filesystem::path& calibration_file) {
  std::error_code ec;
  if (!std::filesystem::is_directory(profiledb, ec)) {
    throw InputError(fmt::format("profiledb folder '{}' does not exist or is not a folder",
                                 profiledb.string()));
  }
  Catalogs c{load_model_catalog(profiledb / "models.json"),
             load_hardware_catalog(profiledb / "hardware.json"),
             load_profile_db(profiledb / "profiles"),
             load_calibrations(profiledb / "calibration.json")};
  if (!hardware_file.empty()) {
    c.hardware = merge_catalogs(std::move(c.hardware), load_hardware_catalog(hardware_file));
  }
  if (!calibration_file.empty()) {
    if (!std::filesystem::is_regular_file(calibration_file, ec)) {
      throw InputError(fmt::format("calibration file '{}' does not exist or is not a file",
                                   calibration_file.string()));
    }
    for (auto& [gpu, cal] : load_calibrations(calibration_file)) {
      c.calibrations[gpu] = std::move(cal);
    }
  }
  return c;
}

} // namespace zerosearch
