#include "zerosearch/io/hardware_json.hpp"

#include <fmt/format.h>

#include "zerosearch/io/json_util.hpp"
#include "zerosearch/core/error.hpp"

namespace zerosearch {

HardwareCatalog parse_hardware_catalog(const std::string& text, const std::string& origin) {
  using namespace json_util;
  const Json doc = parse(text, origin);
  require_object(doc, origin);
  reject_unknown_keys(doc, {"format", "gpus", "bandwidth_sets"}, origin);
  if (get_string(doc, "format", origin) != "zerosearch-hardware/1") {
    throw InputError(fmt::format("{}: 'format' must be \"zerosearch-hardware/1\"", origin));
  }
  HardwareCatalog catalog;
  const Json& gpus = field(doc, "gpus", origin);
  require_object(gpus, origin + ": gpus");
  for (const auto& [name, g] : gpus.items()) {
    const std::string where = fmt::format("{}: gpu '{}'", origin, name);
    require_object(g, where);
    reject_unknown_keys(g, {"memory_gib", "price_per_node_hour_usd"}, where);
    GpuSpec spec;
    spec.name = name;
    const Json& mem = field(g, "memory_gib", where);
    if (!mem.is_null()) {
      spec.memory_gib = get_positive_number(g, "memory_gib", where);
    }
    spec.price_per_node_hour_usd =
        number_value(field(g, "price_per_node_hour_usd", where), where + ": 'price_per_node_hour_usd'");
    catalog.gpus.emplace(name, std::move(spec));
  }
  const Json& sets = field(doc, "bandwidth_sets", origin);
  require_object(sets, origin + ": bandwidth_sets");
  for (const auto& [name, s] : sets.items()) {
    const std::string where = fmt::format("{}: bandwidth set '{}'", origin, name);
    require_object(s, where);
    reject_unknown_keys(s, {"description", "links_bps"}, where);
    BandwidthSet set;
    set.name = name;
    set.description = get_string(s, "description", where);
    const Json& links = field(s, "links_bps", where);
    require_object(links, where + ": links_bps");
    for (const auto& [gpu, l] : links.items()) {
      const std::string lw = fmt::format("{}: links of '{}'", where, gpu);
      require_object(l, lw);
      reject_unknown_keys(l, {"inter_node", "intra_node"}, lw);
      if (catalog.gpus.find(gpu) == catalog.gpus.end()) {
        throw InputError(fmt::format("{}: '{}' is not in gpus (known: {})", where, gpu,
                                     catalog.gpu_names()));
      }
      set.links.emplace(gpu, LinkBandwidth{get_positive_number(l, "inter_node", lw),
                                           get_positive_number(l, "intra_node", lw)});
    }
    catalog.bandwidth_sets.emplace(name, std::move(set));
  }
  return catalog;
}

HardwareCatalog load_hardware_catalog(const std::filesystem::path& file) {
  return parse_hardware_catalog(json_util::read_file(file, "hardware catalog"), file.string());
}

} // namespace zerosearch
