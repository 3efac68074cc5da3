// The validator's pure figures: error statistics, ranking quality (Kendall's tau, top-1
// regret), the leave-one-source-out choice of a tuned knob, percentiles for the intervals.
#pragma once

#include <string>
#include <vector>

namespace zerosearch::validate {

/// The median (mean of the two middle values for an even count); 0 for none.
double median(std::vector<double> v);

/// The q-quantile (0 <= q <= 1) with linear interpolation between order statistics (the
/// "type 7" rule of R and numpy's default); 0 for none.
double quantile(std::vector<double> v, double q);

/// Step-time error statistics over relative errors e = predicted / measured - 1.
struct Stats {
  int rows = 0;
  double median_abs = 0, within10 = 0, within25 = 0, median_signed = 0;
};
Stats error_stats(const std::vector<double>& errors);

/// Kendall's tau-b between two equally long series (ties in either count as neither
/// concordant nor discordant, tau-b's denominator corrects for them). 0 when either series is
/// constant or has fewer than 2 values.
double kendall_tau_b(const std::vector<double>& x, const std::vector<double>& y);

/// Top-1 regret: the measured time of the layout predicted fastest over the measured fastest,
/// minus 1. Layouts tied for the fastest prediction count with their mean measured time.
double top1_regret(const std::vector<double>& predicted, const std::vector<double>& measured);

/// One run for the ranking: the group it is compared in (same model, cluster and batch), its
/// layout, and its times.
struct RankItem {
  std::string group;
  std::string layout;
  double measured = 0, predicted = 0;
};
struct RankGroup {
  std::string group;
  int layouts = 0;
  double tau = 0, regret = 0;
};
/// Groups with at least `min_layouts` distinct layouts; runs of the same layout in a group are
/// one layout with their mean measured time. Sorted by group.
std::vector<RankGroup> ranking_groups(const std::vector<RankItem>& items, int min_layouts = 3);
/// Means over groups weighted by their number of layouts.
struct RankSummary {
  int groups = 0, layouts = 0;
  double tau = 0, regret = 0;
};
RankSummary rank_summary(const std::vector<RankGroup>& groups);

/// The candidate with the smallest median |error| (abs_errors[j] = |errors| of candidate j on
/// the training rows); ties go to `preferred` (the shipped default), then to the first.
/// `preferred` when no candidate has rows.
int choose_candidate(const std::vector<std::vector<double>>& abs_errors, int preferred);

} // namespace zerosearch::validate
