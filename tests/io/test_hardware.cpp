#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/io/hardware_json.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/core/hardware.hpp"

using namespace zerosearch;

namespace {

std::string hardware(const std::string& gpu = R"({"memory_gib": 24, "price_per_gpu_hour_usd": 1.4})",
                     const std::string& links = R"({"inter_node": 1e9, "intra_node": 2e9})") {
  return R"({"format": "zerosearch-hardware/1", "gpus": {"A10": )" + gpu +
         R"(}, "bandwidth_sets": {"ib": {"description": "d", "links_bps": {"A10": )" + links +
         "}}}}";
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_hardware_catalog(text, "hardware.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("the shipped hardware catalog loads", "[hardware]") {
  const HardwareCatalog c = load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  CHECK(c.gpu("A10").memory_gib == Approx(22.2));
  CHECK(c.bandwidth_set("ib").links.at("A6000").inter_node_bits_per_s == 120e9);
  // The original's figures the goldens use, unchanged.
  CHECK(*c.gpu("A6000").memory_gib == 48.0);
  CHECK(*c.gpu("A100").memory_gib == 48.0);
  CHECK(*c.gpu("RTX3090").memory_gib == 23.06);
  // Prices are per GPU; a 4-GPU node of the original's entries costs exactly its node price.
  CHECK(c.gpu("A10").node_price_per_hour_usd(4) == 1.4);
  CHECK(c.gpu("A6000").node_price_per_hour_usd(4) == 16.200124);
  CHECK(c.gpu("A100").node_price_per_hour_usd(4) == 32.7726);
  CHECK(c.gpu("RTX3090").node_price_per_hour_usd(4) == 16.288);
  CHECK(c.gpu("L4").node_price_per_hour_usd(4) == 13.3504);
  CHECK(c.gpu("H100").node_price_per_hour_usd(4) == 98.32);
  // 32 A10 GPUs cost the same as 8 nodes of 4 and as 4 nodes of 8.
  CHECK(8 * c.gpu("A10").node_price_per_hour_usd(4) == 4 * c.gpu("A10").node_price_per_hour_usd(8));
  // Every GPU of issue 9 with the figures the analytic profiles need.
  for (const char* name : {"A10", "A10G", "A6000", "RTX3090", "RTX4090", "L4", "L40S", "T4",
                           "V100-16GB", "V100-32GB", "A100-40GB", "A100-80GB", "H100-SXM",
                           "H100-SXM-96GB", "H100-PCIe", "H200", "B200", "B300", "GB200",
                           "GB300", "MI250X", "MI300X"}) {
    INFO(name);
    const GpuSpec& g = c.gpu(name);
    CHECK(g.name == name);
    CHECK(g.has_specs);
    CHECK(g.memory_gib.value_or(0.0) > 10.0);
    CHECK(g.peak_tflops.fp16.value_or(0.0) > g.peak_tflops.fp32.value_or(1e9));
    CHECK(g.memory_GBps >= 300.0);
    CHECK(g.intra_node.GBps_per_dir >= 16.0);
    CHECK(g.default_gpus_per_node >= 4);
    CHECK(g.inter_node_gbit_per_node >= 50.0);
    CHECK(g.node_price_per_hour_usd(8) > 0.0);
    CHECK_FALSE(g.spec_source.empty());
    // Every price per GPU-hour says where and when it was read.
    CHECK(g.price_per_gpu_hour_usd > 0.0);
    CHECK_FALSE(g.price_source.empty());
    CHECK_FALSE(g.price_date.empty());
  }
  // Dense figures, not sparse: H100 SXM bf16 989.4 TFLOP/s, fp8 twice that.
  CHECK(*c.gpu("H100-SXM").peak_tflops.bf16 == 989.4);
  CHECK(*c.gpu("H100-SXM").peak_tflops.fp8 == 1978.9);
  CHECK_FALSE(c.gpu("V100-16GB").peak_tflops.bf16.has_value());
  CHECK_FALSE(c.gpu("RTX4090").intra_node.p2p);
}

TEST_CASE("unknown node types and comm types list the known ones", "[hardware]") {
  const HardwareCatalog c = parse_hardware_catalog(hardware(), "hardware.json");
  CHECK_THROWS_WITH(c.gpu("B200"), "unknown node type 'B200' (known: A10)");
  CHECK_THROWS_WITH(c.bandwidth_set("eth"), "unknown comm type 'eth' (allowed: ib)");
}

TEST_CASE("GPU names are looked up case-insensitively", "[hardware]") {
  const HardwareCatalog c = load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  CHECK(c.gpu("h100-sxm").name == "H100-SXM");
  CHECK(c.gpu("a100").name == "A100");
  CHECK(c.gpu("MI300x").name == "MI300X");
  CHECK(c.find_gpu("H100-SXM5") == nullptr);
  CHECK_THROWS_WITH(c.gpu("MI355X"),
                    Catch::Contains("unknown node type 'MI355X' (known: A10, A100,"));
}

TEST_CASE("a user catalog is merged over the built-in one", "[hardware]") {
  const HardwareCatalog base = load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  const HardwareCatalog over = parse_hardware_catalog(
      R"({"format": "zerosearch-hardware/1", "gpus": {
        "a10": {"memory_gib": 20, "price_per_gpu_hour_usd": 2},
        "MyGPU": {"memory_gib": 30, "class": "gddr-pcie",
          "peak_tflops": {"fp32": 10, "fp16": 100}, "memory_GBps": 500,
          "intra_node": {"link": "pcie4", "p2p": false, "GBps_per_dir": 32},
          "gpus_per_node": 4, "inter_node_gbit_per_node": 100,
          "price_per_gpu_hour_usd": 0.5, "spec_source": "me"}}})",
      "mine.json");
  const HardwareCatalog c = merge_catalogs(base, over);
  CHECK(c.gpu("A10").memory_gib == 20.0);   // replaced, case-insensitively
  CHECK(c.gpu("A10").name == "a10");
  CHECK(c.gpus.count("A10") == 0);
  CHECK(c.gpu("mygpu").node_price_per_hour_usd(4) == 2.0);
  CHECK(c.gpu("H100-SXM").has_specs); // the rest kept
  CHECK_FALSE(c.gpu("MyGPU").peak_tflops.bf16.has_value());
  const auto links = default_links(c.gpu("MyGPU"));
  REQUIRE(links);
  CHECK(links->inter_node_bits_per_s == Approx(0.6 * 100e9));
  CHECK(links->intra_node_bits_per_s == Approx(0.6 * 32 * 8e9));
}

