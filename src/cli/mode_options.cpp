#include "mode_options.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"

namespace zerosearch::cli {

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : text) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

} // namespace

std::vector<std::string> check_mode_flags(const Options& o) {
  std::vector<std::string> notes;
  const char* mode = o.search_space ? "--search_space"
                     : o.exhaustive ? "--exhaustive"
                     : o.pareto     ? "--pareto"
                     : !o.write_profile.empty() ? "--write_profile"
                                                : "the default search";
  if (o.add_exp_name.find('/') != std::string::npos ||
      o.add_exp_name.find('\\') != std::string::npos ||
      o.add_exp_name.find("..") != std::string::npos) {
    throw InputError(fmt::format("--add_exp_name '{}' is a part of a file name: no '/', '\\' "
                                 "or '..'",
                                 o.add_exp_name));
  }
  // Flags zerosearch added: an error where they do not apply.
  if (o.search_space || !o.write_profile.empty()) {
    // --no_clobber applies to --write_profile's file; --search_space writes none.
    const std::pair<const char*, bool> outputs[] = {
        {"-o", o.output_given}, {"--record", o.record}, {"--top", !o.top.empty()},
        {"--feasible", o.feasible}, {"--no_clobber", o.no_clobber && o.search_space}};
    for (const auto& [flag, given] : outputs) {
      if (given) {
        throw InputError(fmt::format("{} does not apply to {}: it writes no ranked rows{}", flag,
                                     mode,
                                     o.search_space ? " (its table goes to standard output; "
                                                      "--format csv > FILE saves it)"
                                                    : ""));
      }
    }
  }
  if (o.seed_given && o.search_method != "ga") {
    throw InputError(fmt::format("--seed applies to --search_method ga only, not '{}'",
                                 o.search_method));
  }
  // Flags the original accepted and ignored: a note.
  if (o.pareto && o.comm_type_given) {
    notes.push_back(fmt::format("--comm_type {} does not apply to --pareto, which uses the "
                                "'pareto' link set",
                                o.comm_type));
  }
  if (!o.add_exp_name.empty() && !o.record) {
    notes.emplace_back("--add_exp_name names the --record file; without --record it changes "
                       "nothing");
  }
  if (o.num_node_given && o.node_type_counts_given && !o.pareto) {
    notes.emplace_back("--num_node does not apply beside --node_type_num_node, which gives "
                       "the node counts");
  }
  if (o.pareto && o.exhaustive) {
    throw InputError("--pareto and --exhaustive cannot be combined; choose one mode");
  }
  if (o.search_space && o.exhaustive) {
    throw InputError("--search_space and --exhaustive cannot be combined; choose one mode");
  }
  if (!o.exhaustive) {
    const std::pair<const char*, const std::string*> point_flags[] = {
        {"--dp_method", &o.dp_method}, {"--tp", &o.tp},
        {"--pp", &o.pp},               {"--dp", &o.dp},
        {"--mbs", &o.mbs},             {"--partition", &o.partition},
        {"--placement", &o.placement}};
    for (const auto& [flag, value] : point_flags) {
      if (!value->empty()) {
        throw InputError(fmt::format("{} describes one design point and needs --exhaustive", flag));
      }
    }
  }
  {
    const std::pair<const char*, const std::string*> plan_flags[] = {
        {"--emit", &o.emit}, {"--rank", &o.rank}, {"--timeline", &o.timeline}, {"--html", &o.html}};
    for (const auto& [flag, value] : plan_flags) {
      if (value->empty()) {
        continue;
      }
      if (o.search_space) {
        throw InputError(fmt::format("{} cannot be combined with --search_space", flag));
      }
      if (o.pareto && std::string(flag) != "--html") {
        throw InputError(fmt::format("{} cannot be combined with --pareto (use it with a search "
                                     "or --exhaustive)",
                                     flag));
      }
    }
    if (!o.rank.empty() && o.exhaustive) {
      throw InputError("--rank picks a row of a search; --exhaustive has one plan");
    }
    if (!o.rank.empty() && o.emit.empty() && o.timeline.empty()) {
      throw InputError("--rank needs --emit or --timeline");
    }
  }
  if (!o.pareto || o.search_space) {
    const std::pair<const char*, const std::string*> sweep_flags[] = {
        {"--max_step_time", &o.max_step_time},
        {"--max_price_per_step", &o.max_price_per_step},
        {"--budget", &o.budget},
        {"--plot", &o.plot}};
    for (const auto& [flag, value] : sweep_flags) {
      if (!value->empty()) {
        throw InputError(o.pareto ? fmt::format("{} cannot be combined with --search_space", flag)
                                  : fmt::format("{} needs --pareto", flag));
      }
    }
  }
  return notes;
}

