#pragma once
// Data-parallel methods, frameworks, and the enumerator of design points (SPEC 2).
#include <optional>
#include <string>
#include <vector>

#include "zerosearch/profiledb.hpp"

namespace zerosearch {

enum class DpMethod { dp, fsdp, zero0, zero1, zero2, zero3 };
inline constexpr DpMethod kAllDpMethods[] = {DpMethod::dp,    DpMethod::fsdp,  DpMethod::zero0,
                                             DpMethod::zero1, DpMethod::zero2, DpMethod::zero3};

[[nodiscard]] const char* to_string(DpMethod m) noexcept;
/// Throws InputError listing the allowed names.
[[nodiscard]] DpMethod parse_dp_method(const std::string& text);
/// The profile flavour a method's compute times come from.
[[nodiscard]] Flavour flavour_of(DpMethod m) noexcept;

/// --framework: m = Megatron-LM (dp, fsdp), d = DeepSpeed (zero0-3), both, or default (each
/// data-parallel method once, from whichever framework has profiles; SPEC deviation 1).
enum class Framework { megatron, deepspeed, both, automatic };

[[nodiscard]] const char* to_string(Framework f) noexcept;
/// Accepts m, d, both, default. Throws InputError listing them.
[[nodiscard]] Framework parse_framework(const std::string& text);

/// One design point: parallel degrees, micro-batch size and data-parallel method.
struct DesignPoint {
  DpMethod method = DpMethod::dp;
  int tp = 1;
  int dp = 1;
  int pp = 1;
  int mbs = 1;
  /// Micro-batches per step and pipeline: gbs / (dp * mbs).
  int num_micro_batches = 1;
};

/// The ascending divisors of n (n >= 1).
[[nodiscard]] std::vector<int> divisors(int n);

struct EnumerateInput {
  std::vector<DpMethod> methods;
  /// Tensor-parallel degrees allowed (divisors of the GPUs per node, with profiles), ascending.
  std::vector<int> tp_degrees;
  int world_size = 1;
  int global_batch = 64;
  /// Transformer layers: pp may not exceed it.
  int num_layers = 40;
};

/// All design points in the original's rules and order (SPEC 2): per method, tp ascending,
/// dp ascending over divisors of W/tp, mbs ascending over divisors of gbs/dp.
[[nodiscard]] std::vector<DesignPoint> enumerate_design_points(const EnumerateInput& in);

/// Checks the rules of SPEC 2 for one explicit design point; returns the reason it is not a
/// valid point, or nothing when it is.
[[nodiscard]] std::optional<std::string> invalid_reason(const DesignPoint& p, int world_size,
                                                        int global_batch, int num_layers,
                                                        int gpus_per_node);

} // namespace zerosearch