TEST_CASE("the hardware read beforehand is the hardware load_catalogs reads itself",
          "[hardware][catalogs]") {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / "zerosearch_test_hardware_once.json";
  {
    std::ofstream out(file);
    out << R"({"format": "zerosearch-hardware/1", "gpus": {
        "MyGPU": {"memory_gib": 30, "class": "gddr-pcie",
          "peak_tflops": {"fp32": 10, "fp16": 100}, "memory_GBps": 500,
          "intra_node": {"link": "pcie4", "p2p": false, "GBps_per_dir": 32},
          "gpus_per_node": 4, "inter_node_gbit_per_node": 100,
          "price_per_gpu_hour_usd": 0.5, "spec_source": "me"}}})";
  }
  const Catalogs itself = load_catalogs(ZEROSEARCH_TEST_PROFILEDB, file);
  const HardwareCatalog once = load_hardware(ZEROSEARCH_TEST_PROFILEDB, file);
  const Catalogs reused = load_catalogs(ZEROSEARCH_TEST_PROFILEDB, once);
  std::filesystem::remove(file);
  REQUIRE(reused.hardware.gpus.size() == itself.hardware.gpus.size());
  for (const auto& [name, gpu] : itself.hardware.gpus) {
    INFO(name);
    CHECK(reused.hardware.gpu(name).memory_gib == gpu.memory_gib);
  }
  CHECK(reused.hardware.gpu("MyGPU").memory_gib == 30.0); // the --hardware file merged
  CHECK(reused.models.models.size() == itself.models.models.size());
  CHECK(reused.profiles.all().size() == itself.profiles.all().size());
  CHECK(reused.calibrations.size() == itself.calibrations.size());
  CHECK_THROWS_WITH(load_hardware("/nonexistent-profiledb"),
                    Catch::Contains("profiledb folder '/nonexistent-profiledb' does not exist"));
}

