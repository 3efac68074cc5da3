#include "zerosearch/io/plot.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "zerosearch/io/markup.hpp"

namespace zerosearch {

namespace {

constexpr double kWidth = 900.0;
constexpr double kHeight = 600.0;
constexpr double kLeft = 90.0;
constexpr double kRight = 30.0;
constexpr double kTop = 50.0;
constexpr double kBottom = 70.0;

/// One axis: data range to pixel range, linear or log10, with tick values.
struct Axis {
  bool log = false;
  double lo = 0.0; // in data units (log: the data value, not its log)
  double hi = 1.0;
  double px_lo = 0.0;
  double px_hi = 1.0;
  double step = 1.0; // linear tick spacing

  [[nodiscard]] double to_px(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                         : (v - lo) / (hi - lo);
    return px_lo + t * (px_hi - px_lo);
  }
};

/// 1, 2 or 5 times a power of ten, near range / 6.
double nice_step(double range) {
  const double raw = range / 6.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * mag;
}

Axis make_axis(double mn, double mx, double px_lo, double px_hi) {
  Axis a;
  a.px_lo = px_lo;
  a.px_hi = px_hi;
  if (mn > 0.0 && mx / mn > 30.0) {
    a.log = true;
    a.lo = std::pow(10.0, std::floor(std::log10(mn)));
    a.hi = std::pow(10.0, std::ceil(std::log10(mx)));
    return a;
  }
  if (mx <= mn) {
    const double pad = mn == 0.0 ? 1.0 : std::fabs(mn) * 0.1;
    mn -= pad;
    mx += pad;
  }
  a.step = nice_step(mx - mn);
  a.lo = std::floor(mn / a.step) * a.step;
  a.hi = std::ceil(mx / a.step) * a.step;
  if (a.lo < 0.0 && mn >= 0.0) {
    a.lo = 0.0;
  }
  return a;
}

std::vector<double> ticks(const Axis& a) {
  std::vector<double> out;
  if (a.log) {
    for (double decade = a.lo; decade <= a.hi * 1.0001; decade *= 10.0) {
      for (const double m : {1.0, 2.0, 5.0}) {
        if (decade * m <= a.hi * 1.0001) {
          out.push_back(decade * m);
        }
      }
    }
    return out;
  }
  for (int k = 0; a.lo + k * a.step <= a.hi + a.step * 1e-6; ++k) {
    const double v = a.lo + k * a.step;
    out.push_back(std::fabs(v) < a.step * 1e-9 ? 0.0 : v);
  }
  return out;
}

std::string tick_text(double v) { return fmt::format("{:.4g}", v); }

} // namespace

void write_price_time_svg(std::ostream& out, const std::vector<PlotPoint>& points,
                          const std::string& title) {
  write_scatter_svg(out, points, title, "step time (s/step)", "price per step ($)");
}

void write_scatter_svg(std::ostream& out, const std::vector<PlotPoint>& points,
                       const std::string& title, const std::string& x_label,
                       const std::string& y_label) {
  out << fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                     "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"13\">\n",
                     kWidth, kHeight);
  out << fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", kWidth, kHeight);
  out << fmt::format("<text x=\"{}\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">{}</text>\n",
                     kWidth / 2.0, escape_markup(title));
  if (points.empty()) {
    out << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no feasible design "
                       "point</text>\n</svg>\n",
                       kWidth / 2.0, kHeight / 2.0);
    return;
  }
  double xmn = points[0].step_s, xmx = xmn, ymn = points[0].price_usd, ymx = ymn;
  for (const auto& p : points) {
    xmn = std::min(xmn, p.step_s);
    xmx = std::max(xmx, p.step_s);
    ymn = std::min(ymn, p.price_usd);
    ymx = std::max(ymx, p.price_usd);
  }
  const Axis x = make_axis(xmn, xmx, kLeft, kWidth - kRight);
  const Axis y = make_axis(ymn, ymx, kHeight - kBottom, kTop);

  // Grid, ticks and tick labels.
  out << "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  for (const double v : ticks(x)) {
    out << fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", x.to_px(v),
                       kTop, kHeight - kBottom);
  }
  for (const double v : ticks(y)) {
    out << fmt::format("<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\"/>\n", y.to_px(v),
                       kLeft, kWidth - kRight);
  }
  out << "</g>\n<g fill=\"#333\">\n";
  for (const double v : ticks(x)) {
    out << fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x.to_px(v),
                       kHeight - kBottom + 18.0, tick_text(v));
  }
  for (const double v : ticks(y)) {
    out << fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 8.0,
                       y.to_px(v) + 4.0, tick_text(v));
  }
  out << "</g>\n";
  // Axes and their labels.
  out << fmt::format("<path d=\"M{0} {1} V{2} H{3}\" fill=\"none\" stroke=\"#333\"/>\n", kLeft,
                     kTop, kHeight - kBottom, kWidth - kRight);
  out << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>\n",
                     (kLeft + kWidth - kRight) / 2.0, kHeight - 22.0, escape_markup(x_label),
                     x.log ? ", log scale" : "");
  out << fmt::format("<text transform=\"translate(22 {}) rotate(-90)\" text-anchor=\"middle\">"
                     "{}{}</text>\n",
                     (kTop + kHeight - kBottom) / 2.0, escape_markup(y_label),
                     y.log ? ", log scale" : "");

  // Marks off the front, one per pixel.
  std::set<std::pair<long, long>> drawn;
  out << "<g fill=\"#4a7fb5\" fill-opacity=\"0.45\">\n";
  for (const auto& p : points) {
    if (p.on_front) {
      continue;
    }
    const double px = x.to_px(p.step_s);
    const double py = y.to_px(p.price_usd);
    if (drawn.insert({std::lround(px), std::lround(py)}).second) {
      out << fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"/>\n", px, py);
    }
  }
  out << "</g>\n";

  // The front: a line through its points by step time, then its marks with tooltips.
  std::vector<const PlotPoint*> front;
  for (const auto& p : points) {
    if (p.on_front) {
      front.push_back(&p);
    }
  }
  std::stable_sort(front.begin(), front.end(), [](const PlotPoint* a, const PlotPoint* b) {
    return a->step_s < b->step_s;
  });
  if (!front.empty()) {
    std::string path;
    for (const PlotPoint* p : front) {
      path += fmt::format("{}{:.1f} {:.1f}", path.empty() ? "M" : " L", x.to_px(p->step_s),
                          y.to_px(p->price_usd));
    }
    out << fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/>\n",
                       path);
    out << "<g fill=\"#d62728\">\n";
    for (const PlotPoint* p : front) {
      out << fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\"><title>{}</title></circle>\n",
                         x.to_px(p->step_s), y.to_px(p->price_usd), escape_markup(p->label));
    }
    out << "</g>\n";
  }
  // Legend.
  const double lx = kWidth - kRight - 230.0;
  out << fmt::format("<g transform=\"translate({} {})\">\n"
                     "<rect x=\"0\" y=\"0\" width=\"225\" height=\"46\" fill=\"white\" "
                     "stroke=\"#ccc\"/>\n"
                     "<circle cx=\"14\" cy=\"15\" r=\"3\" fill=\"#4a7fb5\" fill-opacity=\"0.45\"/>\n"
                     "<text x=\"26\" y=\"19\">feasible design point</text>\n"
                     "<path d=\"M6 32 H22\" stroke=\"#d62728\" stroke-width=\"2\"/>\n"
                     "<circle cx=\"14\" cy=\"32\" r=\"4\" fill=\"#d62728\"/>\n"
                     "<text x=\"26\" y=\"36\">Pareto front (price vs time)</text>\n</g>\n",
                     lx, kTop + 8.0);
  out << "</svg>\n";
}

} // namespace zerosearch
