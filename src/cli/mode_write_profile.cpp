#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "modes.hpp"
#include "output.hpp"
#include "setup.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/io/output_file.hpp"
#include "zerosearch/io/calibration_json.hpp"
#include "zerosearch/io/catalogs.hpp"
#include "zerosearch/search/plan.hpp"

namespace zerosearch::cli {

int run_write_profile_mode(const Options& o, const char* argv0) {
  Options one = o;
  one.node_types.resize(1);
  one.node_type_counts.clear();
  const Cluster cluster = make_cluster(one);
  PlanInput in = make_plan_input(one, cluster);
  in.profile_source = ProfileSource::analytic;
  in.framework = Framework::both;
  const Flavour flavour = o.framework == "m" ? Flavour::megatron : Flavour::deepspeed;
  if (o.framework != "m" && o.framework != "d" && o.framework != "default") {
    throw InputError(fmt::format("--write_profile takes -f m or -f d, not '{}'", o.framework));
  }
  const OutputTarget target = check_cli_output(o, o.write_profile, "--write_profile");
  const Catalogs catalogs = load_catalogs(find_profiledb(o, argv0), o.hardware, o.calibration);
  const SearchPlan plan = make_plan(in, catalogs);
  const EstimateContext& ctx = plan.context;
  const GpuProfile* p =
      flavour == Flavour::megatron ? ctx.megatron_profiles[0] : ctx.deepspeed_profiles[0];
  if (p == nullptr) {
    throw InputError("no analytic profile was generated"); // unreachable: analytic mode
  }
  write_output(target, [&](std::ostream& out) { out << profile_json(*p); });
  if (!o.quiet) {
    std::cerr << fmt::format("zerosearch: wrote the {} profile of {} on {} ({}) to {}\n",
                             to_string(flavour), p->model, p->gpu, p->origin, o.write_profile);
  }
  return 0;
}

} // namespace zerosearch::cli
