#include "zerosearch/io/catalogs.hpp"

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"
#include "zerosearch/io/hardware_json.hpp"
#include "zerosearch/io/model_json.hpp"
#include "zerosearch/io/profiledb.hpp"

namespace zerosearch {

Catalogs load_catalogs(const std::filesystem::path& profiledb) {
  std::error_code ec;
  if (!std::filesystem::is_directory(profiledb, ec)) {
    throw InputError(fmt::format("profiledb folder '{}' does not exist or is not a folder",
                                 profiledb.string()));
  }
  return Catalogs{load_model_catalog(profiledb / "models.json"),
                  load_hardware_catalog(profiledb / "hardware.json"),
                  load_profile_db(profiledb / "profiles")};
}

} // namespace zerosearch
