#include "zerosearch/io/hardware_json.hpp"

#include <cstdint>
#include <tuple>

#include <fmt/format.h>

#include "zerosearch/io/json_util.hpp"
#include "zerosearch/core/error.hpp"

namespace zerosearch {

namespace {

using json_util::Json;

// Old names of the catalog keys renamed for their units (GB/s, not Gbit/s; docs/hardware.md),
// still read. The marker "units: old name" keeps the mechanical rename off these lines.
constexpr const char* kOldMemoryKey = "memory_gbps";           // units: old name
constexpr const char* kOldPerDirKey = "gbps_per_dir";          // units: old name
constexpr const char* kOldAllreduceKey = "allreduce_bus_gbps"; // units: old name

/// An optional key that, when present and not null, must be a positive number.
std::optional<double> optional_positive(const Json& j, const std::string& key,
                                        const std::string& where) {
  if (!j.contains(key) || j.at(key).is_null()) {
    return std::nullopt;
  }
  return json_util::get_positive_number(j, key, where);
}

std::string optional_string(const Json& j, const std::string& key, const std::string& where) {
  return j.contains(key) ? json_util::get_string(j, key, where) : std::string();
}

GpuBenchmark parse_benchmark(const Json& given, const std::string& where) {
  using namespace json_util;
  Json renamed;
  const Json& b = with_renamed_key(given, "allreduce_bus_GBps", kOldAllreduceKey, where, renamed);
  require_object(b, where);
  reject_unknown_keys(b, {"gemm_e_max", "gemm_x0_flops", "memory_efficiency",
                          "allreduce_bus_GBps", "source", "gemm_points", "dtype", "device"},
                      where);
  GpuBenchmark out;
  out.gemm_e_max = get_positive_number(b, "gemm_e_max", where);
  if (out.gemm_e_max > 1.0) {
    throw InputError(fmt::format("{}: 'gemm_e_max' must be at most 1, not {}", where,
                                 out.gemm_e_max));
  }
  out.gemm_x0_flops = get_positive_number(b, "gemm_x0_flops", where);
  out.memory_efficiency = get_positive_number(b, "memory_efficiency", where);
  if (out.memory_efficiency > 1.0) {
    throw InputError(fmt::format("{}: 'memory_efficiency' must be at most 1, not {}", where,
                                 out.memory_efficiency));
  }
  if (b.contains("allreduce_bus_GBps")) {
    const Json& ar = b.at("allreduce_bus_GBps");
    require_object(ar, where + ": allreduce_bus_GBps");
    for (const auto& [n, v] : ar.items()) {
      int gpus = 0;
      try {
        gpus = std::stoi(n);
      } catch (const std::exception&) {
        gpus = 0;
      }
      if (gpus < 2 || std::to_string(gpus) != n) {
        throw InputError(fmt::format("{}: allreduce_bus_GBps key '{}' must be a GPU count >= 2",
                                     where, n));
      }
      out.allreduce_bus_GBps[gpus] = get_positive_number(ar, n, where + ": allreduce_bus_GBps");
    }
  }
  out.source = optional_string(b, "source", where);
  return out;
}

MatmulBenchmark parse_mamf(const Json& m, const std::string& where) {
  using namespace json_util;
  require_object(m, where);
  reject_unknown_keys(m, {"bf16", "fp16", "fp8", "source"}, where);
  MatmulBenchmark out;
  out.bf16_tflops = optional_positive(m, "bf16", where);
  out.fp16_tflops = optional_positive(m, "fp16", where);
  out.fp8_tflops = optional_positive(m, "fp8", where);
  out.source = get_string(m, "source", where);
  return out;
}

/// The scale-up domain and the scale-out oversubscription (docs/hardware.md), both optional:
/// without them the node is the domain and the network has full bisection.
void parse_network(const Json& g, GpuSpec& spec, const std::string& where) {
  using namespace json_util;
  if (g.contains("scale_up_domain_gpus") && !g.at("scale_up_domain_gpus").is_null()) {
    const Json& v = g.at("scale_up_domain_gpus");
    const int node = spec.default_gpus_per_node;
    const std::int64_t n = v.is_number_integer() ? v.get<std::int64_t>() : 0;
    if (n < node || n % node != 0 || n > 1'000'000) {
      throw InputError(fmt::format("{}: 'scale_up_domain_gpus' must be a multiple of its "
                                   "gpus_per_node {} (whole nodes on one NVLink fabric), at most "
                                   "1000000, not {}",
                                   where, node, v.dump()));
    }
    spec.scale_up_domain_gpus = static_cast<int>(n);
  }
  if (g.contains("scale_out_oversubscription") && !g.at("scale_out_oversubscription").is_null()) {
    const double r = number_value(g.at("scale_out_oversubscription"),
                                  where + ": 'scale_out_oversubscription'");
    if (!(r >= 1.0 && r <= 1000.0)) {
      throw InputError(fmt::format("{}: 'scale_out_oversubscription' must be a number from 1 "
                                   "(full bisection) to 1000, not {}",
                                   where, r));
    }
    spec.scale_out_oversubscription = r;
  }
  spec.network_source = optional_string(g, "network_source", where);
}

void parse_specs(const Json& g, GpuSpec& spec, const std::string& where) {
  using namespace json_util;
  spec.has_specs = true;
  spec.gpu_class = get_string(g, "class", where);
  if (spec.gpu_class != "hbm-nvlink" && spec.gpu_class != "hbm-pcie" &&
      spec.gpu_class != "gddr-pcie") {
    throw InputError(fmt::format("{}: 'class' must be hbm-nvlink, hbm-pcie or gddr-pcie, not "
                                 "'{}'",
                                 where, spec.gpu_class));
  }
  const Json& peak = field(g, "peak_tflops", where);
  const std::string pw = where + ": peak_tflops";
  require_object(peak, pw);
  reject_unknown_keys(peak, {"fp32", "tf32", "fp16", "bf16", "fp8"}, pw);
  spec.peak_tflops.fp32 = get_positive_number(peak, "fp32", pw);
  spec.peak_tflops.tf32 = optional_positive(peak, "tf32", pw);
  spec.peak_tflops.fp16 = get_positive_number(peak, "fp16", pw);
  spec.peak_tflops.bf16 = optional_positive(peak, "bf16", pw);
  spec.peak_tflops.fp8 = optional_positive(peak, "fp8", pw);
  spec.memory_GBps = get_positive_number(g, "memory_GBps", where);
  const std::string iw = where + ": intra_node";
  Json renamed;
  const Json& intra =
      with_renamed_key(field(g, "intra_node", where), "GBps_per_dir", kOldPerDirKey, iw, renamed);
  require_object(intra, iw);
  reject_unknown_keys(intra, {"link", "p2p", "GBps_per_dir"}, iw);
  spec.intra_node.link = get_string(intra, "link", iw);
  spec.intra_node.p2p = get_bool(intra, "p2p", iw);
  spec.intra_node.GBps_per_dir = get_positive_number(intra, "GBps_per_dir", iw);
  spec.default_gpus_per_node = static_cast<int>(get_positive_int(g, "gpus_per_node", where));
  spec.inter_node_gbit_per_node = get_positive_number(g, "inter_node_gbit_per_node", where);
  spec.spec_source = get_string(g, "spec_source", where);
  spec.flash_attention_efficiency = optional_positive(g, "flash_attention_efficiency", where);
  spec.flash_attention2_efficiency = optional_positive(g, "flash_attention2_efficiency", where);
  if (g.contains("sfu_exp2") && !g.at("sfu_exp2").is_null()) {
    const Json& x = g.at("sfu_exp2");
    const std::string xw = where + ": sfu_exp2";
    require_object(x, xw);
    reject_unknown_keys(x, {"per_clock_per_sm", "tensor16_flops_per_clock_per_sm", "source"}, xw);
    spec.sfu_exp2 = SfuExp2{get_positive_number(x, "per_clock_per_sm", xw),
                            get_positive_number(x, "tensor16_flops_per_clock_per_sm", xw),
                            get_string(x, "source", xw)};
  }
  if (g.contains("sm_count") && !g.at("sm_count").is_null()) {
    spec.sm_count = static_cast<int>(get_positive_int(g, "sm_count", where));
  }
  parse_network(g, spec, where);
  if (g.contains("benchmark") && !g.at("benchmark").is_null()) {
    spec.benchmark = parse_benchmark(g.at("benchmark"), where + ": benchmark");
  }
  if (g.contains("mamf_tflops") && !g.at("mamf_tflops").is_null()) {
    spec.mamf = parse_mamf(g.at("mamf_tflops"), where + ": mamf_tflops");
    for (const auto& [dtype, v, top] :
         {std::tuple{"bf16", spec.mamf->bf16_tflops, spec.peak_tflops.bf16},
          std::tuple{"fp16", spec.mamf->fp16_tflops, spec.peak_tflops.fp16},
          std::tuple{"fp8", spec.mamf->fp8_tflops, spec.peak_tflops.fp8}}) {
      if (v && (!top || *v > *top)) {
        throw InputError(fmt::format("{}: mamf_tflops: '{}' must be at most the peak_tflops "
                                     "'{}' of the GPU, not {}",
                                     where, dtype, dtype, *v));
      }
    }
  }
}

PriceQuote parse_price(const Json& q, const std::string& where) {
  using namespace json_util;
  require_object(q, where);
  reject_unknown_keys(q, {"usd_per_gpu_hour", "source", "date"}, where);
  return {get_positive_number(q, "usd_per_gpu_hour", where), get_string(q, "source", where),
          get_string(q, "date", where)};
}

GpuPower parse_power(const Json& p, const std::string& where) {
  using namespace json_util;
  require_object(p, where);
  reject_unknown_keys(p, {"tdp", "idle", "source"}, where);
  GpuPower out{get_positive_number(p, "tdp", where), get_positive_number(p, "idle", where),
               get_string(p, "source", where)};
  if (out.idle_w >= out.tdp_w) {
    throw InputError(fmt::format("{}: 'idle' must be below 'tdp' ({} W), not {}", where,
                                 out.tdp_w, out.idle_w));
  }
  return out;
}

} // namespace

HardwareCatalog parse_hardware_catalog(const std::string& text, const std::string& origin) {
  using namespace json_util;
  const Json doc = parse(text, origin);
  require_object(doc, origin);
  reject_unknown_keys(doc, {"format", "comment", "gpus", "bandwidth_sets", "reliability"},
                      origin);
  if (get_string(doc, "format", origin) != "zerosearch-hardware/1") {
    throw InputError(fmt::format("{}: 'format' must be \"zerosearch-hardware/1\"", origin));
  }
  HardwareCatalog catalog;
  const Json& gpus = field(doc, "gpus", origin);
  require_object(gpus, origin + ": gpus");
  for (const auto& [name, given] : gpus.items()) {
    const std::string where = fmt::format("{}: gpu '{}'", origin, name);
    require_object(given, where);
    Json renamed;
    const Json& g = with_renamed_key(given, "memory_GBps", kOldMemoryKey, where, renamed);
    reject_unknown_keys(g, {"memory_gib", "price_per_gpu_hour_usd", "comment", "class",
                            "peak_tflops", "memory_GBps", "intra_node", "gpus_per_node",
                            "inter_node_gbit_per_node", "flash_attention_efficiency",
                            "flash_attention2_efficiency", "sfu_exp2",
                            "price_source", "price_date", "spec_source", "benchmark",
                            "mamf_tflops", "sm_count", "reserved_price", "spot_price",
                            "power_w", "scale_up_domain_gpus", "scale_out_oversubscription",
                            "network_source"},
                        where);
    GpuSpec spec;
    spec.name = name;
    const Json& mem = field(g, "memory_gib", where);
    if (!mem.is_null()) {
      spec.memory_gib = get_positive_number(g, "memory_gib", where);
    }
    // Prices are per GPU-hour: a node costs the GPU price times its GPUs (docs/hardware.md).
    spec.price_per_gpu_hour_usd =
        number_value(field(g, "price_per_gpu_hour_usd", where), where + ": 'price_per_gpu_hour_usd'");
    spec.price_source = optional_string(g, "price_source", where);
    spec.price_date = optional_string(g, "price_date", where);
    // An entry either is the original's (memory and node price only) or has every figure the
    // analytic profiles need.
    if (g.contains("peak_tflops") || g.contains("class") || g.contains("memory_GBps") ||
        g.contains("intra_node")) {
      parse_specs(g, spec, where);
    } else if (g.contains("scale_up_domain_gpus") || g.contains("scale_out_oversubscription")) {
      throw InputError(fmt::format("{}: 'scale_up_domain_gpus' and 'scale_out_oversubscription' "
                                   "need the GPU's specifications (class, gpus_per_node, ...)",
                                   where));
    }
    for (const auto& [key, out] : {std::pair{"reserved_price", &spec.reserved_price},
                                   std::pair{"spot_price", &spec.spot_price}}) {
      if (g.contains(key) && !g.at(key).is_null()) {
        *out = parse_price(g.at(key), fmt::format("{}: {}", where, key));
      }
    }
    if (g.contains("power_w") && !g.at("power_w").is_null()) {
      spec.power = parse_power(g.at("power_w"), where + ": power_w");
    }
    catalog.gpus.emplace(name, std::move(spec));
  }
  if (doc.contains("reliability")) {
    const Json& rel = doc.at("reliability");
    require_object(rel, origin + ": reliability");
    for (const auto& [gpu_class, r] : rel.items()) {
      const std::string where = fmt::format("{}: reliability '{}'", origin, gpu_class);
      require_object(r, where);
      reject_unknown_keys(r, {"failures_per_gpu_hour", "source"}, where);
      catalog.failure_rates[gpu_class] = {get_positive_number(r, "failures_per_gpu_hour", where),
                                          get_string(r, "source", where)};
    }
  }
  if (!doc.contains("bandwidth_sets")) {
    return catalog;
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