TEST_CASE("hardware catalog errors name the file, entry and key", "[hardware]") {
  CHECK(error_of(hardware(R"({"memory_gib": 24})")) ==
        "hardware.json: gpu 'A10': missing key 'price_per_gpu_hour_usd'");
  const std::string spec =
      R"("class": "gddr-pcie", "peak_tflops": {"fp32": 10, "fp16": 100}, "intra_node": {"link": "pcie4", "p2p": false, "GBps_per_dir": 32}, "gpus_per_node": 4, "inter_node_gbit_per_node": 100, "price_per_gpu_hour_usd": 1, "spec_source": "s")";
  CHECK(error_of(hardware(R"({"memory_gib": 24, "memory_GBps": -600, )" + spec + "}")) ==
        "hardware.json: gpu 'A10': 'memory_GBps' must be a positive number, not -600");
  CHECK(error_of(hardware(R"({"memory_gib": 24, )" + spec + "}")) ==
        "hardware.json: gpu 'A10': missing key 'memory_GBps'");
  CHECK(error_of(hardware(R"({"memory_gib": 24, "memory_GBps": 600, "class": "tpu", )" +
                          spec.substr(spec.find("\"peak")) + "}")) ==
        "hardware.json: gpu 'A10': 'class' must be hbm-nvlink, hbm-pcie or gddr-pcie, not 'tpu'");
  CHECK(error_of(hardware(R"({"memory_gib": 0, "price_per_gpu_hour_usd": 1})")) ==
        "hardware.json: gpu 'A10': 'memory_gib' must be a positive number, not 0");
  CHECK(error_of(hardware(R"({"memory_gib": 24, "price_per_gpu_hour_usd": -1})")) ==
        "hardware.json: gpu 'A10': 'price_per_gpu_hour_usd' must be a finite number >= 0, not -1");
  CHECK_THAT(error_of(hardware(R"({"memory_gib": 24, "price_per_gpu_hour_usd": 1, "tdp": 1})")),
        Catch::StartsWith("hardware.json: gpu 'A10': unknown key 'tdp' (allowed: memory_gib, "
                          "price_per_gpu_hour_usd, comment, class,"));
  CHECK(error_of(hardware(R"({"memory_gib": 24, "price_per_gpu_hour_usd": 1})",
                          R"({"inter_node": -1e9, "intra_node": 2e9})")) ==
        "hardware.json: bandwidth set 'ib': links of 'A10': 'inter_node' must be a positive "
        "number, not -1000000000.0");
  CHECK(error_of(hardware(R"({"memory_gib": 24, "price_per_gpu_hour_usd": 1})",
                          R"({"inter_node": "fast", "intra_node": 2e9})")) ==
        "hardware.json: bandwidth set 'ib': links of 'A10': 'inter_node' must be a positive "
        "number, not \"fast\"");
  CHECK(error_of(R"({"format": "zerosearch-hardware/1", "gpus": {}, "bandwidth_sets": {"ib":
        {"description": "d", "links_bps": {"X": {"inter_node": 1, "intra_node": 1}}}}})") ==
        "hardware.json: bandwidth set 'ib': 'X' is not in gpus (known: )");
  CHECK(error_of("{\"format\": \"zerosearch-hardware/1\",\n\"gpus\": {\"A10\": {\"memory_gib\": 24,}}}") ==
        "hardware.json:2: malformed JSON: syntax error while parsing object key - unexpected '}'; "
        "expected string literal");
}

TEST_CASE("a GPU's maximum achievable matmul rate is read and checked against its peak",
          "[hardware]") {
  const HardwareCatalog c = load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  // stas00/ml-engineering's table: H100 SXM 794.5 bf16 and 1402.6 fp8 TFLOPS.
  REQUIRE(c.gpu("H100-SXM").mamf.has_value());
  CHECK(*c.gpu("H100-SXM").mamf->bf16_tflops == 794.5);
  CHECK(*c.gpu("H100-SXM").mamf->fp8_tflops == 1402.6);
  CHECK_FALSE(c.gpu("H100-SXM").mamf->source.empty());
  CHECK_FALSE(c.gpu("A100-80GB").mamf->fp8_tflops.has_value());
  CHECK_FALSE(c.gpu("A10").mamf.has_value());
  const std::string spec =
      R"("class": "hbm-nvlink", "peak_tflops": {"fp32": 10, "fp16": 100, "bf16": 100}, "memory_GBps": 600, "intra_node": {"link": "nvlink", "p2p": true, "GBps_per_dir": 300}, "gpus_per_node": 8, "inter_node_gbit_per_node": 100, "price_per_gpu_hour_usd": 1, "spec_source": "s")";
  CHECK(error_of(hardware(R"({"memory_gib": 24, "mamf_tflops": {"bf16": 120, "source": "x"}, )" +
                          spec + "}")) ==
        "hardware.json: gpu 'A10': mamf_tflops: 'bf16' must be at most the peak_tflops 'bf16' "
        "of the GPU, not 120");
  CHECK(error_of(hardware(R"({"memory_gib": 24, "mamf_tflops": {"fp8": 50, "source": "x"}, )" +
                          spec + "}")) ==
        "hardware.json: gpu 'A10': mamf_tflops: 'fp8' must be at most the peak_tflops 'fp8' "
        "of the GPU, not 50");
  CHECK(error_of(hardware(R"({"memory_gib": 24, "mamf_tflops": {"bf16": 80}, )" + spec + "}")) ==
        "hardware.json: gpu 'A10': mamf_tflops: missing key 'source'");
  CHECK(error_of(hardware(R"({"memory_gib": 24, "mamf_tflops": {"bf16": 80, "source": "x"}, )" +
                          spec + "}")) == "no error");
}

