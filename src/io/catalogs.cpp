#include "zerosearch/io/catalogs.hpp"

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/calibration_json.hpp"
#include "zerosearch/io/hardware_json.hpp"
#include "zerosearch/io/model_json.hpp"
#include "zerosearch/io/profiledb.hpp"

namespace zerosearch {

namespace {

void require_folder(const std::filesystem::path& profiledb) {
  std::error_code ec;
  if (!std::filesystem::is_directory(profiledb, ec)) {
    throw InputError(fmt::format("profiledb folder '{}' does not exist or is not a folder",
                                 profiledb.string()));
  }
}

// The catalogs read in the order their errors are reported: models, hardware, profiles,
// calibrations.
Catalogs finish_catalogs(const std::filesystem::path& profiledb, ModelCatalog models,
                         HardwareCatalog hardware,
                         const std::filesystem::path& calibration_file) {
  Catalogs c{std::move(models), std::move(hardware), load_profile_db(profiledb / "profiles"),
             load_calibrations(profiledb / "calibration.json")};
  if (!calibration_file.empty()) {
    std::error_code ec;
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

} // namespace

HardwareCatalog load_hardware(const std::filesystem::path& profiledb,
                              const std::filesystem::path& hardware_file) {
  require_folder(profiledb);
  HardwareCatalog hardware = load_hardware_catalog(profiledb / "hardware.json");
  if (!hardware_file.empty()) {
    hardware = merge_catalogs(std::move(hardware), load_hardware_catalog(hardware_file));
  }
  return hardware;
}

Catalogs load_catalogs(const std::filesystem::path& profiledb,
                       const std::filesystem::path& hardware_file,
                       const std::filesystem::path& calibration_file) {
  require_folder(profiledb);
  ModelCatalog models = load_model_catalog(profiledb / "models.json");
  return finish_catalogs(profiledb, std::move(models), load_hardware(profiledb, hardware_file),
                         calibration_file);
}

Catalogs load_catalogs(const std::filesystem::path& profiledb, HardwareCatalog hardware,
                       const std::filesystem::path& calibration_file) {
  require_folder(profiledb);
  return finish_catalogs(profiledb, load_model_catalog(profiledb / "models.json"),
                         std::move(hardware), calibration_file);
}

} // namespace zerosearch
