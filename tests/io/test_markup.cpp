#include <catch2/catch.hpp>

#include <string>

#include "zerosearch/io/markup.hpp"

using namespace zerosearch;

TEST_CASE("escape_markup: the five special characters become entities", "[markup]") {
  CHECK(escape_markup("a & b") == "a &amp; b");
  CHECK(escape_markup("<svg>") == "&lt;svg&gt;");
  CHECK(escape_markup(R"(say "hi")") == "say &quot;hi&quot;");
  // &#39;: an entity HTML 4, HTML 5 and XML all read (&apos; is not HTML 4's).
  CHECK(escape_markup("Llama's") == "Llama&#39;s");
  // An entity already in the text is escaped again: the text is taken as text.
  CHECK(escape_markup("&amp;") == "&amp;amp;");
}

TEST_CASE("escape_markup keeps other text as it is, UTF-8 included", "[markup]") {
  CHECK(escape_markup("").empty());
  CHECK(escape_markup("stage 7 · A10, 29.29 s/step") == "stage 7 · A10, 29.29 s/step");
}

TEST_CASE("escaped text holds no markup character and every & starts an entity", "[markup]") {
  std::string all;
  for (int c = 1; c < 128; ++c) {
    all += static_cast<char>(c);
  }
  const std::string out = escape_markup(all + all);
  CHECK(out.find_first_of("<>\"'") == std::string::npos);
  for (auto at = out.find('&'); at != std::string::npos; at = out.find('&', at + 1)) {
    const auto end = out.find(';', at);
    REQUIRE(end != std::string::npos);
    const std::string entity = out.substr(at, end - at + 1);
    CHECK((entity == "&amp;" || entity == "&lt;" || entity == "&gt;" || entity == "&quot;" ||
           entity == "&#39;"));
  }
}
