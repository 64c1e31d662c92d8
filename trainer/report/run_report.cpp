// The run report's page (run_report.h): header, summary tiles, the epoch curves, the resources,
// the confusion matrix, the checkpoints, the machine and the plan. Laid out for a laptop screen
// (1366 px wide: three charts a row) and for printing; every outside string is escaped.
#include "report/run_report.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "report/chart_svg.h"
#include "report/html_text.h"

namespace dl::report {
namespace {

constexpr std::string_view kStyle = R"css(
:root{--fg:#1f2937;--muted:#6b7280;--line:#e5e7eb;--card:#fff;--bg:#f3f4f6;--accent:#2563eb}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
main{max-width:1340px;margin:0 auto;padding:12px 16px 24px}
header{display:flex;flex-wrap:wrap;align-items:baseline;gap:6px 14px;margin-bottom:10px}
h1{font-size:20px;margin:0;word-break:break-all}
h2{font-size:15px;margin:0 0 8px}
.state{padding:2px 10px;border-radius:10px;font-weight:600;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.state.running{background:#dbeafe;color:#1e40af}.state.finished{background:#dcfce7;color:#166534}
.state.stopped{background:#fef3c7;color:#92400e}.state.failed{background:#fee2e2;color:#991b1b}
.muted{color:var(--muted)}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px;margin-bottom:12px}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:10px;margin-bottom:12px}
.tile{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px 12px}
.tile b{display:block;font-size:20px}.tile span{color:var(--muted);font-size:12px}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(400px,1fr));gap:10px}
figure.chart{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px 8px 2px}
figcaption{display:flex;flex-wrap:wrap;gap:4px 12px;align-items:center;font-size:13px}
.legend{display:flex;flex-wrap:wrap;gap:2px 10px;color:var(--muted);font-size:12px}
.key i{display:inline-block;width:14px;height:3px;margin:0 4px 3px 0;vertical-align:middle}
.key i.dash{background-image:linear-gradient(90deg,transparent 50%,#fff 50%)!important;background-size:6px 3px}
.readout{margin-left:auto;font-size:12px;color:var(--fg);font-variant-numeric:tabular-nums}
svg{width:100%;height:auto;display:block}
svg .grid{stroke:#eef0f3;stroke-width:1}svg .frame{fill:none;stroke:#cbd2da}
svg .tick{font-size:11px;fill:#4b5563}svg .axis{font-size:12px;fill:#374151}
svg .empty{font-size:13px;fill:#9ca3af}svg .line{stroke-width:2}
svg .pt{stroke:#fff;stroke-width:1}svg .pt:hover{stroke:#111;stroke-width:2}
.two{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:12px}
.two>section{margin-bottom:0}.two{margin-bottom:12px}
table{border-collapse:collapse;font-size:13px}
table.kv td,table.kv th{padding:3px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
table.kv th{font-weight:600;white-space:nowrap}
table.kv td.reason{color:var(--muted)}
table.cm{font-variant-numeric:tabular-nums}
table.cm th{font-weight:600;font-size:12px;padding:2px 4px}
table.cm thead th{writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;height:86px;vertical-align:bottom}
table.cm tbody th{text-align:right;white-space:nowrap}
table.cm td{min-width:38px;height:26px;text-align:center;border:1px solid #fff}
table.cm td.recall{background:none!important;color:var(--muted);padding-left:8px}
.scroll{overflow-x:auto}
ul.warn{margin:4px 0 0;padding-left:18px;color:#92400e}
footer{color:var(--muted);font-size:12px;word-break:break-all}
@media (max-width:900px){.two{grid-template-columns:1fr}}
)css";

// A small script: the value of the marker under the pointer in its chart's caption. It marks the
// page when it ran to its end (data-script="ok"), which the browser test checks.
constexpr std::string_view kScript = R"js(
(function () {
  document.querySelectorAll("figure.chart").forEach(function (f) {
    var out = f.querySelector(".readout");
    f.addEventListener("mouseover", function (e) {
      var t = e.target;
      if (t.classList && t.classList.contains("pt")) out.textContent = t.textContent;
    });
    f.addEventListener("mouseleave", function () { out.textContent = ""; });
  });
  document.documentElement.setAttribute("data-script", "ok");
})();
)js";

std::string pct(double fraction) {
  return format_value("%.2f%%", 100.0 * fraction);
}

std::string tile(const std::string& value, const std::string& label) {
  return "<div class=\"tile\"><b>" + value + "</b><span>" + label + "</span></div>";
}

std::string header(const RunReport& r) {
  const std::string state = run_state_name(r.state);
  std::string out = "<header><h1>" + html_escape(r.run_name) + "</h1><span class=\"state " + state +
                    "\" id=\"state\">" + state + "</span>";
  const int done = r.epochs.empty() ? 0 : r.epochs.back().epoch;
  out +=
      "<span>epoch " + std::to_string(done) + " of " + std::to_string(r.epochs_total) + "</span>";
  out += "<span class=\"muted\">updated " + html_escape(r.updated) +
         (r.state == RunState::kRunning
              ? "; reloads every " + std::to_string(r.refresh_seconds) + " s while the run lives"
              : std::string()) +
         "</span>";
  out += "</header>";
  if (!r.state_detail.empty()) {
    out += "<p id=\"state-detail\" class=\"muted\">" + html_escape(r.state_detail) + "</p>";
  }
  return out;
}

std::string tiles(const RunReport& r) {
  std::string out = "<div class=\"tiles\">";
  if (r.best) {
    out += tile(pct(r.best->val_acc),
                "best val accuracy (epoch " + std::to_string(r.best->epoch) + ")");
  } else {
    out += tile("-", "best val accuracy");
  }
  if (!r.epochs.empty()) {
    const EpochPoint& e = r.epochs.back();
    out += tile(pct(e.val_acc), "last val accuracy");
    out += tile(format_value("%.4f", e.val_loss), "last val loss");
    out += tile(format_value("%.4f", e.train_loss), "last train loss");
    out += tile(format_value("%.0f", e.samples_per_second), "samples/s (last epoch)");
    out += tile(format_value("%.1f s", e.seconds), "epoch time");
  }
  return out + "</div>";
}

ChartSeries epoch_series(const RunReport& r, const std::string& name, const std::string& color,
                         double (*get)(const EpochPoint&), bool dashed = false) {
  ChartSeries s;
  s.name = name;
  s.color = color;
  s.dashed = dashed;
  for (const auto& e : r.epochs) {
    s.x.push_back(e.epoch);
    s.y.push_back(get(e));
  }
  return s;
}

// Where each epoch's time went (metrics.csv's time_<phase>_s), a band a phase stacked to 100%:
// the phases in the file's order, those that never took time left out.
LineChart time_chart(const RunReport& r) {
  static const std::vector<std::pair<std::string, std::string>> kColors = {
      {"data", "#dc2626"},      {"copy", "#f59e0b"},     {"compute", "#2563eb"},
      {"optimizer", "#7c3aed"}, {"exchange", "#db2777"}, {"checkpoint", "#059669"},
      {"eval", "#0891b2"},      {"other", "#94a3b8"}};
  LineChart c;
  c.id = "time-breakdown";
  c.title = "Where the time went";
  c.x_label = "epoch";
  c.y_label = "share of the epoch (%)";
  c.integer_x = true;
  c.stacked = true;
  c.y_min = 0;
  c.y_max = 100;
  c.y_format = {true, 1, "%"};
  c.empty_text = "no time breakdown in metrics.csv";
  std::vector<std::string> phases;
  for (const auto& e : r.epochs) {
    for (const auto& [name, seconds] : e.time_seconds) {
      if (seconds > 0 && std::find(phases.begin(), phases.end(), name) == phases.end()) {
        phases.push_back(name);
      }
    }
  }
  for (const auto& name : phases) {
    ChartSeries s;
    s.name = name;
    s.color = "#64748b";
    for (const auto& [known, color] : kColors) {
      if (known == name) s.color = color;
    }
    for (const auto& e : r.epochs) {
      double total = 0, mine = 0;
      for (const auto& [phase, seconds] : e.time_seconds) {
        total += seconds;
        if (phase == name) mine = seconds;
      }
      s.x.push_back(e.epoch);
      s.y.push_back(total > 0 ? 100.0 * mine / total : std::nan(""));
    }
    c.series.push_back(std::move(s));
  }
  return c;
}

// The verdicts under the chart: the epochs each bound held, in runs ("epochs 1-2: data-bound;
// epochs 3-5: compute-bound"), then the last epoch's shares, so the page says in words what the
// bands show.
std::string time_verdict(const RunReport& r) {
  std::string runs;
  std::size_t i = 0;
  while (i < r.epochs.size()) {
    std::size_t j = i;
    while (j + 1 < r.epochs.size() && r.epochs[j + 1].bound == r.epochs[i].bound) ++j;
    if (!r.epochs[i].bound.empty()) {
      const int first = r.epochs[i].epoch;
      const int last = r.epochs[j].epoch;
      if (!runs.empty()) runs += "; ";
      runs += (first == last ? "epoch " + std::to_string(first)
                             : "epochs " + std::to_string(first) + "-" + std::to_string(last)) +
              ": " + r.epochs[i].bound;
    }
    i = j + 1;
  }
  if (runs.empty()) return "";
  const EpochPoint& last = r.epochs.back();
  double total = 0;
  for (const auto& [phase, seconds] : last.time_seconds) total += seconds;
  std::string shares;
  for (const auto& [phase, seconds] : last.time_seconds) {
    if (total <= 0 || seconds <= 0) continue;
    if (!shares.empty()) shares += " | ";
    shares +=
        phase + " " + std::to_string(static_cast<int>(std::lround(100.0 * seconds / total))) + "%";
  }
  std::string out = "<p id=\"time-verdict\"><strong>" + html_escape(runs) + "</strong>";
  if (!shares.empty()) {
    out += "<br><span class=\"muted\">epoch " + std::to_string(last.epoch) + ": " +
           html_escape(shares) + "</span>";
  }
  return out + "</p>";
}

LineChart epoch_chart(const std::string& id, const std::string& title, const std::string& y_label) {
  LineChart c;
  c.id = id;
  c.title = title;
  c.x_label = "epoch";
  c.y_label = y_label;
  c.integer_x = true;
  c.empty_text = "no epoch finished yet";
  return c;
}

constexpr const char* kTrainColor = "#2563eb";
constexpr const char* kValColor = "#ea580c";

std::string curves(const RunReport& r) {
  std::string out = "<section id=\"curves\"><h2>Training, per epoch</h2><div class=\"charts\">";
  LineChart loss = epoch_chart("loss", "Loss", "cross-entropy loss");
  loss.y_format = {true, 4, ""};
  loss.series.push_back(
      epoch_series(r, "train", kTrainColor, [](const EpochPoint& e) { return e.train_loss; }));
  loss.series.push_back(
      epoch_series(r, "validation", kValColor, [](const EpochPoint& e) { return e.val_loss; }));
  out += render_line_chart(loss);

  LineChart acc = epoch_chart("accuracy", "Accuracy", "accuracy (%)");
  acc.y_format = {true, 2, "%"};
  acc.series.push_back(epoch_series(r, "train", kTrainColor,
                                    [](const EpochPoint& e) { return 100.0 * e.train_acc; }));
  acc.series.push_back(epoch_series(r, "validation", kValColor,
                                    [](const EpochPoint& e) { return 100.0 * e.val_acc; }));
  out += render_line_chart(acc);

  LineChart lr = epoch_chart("lr", "Learning rate", "learning rate");
  lr.y_min = 0;
  lr.y_format = {false, 3, ""};
  lr.series.push_back(
      epoch_series(r, "lr (cosine)", "#7c3aed", [](const EpochPoint& e) { return e.lr; }));
  out += render_line_chart(lr);

  LineChart speed = epoch_chart("throughput", "Throughput", "samples/s");
  speed.y_min = 0;
  speed.y_format = {true, 0, ""};
  speed.series.push_back(epoch_series(r, "training samples/s", "#059669",
                                      [](const EpochPoint& e) { return e.samples_per_second; }));
  out += render_line_chart(speed);

  LineChart wait = epoch_chart("data-wait", "Waiting for data", "share of the epoch (%)");
  wait.y_min = 0;
  wait.y_format = {true, 1, "%"};
  wait.series.push_back(epoch_series(r, "data wait", "#dc2626",
                                     [](const EpochPoint& e) { return e.data_wait_percent; }));
  out += render_line_chart(wait);
  out += render_line_chart(time_chart(r));

  LineChart time = epoch_chart("epoch-time", "Epoch time", "seconds (training + validation)");
  time.y_min = 0;
  time.y_format = {true, 1, " s"};
  time.series.push_back(
      epoch_series(r, "epoch time", "#475569", [](const EpochPoint& e) { return e.seconds; }));
  out += render_line_chart(time);
  return out + "</div>" + time_verdict(r) + "</section>";
}

std::string resources(const RunReport& r) {
  std::string out = "<section id=\"resources\"><h2>Resources over time</h2>";
  if (r.resources.empty()) {
    out += "<p class=\"muted\">" +
           html_escape(r.resources_note.empty() ? "no resource sample yet" : r.resources_note) +
           "</p></section>";
    return out;
  }
  // Minutes for runs longer than a few minutes, hours beyond two.
  const double span = r.resources.back().seconds;
  const double scale = span > 7200 ? 3600 : span > 180 ? 60 : 1;
  const std::string unit = span > 7200 ? "h" : span > 180 ? "min" : "s";
  LineChart host;
  host.id = "host";
  host.title = "CPU and memory";
  host.x_label = "time since start (" + unit + ")";
  host.y_label = "% of the machine";
  host.y_min = 0;
  host.y_max = 100;
  host.markers = r.resources.size() <= 120;
  host.y_format = {true, 1, "%"};
  ChartSeries cpu{"CPU busy", "#2563eb", {}, {}}, ram{"RAM used", "#059669", {}, {}};
  const double nan = std::nan("");
  int gpu_count = 0;
  for (const auto& p : r.resources) {
    cpu.x.push_back(p.seconds / scale);
    cpu.y.push_back(p.cpu_percent.value_or(nan));
    ram.x.push_back(p.seconds / scale);
    ram.y.push_back(p.ram_percent.value_or(nan));
    gpu_count = std::max(gpu_count, static_cast<int>(p.gpus.size()));
  }
  host.series = {cpu, ram};
  out += "<div class=\"charts\">" + render_line_chart(host);
  if (gpu_count > 0) {
    LineChart gpu = host;
    gpu.id = "gpu";
    gpu.title = "GPUs";
    gpu.y_label = "% of the GPU";
    gpu.series.clear();
    static const char* const kColors[] = {"#7c3aed", "#db2777", "#0891b2", "#ca8a04"};
    for (int g = 0; g < gpu_count; ++g) {
      const std::string color = kColors[g % 4];
      ChartSeries load{"gpu" + std::to_string(g) + " load", color, {}, {}, false};
      ChartSeries mem{"gpu" + std::to_string(g) + " memory", color, {}, {}, true};
      for (const auto& p : r.resources) {
        const bool has = static_cast<int>(p.gpus.size()) > g;
        load.x.push_back(p.seconds / scale);
        load.y.push_back(has ? p.gpus[static_cast<std::size_t>(g)].load_percent : nan);
        mem.x.push_back(p.seconds / scale);
        mem.y.push_back(has ? p.gpus[static_cast<std::size_t>(g)].memory_percent : nan);
      }
      gpu.series.push_back(std::move(load));
      gpu.series.push_back(std::move(mem));
    }
    out += render_line_chart(gpu);
  }
  out += "</div>";
  if (gpu_count == 0) out += "<p class=\"muted\">no GPU seen through NVML</p>";
  return out + "</section>";
}

// The last validation's confusion matrix as a heat map: rows the true class, columns the
// predicted one, each cell shaded by its share of the row (the row's recall on the diagonal).
std::string confusion(const RunReport& r) {
  std::string out = "<section id=\"confusion-section\"><h2>Confusion matrix, last validation</h2>";
  const std::size_t k = r.class_names.size();
  if (k == 0 || r.confusion.size() != k * k) {
    return out + "<p class=\"muted\" id=\"no-confusion\">no validation yet</p></section>";
  }
  out += "<div class=\"scroll\"><table class=\"cm\" id=\"confusion\" data-classes=\"" +
         std::to_string(k) + "\"><thead><tr><th class=\"corner\">true \\ predicted</th>";
  for (const auto& name : r.class_names) out += "<th scope=\"col\">" + html_escape(name) + "</th>";
  out += "<th scope=\"col\">recall</th></tr></thead><tbody>";
  for (std::size_t t = 0; t < k; ++t) {
    std::int64_t row_total = 0;
    for (std::size_t p = 0; p < k; ++p) row_total += r.confusion[t * k + p];
    out += "<tr><th scope=\"row\">" + html_escape(r.class_names[t]) + "</th>";
    for (std::size_t p = 0; p < k; ++p) {
      const std::int64_t n = r.confusion[t * k + p];
      const double share =
          row_total > 0 ? static_cast<double>(n) / static_cast<double>(row_total) : 0.0;
      // Blue for the diagonal (right), red off it (wrong), darker for a larger share.
      const char* rgb = t == p ? "37,99,235" : "220,38,38";
      const double alpha = t == p ? share : std::min(1.0, 3.0 * share);
      out += "<td style=\"background:rgba(" + std::string(rgb) + "," + format_value("%.2f", alpha) +
             ")" + (alpha > 0.55 ? ";color:#fff" : "") + "\" title=\"true " +
             html_escape(r.class_names[t]) + ", predicted " + html_escape(r.class_names[p]) + ": " +
             std::to_string(n) + " (" + format_value("%.1f%%", 100 * share) + " of the row)\">" +
             std::to_string(n) + "</td>";
    }
    const double recall =
        row_total > 0 ? static_cast<double>(r.confusion[t * k + t]) / static_cast<double>(row_total)
                      : std::nan("");
    out += "<td class=\"recall\">" + format_value("%.1f%%", 100 * recall) + "</td></tr>";
  }
  return out + "</tbody></table></div></section>";
}

std::string rows_table(const std::vector<ReportRow>& rows, const std::string& id) {
  std::string out = "<table class=\"kv\" id=\"" + id + "\">";
  for (const auto& row : rows) {
    out += "<tr><th>" + html_escape(row.name) + "</th><td>" + html_escape(row.value) +
           "</td><td class=\"reason\">" + html_escape(row.reason) + "</td></tr>";
  }
  return out + "</table>";
}

std::string checkpoints(const RunReport& r) {
  std::string out = "<section id=\"checkpoint\"><h2>Best checkpoint</h2>";
  if (r.best) {
    out += rows_table({{"epoch", std::to_string(r.best->epoch), ""},
                       {"val accuracy", pct(r.best->val_acc), ""},
                       {"path", r.best->path, ""}},
                      "best");
  } else {
    out += "<p class=\"muted\">none yet: written at the first epoch's end</p>";
  }
  out += "<h2 style=\"margin-top:12px\">This run's setup</h2>" + rows_table(r.setup, "setup");
  return out + "</section>";
}

// The batch-size search's probes: samples/s and peak memory against the batch, fitting probes
// and the others apart, and the line that says why the chosen batch won.
std::string batch_search(const RunReport& r) {
  if (r.batch_probes.empty()) return "";
  std::vector<RunReport::BatchProbe> probes = r.batch_probes;
  std::sort(probes.begin(), probes.end(),
            [](const auto& a, const auto& b) { return a.batch < b.batch; });
  std::string out = "<section id=\"batch-search\"><h2>Batch-size search</h2>";
  if (!r.batch_why.empty()) {
    out += "<p>batch " + std::to_string(r.batch_chosen) + ": " + html_escape(r.batch_why) + "</p>";
  }
  LineChart rate;
  rate.id = "batch-rate";
  rate.title = "Throughput of each probe";
  rate.x_label = "batch size";
  rate.y_label = "samples/s";
  rate.y_min = 0;
  rate.y_format = {true, 0, " samples/s"};
  rate.empty_text = "no probe timed its steps";
  LineChart memory = rate;
  memory.id = "batch-memory";
  memory.title = "Peak memory of each probe";
  memory.y_label = "MiB";
  memory.y_format = {true, 1, " MiB"};
  memory.empty_text = "no probe measured its peak";
  ChartSeries fits{"fits", "#059669", {}, {}}, chosen{"chosen", "#dc2626", {}, {}};
  ChartSeries peak{"peak", "#2563eb", {}, {}}, budget{"budget", "#9ca3af", {}, {}, true};
  for (const auto& p : probes) {
    if (p.fits && p.samples_per_second > 0) {
      fits.x.push_back(p.batch);
      fits.y.push_back(p.samples_per_second);
      if (static_cast<std::int64_t>(p.batch) == r.batch_chosen) {
        chosen.x.push_back(p.batch);
        chosen.y.push_back(p.samples_per_second);
      }
    }
    if (p.peak_bytes > 0) {
      peak.x.push_back(p.batch);
      peak.y.push_back(p.peak_bytes / 1048576.0);
    }
  }
  if (!fits.x.empty()) rate.series = {fits, chosen};
  if (!peak.x.empty()) {
    memory.series = {peak};
    if (r.batch_budget_bytes > 0) {
      budget.x = {peak.x.front(), peak.x.back()};
      budget.y = {r.batch_budget_bytes / 1048576.0, r.batch_budget_bytes / 1048576.0};
      memory.series.push_back(budget);
    }
  }
  out += "<div class=\"charts\">" + render_line_chart(rate) + render_line_chart(memory) + "</div>";
  return out + "</section>";
}

std::string plan(const RunReport& r) {
  std::string out = "<section id=\"plan\"><h2>Machine and plan</h2>";
  if (!r.has_plan) {
    return out + "<p class=\"muted\" id=\"no-plan\">" + html_escape(r.plan_note) + "</p></section>";
  }
  if (!r.plan_note.empty()) out += "<p class=\"muted\">" + html_escape(r.plan_note) + "</p>";
  out += "<div class=\"two\" style=\"margin:0\"><div><h2>Machine</h2>" +
         rows_table(r.machine, "machine") + "</div><div><h2>Plan</h2>" +
         rows_table(r.plan, "plan-table") + "</div></div>";
  if (!r.plan_warnings.empty()) {
    out += "<ul class=\"warn\">";
    for (const auto& w : r.plan_warnings) out += "<li>" + html_escape(w) + "</li>";
    out += "</ul>";
  }
  return out + "</section>";
}

}  // namespace

const char* run_state_name(RunState s) {
  switch (s) {
    case RunState::kRunning:
      return "running";
    case RunState::kFinished:
      return "finished";
    case RunState::kStopped:
      return "stopped";
    case RunState::kFailed:
      return "failed";
  }
  return "running";
}

std::string render_run_report(const RunReport& r) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  // Only a live run reloads: the final rewrite leaves a page that stays put.
  if (r.state == RunState::kRunning) {
    out += "<meta http-equiv=\"refresh\" content=\"" +
           std::to_string(std::max(1, r.refresh_seconds)) + "\">";
  }
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  out += "<title>" + html_escape(r.run_name) + " - " + run_state_name(r.state) + "</title>";
  out += "<style>";
  out += kStyle;
  out += "</style></head><body data-state=\"" + std::string(run_state_name(r.state)) + "\"><main>";
  out += header(r);
  out += tiles(r);
  out += curves(r);
  out += "<div class=\"two\">" + confusion(r) + checkpoints(r) + "</div>";
  out += resources(r);
  out += plan(r);
  out += batch_search(r);
  out += "<footer>run directory " + html_escape(r.run_dir) +
         " &middot; metrics.csv, train.log and the TensorBoard events file are there too</footer>";
  out += "</main><script>";
  out += kScript;
  out += "</script></body></html>\n";
  return out;
}

void write_run_report(const DirFd& run_dir, const RunReport& r) {
  run_dir.write_file(kReportFile, render_run_report(r));
}

}  // namespace dl::report
