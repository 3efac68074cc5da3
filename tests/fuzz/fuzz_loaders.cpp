// libFuzzer target for the JSON loaders: every input is given to the profile, model-catalog
// and hardware-catalog parsers. Bad input must end in InputError; a crash, a leak, a sanitizer
// report or any other exception is a bug.
//
// Build (clang only): cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DZEROSEARCH_FUZZ=ON
//   -DZEROSEARCH_BUILD_TESTS=OFF -DZEROSEARCH_BUILD_BENCH=OFF && cmake --build build-fuzz
//   --target fuzz_loaders
// Run:   ./build-fuzz/tests/fuzz/fuzz_loaders -dict=tests/fuzz/json.dict -max_total_time=30
//        NEW_CORPUS_DIR tests/fuzz/corpus
#include <cstddef>
#include <cstdint>
#include <string>

#include "zerosearch/io/hardware_json.hpp"
#include "zerosearch/io/model_json.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/core/hardware.hpp"
#include "zerosearch/core/model.hpp"
#include "zerosearch/io/profiledb.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const zerosearch::GpuProfile p = zerosearch::parse_profile(text, "fuzz.json");
    (void)p.layer_times_s.size();
  } catch (const zerosearch::InputError&) {
  }
  try {
    const zerosearch::ModelCatalog c = zerosearch::parse_model_catalog(text, "fuzz.json");
    (void)c.find(c.models.front().name);
  } catch (const zerosearch::InputError&) {
  }
  try {
    const zerosearch::HardwareCatalog c = zerosearch::parse_hardware_catalog(text, "fuzz.json");
    for (const auto& [name, set] : c.bandwidth_sets) {
      (void)c.bandwidth_set(name);
    }
  } catch (const zerosearch::InputError&) {
  }
  return 0;
}
