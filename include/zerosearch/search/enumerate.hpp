#pragma once
// The enumerator of design points (docs/model.md §2).
#include <optional>
#include <string>
#include <vector>

#include "zerosearch/core/dp_method.hpp"

namespace zerosearch {

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
  /// Whose tensor-parallel rule applies (allows_tensor_parallel(DpMethod, Estimator)): the
  /// original's (zerosearch: zero3 only at tp 1) or the frameworks' (native).
  Estimator estimator = Estimator::zerosearch;
};

/// All design points in the original's rules and order (docs/model.md §2): per method, tp
/// ascending, dp ascending over divisors of W/tp, mbs ascending over divisors of gbs/dp.
[[nodiscard]] std::vector<DesignPoint> enumerate_design_points(const EnumerateInput& in);

/// Checks the rules of docs/model.md §2 for one explicit design point; returns the reason it is not
/// a valid point, or nothing when it is. tp divides the GPUs per node, or, with a scale-up
/// domain of `tp_domain_gpus` > gpus_per_node (native estimator, docs/native.md §2.5), is a
/// multiple of the node that divides the domain. `estimator` chooses the tensor-parallel rule
/// (allows_tensor_parallel(DpMethod, Estimator)).
[[nodiscard]] std::optional<std::string> invalid_reason(const DesignPoint& p, int world_size,
                                                        int global_batch, int num_layers,
                                                        int gpus_per_node, int tp_domain_gpus = 0,
                                                        Estimator estimator = Estimator::zerosearch);

} // namespace zerosearch
