// Line charts as inline SVG for the run report: axes with "nice" ticks (1, 2, 5 x 10^k), grid
// lines, a legend, and optional point markers that carry their values (data-series, data-x,
// data-y and a <title> a browser shows on hover), so a test can count them in the DOM.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dl::report {

struct ChartSeries {
  std::string name;          // legend text, and the markers' data-series
  std::string color;         // a CSS colour
  std::vector<double> x, y;  // one point per index; a non-finite y breaks the line there
  bool dashed = false;
};

// How the hover titles print a value: a fixed number of decimals or of significant digits, then
// a unit. Fields rather than a printf format, so that no text reaches printf as its format.
struct ValueFormat {
  bool fixed = false;  // "%.Nf" where set, else "%.Ng"
  int digits = 3;      // N, 0 to 17
  std::string suffix;  // "%", " s"
};

// `v` as `format` says ("0.25 s").
std::string format_chart_value(const ValueFormat& format, double v);

struct LineChart {
  std::string id;  // the figure's data-chart attribute
  std::string title;
  std::string x_label, y_label;  // with their units: "epoch", "samples/s", "%"
  std::vector<ChartSeries> series;
  std::optional<double> y_min, y_max;  // a fixed range (shares: 0 to 100); else the data's
  bool integer_x = false;              // x ticks at whole numbers only (epochs)
  bool markers = true;                 // a marker per point (few points: epochs)
  // Each series drawn as a band on top of those before it (shares that add up: where an epoch's
  // time went); a marker sits on its band's top and carries the series' own value.
  bool stacked = false;
  ValueFormat y_format;  // the values in hover titles
  std::string empty_text = "no data yet";
};

// One <figure class="chart"> holding the title, the legend and the <svg>. All text escaped.
std::string render_line_chart(const LineChart& chart);

// Tick positions covering [lo, hi] with about `target` steps of a 1, 2 or 5 x 10^k size; the
// first tick <= lo, the last >= hi. lo == hi is widened first.
std::vector<double> nice_ticks(double lo, double hi, int target);

// A tick's label: as many decimals as the step needs ("0.25", "1e+04" for large values).
std::string tick_label(double value, double step);

}  // namespace dl::report
