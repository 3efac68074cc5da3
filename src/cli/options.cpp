#include "options.hpp"

#include <charconv>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "zerosearch/error.hpp"
#include "zerosearch/version.hpp"

namespace zerosearch::cli {

long long parse_int(const std::string& flag, const std::string& text, long long min, long long max) {
  long long v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) {
    if (max == std::numeric_limits<long long>::max()) {
      throw InputError(fmt::format("{} '{}' is not a whole number >= {}", flag, text, min));
    }
    throw InputError(fmt::format("{} '{}' is not a whole number from {} to {}", flag, text, min, max));
  }
  return v;
}

ParseResult parse_options(int argc, const char* const* argv) {
  Options o;
  CLI::App app{"zerosearch: finds the fastest way to train a large language model on a GPU "
               "cluster.\nIt enumerates tensor, pipeline and data-parallel degrees, micro-batch "
               "sizes, data-parallel\nmethods (dp, fsdp, ZeRO 0-3), node placements and layer "
               "partitions, and estimates\nstep time, peak GPU memory and cost of each from "
               "measured per-layer profiles.",
               "zerosearch"};
  app.set_version_flag("--version", std::string("zerosearch ") + kVersion);
  app.get_formatter()->column_width(34);

  app.add_option("--node_type", o.node_types,
                 "GPU node types in order, e.g. A10 A6000 (default: A10)")
      ->expected(1, -1);
  app.add_option("--node_type_num_node", o.node_type_counts,
                 "Node count of each --node_type, e.g. 3 5")
      ->expected(1, -1);
  app.add_option("--num_node", o.num_node,
                 "Node count for a single node type; bound per type for --pareto (default: 8)");
  app.add_option("--type", o.model, "Model from profiledb/models.json (default: llama2_13B)");
  app.add_option("--gpu_per_node", o.gpu_per_node, "GPUs per node (default: 4)");
  app.add_option("--custom_gbs", o.custom_gbs, "Global batch size (default: 64)");
  app.add_option("--custom_num_layer", o.custom_num_layer,
                 "Transformer layers of models that take it, e.g. gpt2XL (default: 48)");
  app.add_option("--precision", o.precision,
                 "Bits per element of gradient and embedding traffic (default: 16)");
  app.add_option("--iter", o.iter, "Training iterations for train_cost (default: 12500000)");
  app.add_flag("--pareto", o.pareto, "Sweep compositions of two node types (price vs time)");
  app.add_option("--add_exp_name", o.add_exp_name, "Suffix of the --record file name");
  app.add_flag("--exhaustive", o.exhaustive, "Evaluate one design point given on the command line");
  app.add_option("--comm_type", o.comm_type,
                 "Bandwidth set from profiledb/hardware.json (default: ib)");
  app.add_option("-f,--framework", o.framework,
                 "m = Megatron-LM (dp, fsdp), d = DeepSpeed (zero0-3), both, or default "
                 "(each method once, from the profiles there are)");
  app.add_flag("--record", o.record, "Write the ranked CSV to logs/<the original's file name>.csv");
  app.add_flag("--pretty", o.pretty, "Use the original's report column order in the CSV");
  app.add_flag("--search_space", o.search_space, "Print the size of the search space and exit");
  app.add_option("--search_method", o.search_method,
                 "Layer partitioner: minmax (default), ga, optimal");
  app.add_option("--profiledb_path", o.profiledb_path,
                 "Folder with models.json, hardware.json and profiles/ (default: found "
                 "next to the program)");
  app.add_option("-o,--output", o.output, "Write the ranked CSV to FILE ('-' for standard output)");
  app.add_option("-j,--threads", o.threads, "Worker threads (default: one per core)");

  app.add_option("--format", o.format, "What goes to standard output: csv, json or table");
  app.add_option("--top", o.top, "Only the N best rows");
  app.add_flag("--feasible", o.feasible, "Leave out design points that do not fit in memory");
  app.add_flag("-q,--quiet", o.quiet, "Print nothing but errors");

  app.add_option("--dp_method", o.dp_method, "--exhaustive: dp, fsdp, zero0, zero1, zero2, zero3");
  app.add_option("--tp", o.tp, "--exhaustive: tensor-parallel degree");
  app.add_option("--pp", o.pp, "--exhaustive: pipeline-parallel degree");
  app.add_option("--dp", o.dp, "--exhaustive: data-parallel degree");
  app.add_option("--mbs", o.mbs, "--exhaustive: micro-batch size");
  app.add_option("--partition", o.partition,
                 "--exhaustive: layers per stage, e.g. 6,5,5 (default: what the partitioner "
                 "chooses)");
  app.add_option("--placement", o.placement,
                 "--exhaustive: node types in rank order, e.g. A10,A10,A6000 (default: the "
                 "first placement)");

  app.add_option("--max_step_time", o.max_step_time,
                 "--pareto: the cheapest feasible plan within S seconds per step");
  app.add_option("--max_price_per_step", o.max_price_per_step,
                 "--pareto: the fastest feasible plan within P dollars per step");
  app.add_option("--budget", o.budget,
                 "--pareto: the fastest feasible plan whose train_cost is within USD");
  app.add_option("--plot", o.plot, "--pareto: write an SVG chart of price per step vs step time");
  app.add_option("--seed", o.seed, "--search_method ga: random seed (default: 0)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return ParseResult{std::nullopt, 0};
  } catch (const CLI::CallForVersion&) {
    std::cout << app.version() << '\n';
    return ParseResult{std::nullopt, 0};
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (const auto nl = what.find('\n'); nl != std::string::npos) {
      what.resize(nl);
    }
    throw InputError(fmt::format("{} (see zerosearch --help)", what));
  }
  o.num_node_given = app.count("--num_node") > 0;
  o.custom_num_layer_given = app.count("--custom_num_layer") > 0;
  if (o.node_types.empty()) {
    o.node_types = {"A10"};
  }
  return ParseResult{o, 0};
}

} // namespace zerosearch::cli