TEST_CASE("a GPU's exponential throughput against its tensor cores is read and checked",
          "[hardware]") {
  const HardwareCatalog c = load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  // FlashAttention-4: Blackwell 16 MUFU.EX2 per SM and clock against 8,192 tensor FLOPs;
  // Blackwell Ultra 32 (NVIDIA's Blackwell Ultra softmax blog).
  for (const char* name : {"B200", "GB200", "B300", "GB300"}) {
    REQUIRE(c.gpu(name).sfu_exp2.has_value());
    CHECK_FALSE(c.gpu(name).sfu_exp2->source.empty());
  }
  CHECK(c.gpu("GB200").sfu_exp2->per_clock_per_sm == 16);
  CHECK(c.gpu("GB200").sfu_exp2->tensor16_flops_per_clock_per_sm == 8192);
  CHECK(c.gpu("GB300").sfu_exp2->per_clock_per_sm == 32);
  CHECK(c.gpu("GB300").sfu_exp2->tensor16_flops_per_clock_per_sm == 8192);
  // Not entered for the others: they keep the tensor rate alone (Hopper, 4,096 / 16, would
  // bind only below head dim 64; docs/hardware.md).
  CHECK_FALSE(c.gpu("H100-SXM").sfu_exp2.has_value());
  CHECK_FALSE(c.gpu("A100-80GB").sfu_exp2.has_value());
  CHECK_FALSE(c.gpu("MI300X").sfu_exp2.has_value());
  const std::string spec =
      R"("class": "hbm-nvlink", "peak_tflops": {"fp32": 10, "fp16": 100, "bf16": 100}, "memory_GBps": 600, "intra_node": {"link": "nvlink", "p2p": true, "GBps_per_dir": 300}, "gpus_per_node": 8, "inter_node_gbit_per_node": 100, "price_per_gpu_hour_usd": 1, "spec_source": "s")";
  CHECK(error_of(hardware(
            R"({"memory_gib": 24, "sfu_exp2": {"per_clock_per_sm": 16, "tensor16_flops_per_clock_per_sm": 8192, "source": "x"}, )" +
            spec + "}")) == "no error");
  CHECK(error_of(hardware(
            R"({"memory_gib": 24, "sfu_exp2": {"per_clock_per_sm": 0, "tensor16_flops_per_clock_per_sm": 8192, "source": "x"}, )" +
            spec + "}")) == 
        "hardware.json: gpu 'A10': sfu_exp2: 'per_clock_per_sm' must be a positive number, not 0");
  CHECK(error_of(hardware(
            R"({"memory_gib": 24, "sfu_exp2": {"per_clock_per_sm": 16, "source": "x"}, )" +
            spec + "}")) ==
        "hardware.json: gpu 'A10': sfu_exp2: missing key 'tensor16_flops_per_clock_per_sm'");
  CHECK(error_of(hardware(
            R"({"memory_gib": 24, "sfu_exp2": {"per_clock_per_sm": 16, "tensor16_flops_per_clock_per_sm": 8192, "source": "x", "clock": 2}, )" +
            spec + "}")) == 
        "hardware.json: gpu 'A10': sfu_exp2: unknown key 'clock' (allowed: per_clock_per_sm, "
        "tensor16_flops_per_clock_per_sm, source)");
}

