// libFuzzer target for io/json_fast: differential against nlohmann. Whatever the fast reader
// accepts nlohmann must accept with the same value (types and bits of doubles included); a
// text the fast reader refuses is nlohmann's to read or report, so nothing is checked then.
//
// Build (clang only): as fuzz_loaders (tests/fuzz/fuzz_loaders.cpp), --target fuzz_json_fast
// Run:   ./build-fuzz/tests/fuzz/fuzz_json_fast -dict=tests/fuzz/json.dict -max_total_time=60
//        NEW_CORPUS_DIR tests/fuzz/corpus
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "zerosearch/io/json_fast.hpp"

#include "json_same.hpp"

using Json = nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Json fast;
  if (!zerosearch::json_fast::parse(text, fast)) {
    return 0;
  }
  Json ref;
  try {
    ref = Json::parse(text);
  } catch (const Json::exception&) {
    std::abort(); // accepted what nlohmann rejects
  }
  if (!zerosearch::testing::same_json(fast, ref)) {
    std::abort(); // read another value
  }
  return 0;
}
