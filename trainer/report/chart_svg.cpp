// SVG line charts (chart_svg.h). The drawing is in a fixed coordinate system (viewBox) that the
// page scales to its column; sizes below are in those units.
#include "report/chart_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "report/html_text.h"

namespace dl::report {
namespace {

constexpr double kWidth = 440, kHeight = 230;
constexpr double kLeft = 58, kRight = 14, kTop = 12, kBottom = 44;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

std::string num(double v) {  // a coordinate
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
};

double step_of(const std::vector<double>& ticks) {
  return ticks.size() >= 2 ? ticks[1] - ticks[0] : 1.0;
}

std::string legend(const LineChart& c) {
  std::string out = "<span class=\"legend\">";
  for (const auto& s : c.series) {
    out += "<span class=\"key\"><i style=\"background:" + html_escape(s.color) + "\"" +
           (s.dashed ? " class=\"dash\"" : "") + "></i>" + html_escape(s.name) + "</span>";
  }
  return out + "</span>";
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1};
  if (hi < lo) std::swap(lo, hi);
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    const double pad = lo == 0 ? 1.0 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  const double first = std::floor(lo / step + 1e-9) * step;
  std::vector<double> ticks;
  for (double t = first; ticks.size() < 50; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::string tick_label(double value, double step) {
  const double big = std::max(std::fabs(value), std::fabs(step));
  if (big >= 1e5 || (big > 0 && big < 1e-4)) return format_value("%.2g", value);
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::min(decimals, 6), value);
  return buf;
}

std::string format_chart_value(const ValueFormat& format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format.fixed ? "%.*f" : "%.*g", std::clamp(format.digits, 0, 17),
                v);
  return buf + format.suffix;
}

namespace {

// Where values go: the ticks of both axes, and the map from values into the plot's viewBox.
struct Frame {
  std::vector<double> xt, yt;
  double px(double x) const { return kLeft + (x - xt.front()) / (xt.back() - xt.front()) * kPlotW; }
  double py(double y) const {
    return kTop + kPlotH - (y - yt.front()) / (yt.back() - yt.front()) * kPlotH;
  }
};

// The axes for the data's ranges (neither empty) and the chart's wishes: the y range widened to
// y_min and y_max, whole numbers on an integer x axis.
Frame frame_for(const LineChart& c, const Range& xr, Range yr) {
  Frame f;
  if (c.y_min) yr.lo = std::min(yr.lo, *c.y_min);
  if (c.y_max) yr.hi = std::max(yr.hi, *c.y_max);
  f.yt = nice_ticks(yr.lo, yr.hi, 5);
  if (c.y_min && c.y_max && *c.y_min <= yr.lo && *c.y_max >= yr.hi) {
    f.yt = nice_ticks(*c.y_min, *c.y_max, 5);
  }
  if (c.integer_x) {
    // Whole numbers only; one epoch is shown as a range of one around it.
    double lo = std::floor(xr.lo), hi = std::ceil(xr.hi);
    if (hi - lo < 1) hi = lo + 1;
    f.xt = nice_ticks(lo, hi, std::min(8, static_cast<int>(hi - lo)));
    if (step_of(f.xt) < 1) f.xt = nice_ticks(lo, hi, 1);
  } else {
    f.xt = nice_ticks(xr.lo, xr.hi, 6);
  }
  return f;
}

// Grid lines and tick labels, the frame, and the two axis labels.
std::string grid(const LineChart& c, const Frame& f) {
  std::string out;
  const double ystep = step_of(f.yt), xstep = step_of(f.xt);
  for (const double t : f.yt) {
    out += "<line class=\"grid\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kLeft + kPlotW) +
           "\" y1=\"" + num(f.py(t)) + "\" y2=\"" + num(f.py(t)) + "\"/>";
    out += "<text class=\"tick\" x=\"" + num(kLeft - 6) + "\" y=\"" + num(f.py(t) + 4) +
           "\" text-anchor=\"end\">" + tick_label(t, ystep) + "</text>";
  }
  for (const double t : f.xt) {
    out += "<line class=\"grid\" x1=\"" + num(f.px(t)) + "\" x2=\"" + num(f.px(t)) + "\" y1=\"" +
           num(kTop) + "\" y2=\"" + num(kTop + kPlotH) + "\"/>";
    out += "<text class=\"tick\" x=\"" + num(f.px(t)) + "\" y=\"" + num(kTop + kPlotH + 16) +
           "\" text-anchor=\"middle\">" + tick_label(t, xstep) + "</text>";
  }
  out += "<rect class=\"frame\" x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" +
         num(kPlotW) + "\" height=\"" + num(kPlotH) + "\"/>";
  out += "<text class=\"axis\" x=\"" + num(kLeft + kPlotW / 2) + "\" y=\"" + num(kHeight - 6) +
         "\" text-anchor=\"middle\">" + html_escape(c.x_label) + "</text>";
  out += "<text class=\"axis\" transform=\"translate(14 " + num(kTop + kPlotH / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(c.y_label) + "</text>";
  return out;
}

// Each series as polylines, broken at non-finite values.
std::string lines(const LineChart& c, const Frame& f) {
  std::string out;
  for (const auto& s : c.series) {
    const std::string stroke = html_escape(s.color);
    std::string points;
    auto flush = [&] {
      if (points.empty()) return;
      out += "<polyline class=\"line\" fill=\"none\" stroke=\"" + stroke + "\"" +
             (s.dashed ? " stroke-dasharray=\"5 3\"" : "") + " points=\"" + points + "\"/>";
      points.clear();
    };
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i]) || !std::isfinite(s.x[i])) {
        flush();
        continue;
      }
      if (!points.empty()) points += ' ';
      points += num(f.px(s.x[i])) + "," + num(f.py(s.y[i]));
    }
    flush();
  }
  return out;
}

