#include "zerosearch/io/profiledb.hpp"

#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include "zerosearch/io/json_util.hpp"
#include "zerosearch/core/error.hpp"

namespace zerosearch {

GpuProfile parse_profile(const std::string& text, const std::string& origin) {
  using namespace json_util;
  const Json doc = parse(text, origin);
  require_object(doc, origin);
  reject_unknown_keys(doc,
                      {"model", "gpu", "framework", "ends_per_micro_batch", "sources",
                       "layer_times_s"},
                      origin);
  GpuProfile p;
  p.origin = origin;
  p.model = get_string(doc, "model", origin);
  p.gpu = get_string(doc, "gpu", origin);
  const std::string framework = get_string(doc, "framework", origin);
  if (framework == "megatron") {
    p.flavour = Flavour::megatron;
  } else if (framework == "deepspeed") {
    p.flavour = Flavour::deepspeed;
  } else {
    throw InputError(fmt::format("{}: unknown framework '{}' (allowed: megatron, deepspeed)",
                                 origin, framework));
  }
  p.ends_per_micro_batch = get_bool(doc, "ends_per_micro_batch", origin);
  if (const auto it = doc.find("sources"); it != doc.end() && !it->is_array()) {
    throw InputError(fmt::format("{}: 'sources' must be an array of file names", origin));
  }
  const Json& times = field(doc, "layer_times_s", origin);
  require_object(times, origin + ": layer_times_s");
  for (const auto& [key, arr] : times.items()) {
    int tp = 0;
    const auto* end = key.data() + key.size();
    const auto [ptr, ec] = std::from_chars(key.data(), end, tp);
    if (ec != std::errc() || ptr != end || tp <= 0) {
      throw InputError(fmt::format(
          "{}: layer_times_s key '{}' must be a tensor-parallel degree (a positive integer)",
          origin, key));
    }
    const std::string where = fmt::format("{}: layer_times_s[\"{}\"]", origin, key);
    if (!arr.is_array() || arr.size() < 3) {
      throw InputError(fmt::format("{} must be an array of at least 3 layer times", where));
    }
    std::vector<double> values;
    values.reserve(arr.size());
    for (std::size_t i = 0; i < arr.size(); ++i) {
      values.push_back(number_value(arr[i], fmt::format("{}[{}]", where, i)));
    }
    p.layer_times_s.emplace(tp, std::move(values));
  }
  // The arrays must agree. Blame the odd one out (not merely the one read after it); when
  // there is no majority, name every length.
  std::map<std::size_t, int> lengths;
  for (const auto& [tp, v] : p.layer_times_s) {
    ++lengths[v.size()];
  }
  if (lengths.size() > 1) {
    std::size_t common = 0;
    int most = 0;
    bool tie = false;
    for (const auto& [length, count] : lengths) {
      tie = count == most || (count < most && tie);
      if (count > most) {
        most = count;
        common = length;
        tie = false;
      }
    }
    if (!tie) {
      for (const auto& [tp, v] : p.layer_times_s) {
        if (v.size() != common) {
          throw InputError(fmt::format(
              "{}: layer_times_s[\"{}\"] has {} layers but the other tp degrees have {}", origin,
              tp, v.size(), common));
        }
      }
    }
    std::string each;
    for (const auto& [tp, v] : p.layer_times_s) {
      each += fmt::format("{}tp {} has {}", each.empty() ? "" : ", ", tp, v.size());
    }
    throw InputError(fmt::format("{}: the layer_times_s arrays disagree on the layer count ({})",
                                 origin, each));
  }
  if (p.layer_times_s.empty()) {
    throw InputError(fmt::format("{}: layer_times_s has no tensor-parallel degree", origin));
  }
  return p;
}

ProfileDb load_profile_db(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw InputError(fmt::format("profile folder '{}' does not exist or is not a folder",
                                 dir.string()));
  }
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json") {
      files.push_back(it->path());
    }
  }
  if (ec) {
    throw InputError(fmt::format("cannot list profile folder '{}': {}", dir.string(), ec.message()));
  }
  std::sort(files.begin(), files.end());
  ProfileDb db;
  for (const auto& f : files) {
    db.add(parse_profile(json_util::read_file(f, "profile"), f.string()));
  }
  if (db.all().empty()) {
    throw InputError(fmt::format("profile folder '{}' has no *.json profiles", dir.string()));
  }
  return db;
}

} // namespace zerosearch
