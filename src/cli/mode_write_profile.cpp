#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "modes.hpp"
#include "output.hpp"
#include "session.hpp"
#include "setup.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/io/calibration_json.hpp"
#include "zerosearch/io/output_file.hpp"

namespace zerosearch::cli {

int run_write_profile_mode(const Options& o, const char* argv0) {
  // validate_options left the first node type only, and refused -f both.
  PlanInput in = make_plan_input(o, cluster_of(o));
  in.profile_source = ProfileSource::analytic;
  in.framework = Framework::both;
  const Flavour flavour = o.framework == Framework::megatron ? Flavour::megatron : Flavour::deepspeed;
  const OutputTarget target = check_cli_output(o, o.write_profile, "--write_profile");
  const Session session(o, argv0);
  const SearchPlan plan = session.plan(in);
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
