#include <catch2/catch.hpp>

#include <cmath>

#include "fixtures.hpp"
#include "zerosearch/model/model_stats.hpp"
#include "zerosearch/search/ranking.hpp"

using namespace zerosearch;

TEST_CASE("run_throughput: tokens, model FLOPs and the cluster's dense bf16 peak",
          "[ranking]") {
  const SearchPlan plan = test::llama_deepspeed_plan({{"A10", 8}});
  const RunThroughput t = run_throughput(plan.context, test::shipped_catalogs().hardware);
  CHECK(t.seq_len == 4096);
  CHECK(t.tokens_per_step == 64 * 4096);
  CHECK(t.gpus == 32);
  CHECK(t.peak_dtype == std::string("bf16"));
  CHECK(t.peak_flops == Approx(32 * 125e12)); // the A10's dense bf16 peak, 125 TFLOP/s
  CHECK(t.model_flops_per_step ==
        Approx(64 * training_flops_per_sequence(plan.context.model, 4096,
                                                megatron_padded_vocab(
                                                    plan.context.model.vocab_size))));
  // Llama-2-13B: about 6 x 13e9 x 262144 tokens plus attention.
  CHECK(t.model_flops_per_step == Approx(2.15e16).epsilon(0.01));
  CHECK(t.mfu_percent(29.292451858520508) == Approx(18.38).epsilon(0.001));
  CHECK(t.tokens_per_gpu_s(29.292451858520508) == Approx(279.66).epsilon(0.001));
}

TEST_CASE("run_throughput: fp16 peak where a GPU has no bf16, unknown MFU without a peak",
          "[ranking]") {
  EstimateContext ctx = test::llama_deepspeed_plan({{"A10", 1}}).context;
  HardwareCatalog hw = test::shipped_catalogs().hardware;
  ctx.cluster = Cluster{{{"V100-32GB", 2}}, 8, {}};
  RunThroughput t = run_throughput(ctx, hw);
  CHECK(t.peak_dtype == std::string("fp16"));
  CHECK(t.peak_flops == Approx(16 * 125e12));
  hw.gpus.at("V100-32GB").peak_tflops.fp16.reset();
  t = run_throughput(ctx, hw);
  CHECK(t.peak_flops == 0.0);
  CHECK(std::isnan(t.mfu_percent(1.0)));
}

TEST_CASE("memory_fit marks rows that fit only within the memory margin", "[ranking]") {
  RunResult run;
  run.margin_limit_gib = 20.0;
  Estimate e;
  e.gpumem_gib = 19.9;
  CHECK(memory_fit(run, e) == std::string("fits"));
  e.gpumem_gib = 20.1;
  CHECK(memory_fit(run, e) == std::string("within margin"));
  e.oom = true;
  CHECK(memory_fit(run, e) == std::string("OOM"));
  const MemoryMargin m{10.0, 0.5};
  CHECK(m.of(80.0) == Approx(8.5));
}