TEST_CASE("reserved, spot, power and reliability entries load and are checked", "[hardware]") {
  const std::string gpu =
      R"({"memory_gib": 24, "price_per_gpu_hour_usd": 1.4,
          "spot_price": {"usd_per_gpu_hour": 0.5, "source": "s", "date": "2026"},
          "power_w": {"tdp": 150, "idle": 20, "source": "p"}})";
  const HardwareCatalog c = parse_hardware_catalog(hardware(gpu), "hardware.json");
  const GpuSpec& a10 = c.gpu("A10");
  REQUIRE(a10.spot_price.has_value());
  CHECK(a10.spot_price->usd_per_gpu_hour == 0.5);
  CHECK_FALSE(a10.reserved_price.has_value());
  REQUIRE(a10.power.has_value());
  CHECK(a10.power->idle_w == 20);
  CHECK(error_of(hardware(R"({"memory_gib": 24, "price_per_gpu_hour_usd": 1.4,
                              "power_w": {"tdp": 150, "idle": 150, "source": "p"}})")) ==
        "hardware.json: gpu 'A10': power_w: 'idle' must be below 'tdp' (150 W), not 150");
  const std::string with_rel =
      R"({"format": "zerosearch-hardware/1", "gpus": {"A10": {"memory_gib": 24,
          "price_per_gpu_hour_usd": 1.4}}, "reliability": {"gddr-pcie":
          {"failures_per_gpu_hour": 2e-5, "source": "r"}}})";
  CHECK(parse_hardware_catalog(with_rel, "h.json").failure_rates.at("gddr-pcie").per_gpu_hour ==
        2e-5);
  // The shipped catalog: every price and power entry has a source.
  for (const auto& [name, g] : load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json").gpus) {
    if (g.spot_price) CHECK_FALSE(g.spot_price->source.empty());
    if (g.power) CHECK(g.power->tdp_w > g.power->idle_w);
  }
}

TEST_CASE("a scale-up domain and a scale-out oversubscription are read and checked",
          "[hardware][network]") {
  const HardwareCatalog c = load_hardware_catalog(ZEROSEARCH_TEST_PROFILEDB "/hardware.json");
  // GB200 NVL72: 72 GPUs on one NVLink fabric across 18 trays of 4, a full-bisection network.
  CHECK(c.gpu("GB200").default_gpus_per_node == 4);
  CHECK(c.gpu("GB200").scale_up_domain_gpus == 72);
  CHECK(c.gpu("GB200").scale_out_oversubscription == 1.0);
  CHECK(c.gpu("GB200").network_source.find("130 TB/s") != std::string::npos);
  CHECK(c.gpu("GB300").scale_up_domain_gpus == 72);
  // Everything else: the node is the domain (0), full bisection.
  for (const char* name : {"H100-SXM", "H100", "B200", "A100-80GB", "A10", "MI300X"}) {
    INFO(name);
    CHECK(c.gpu(name).scale_up_domain_gpus == 0);
    CHECK(c.gpu(name).scale_out_oversubscription == 1.0);
  }
  const std::string spec =
      R"("class": "hbm-nvlink", "peak_tflops": {"fp32": 10, "fp16": 100}, "memory_GBps": 600, "intra_node": {"link": "nvlink5", "p2p": true, "GBps_per_dir": 900}, "gpus_per_node": 4, "inter_node_gbit_per_node": 1600, "price_per_gpu_hour_usd": 1, "spec_source": "s")";
  const auto with = [&](const std::string& extra) {
    return hardware(R"({"memory_gib": 24, )" + extra + spec + "}");
  };
  const HardwareCatalog ok = parse_hardware_catalog(
      with(R"("scale_up_domain_gpus": 72, "scale_out_oversubscription": 2.5, "network_source": "n", )"),
      "hardware.json");
  CHECK(ok.gpu("A10").scale_up_domain_gpus == 72);
  CHECK(ok.gpu("A10").scale_out_oversubscription == 2.5);
  CHECK(ok.gpu("A10").network_source == "n");
  CHECK(error_of(with(R"("scale_up_domain_gpus": 70, )")) ==
        "hardware.json: gpu 'A10': 'scale_up_domain_gpus' must be a multiple of its gpus_per_node "
        "4 (whole nodes on one NVLink fabric), at most 1000000, not 70");
  CHECK(error_of(with(R"("scale_up_domain_gpus": 2, )")).find("multiple of its gpus_per_node 4") !=
        std::string::npos);
  CHECK(error_of(with(R"("scale_up_domain_gpus": 0, )")).find("at most 1000000, not 0") !=
        std::string::npos);
  CHECK(error_of(with(R"("scale_up_domain_gpus": 7.5, )")).find("at most 1000000, not 7.5") !=
        std::string::npos);
  CHECK(error_of(with(R"("scale_up_domain_gpus": 4000000, )")).find("not 4000000") !=
        std::string::npos);
  CHECK(error_of(with(R"("scale_out_oversubscription": 0.5, )")) ==
        "hardware.json: gpu 'A10': 'scale_out_oversubscription' must be a number from 1 (full "
        "bisection) to 1000, not 0.5");
  CHECK(error_of(with(R"("scale_out_oversubscription": "2", )")).find(
            "'scale_out_oversubscription' must be a number") != std::string::npos);
  // The original's format (memory and price only) has no node to build a domain from.
  CHECK(error_of(hardware(R"({"memory_gib": 24, "price_per_gpu_hour_usd": 1, "scale_up_domain_gpus": 8})")) ==
        "hardware.json: gpu 'A10': 'scale_up_domain_gpus' and 'scale_out_oversubscription' need "
        "the GPU's specifications (class, gpus_per_node, ...)");
}

