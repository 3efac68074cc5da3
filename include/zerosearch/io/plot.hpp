#pragma once
// A standalone SVG chart of price per step against step time (no scripts, no external fonts),
// for Pareto sweeps: one mark per point, the front drawn as a line through its points.
#include <ostream>
#include <string>
#include <vector>

namespace zerosearch {

struct PlotPoint {
  /// x: seconds per step (> 0).
  double step_s = 0.0;
  /// y: dollars per step (> 0).
  double price_usd = 0.0;
  bool on_front = false;
  /// Tooltip text of a front point (marks off the front carry none, to keep the file small).
  std::string label;
};

/// Writes the chart. An axis whose largest value is over 30 times its smallest is drawn in log
/// scale (and says so). Marks closer than a pixel are drawn once. Writes a chart saying "no
/// feasible design point" when `points` is empty.
void write_price_time_svg(std::ostream& out, const std::vector<PlotPoint>& points,
                          const std::string& title);

/// The same chart with other axes: x is PlotPoint::step_s, y PlotPoint::price_usd, named by
/// `x_label` and `y_label` (the whole run's days and dollars or MWh, say).
void write_scatter_svg(std::ostream& out, const std::vector<PlotPoint>& points,
                       const std::string& title, const std::string& x_label,
                       const std::string& y_label);

} // namespace zerosearch
