// A corpus row as one call of the documented contract (docs/validation.md), or the reason it
// cannot be one.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/corpus.hpp"
#include "zerosearch/core/hardware.hpp"

namespace zerosearch::validate {

/// A flag and its value added to a row's contract (a tuned knob, validation/tuned.json).
using Flag = std::pair<std::string, std::string>;

struct Case {
  /// "group:row" (the row's number in its file).
  std::string id;
  std::string group, source, model, gpu, catalog_gpu, method, recompute = "none", dtype = "bf16";
  /// The corpus's framework column, or by the rule for an empty one (dp_method's framework).
  std::string framework;
  /// "gpt" or "llama" (the arch column, or by model name).
  std::string arch;
  /// The catalog's gpu_class of catalog_gpu (hbm-nvlink, hbm-pcie, gddr-pcie).
  std::string gpu_family;
  /// "on", "off" or empty (the estimator's default); "yes", "no" or empty (by architecture).
  std::string sequence_parallel, flash_attention, tied_embeddings, overlap_grad_reduce, fused_loss,
      fused_layers, grad_reduce_fp32, grad_accum_fp32, attention_kernel, moe_a2a_overlap;
  /// Whose code ran the layers (--layer_impl): framework, hf_gpt2, hf_gpt2_amp,
  /// megatron_unfused or empty (the framework's).
  std::string layer_impl;
  /// Megatron's fused-softmax test of the code the row ran (--fused_softmax_check): megatron,
  /// bigscience_pre260 or empty (the estimator's default, megatron).
  std::string fused_softmax_check;
  /// Which DeepSpeed ZeRO-3 the row ran (--zero3_impl): coalesced, per_param or empty.
  std::string zero3_impl;
  /// "on", "off" or empty (the estimator's default, on: fp32 master weights and Adam moments).
  std::string master_weights;
  /// Megatron-Core's token dispatcher of the row's recipe (--moe_dispatcher): alltoall, deepep,
  /// hybridep or empty (the estimator's default, alltoall).
  std::string moe_dispatcher;
  /// "rowwise" where an fp8 row's precision names it; empty: the estimator's default.
  std::string fp8_recipe;
  long long layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, seq = 0;
  int num_gpus = 0, gpn = 0, tp = 1, pp = 1, dp = 1, cp = 1, mbs = 0, gbs = 0, v = 1;
  /// Network bandwidth per node in Gbit/s when the row states its own (0: the catalog's).
  long long inter_node_Gbitps = 0;
  /// A mixed cluster (catalog_gpu "A*n+B*m"): its node types and node counts in rank order,
  /// and each type's network per node in Gbit/s (inter_node_gbit_per_node "x+y"; empty: the
  /// catalog's). Empty for one GPU type; catalog_gpu and gpu_family are then "mixed".
  std::vector<std::pair<std::string, int>> node_types;
  std::vector<long long> node_type_Gbitps;
  /// Intra-node bandwidth in Gbit/s when the row states its own (intra_node_gbit_per_node: one
  /// figure, or one per node type of a mixed cluster "x+y"; empty: the catalog's links).
  std::vector<long long> intra_node_Gbitps;
  /// A measured NCCL all-reduce bus bandwidth across the row's nodes in Gbit/s
  /// (inter_node_busbw_gbit: one figure, or one per node type "x+y"; empty: none). An achieved
  /// figure: passed to --inter_node_gbps as it is, not through the 60 % rule, and in place of
  /// inter_node_gbit_per_node (which then only documents the line rate).
  std::vector<long long> inter_node_busbw_Gbitps;
  /// Megatron-Core's pipeline layout of the run (the pipeline_layout column, passed as
  /// --pipeline_layout; empty: none), from the row's release's recipe or performance config.
  std::string pipeline_layout;
  /// Megatron-Core's selective recompute modules of the run (the recompute_modules column, a
  /// comma list passed as --recompute_modules with recompute selective; empty: core_attn),
  /// from the row's release's performance config.
  std::string recompute_modules;
  /// The layers per pipeline stage as the source states them (the partition column: the
  /// embedding and the loss counted as a layer each, --partition's notation); empty: even.
  std::string partition;
  /// The corpus's model column: a built-in catalog model (profiledb/models.json) the contract
  /// passes as --type NAME; empty = a model file written from the shape columns.
  std::string catalog_model;
  /// Expert parallelism (the ep column, empty = 1) and expert tensor parallelism (etp, empty =
  /// 0: not passed, Megatron's default).
  int ep = 1, etp = 0;
  double measured_s = 0, measured_gib = 0;
  std::string assumption;
  std::string not_modelled;
  /// The corpus fields, for the knobs' row filters.
  const Row* row = nullptr;
};

/// The framework family a regime is named by: megatron (megatron-lm, megatron-bridge, nemo),
/// deepspeed (deepspeed, megatron-deepspeed), fsdp (fsdp, torchtitan, composer), other.
std::string framework_family(const std::string& framework);

/// The framework a data-parallel method implies when a row does not state one (the native
/// model's own mapping, docs/native.md §4): dp megatron-lm, fsdp fsdp, zero0-3 deepspeed.
std::string framework_of_method(const std::string& dp_method);

/// The catalog name of a GPU as the sources write it (rows without a catalog_gpu column).
std::string catalog_gpu_by_name(const std::string& gpu);

/// The row as a contract; catalog: profiledb/hardware.json.
Case make_case(const Row& row, const HardwareCatalog& catalog);

/// The model file the contract's --type reads (zerosearch's own model format).
nlohmann::json model_file(const Case& c);

/// The contract's argument list, with `extra` flags added before --format. --type is the row's
/// built-in model (catalog_model) when it names one, else `model` (the file model_file wrote).
std::vector<std::string> contract(const Case& c, const std::filesystem::path& exe,
                                  const std::filesystem::path& model,
                                  const std::vector<Flag>& extra = {});

} // namespace zerosearch::validate
