#include "validate/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace zerosearch::validate {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

Stats error_stats(const std::vector<double>& errors) {
  Stats s;
  std::vector<double> abs;
  for (const double e : errors) {
    abs.push_back(std::fabs(e));
    s.within10 += std::fabs(e) <= 0.10 ? 1.0 : 0.0;
    s.within25 += std::fabs(e) <= 0.25 ? 1.0 : 0.0;
  }
  s.rows = static_cast<int>(errors.size());
  if (s.rows > 0) {
    s.median_abs = median(abs);
    s.median_signed = median(errors);
    s.within10 /= s.rows;
    s.within25 /= s.rows;
  }
  return s;
}

double kendall_tau_b(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = std::min(x.size(), y.size());
  double concordant = 0, discordant = 0, ties_x = 0, ties_y = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const double dx = x[i] - x[j];
      const double dy = y[i] - y[j];
      if (dx == 0.0 && dy == 0.0) continue;
      if (dx == 0.0) {
        ties_x += 1;
      } else if (dy == 0.0) {
        ties_y += 1;
      } else if ((dx > 0) == (dy > 0)) {
        concordant += 1;
      } else {
        discordant += 1;
      }
    }
  }
  const double denom =
      std::sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y));
  return denom > 0 ? (concordant - discordant) / denom : 0.0;
}

double top1_regret(const std::vector<double>& predicted, const std::vector<double>& measured) {
  const std::size_t n = std::min(predicted.size(), measured.size());
  if (n == 0) return 0.0;
  const double best_pred = *std::min_element(predicted.begin(), predicted.begin() + static_cast<std::ptrdiff_t>(n));
  const double best_meas = *std::min_element(measured.begin(), measured.begin() + static_cast<std::ptrdiff_t>(n));
  double sum = 0;
  int count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (predicted[i] == best_pred) {
      sum += measured[i];
      ++count;
    }
  }
  return sum / count / best_meas - 1.0;
}

std::vector<RankGroup> ranking_groups(const std::vector<RankItem>& items, int min_layouts) {
  // group -> layout -> (sum measured, count, predicted)
  struct Acc {
    double measured = 0;
    int count = 0;
    double predicted = 0;
  };
  std::map<std::string, std::map<std::string, Acc>> groups;
  for (const RankItem& it : items) {
    Acc& a = groups[it.group][it.layout];
    a.measured += it.measured;
    a.predicted += it.predicted;
    ++a.count;
  }
  std::vector<RankGroup> out;
  for (const auto& [group, layouts] : groups) {
    if (static_cast<int>(layouts.size()) < min_layouts) continue;
    std::vector<double> p, m;
    for (const auto& [layout, a] : layouts) {
      m.push_back(a.measured / a.count);
      p.push_back(a.predicted / a.count);
    }
    out.push_back({group, static_cast<int>(layouts.size()), kendall_tau_b(p, m), top1_regret(p, m)});
  }
  return out;
}

RankSummary rank_summary(const std::vector<RankGroup>& groups) {
  RankSummary s;
  for (const RankGroup& g : groups) {
    ++s.groups;
    s.layouts += g.layouts;
    s.tau += g.tau * g.layouts;
    s.regret += g.regret * g.layouts;
  }
  if (s.layouts > 0) {
    s.tau /= s.layouts;
    s.regret /= s.layouts;
  }
  return s;
}

int choose_candidate(const std::vector<std::vector<double>>& abs_errors, int preferred) {
  int best = -1;
  double best_median = std::numeric_limits<double>::infinity();
  const auto consider = [&](int j) {
    const auto& e = abs_errors[static_cast<std::size_t>(j)];
    if (e.empty()) return;
    const double m = median(e);
    if (m < best_median) {
      best_median = m;
      best = j;
    }
  };
  const int n = static_cast<int>(abs_errors.size());
  if (preferred >= 0 && preferred < n) consider(preferred);
  for (int j = 0; j < n; ++j) consider(j);
  return best < 0 ? preferred : best;
}

} // namespace zerosearch::validate
