#include <catch2/catch.hpp>

#include <sstream>

#include "zerosearch/io/plot.hpp"

using namespace zerosearch;

namespace {
std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}
} // namespace

TEST_CASE("the chart: one mark per point, the front as a line, labelled axes", "[plot]") {
  const std::vector<PlotPoint> points{{10, 5, true, "fast <&> dear"},
                                      {20, 1, true, "slow, cheap"},
                                      {15, 4, false, ""},
                                      {18, 4.5, false, ""}};
  std::ostringstream out;
  write_price_time_svg(out, points, "a < b");
  const std::string svg = out.str();
  CHECK(svg.rfind("<?xml", 0) == 0);
  CHECK(svg.find("</svg>\n") == svg.size() - 7);
  CHECK(count(svg, "<circle") == 4 + 2); // 4 marks + 2 in the legend
  CHECK(count(svg, "<title>") == 2);     // front points carry tooltips
  CHECK(svg.find("<title>fast &lt;&amp;&gt; dear</title>") != std::string::npos);
  CHECK(svg.find(">a &lt; b</text>") != std::string::npos);
  CHECK(svg.find("step time (s/step)</text>") != std::string::npos);
  CHECK(svg.find("price per step ($)</text>") != std::string::npos);
  CHECK(svg.find("log scale") == std::string::npos);
  CHECK(svg.find("<script") == std::string::npos);
  // The front line goes from the fast point to the cheap one: two vertices.
  CHECK(count(svg, "stroke=\"#d62728\" stroke-width=\"2\"/>") == 2); // the line and the legend's
}

TEST_CASE("the chart uses a log axis for wide ranges and survives no points", "[plot]") {
  std::ostringstream wide;
  write_price_time_svg(wide, {{1, 0.001, true, ""}, {1000, 0.002, true, ""}}, "t");
  CHECK(wide.str().find("step time (s/step), log scale") != std::string::npos);
  CHECK(wide.str().find("price per step ($)</text>") != std::string::npos);
  std::ostringstream none;
  write_price_time_svg(none, {}, "t");
  CHECK(none.str().find("no feasible design point") != std::string::npos);
  CHECK(none.str().find("</svg>") != std::string::npos);
}
