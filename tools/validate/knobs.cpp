#include "validate/knobs.hpp"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace zerosearch::validate {

namespace {

bool listed(const std::vector<std::string>& list, const std::string& v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

std::vector<std::string> strings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  for (const auto& v : j.at(key)) out.push_back(v.get<std::string>());
  return out;
}

} // namespace

int Knob::shipped_index() const {
  const auto it = std::find(candidates.begin(), candidates.end(), shipped);
  return static_cast<int>(it - candidates.begin());
}

bool Knob::applies(const Case& c) const {
  if (!listed(frameworks, c.framework) || !listed(gpus, c.catalog_gpu) ||
      !listed(dp_methods, c.method)) {
    return false;
  }
  return unstated.empty() || c.row == nullptr || c.row->at(unstated).empty();
}

std::vector<Knob> load_knobs(const std::filesystem::path& file) {
  std::vector<Knob> knobs;
  std::ifstream in(file);
  if (!in) return knobs;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
    for (const auto& k : j.at("knobs")) {
      Knob knob;
      knob.flag = k.at("flag").get<std::string>();
      knob.candidates = strings(k, "candidates");
      knob.shipped = k.at("shipped").get<std::string>();
      const nlohmann::json rows = k.value("rows", nlohmann::json::object());
      knob.frameworks = strings(rows, "framework");
      knob.gpus = strings(rows, "catalog_gpu");
      knob.dp_methods = strings(rows, "dp_method");
      knob.unstated = rows.value("unstated", "");
      knob.why = k.value("why", "");
      if (knob.flag.rfind("--", 0) != 0 || knob.candidates.empty() ||
          knob.shipped_index() == static_cast<int>(knob.candidates.size())) {
        throw BadInput(fmt::format("{}: knob '{}' needs a --flag and a shipped value among its "
                                   "candidates", file.string(), knob.flag));
      }
      knobs.push_back(std::move(knob));
    }
  } catch (const nlohmann::json::exception& e) {
    throw BadInput(fmt::format("{}: {}", file.string(), e.what()));
  }
  return knobs;
}

} // namespace zerosearch::validate
