#pragma once
// The hardware catalog (profiledb/hardware.json, docs/hardware.md): GPU memory, prices, peak
// rates, memory and link bandwidths, and the link bandwidth sets of the original.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zerosearch {

/// Element type of the GEMMs, for choosing a peak rate.
enum class Dtype : std::uint8_t { fp32, tf32, fp16, bf16, fp8 };
[[nodiscard]] const char* to_string(Dtype d) noexcept;

/// Dense (non-sparse) tensor/matrix peak rates in TFLOP/s; empty when the GPU lacks the type.
struct PeakTflops {
  std::optional<double> fp32, tf32, fp16, bf16, fp8;
  [[nodiscard]] std::optional<double> of(Dtype d) const noexcept;
};

/// How the GPUs of one node talk to each other.
struct IntraNodeLink {
  /// "nvlink4", "pcie4", "xgmi", ...: the figures below give the bandwidth; the name gives the
  /// host link's PCIe generation and, for "nvlink*", NCCL's NVLink latency (docs/analytic.md).
  std::string link;
  /// True when GPUs copy peer to peer (NVLink, or PCIe with P2P enabled).
  bool p2p = false;
  /// Per GPU, per direction, GB/s.
  double GBps_per_dir = 0.0;
};

/// Figures from a micro-benchmark on the GPU itself (scripts/calibrate_gpu.py), optional.
struct GpuBenchmark {
  /// GEMM efficiency curve e(F) = e_max * (1 - exp(-F / x0_flops)) of the peak of `dtype`.
  double gemm_e_max = 0.0;
  double gemm_x0_flops = 0.0;
  /// Achieved fraction of the memory bandwidth in a large device-to-device copy.
  double memory_efficiency = 0.0;
  /// All-reduce bus bandwidth (nccl-tests convention) by group size, GB/s.
  std::map<int, double> allreduce_bus_GBps;
  std::string source;
};

/// Maximum achievable matmul throughput measured on the GPU (a published micro-benchmark: the
/// best `torch.matmul` rate over a search of shapes), TFLOPS. It sets the GPU's GEMM efficiency
/// prior relative to A100's (docs/native.md §3.1).
struct MatmulBenchmark {
  std::optional<double> bf16_tflops;
  /// The 16-bit rate of a GPU without bf16 (V100, T4): fp16 with fp32 accumulation.
  std::optional<double> fp16_tflops;
  std::optional<double> fp8_tflops;
  std::string source;
};

/// A price other than on-demand (reserved, spot) of one GPU for one hour, where it came from and
/// when (docs/hardware.md).
struct PriceQuote {
  double usd_per_gpu_hour = 0.0;
  std::string source;
  std::string date;
};

/// A GPU's board power: its TDP and its idle draw, W (docs/run_cost.md).
struct GpuPower {
  double tdp_w = 0.0;
  double idle_w = 0.0;
  std::string source;
};

/// Unexpected interruptions of training per GPU-hour for a GPU class, and the run it comes from.
struct FailureRate {
  double per_gpu_hour = 0.0;
  std::string source;
};

/// The special-function units' base-2 exponential (MUFU.EX2) against the 16-bit tensor cores,
/// both per SM and clock, from the GPU's architecture (docs/hardware.md): what bounds a fused
/// attention core whose score exponentials take longer than its matmuls (docs/native.md §2).
struct SfuExp2 {
  /// MUFU.EX2 results per SM per clock (Hopper and Blackwell 16, Blackwell Ultra 32).
  double per_clock_per_sm = 0.0;
  /// Dense 16-bit tensor-core FLOPs per SM per clock (Hopper 4096, Blackwell 8192).
  double tensor16_flops_per_clock_per_sm = 0.0;
  std::string source;
};

struct GpuSpec {
  std::string name;
  /// Usable memory per GPU in GiB; empty when the catalog does not know it.
  std::optional<double> memory_gib;
  /// On-demand price of one GPU for one hour, $. A node costs this times its GPUs. The
  /// original's entries carry its node price divided by its 4 GPUs per node.
  double price_per_gpu_hour_usd = 0.0;

