#pragma once
// The sequence every mode shares: outputs checked and catalogs loaded before any work, plans
// made and announced, the search size checked, the search run, the rows ranked, the outputs
// written. A mode builds its clusters, calls these steps in order and adds what is its own
// (the Pareto front and limits, the detail of one design point, the size table).
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"
#include "output.hpp"
#include "zerosearch/search/plan.hpp"
#include "zerosearch/search/ranking.hpp"
#include "zerosearch/search/search_size.hpp"

namespace zerosearch::cli {

/// The plans of a run, their rows and all rows ranked together. `ranked` points into `runs`,
/// so a SessionResult is moved, never copied.
struct SessionResult {
  std::vector<SearchPlan> plans;   // one per run, in the same order
  std::vector<RunResult> runs;
  std::vector<RankedRow> ranked;
  double seconds = 0.0;            // search and ranking
  /// Each run's RunResult::points were kept (a sweep's --plot): the chart's marks off the
  /// front come from them, not from the rows.
  bool points = false;
  /// The published runs' intervals (profiledb/uncertainty.json), read once when a native
  /// estimator asks for them; empty otherwise.
  UncertaintyTable intervals;

  SessionResult() = default;
  SessionResult(const SessionResult&) = delete;
  SessionResult& operator=(const SessionResult&) = delete;
  SessionResult(SessionResult&&) = default;
  SessionResult& operator=(SessionResult&&) = default;

  /// The estimate context of the run `r` belongs to.
  [[nodiscard]] const EstimateContext& context_of(const RankedRow& r) const;
};

class Session {
public:
  /// Reads the output flags and checks every output (the CSV files, --emit, --timeline,
  /// --html), finds the profile database and loads it: whatever can refuse the run, before any
  /// work. Throws InputError.
  Session(const Options& o, const char* argv0);

  /// The plan of `in` (make_plan), with the options checked against its model (check_plan).
  /// --seq_len away from the measured profiles' length switches the run to the native
  /// estimator, with a note (refused with --estimator zerosearch).
  [[nodiscard]] SearchPlan plan(PlanInput in) const;
  /// The plan of the options on `cluster`.
  [[nodiscard]] SearchPlan plan(const Cluster& cluster) const;

  /// Sets what the CSV sidecars record from the first plan (`cluster_text`, when given,
  /// replacing its cluster) and prints every plan's warnings, then, when `notes`, their notes,
  /// each line once (nothing with --quiet).
  void announce(const std::vector<SearchPlan>& plans, const std::string& cluster_text = {},
                bool notes = true);

  /// Refuses a search too large for memory or time, then searches every plan on all its
  /// placements (one progress bar for all) and ranks all rows together. A single plan without
  /// any design point is an InputError saying why. It keeps the rows the outputs show and,
  /// with `front` (--pareto), every run's price/step-time front (RowFilter::front): a sweep's
  /// memory grows with the rows shown, not with its estimates.
  [[nodiscard]] SessionResult search(std::vector<SearchPlan> plans, bool front = false) const;

  /// Writes the plan outputs (--emit, --timeline, --html; `origin` and `summary_lines` describe
  /// the run, `pareto_svg` goes into the report), then the ranked rows to the CSV files and
  /// standard output, where `summary` is the mode's summary.
  void write(const SessionResult& result, const std::string& origin,
             const std::vector<std::string>& summary_lines, const SummaryWriter& summary,
             const std::string& pareto_svg = {}) const;

  /// The node types of the options as the catalog spells them (the CSV's node-count columns).
  [[nodiscard]] std::vector<std::string> type_names() const;

  const Options& options;
  OutputPlan output;
  std::filesystem::path profiledb;
  Catalogs catalogs;
};

/// Equal names but for the case of ASCII letters ("LLAMA3_8b" and "llama3_8B").
[[nodiscard]] bool same_name_ignoring_case(std::string_view a, std::string_view b) noexcept;

/// RunResult::margin_limit_gib of a search of `ctx`: the smallest memory limit of its node
/// types less the margin.
[[nodiscard]] double margin_limit_gib(const EstimateContext& ctx, const MemoryMargin& margin);

/// The worker threads of a search of `size`: -j, or one per core, within what memory allows.
[[nodiscard]] unsigned search_threads(unsigned requested, const SearchSize& size);

} // namespace zerosearch::cli