double parse_positive_real(const std::string& flag, const std::string& text) {
  double v = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v) || v <= 0.0) {
    throw InputError(fmt::format("{} '{}' is not a number > 0", flag, text));
  }
  return v;
}

DesignPoint parse_design_point(const Options& o, int world_size, int global_batch, int num_layers,
                               int gpus_per_node) {
  const std::pair<const char*, const std::string*> required[] = {
      {"--dp_method", &o.dp_method}, {"--tp", &o.tp}, {"--pp", &o.pp},
      {"--dp", &o.dp},               {"--mbs", &o.mbs}};
  for (const auto& [flag, value] : required) {
    if (value->empty()) {
      throw InputError(fmt::format("--exhaustive needs {} (give --dp_method, --tp, --pp, --dp "
                                   "and --mbs)",
                                   flag));
    }
  }
  DesignPoint p;
  p.method = parse_dp_method(o.dp_method);
  p.tp = static_cast<int>(parse_int("--tp", o.tp, 1, 1'000'000));
  p.pp = static_cast<int>(parse_int("--pp", o.pp, 1, 1'000'000));
  p.dp = static_cast<int>(parse_int("--dp", o.dp, 1, 1'000'000));
  p.mbs = static_cast<int>(parse_int("--mbs", o.mbs, 1, 1'000'000));
  if (const auto why = invalid_reason(p, world_size, global_batch, num_layers, gpus_per_node)) {
    throw InputError(fmt::format("invalid design point {} tp {} pp {} dp {} mbs {}: {}",
                                 to_string(p.method), p.tp, p.pp, p.dp, p.mbs, *why));
  }
  p.num_micro_batches = global_batch / (p.dp * p.mbs);
  return p;
}

std::vector<int> parse_partition(const std::string& text, int pp, int layers) {
  const auto parts = split(text, ',');
  if (static_cast<int>(parts.size()) != pp) {
    throw InputError(fmt::format("--partition '{}' has {} entries but pp is {}; give one layer "
                                 "count per stage",
                                 text, parts.size(), pp));
  }
  std::vector<int> out;
  long long sum = 0;
  for (const auto& part : parts) {
    int v = 0;
    const char* end = part.data() + part.size();
    const auto [ptr, ec] = std::from_chars(part.data(), end, v);
    if (part.empty() || ec != std::errc() || ptr != end || v < 1) {
      throw InputError(fmt::format("--partition '{}': '{}' is not a whole number >= 1 (every "
                                   "stage holds at least one layer)",
                                   text, part));
    }
    out.push_back(v);
    sum += v;
  }
  if (sum != layers) {
    throw InputError(fmt::format("--partition '{}' sums to {} but the model has {} pipeline "
                                 "layers (transformer layers + embedding + post_process)",
                                 text, sum, layers));
  }
  return out;
}

Placement parse_placement(const std::string& text, const Cluster& cluster) {
  const auto names = split(text, ',');
  if (static_cast<int>(names.size()) != cluster.num_nodes()) {
    throw InputError(fmt::format("--placement '{}' names {} nodes but the cluster has {}", text,
                                 names.size(), cluster.num_nodes()));
  }
  Placement out;
  std::vector<int> counts(cluster.groups.size(), 0);
  for (const auto& name : names) {
    int found = -1;
    for (std::size_t g = 0; g < cluster.groups.size(); ++g) {
      if (cluster.groups[g].gpu == name) {
        found = static_cast<int>(g);
      }
    }
    if (found < 0) {
      std::string allowed;
      for (const auto& g : cluster.groups) {
        allowed += allowed.empty() ? g.gpu : ", " + g.gpu;
      }
      throw InputError(fmt::format("--placement '{}': '{}' is not a node type of the cluster "
                                   "(allowed: {})",
                                   text, name, allowed));
    }
    ++counts[static_cast<std::size_t>(found)];
    out.push_back(found);
  }
  for (std::size_t g = 0; g < cluster.groups.size(); ++g) {
    if (counts[g] != cluster.groups[g].count) {
      throw InputError(fmt::format("--placement '{}' has {} {} nodes but the cluster has {}", text,
                                   counts[g], cluster.groups[g].gpu, cluster.groups[g].count));
    }
  }
  return out;
}

} // namespace zerosearch::cli