TEST_CASE("catalog keys renamed for their units are read under their old names too",
          "[hardware]") {
  // The keys hold GB/s, which their old "gbps" hid; users' files with the old names keep working.
  // Lines holding an old key carry the marker "units: old name" (the issue 26 rename skips them).
  const std::string common =
      R"("memory_gib": 24, "class": "hbm-nvlink", "peak_tflops": {"fp32": 10, "fp16": 100}, )"
      R"("gpus_per_node": 8, "inter_node_gbit_per_node": 100, "price_per_gpu_hour_usd": 1, )"
      R"("spec_source": "s", )";
  const std::string bench = R"("gemm_e_max": 0.8, "gemm_x0_flops": 1e9, "memory_efficiency": 0.8)";
  const std::string now =
      R"("memory_GBps": 600, "intra_node": {"link": "nvlink", "p2p": true, "GBps_per_dir": 300}, )"
      R"("benchmark": {)" + bench + R"(, "allreduce_bus_GBps": {"8": 150}})";
  const std::string old =
      R"("memory_gbps": 600, "intra_node": {"link": "nvlink", "p2p": true, "gbps_per_dir": 300}, )" // units: old name
      R"("benchmark": {)" + bench + R"(, "allreduce_bus_gbps": {"8": 150}})"; // units: old name
  const GpuSpec a = parse_hardware_catalog(hardware("{" + common + now + "}"), "h").gpu("A10");
  const GpuSpec b = parse_hardware_catalog(hardware("{" + common + old + "}"), "h").gpu("A10");
  CHECK(b.memory_GBps == 600);
  CHECK(b.intra_node.GBps_per_dir == 300);
  REQUIRE(b.benchmark.has_value());
  CHECK(b.benchmark->allreduce_bus_GBps.at(8) == 150);
  CHECK(a.memory_GBps == b.memory_GBps);
  CHECK(a.intra_node.GBps_per_dir == b.intra_node.GBps_per_dir);
  CHECK(a.benchmark->allreduce_bus_GBps == b.benchmark->allreduce_bus_GBps);
  // The old memory key, like the new, makes an entry one that needs every specification.
  CHECK(error_of(hardware(R"({"memory_gib": 24, "price_per_gpu_hour_usd": 1, "memory_gbps": 6})")) == // units: old name
        "hardware.json: gpu 'A10': missing key 'class'");
  // Both names at once: which one was meant is unclear, so it is an error.
  CHECK(error_of(hardware("{" + common + R"("memory_gbps": 500, )" + now + "}")) == // units: old name
        "hardware.json: gpu 'A10': give 'memory_GBps' or its old name 'memory_gbps', not both"); // units: old name
  CHECK(error_of(hardware("{" + common + R"("memory_GBps": 600, "intra_node": {"link": "l", )"
                          R"("p2p": true, "GBps_per_dir": 1, "gbps_per_dir": 1}})")) == // units: old name
        "hardware.json: gpu 'A10': intra_node: give 'GBps_per_dir' or its old name "
        "'gbps_per_dir', not both"); // units: old name
}
