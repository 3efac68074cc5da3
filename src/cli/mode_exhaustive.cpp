#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "describe.hpp"
#include "modes.hpp"
#include "output.hpp"
#include "session.hpp"
#include "setup.hpp"
#include "zerosearch/core/error.hpp"
#include "zerosearch/model/estimator.hpp"
#include "zerosearch/model/estimator_ops.hpp"
#include "zerosearch/search/enumerate.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/model/moe.hpp"
#include "zerosearch/model/zero_bubble.hpp"
#include "zerosearch/search/partition_choice.hpp"
#include "zerosearch/io/report.hpp"
#include "zerosearch/io/report_format.hpp"

namespace zerosearch::cli {

namespace {

/// --exhaustive's point checked against the model (docs/model.md §2), and --partition's sum
/// against its pipeline layers. Throws InputError.
void check_point_on_model(const Options& o, const EstimateContext& ctx) {
  const DesignPoint& p = o.point;
  if (const auto why = invalid_reason(p, ctx.cluster.world_size(), ctx.global_batch,
                                      static_cast<int>(ctx.model.num_layers),
                                      ctx.cluster.gpus_per_node, tp_domain_gpus(ctx),
                                      ctx.estimator)) {
    throw InputError(fmt::format("invalid design point {} tp {} pp {} dp {} mbs {}: {}",
                                 to_string(p.method), p.tp, p.pp, p.dp, p.mbs, *why));
  }
  long long sum = 0;
  for (const int layers : o.partition) {
    sum += layers;
  }
  if (!o.partition.empty() && sum != ctx.model.pipeline_layers()) {
    throw InputError(fmt::format("--partition '{}' sums to {} but the model has {} pipeline "
                                 "layers (transformer layers + embedding + post_process)",
                                 o.partition_text, sum, ctx.model.pipeline_layers()));
  }
}

/// The mode's one row (for --format, -o, --record and the plan outputs), ranked.
void set_single_row(SessionResult& result, const Session& session, const EstimateContext& ctx,
                    const DesignPoint& p, const Placement& placement, const Estimate& e) {
  result.runs.resize(1);
  result.runs[0].throughput = run_throughput(ctx, session.catalogs.hardware);
  result.runs[0].run_cost = run_cost_spec(session.options.run_cost, ctx,
                                          result.runs[0].throughput, session.catalogs.hardware);
  result.runs[0].cluster = ctx.cluster;
  result.runs[0].placements = PlacementSet(placement);
  result.runs[0].rows = {ResultRow{p, 0, 1, e}};
  result.runs[0].profile_source = profile_source_text(ctx);
  result.runs[0].estimator = ctx.estimator;
  if (const NativeSettings* st = plan_settings(ctx)) {
    result.runs[0].master_weights = st->master_weights;
  }
  result.ranked = rank_results(result.runs);
}

/// One value of a native dimension for --exhaustive (the default when the flag is absent).
template <typename T>
T single(const std::vector<T>& values, T fallback, const char* flag) {
  if (values.empty()) return fallback;
  if (values.size() != 1) {
    throw InputError(fmt::format("--exhaustive takes one {} value, not a list", flag));
  }
  return values.front();
}

/// --exhaustive with the native estimator: the time and memory components of every stage.
void exhaustive(NativeEstimator, const Options& o, Session& session, SessionResult& result,
                const Placement& placement) {
  const SearchPlan& plan = result.plans.front();
  const EstimateContext& ctx = plan.context;
  const Cluster& cluster = ctx.cluster;
  const std::vector<int>& given = o.partition;
  DesignPoint p = o.point;
  p.recompute = single(o.recompute, Recompute::none, "--recompute");
  p.offload = single(o.offload, Offload::none, "--offload");
  // A --pipeline_layout's chunks give the virtual stages when --virtual_stages is left out.
  const PipelineLayout* layout = o.native.pipeline_layout.get();
  const int layout_v =
      layout != nullptr && p.pp > 0 && layout->chunks.size() % static_cast<std::size_t>(p.pp) == 0
          ? static_cast<int>(layout->chunks.size() / static_cast<std::size_t>(p.pp))
          : 1;
  p.virtual_stages =
      static_cast<std::int16_t>(single(o.virtual_stages, layout_v, "--virtual_stages"));
  if (layout != nullptr && !given.empty()) {
    throw InputError(fmt::format("--partition '{}' with --pipeline_layout '{}': the layout "
                                 "places every layer; give one of them",
                                 o.partition_text, layout->text));
  }
  p.dtype = single(o.dtypes, plan.dtypes.front(), "--dtype");
  p.schedule = single(o.schedules,
                      p.virtual_stages > 1 ? Schedule::interleaved : Schedule::one_f_one_b,
                      "--schedule");
  if (p.schedule == Schedule::one_f_one_b && p.virtual_stages > 1) {
    throw InputError(fmt::format("--virtual_stages {} interleaves the pipeline: give --schedule "
                                 "interleaved (or leave --schedule out)",
                                 p.virtual_stages));
  }
  if (info(p.schedule).interleaves && p.virtual_stages == 1) {
    throw InputError("--schedule interleaved needs --virtual_stages 2 or more");
  }
  if (!given.empty() && schedule_chunks_per_rank(p.schedule) > 1) {
    throw InputError(fmt::format("--partition with --schedule {}: its two model chunks per rank "
                                 "are split as torchtitan splits them (leave --partition out)",
                                 to_string(p.schedule)));
  }
  // Expert parallelism: one layout; etp defaults to tp (Megatron-LM's default).
  p.ep = static_cast<std::int16_t>(single(o.ep, 1, "--ep"));
  // Under the flex dispatcher (--moe_dispatcher deepep|hybridep) the estimate takes etp 1
  // (docs/moe.md §3.2).
  const bool flex = flex_dispatcher(o.native.moe_dispatcher);
  p.etp = static_cast<std::int16_t>(
      single(o.etp, ctx.model.is_moe() && !flex ? p.tp : 1, "--etp"));
  // In a search --zero3_impl prices the zero3 plans and leaves the others as they are; one
  // design point with another method would be estimated without it.
  if (o.native.zero3_impl == Zero3Impl::per_param && p.method != DpMethod::zero3) {
    throw InputError(fmt::format("--zero3_impl per_param with {}: it prices DeepSpeed's ZeRO-3 "
                                 "parameter gathers only: use --dp_method zero3 or leave "
                                 "--zero3_impl out",
                                 to_string(p.method)));
  }
  NativeEstimate n;
  const Estimate e = estimate_native(ctx, p, placement, given, &n);

  set_single_row(result, session, ctx, p, placement, e);
  const auto gpu_name = [&](int g) { return cluster.groups[static_cast<std::size_t>(g)].gpu; };
  const auto report = [&](std::ostream& out) {
    out << fmt::format("zerosearch: {} on {} ({} GPUs, {} per node), global batch {}\n",
                       ctx.model.name, cluster_text(cluster), cluster.world_size(),
                       cluster.gpus_per_node, ctx.global_batch);
    out << fmt::format("estimator: {} (docs/native.md)\n", profile_source_text(ctx));
    out << fmt::format("design point: {} ({}), tp {}, pp {}, dp {}, micro-batch {} ({}), "
                       "recompute {}, offload {}, virtual stages {}, {}, "
                       "schedule {}\n",
                       to_string(p.method), framework_params(p.method).framework, p.tp, p.pp, p.dp,
                       p.mbs, micro_batches_text(p.num_micro_batches), to_string(p.recompute), to_string(p.offload),
                       p.virtual_stages, to_string(p.dtype), to_string(p.schedule));
    if (const NativeSettings* st = plan_settings(ctx);
        st != nullptr && !st->master_weights && p.dtype != Dtype::fp32) {
      out << fmt::format("precision:    pure 16-bit training (--master_weights off): parameters, "
                         "gradients and Adam's m and v in {}, no fp32 master copy{}\n",
                         p.dtype == Dtype::fp16 ? "fp16" : "bf16",
                         framework_params(p.method).framework == std::string_view("deepspeed")
                             ? " (DeepSpeed keeps a 16-bit one of its partition)"
                             : "");
    }
    if (ctx.model.is_moe()) {
      out << fmt::format("experts:      {} per MoE layer, top-{}, ep {}, etp {}, edp {} "
                         "(router imbalance {:g})\n",
                         ctx.model.num_experts, ctx.model.experts_per_token, p.ep, p.etp, p.edp(),
                         moe_imbalance(ctx).value_or(kDefaultMoeImbalance));
      if (flex) {
        out << fmt::format("dispatcher:   flex, {} (a token sent once per destination node "
                           "and rank, docs/moe.md section 3.2)\n",
                           moe_dispatcher_name(o.native.moe_dispatcher));
      }
    }
    if (p.cp > 1) {
      out << fmt::format("context:      cp {} ({}), {} tokens per GPU of each sequence\n", p.cp,
                         cp_comm_description(p.cp_comm),
                         ctx.model.sequence_length / p.cp);
    }
    out << fmt::format("placement:    {}\n", compress_placement(cluster, placement));
    if (!n.slices.empty()) {
      out << fmt::format("token slices: {} per sequence, {} tokens (TeraPipe's optimal "
                         "slicing)\n",
                         n.slices.size(), fmt::join(n.slices, ", "));
    }
    out << fmt::format("partition:    {} ({})\n", python_int_list(e.partition),
                       layout != nullptr ? fmt::format("from --pipeline_layout '{}'", layout->text)
                       : given.empty()   ? std::string("chosen by the native model")
                                         : std::string("as given"));
    out << '\n';
    out << fmt::format("step time           {:>14.6f} s/step\n", e.step_s);
    out << fmt::format("  pipeline          {:>14.6f} s\n", e.pipeline_s);
    out << fmt::format("  data-parallel     {:>14.6f} s (exposed)\n", e.dp_sync_s);
    out << fmt::format("  embedding sync    {:>14.6f} s\n", e.embedding_sync_s);
    out << fmt::format("  optimizer step    {:>14.6f} s\n", e.native.optimizer_s);
    out << fmt::format("  offload           {:>14.6f} s\n", e.native.offload_s);
    const NativeStage& peak = n.stages[static_cast<std::size_t>(n.peak_stage)];
    out << fmt::format("memory              {:>14.2f} GiB on stage {} ({} has {:.2f}): {}\n",
                       e.gpumem_gib, n.peak_stage, gpu_name(peak.gpu), peak.memory_limit_gib,
                       n.oom ? "OOM" : "fits");
    if (p.offload != Offload::none) {
      out << fmt::format("host memory         {:>14.2f} GiB per node{}\n", n.host_gib_per_node,
                         n.host_oom ? ": more than the node has (--host_memory_gib)" : "");
    }
    out << fmt::format("price               {:>14.6f} $ per step, ${:.0f} for {} iterations\n",
                       e.price_per_step_usd, e.train_cost_usd, ctx.iterations);
    out << "\ntime of one micro-batch per stage, s (backward includes recompute and exposed "
           "ZeRO-3/FSDP collectives):\n";
    out << fmt::format("{:>5} {:>6}  {:<10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
                       "stage", "layers", "GPU", "forward", "backward", "recompute", "gathers",
                       "send", "dp sync", "optimizer");
    for (std::size_t j = 0; j < n.stages.size(); ++j) {
      const NativeStage& st = n.stages[j];
      out << fmt::format("{:>5} {:>6}  {:<10} {:>10.6f} {:>10.6f} {:>10.6f} {:>10.6f} {:>10.6f} "
                         "{:>10.6f} {:>10.6f}\n",
                         j, st.layers, gpu_name(st.gpu), st.forward_s, st.backward_s,
                         st.recompute_s, st.sharded_comm_s, st.send_s, st.dp_sync_s,
                         st.optimizer_s);
    }
    if (p.pp > 1 && is_split_schedule(p.schedule)) {
      // The zero-bubble and DualPipe schedules run the backward as two passes (docs/native.md
      // §2.3): per stage, its input-gradient part B and its weight-gradient part W.
      out << fmt::format("\nbackward split by the {} schedule, s per micro-batch:\n{:>5} {:>10} "
                         "{:>10}\n",
                         to_string(p.schedule), "stage", "B (input)", "W (weight)");
      for (std::size_t j = 0; j < n.stages.size(); ++j) {
        const NativeStage& st = n.stages[j];
        out << fmt::format("{:>5} {:>10.6f} {:>10.6f}\n", j, st.backward_s - st.weight_s,
                           st.weight_s);
      }
    }
    if (ctx.model.is_moe()) {
      out << "\nexpert parallelism per stage, s (all-to-all: token dispatch and combine over ep "
             "and the etp gather, forward + backward of one micro-batch, inside the times above; "
             "expert dp sync: the experts' gradients over edp, inside dp sync):\n";
      out << fmt::format("{:>5} {:>10} {:>12} {:>15}\n", "stage", "MoE layers", "all-to-all",
                         "expert dp sync");
      for (std::size_t j = 0; j < n.stages.size(); ++j) {
        const NativeStage& st = n.stages[j];
        out << fmt::format("{:>5} {:>10} {:>12.6f} {:>15.6f}\n", j, st.moe_layers, st.moe_comm_s,
                           st.expert_dp_sync_s);
      }
      bool overlapped = false;
      for (const NativeStage& st : n.stages) overlapped = overlapped || st.moe_a2a_overlap_s > 0.0;
      if (overlapped) {
        // docs/moe.md section 3.1: what each combined forward-and-backward pair hides, the rank's
        // pairs of chunk passes, and what they take off the rank's passes in the step.
        out << "\nEP all-to-all overlap (--moe_a2a_overlap, docs/moe.md section 3.1): "
               "all-to-all hidden "
               "by one combined forward-and-backward pair of a whole micro-batch, s; the rank's "
               "combined pairs of chunk passes; the all-to-all they hide in the step, s:\n";
        out << fmt::format("{:>5} {:>12} {:>8} {:>12}\n", "stage", "hidden/pair", "pairs",
                           "hidden");
        const int pp = static_cast<int>(n.stages.size());
        for (int j = 0; j < pp; ++j) {
          const NativeStage& st = n.stages[static_cast<std::size_t>(j)];
          const double pairs =
              moe_a2a_overlap_pairs(pp, j, p.virtual_stages, p.num_micro_batches);
          out << fmt::format("{:>5} {:>12.6f} {:>8.0f} {:>12.6f}\n", j, st.moe_a2a_overlap_s, pairs,
                             st.moe_a2a_overlap_s * pairs / p.virtual_stages);
        }
      }
    }
    if (p.cp > 1) {
      out << "\ncontext-parallel exchange per micro-batch, s (exposed: not hidden behind "
             "attention; inside forward and backward above):\n";
      out << fmt::format("{:>5} {:>12}\n", "stage", "cp exposed");
      for (std::size_t j = 0; j < n.stages.size(); ++j) {
        out << fmt::format("{:>5} {:>12.6f}\n", j, n.stages[j].cp_comm_s);
      }
    }
    if ((ctx.model.is_moe() || p.cp > 1) && n.slices.empty()) {
      // The same parts by pass, as the timeline draws them inside the forward and the backward.
      out << "\nall-to-all and context-parallel exchange by pass, s per micro-batch (what "
             "--timeline draws inside the forward and backward passes; backward includes "
             "recompute's rerun):\n";
      out << fmt::format("{:>5} {:>12} {:>12} {:>12} {:>12}\n", "stage", "a2a forward",
                         "a2a backward", "cp forward", "cp backward");
      for (std::size_t j = 0; j < n.stages.size(); ++j) {
        const NativeStage& st = n.stages[j];
        out << fmt::format("{:>5} {:>12.6f} {:>12.6f} {:>12.6f} {:>12.6f}\n", j,
                           st.moe_comm_forward_s, st.moe_comm_s - st.moe_comm_forward_s,
                           st.cp_comm_forward_s, st.cp_comm_s - st.cp_comm_forward_s);
      }
    }
    if (!n.slices.empty()) {
      // Per slice: its tokens and, on the first and the slowest stage, its forward and
      // backward time (attention over the earlier tokens makes later slices dearer).
      const TokenPipeline pipe = token_pipeline(NativeEstimator{}, ctx, p, n);
      std::size_t slow = 0;
      for (std::size_t j = 0; j < n.stages.size(); ++j) {
        if (n.stages[j].forward_s + n.stages[j].backward_s >
            n.stages[slow].forward_s + n.stages[slow].backward_s) {
          slow = j;
        }
      }
      out << fmt::format("\ntoken slices (forward and backward of one slice of one micro-batch, "
                         "stage 0 and the slowest stage {}), s:\n", slow);
      out << fmt::format("{:>5} {:>7} {:>13} {:>11} {:>11} {:>11} {:>11}\n", "slice", "tokens",
                         "from-to", "fwd st 0", "bwd st 0", "fwd slow", "bwd slow");
      std::int64_t c = 0;
      for (std::size_t k = 0; k < n.slices.size(); ++k) {
        const std::int64_t l = n.slices[k];
        out << fmt::format("{:>5} {:>7} {:>13} {:>11.6f} {:>11.6f} {:>11.6f} {:>11.6f}\n", k, l,
                           fmt::format("{}-{}", c, c + l - 1), pipe.stages[0].forward_s(l, c),
                           pipe.stages[0].backward_s(l, c), pipe.stages[slow].forward_s(l, c),
                           pipe.stages[slow].backward_s(l, c));
        c += l;
      }
    }
    out << "\nmemory per GPU by stage, GiB:\n";
    out << fmt::format("{:>5} {:>8} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9} {:>16}\n", "stage",
                       "weights", "grads", "optimizer", "in flight", "activations", "buffers",
                       "overhead", "total / limit");
    for (std::size_t j = 0; j < n.stages.size(); ++j) {
      const NativeStage& st = n.stages[j];
      const NativeMemory& m = st.memory;
      out << fmt::format("{:>5} {:>8.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>11.2f} {:>9.2f} {:>9.2f} "
                         "{:>7.2f} / {:<6.2f}{}\n",
                         j, m.weights, m.gradients, m.optimizer, st.in_flight, m.activations,
                         m.buffers, m.overhead, m.total(), st.memory_limit_gib,
                         st.fits() ? "" : " OOM");
    }
    out << "\nlayers count the embedding (first stage) and post_process (last stage) as "
           "entries. buffers: embedding output, logits and their fp32 gradient, gathered "
           "parameters.\n";
    if (p.cp > 1) {
      out << "with cp > 1, buffers add one layer's context-parallel receive buffers (ring: keys, "
             "values and their gradients, double-buffered; a2a: the head-split q, k, v).\n";
    }
    print_run_cost_summary(out, o.run_cost, result.ranked);
  };
  session.write(result, "--exhaustive",
                {fmt::format("{} on {} GPUs, global batch {}: one design point (--exhaustive)",
                             ctx.model.name, cluster.world_size(), ctx.global_batch)},
                report);
}

/// --exhaustive with the original's estimator: the step time's parts and each stage's times and
/// memory (EstimateDetail).
void exhaustive(OriginalEstimator original, const Options& o, Session& session,
                SessionResult& result, const Placement& placement) {
  const EstimateContext& ctx = result.plans.front().context;
  const Cluster& cluster = ctx.cluster;
  const DesignPoint& p = o.point;
  const std::vector<int>& given = o.partition;
  // A stage GPU without the method's profile at this tp (or a setting the original has not).
  if (const std::string why = point_invalid_reason(original, ctx, p,
                                                      stages_of(original, ctx, p, placement));
      !why.empty()) {
    throw InputError(why);
  }
  const LayerCosts costs = layer_costs(ctx, p); // InputError when another node type has none
  EstimateDetail d;
  // A given partition is evaluated as given; otherwise --search_method chooses it.
  const Estimate e = given.empty() ? choose_and_estimate(ctx, p, costs, placement, nullptr, &d)
                                   : estimate(ctx, p, costs, placement, given, &d);

  // The row in the original's CSV format, for --record and -o.
  set_single_row(result, session, ctx, p, placement, e);
  // The detailed report is this mode's summary; --format, -o and --record write the row.
  const auto report = [&](std::ostream& out) {
    out << fmt::format("zerosearch: {} on {} ({} GPUs, {} per node), global batch {}\n",
                       ctx.model.name, cluster_text(cluster), cluster.world_size(), cluster.gpus_per_node,
                       ctx.global_batch);
    out << fmt::format("profiles: {}\n", profile_source_text(ctx));
    out << fmt::format("design point: {}, tp {}, pp {}, dp {}, micro-batch {} ({})\n",
                       to_string(p.method), p.tp, p.pp, p.dp, p.mbs,
                       micro_batches_text(p.num_micro_batches));
    out << fmt::format("placement:    {}\n", compress_placement(cluster, placement));
    out << fmt::format("partition:    {} ({})\n", python_int_list(e.partition),
                       given.empty() ? fmt::format("chosen by {}", to_string(ctx.partition_method))
                                     : std::string("as given"));
    out << '\n';
    out << fmt::format("step time           {:>14.6f} s/step\n", e.step_s);
    out << fmt::format("  pipeline          {:>14.6f} s\n", e.pipeline_s);
    out << fmt::format("  data-parallel     {:>14.6f} s\n", e.dp_sync_s);
    out << fmt::format("  embedding sync    {:>14.6f} s\n", e.embedding_sync_s);
    if (e.oom) {
      std::size_t s = 0;
      while (s < d.stage_mem_gib.size() && d.stage_mem_gib[s] <= d.stage_limit_gib[s]) {
        ++s;
      }
      out << fmt::format("memory              {:>14.2f} GiB: OOM, stage {} needs more than its "
                         "{}'s {:.2f} GiB\n",
                         e.gpumem_gib, s, cluster.groups[static_cast<std::size_t>(d.stage_gpu[s])].gpu,
                         d.stage_limit_gib[s]);
    } else {
      out << fmt::format("memory              {:>14.2f} GiB on the fullest stage: fits\n",
                         e.gpumem_gib);
    }
    out << fmt::format("price               {:>14.6f} $ per step, ${:.0f} for {} iterations\n",
                       e.price_per_step_usd, e.train_cost_usd, ctx.iterations);
    out << '\n';
    out << fmt::format("{:>5} {:>6} {:>7}  {:<7} {:>11} {:>11} {:>11} {:>11} {:>12} {:>16}\n",
                       "stage", "layers", "from-to", "GPU", "compute s", "carried s", "fwd send s",
                       "bwd send s", "end s", "memory GiB");
    int first = 0;
    for (std::size_t s = 0; s < e.partition.size(); ++s) {
      const int count = e.partition[s];
      const bool over = d.stage_mem_gib[s] > d.stage_limit_gib[s];
      out << fmt::format("{:>5} {:>6} {:>7}  {:<7} {:>11.6f} {:>11.6f} {:>11.6f} {:>11.6f} {:>12.6f} "
                         "{:>7.2f} / {:<5.2f}{}\n",
                         s, count, fmt::format("{}-{}", first, first + count - 1),
                         cluster.groups[static_cast<std::size_t>(d.stage_gpu[s])].gpu,
                         d.times.comp_s[s], d.times.comm_s[s], d.times.for_send_s[s],
                         d.times.back_send_s[s], d.stage_end_s[s], d.stage_mem_gib[s],
                         d.stage_limit_gib[s], over ? " OOM" : "");
      first += count;
    }
    out << "\nlayers count from 0 (the embedding) to " << ctx.model.pipeline_layers() - 1
        << " (post_process). A middle stage carries its incoming link time; stage 0 sends forward "
           "and the last stage sends backward.\n";
    print_run_cost_summary(out, o.run_cost, result.ranked);
  };
  session.write(result, "--exhaustive",
                {fmt::format("{} on {} GPUs, global batch {}: one design point (--exhaustive)",
                             ctx.model.name, cluster.world_size(), ctx.global_batch)},
                report);
}

} // namespace

int run_exhaustive_mode(const Options& o, const char* argv0) {
  Session session(o, argv0);
  PlanInput in = make_plan_input(o, cluster_of(o));
  // The point names its own method: search-wide framework choices do not apply.
  in.framework = Framework::automatic;
  SessionResult result;
  result.plans.push_back(session.plan(in));
  session.announce(result.plans, {}, false);
  const EstimateContext& ctx = result.plans.front().context;
  check_point_on_model(o, ctx);
  const Placement placement = o.placement ? *o.placement : placements(ctx.cluster).front();
  visit_estimator(ctx.estimator, [&](auto estimator) {
    exhaustive(estimator, o, session, result, placement);
  });
  return 0;
}

} // namespace zerosearch::cli
