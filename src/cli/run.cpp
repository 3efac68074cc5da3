#include "run.hpp"

#include <iostream>
#include <new>

#include "modes.hpp"
#include "options.hpp"
#include "setup.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/io/output_file.hpp"

namespace zerosearch::cli {

int run(int argc, const char* const* argv) {
  try {
    // Temporary files of interrupted writes are removed on SIGINT, SIGTERM and SIGHUP.
    install_output_cleanup();
    const ParseResult parsed = parse_options(argc, argv);
    if (!parsed.options) {
      return parsed.exit_code;
    }
    const char* argv0 = argc > 0 ? argv[0] : "zerosearch";
    Options options = *parsed.options;
    apply_gpu_per_node_default(options, argv0);
    const Options& o = options;
    for (const std::string& note : o.notes) {
      if (!o.quiet) {
        std::cerr << "zerosearch: note: " << note << '\n';
      }
    }
    if (!o.list.empty()) {
      return run_list_mode(o.list, o, argv0);
    }
    if (!o.write_profile.empty()) {
      return run_write_profile_mode(o, argv0);
    }
    if (o.search_space) {
      return run_search_space_mode(o, argv0);
    }
    if (o.exhaustive) {
      return run_exhaustive_mode(o, argv0);
    }
    if (o.pareto) {
      return run_pareto_mode(o, argv0);
    }
    return run_search_mode(o, argv0);
  } catch (const InputError& e) {
    std::cerr << "zerosearch: error: " << e.what() << '\n';
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "zerosearch: internal error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "zerosearch: internal error: " << e.what() << '\n';
    return 1;
  }
}

} // namespace zerosearch::cli
