// `zerosearch list models|gpus` (also --list models|gpus): the built-in models and the GPU
// catalog with the figures a planner picks them by.
#include "modes.hpp"

#include <algorithm>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "setup.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/model/model_stats.hpp"

namespace zerosearch::cli {

namespace {

/// Rows of cells written with aligned columns: the first column left-aligned, the others right.
void print_columns(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                   std::size_t text_columns = 1) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (std::size_t c = 0; c < row.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::size_t pad = width[c] - row[c].size();
      if (c > 0) line += "  ";
      if (c < text_columns || c + 1 == row.size()) {
        line += row[c];
        if (c + 1 < row.size()) line.append(pad, ' ');
      } else {
        line.append(pad, ' ');
        line += row[c];
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  }
}

std::string tflops(const std::optional<double>& v) {
  return v ? fmt::format("{:g}", *v) : std::string("-");
}

} // namespace

int run_list_mode(const std::string& what, const Options& o, const char* argv0) {
  if (what != "models" && what != "gpus") {
    throw InputError(fmt::format("list '{}': list models or list gpus", what));
  }
  const std::filesystem::path db = find_profiledb(o, argv0);
  const Catalogs catalogs = o.loaded_hardware
                                ? load_catalogs(db, *o.loaded_hardware, o.calibration)
                                : load_catalogs(db, o.hardware, o.calibration);
  std::vector<std::vector<std::string>> rows;
  if (what == "models") {
    rows.push_back({"model", "architecture", "params (B)", "active (B)", "layers", "hidden",
                    "heads/kv", "seq_len", "vocab", "measured profiles"});
    for (const ModelSpec& m : catalogs.models.models) {
      std::set<std::string> gpus;
      for (const GpuProfile& p : catalogs.profiles.all()) {
        if (p.model == m.name) gpus.insert(p.gpu);
      }
      std::string measured;
      for (const std::string& g : gpus) measured += (measured.empty() ? "" : ", ") + g;
      rows.push_back({m.name, m.architecture,
                      fmt::format("{:.1f}", static_cast<double>(total_parameters(m)) / 1e9),
                      fmt::format("{:.1f}", static_cast<double>(active_parameters(m)) / 1e9),
                      fmt::format("{}", m.num_layers), fmt::format("{}", m.hidden_size),
                      fmt::format("{}/{}", m.num_attention_heads, m.num_key_value_heads),
                      fmt::format("{}", m.sequence_length), fmt::format("{}", m.vocab_size),
                      measured.empty() ? std::string("none (native estimator)") : measured});
    }
    std::cout << "Built-in models (profiledb/models.json; --type NAME, any case, or a Hugging "
                 "Face config.json):\n\n";
    print_columns(std::cout, rows, 2);
    std::cout << "\nWith measured profiles on every --node_type the default estimator is the "
                 "original's (zerosearch); otherwise native (docs/native.md).\n";
    return 0;
  }
  rows.push_back({"gpu", "memory (GiB)", "bf16 TFLOP/s", "fp16", "fp8", "HBM/GDDR GB/s",
                  "GPUs/node", "network Gbit/s/node", "$/GPU-hour", "note"});
  for (const auto& [name, g] : catalogs.hardware.gpus) {
    rows.push_back({name,
                    g.memory_gib ? fmt::format("{:.1f}", *g.memory_gib) : std::string("-"),
                    tflops(g.peak_tflops.bf16), tflops(g.peak_tflops.fp16),
                    tflops(g.peak_tflops.fp8),
                    g.memory_GBps > 0 ? fmt::format("{:g}", g.memory_GBps) : std::string("-"),
                    g.default_gpus_per_node > 0 ? fmt::format("{}", g.default_gpus_per_node)
                                                : std::string("-"),
                    g.inter_node_gbit_per_node > 0
                        ? fmt::format("{:g}", g.inter_node_gbit_per_node)
                        : std::string("-"),
                    fmt::format("{:.2f}", g.price_per_gpu_hour_usd),
                    original_entry(g) ? "the original's entry: its price, 4 GPUs per node by "
                                        "default"
                                      : ""});
  }
  std::cout << "GPU catalog (profiledb/hardware.json, docs/hardware.md; --node_type NAME, any "
               "case); peaks are dense:\n\n";
  print_columns(std::cout, rows);
  return 0;
}

} // namespace zerosearch::cli
