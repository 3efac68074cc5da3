#include <catch2/catch.hpp>

#include <string>

#include "zerosearch/model/estimator.hpp"

using namespace zerosearch;

namespace {
// One overload per estimator type, as callers of visit_estimator write them.
std::string which(OriginalEstimator) { return "original"; }
std::string which(NativeEstimator) { return "native"; }
} // namespace

TEST_CASE("every estimator has its row: its id and the name the command line parses",
          "[estimator]") {
  for (const Estimator e : {Estimator::zerosearch, Estimator::native}) {
    const EstimatorInfo& info = estimator_info(e);
    CHECK(info.id == e);
    CHECK(std::string(info.name) == to_string(e));
    CHECK(parse_estimator(info.name) == e);
  }
}

TEST_CASE("visit_estimator calls the overload of the estimator's own type", "[estimator]") {
  CHECK(visit_estimator(Estimator::zerosearch, [](auto e) { return which(e); }) == "original");
  CHECK(visit_estimator(Estimator::native, [](auto e) { return which(e); }) == "native");
  for (const Estimator e : {Estimator::zerosearch, Estimator::native}) {
    CHECK(visit_estimator(e, [](auto t) { return decltype(t)::id; }) == e);
  }
}

TEST_CASE("choose_estimator: the one asked for, else the original's where it can run",
          "[estimator]") {
  CHECK(choose_estimator(std::nullopt, true) == Estimator::zerosearch);
  CHECK(choose_estimator(std::nullopt, false) == analytic_estimator());
  CHECK(choose_estimator(Estimator::native, true) == Estimator::native);
  CHECK(choose_estimator(Estimator::zerosearch, false) == Estimator::zerosearch);
}

TEST_CASE("the analytic estimator models what the original cannot", "[estimator]") {
  // A run that asks for a setting the original lacks, or a sequence length away from its
  // profiles, is sent to analytic_estimator(): it must model both.
  const EstimatorInfo& analytic = estimator_info(analytic_estimator());
  CHECK(analytic.extended_points);
  CHECK(analytic.models_recompute);
  CHECK_FALSE(analytic.fixed_sequence_length);
  // The original's formulas: measured layer times at their own length, no extended settings,
  // and ZeRO 0/1 (2/3) points share one pipeline, which the search relies on.
  const EstimatorInfo& original = estimator_info(Estimator::zerosearch);
  CHECK(original.fixed_sequence_length);
  CHECK_FALSE(original.extended_points);
  CHECK(original.shares_pipelines);
}