  // Specifications for the analytic profiles (absent in the original's format).
  bool has_specs = false;
  /// "hbm-nvlink" (datacenter parts with HBM and NVLink/xGMI), "hbm-pcie", "gddr-pcie":
  /// picks the efficiency prior when the GPU has no calibration.
  std::string gpu_class;
  PeakTflops peak_tflops;
  /// Memory bandwidth, GB/s.
  double memory_GBps = 0.0;
  IntraNodeLink intra_node;
  int default_gpus_per_node = 0;
  /// Network bandwidth of the usual node of this GPU, Gbit/s per node.
  double inter_node_gbit_per_node = 0.0;
  /// Fused (FlashAttention) attention as a fraction of the peak, where a source measured it;
  /// empty: the analytic model's rule (docs/analytic.md).
  std::optional<double> flash_attention_efficiency;
  /// FlashAttention-2's kernel as a fraction of the peak where it is below the measured fused
  /// attention above (Hopper: about 0.35, FlashAttention-3's paper); empty: the same as
  /// flash_attention_efficiency (--attention_kernel fa2, docs/native.md §2).
  std::optional<double> flash_attention2_efficiency;
  /// Exponential throughput against the tensor cores, where a source states it; empty: the
  /// fused attention core is priced on the tensor rate alone.
  std::optional<SfuExp2> sfu_exp2;
  std::string price_source;
  std::string price_date;
  std::string spec_source;
  std::optional<GpuBenchmark> benchmark;
  std::optional<MatmulBenchmark> mamf;
  /// Streaming multiprocessors (AMD: compute units) of one GPU, from its vendor's whitepaper;
  /// empty: the native estimator does not model how a GEMM's tiles fill the GPU (docs/native.md).
  std::optional<int> sm_count;
  /// Reserved and spot prices where the catalog has them (--pricing); empty otherwise.
  std::optional<PriceQuote> reserved_price;
  std::optional<PriceQuote> spot_price;
  /// TDP and idle power, where the catalog has them; empty: the run's energy is unknown.
  std::optional<GpuPower> power;
  /// GPUs of one scale-up (NVLink) domain, a multiple of default_gpus_per_node: a GB200 NVL72
  /// rack joins 18 trays of 4 on one NVLink fabric. 0: the node is the domain (docs/hardware.md).
  int scale_up_domain_gpus = 0;
  /// Scale-out oversubscription of the node's network: its bandwidth over what crosses the
  /// fabric's top (1: full bisection; 2: traffic between domains gets half; docs/native.md).
  double scale_out_oversubscription = 1.0;
  /// Where the two figures above come from.
  std::string network_source;

  /// $ per hour of one node of `gpus_per_node` GPUs: the GPU price times the GPUs.
  [[nodiscard]] double node_price_per_hour_usd(int gpus_per_node) const noexcept;
};

/// Link bandwidths of one node type, in bit/s.
struct LinkBandwidth {
  double inter_node_bits_per_s = 0.0;
  double intra_node_bits_per_s = 0.0;
};

struct BandwidthSet {
  std::string name;
  std::string description;
  std::map<std::string, LinkBandwidth> links;
};

/// Fraction of a nominal link figure the default links use (the original's 'ib' set: 60 % of
/// 200 Gbit/s and of PCIe 32 GB/s).
inline constexpr double kDefaultLinkEfficiency = 0.6;

struct HardwareCatalog {
  std::map<std::string, GpuSpec> gpus;
  std::map<std::string, BandwidthSet> bandwidth_sets;
  /// Failure rates by GPU class ("hbm-nvlink", ...): `reliability` in hardware.json.
  std::map<std::string, FailureRate> failure_rates;

  /// Exact name first, then case-insensitive. Throws InputError listing the known GPU types.
  [[nodiscard]] const GpuSpec& gpu(const std::string& name) const;
  /// nullptr when unknown; same matching as gpu().
  [[nodiscard]] const GpuSpec* find_gpu(const std::string& name) const noexcept;
  /// Throws InputError listing the known sets.
  [[nodiscard]] const BandwidthSet& bandwidth_set(const std::string& name) const;
  [[nodiscard]] std::string gpu_names() const;
  [[nodiscard]] std::string bandwidth_set_names() const;
};

/// Default links of a GPU with specifications, when a bandwidth set has none for it:
/// kDefaultLinkEfficiency of its node's network and of its intra-node link. Empty without specs.
[[nodiscard]] std::optional<LinkBandwidth> default_links(const GpuSpec& gpu) noexcept;

/// `over` merged over `base`: GPUs replace those of the same name (case-insensitive), sets
/// are merged link by link. For --hardware FILE.
[[nodiscard]] HardwareCatalog merge_catalogs(HardwareCatalog base, const HardwareCatalog& over);

} // namespace zerosearch