// A stacked chart as drawn: each series' y the running sum over the series up to it (a
// non-finite value counts as 0 in the sums below it and stays a gap in its own).
LineChart stacked_tops(const LineChart& c) {
  LineChart drawn = c;
  std::vector<double> sum;
  for (auto& s : drawn.series) {
    sum.resize(std::max(sum.size(), s.y.size()), 0.0);
    for (std::size_t i = 0; i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      sum[i] += s.y[i];
      s.y[i] = sum[i];
    }
  }
  return drawn;
}

// Each series of a stacked chart (as drawn) as a filled band from the top below it to its own.
std::string bands(const LineChart& drawn, const Frame& f) {
  std::string out;
  std::vector<double> below;
  for (const auto& s : drawn.series) {
    const std::size_t n = std::min(s.x.size(), s.y.size());
    below.resize(std::max(below.size(), n), 0.0);
    std::string top, bottom;
    for (std::size_t i = 0; i < n; ++i) {
      const double y = std::isfinite(s.y[i]) ? s.y[i] : below[i];
      if (!top.empty()) top += ' ';
      top += num(f.px(s.x[i])) + "," + num(f.py(y));
    }
    for (std::size_t i = n; i-- > 0;) {
      bottom += ' ' + num(f.px(s.x[i])) + "," + num(f.py(below[i]));
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isfinite(s.y[i])) below[i] = s.y[i];
    }
    if (n == 0) continue;
    out += "<polygon class=\"band\" fill=\"" + html_escape(s.color) +
           "\" fill-opacity=\"0.55\" stroke=\"" + html_escape(s.color) + "\" points=\"" + top +
           bottom + "\"/>";
  }
  return out;
}

// A marker at each finite point, with its value for the page's readout and a tooltip (`values`:
// the series' own values where the markers sit elsewhere, on a stacked chart's tops).
std::string markers(const LineChart& c, const Frame& f, const LineChart& values) {
  std::string out;
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    const auto& s = c.series[k];
    const auto& own = values.series[k].y;
    const std::string name = html_escape(s.name);
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i]) || !std::isfinite(s.x[i])) continue;
      const std::string value = html_escape(format_chart_value(c.y_format, own[i]));
      out += "<circle class=\"pt\" r=\"3.2\" cx=\"" + num(f.px(s.x[i])) + "\" cy=\"" +
             num(f.py(s.y[i])) + "\" fill=\"" + html_escape(s.color) + "\" data-series=\"" + name +
             "\" data-x=\"" + format_value("%g", s.x[i]) + "\" data-y=\"" + value + "\"><title>" +
             name + ", " + html_escape(c.x_label) + " " + format_value("%g", s.x[i]) + ": " +
             value + "</title></circle>";
    }
  }
  return out;
}

}  // namespace

std::string render_line_chart(const LineChart& chart) {
  const LineChart c = chart.stacked ? stacked_tops(chart) : chart;
  std::string out = "<figure class=\"chart\" data-chart=\"" + html_escape(c.id) + "\">";
  out += "<figcaption><b>" + html_escape(c.title) + "</b>" + legend(c) +
         "<span class=\"readout\"></span></figcaption>";
  out += "<svg viewBox=\"0 0 " + num(kWidth) + " " + num(kHeight) +
         "\" role=\"img\" aria-label=\"" + html_escape(c.title) + "\">";

  Range xr, yr;
  for (const auto& s : c.series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      xr.add(s.x[i]);
      yr.add(s.y[i]);
    }
  }
  if (xr.empty()) {
    out += "<rect class=\"frame\" x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" +
           num(kPlotW) + "\" height=\"" + num(kPlotH) + "\"/>";
    out += "<text class=\"empty\" x=\"" + num(kLeft + kPlotW / 2) + "\" y=\"" +
           num(kTop + kPlotH / 2) + "\" text-anchor=\"middle\">" + html_escape(c.empty_text) +
           "</text></svg></figure>";
    return out;
  }
  const Frame f = frame_for(c, xr, yr);
  out += grid(c, f) + (c.stacked ? bands(c, f) : lines(c, f));
  if (c.markers) out += markers(c, f, chart);
  return out + "</svg></figure>";
}

}  // namespace dl::report
