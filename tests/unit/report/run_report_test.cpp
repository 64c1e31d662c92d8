// The run report's renderer without a browser: escaping of every outside string, the reload only
// while the run lives, one marker per epoch, the confusion table's shape, the notes shown when a
// part is missing, ticks, plan.json and metrics.csv read back, and the bounded resource history.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "report/chart_svg.h"
#include "report/metrics_history.h"
#include "report/plan_summary.h"
#include "report/run_report.h"

namespace dl::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

RunReport sample(int epochs) {
  RunReport r;
  r.run_name = "run";
  r.epochs_total = 10;
  for (int e = 1; e <= epochs; ++e) {
    r.epochs.push_back({e, 1.0 / e, 0.5, 1.1 / e, 0.6, 1e-3, 10, 1000, 5, {}, {}});
  }
  return r;
}

TEST(RunReport, EscapesEveryOutsideString) {
  RunReport r = sample(1);
  r.run_name = "<script>alert(1)</script>";
  r.run_dir = "/ws/runs/\"x\"&y";
  r.class_names = {"<b>a</b>", "b'c"};
  r.confusion = {1, 0, 0, 1};
  r.setup = {{"data", "<img src=x>", "why <i>"}};
  r.best = RunReport::Best{1, 0.6, "/p/<best>.pt"};
  const std::string html = render_run_report(r);
  EXPECT_THAT(html, Not(HasSubstr("<script>alert")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("<b>a</b>")));
  EXPECT_THAT(html, HasSubstr("b&#39;c"));
  EXPECT_THAT(html, Not(HasSubstr("<img src=x>")));
  EXPECT_THAT(html, HasSubstr("/p/&lt;best&gt;.pt"));
  EXPECT_THAT(html, HasSubstr("&quot;x&quot;&amp;y"));
  EXPECT_EQ(count(html, "<script>"), 1u);  // the page's own
}

TEST(RunReport, ReloadsOnlyWhileTheRunLives) {
  RunReport r = sample(2);
  r.refresh_seconds = 20;
  EXPECT_THAT(render_run_report(r), HasSubstr("<meta http-equiv=\"refresh\" content=\"20\">"));
  for (const RunState s : {RunState::kFinished, RunState::kStopped, RunState::kFailed}) {
    r.state = s;
    r.state_detail = "why it ended";
    const std::string html = render_run_report(r);
    EXPECT_THAT(html, Not(HasSubstr("http-equiv=\"refresh\"")));
    EXPECT_THAT(html, HasSubstr(std::string("data-state=\"") + run_state_name(s) + "\""));
    EXPECT_THAT(html, HasSubstr("why it ended"));
  }
}

TEST(RunReport, OneMarkerPerEpochOnEachCurve) {
  const std::string html = render_run_report(sample(4));
  // loss and accuracy: train and validation; lr, throughput, data wait, epoch time: one each.
  EXPECT_EQ(count(html, "class=\"pt\""), 4u * 8u);
  EXPECT_EQ(count(html, "data-series=\"validation\" data-x=\"4\""), 2u);
  EXPECT_THAT(html, HasSubstr(">epoch</text>"));
  EXPECT_THAT(html, HasSubstr(">samples/s</text>"));
}

TEST(RunReport, NotesWhatIsNotThereYet) {
  RunReport r = sample(0);
  r.plan_note = "no plan.json: dl-train ran without dl-launch";
  const std::string html = render_run_report(r);
  EXPECT_THAT(html, HasSubstr("id=\"no-confusion\">no validation yet"));
  EXPECT_THAT(html, HasSubstr("id=\"no-plan\">no plan.json"));
  EXPECT_EQ(count(html, "no epoch finished yet"), 6u);
  EXPECT_THAT(html, HasSubstr("none yet"));  // the best checkpoint
}

TEST(RunReport, ConfusionTableIsKByKWithRecall) {
  RunReport r = sample(1);
  r.class_names = {"cat", "dog", "eel"};
  r.confusion = {8, 2, 0, 1, 9, 0, 0, 0, 10};
  const std::string html = render_run_report(r);
  EXPECT_THAT(html, HasSubstr("data-classes=\"3\""));
  EXPECT_EQ(count(html, "<th scope=\"row\">"), 3u);
  EXPECT_EQ(count(html, "<th scope=\"col\">"), 4u);  // the classes and recall
  EXPECT_EQ(count(html, "title=\"true "), 9u);
  EXPECT_THAT(html, HasSubstr("title=\"true cat, predicted dog: 2 (20.0% of the row)\">2</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"recall\">80.0%</td>"));
  // Counts that do not match the names: no table rather than a wrong one.
  r.confusion.pop_back();
  EXPECT_THAT(render_run_report(r), HasSubstr("no validation yet"));
}

TEST(ChartSvg, NiceTicksCoverTheRange) {
  EXPECT_EQ(nice_ticks(0, 1, 5), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  const auto t = nice_ticks(0.237, 0.911, 5);
  EXPECT_LE(t.front(), 0.237);
  EXPECT_GE(t.back(), 0.911);
  EXPECT_DOUBLE_EQ(t[1] - t[0], 0.2);
  EXPECT_EQ(nice_ticks(5, 5, 4).size() >= 2, true);  // one value: widened
  EXPECT_EQ(tick_label(0.25, 0.05), "0.25");
  EXPECT_EQ(tick_label(1500, 500), "1500");
  EXPECT_EQ(tick_label(0.0004, 0.0002), "0.0004");
}

// Hover values are printed from fields, never from a format string: a unit holding printf's
// conversions comes out as written (and escaped), not as a format.
TEST(ChartSvg, ValueFormatsAreFieldsNotPrintfFormats) {
  EXPECT_EQ(format_chart_value({true, 2, "%"}, 91.026), "91.03%");
  EXPECT_EQ(format_chart_value({false, 3, ""}, 0.000123456), "0.000123");
  EXPECT_EQ(format_chart_value({true, 1, " s"}, 2.25), "2.2 s");
  EXPECT_EQ(format_chart_value({true, 99, ""}, 1.0), "1.00000000000000000") << "digits capped";
  LineChart c;
  c.id = "x";
  c.y_format = {true, 1, " %s%n<b>"};
  c.series.push_back({"s", "#000", {1}, {0.5}, false});
  EXPECT_THAT(render_line_chart(c), HasSubstr("data-y=\"0.5 %s%n&lt;b&gt;\""));
}

TEST(ChartSvg, IntegerAxisForEpochsAndBrokenLines) {
  LineChart c;
  c.id = "x";
  c.integer_x = true;
  c.series.push_back({"s", "#000", {1, 2, 3}, {1, std::nan(""), 3}, false});
  const std::string svg = render_line_chart(c);
  EXPECT_EQ(count(svg, "<polyline"), 2u);  // broken at the missing value
  EXPECT_EQ(count(svg, "class=\"pt\""), 2u);
  // x ticks (centred under the axis) at whole epochs only.
  EXPECT_THAT(svg, HasSubstr("text-anchor=\"middle\">2</text>"));
  EXPECT_THAT(svg, Not(HasSubstr("text-anchor=\"middle\">1.5</text>")));
}

// A stacked chart draws a band a series from the top below it to its own, puts the markers on
// the tops and gives them each series' own value.
TEST(ChartSvg, StackedBandsSitOnEachOtherAndMarkersSayTheirOwnShare) {
  LineChart c;
  c.id = "t";
  c.integer_x = true;
  c.stacked = true;
  c.y_min = 0;
  c.y_max = 100;
  c.y_format = {true, 0, "%"};
  c.series.push_back({"data", "#f00", {1, 2}, {40, 10}, false});
  c.series.push_back({"compute", "#00f", {1, 2}, {60, 90}, false});
  const std::string svg = render_line_chart(c);
  EXPECT_EQ(count(svg, "<polygon class=\"band\""), 2u);
  EXPECT_EQ(count(svg, "<polyline"), 0u);
  EXPECT_EQ(count(svg, "class=\"pt\""), 4u);
  // compute's markers say 60% and 90%, though they sit at the stack's top, 100%.
  EXPECT_THAT(svg, HasSubstr("data-series=\"compute\" data-x=\"1\" data-y=\"60%\""));
  EXPECT_THAT(svg, HasSubstr("data-series=\"compute\" data-x=\"2\" data-y=\"90%\""));
  // Both compute markers at the same height (the top), data's at two heights.
  const auto cy = [&](const std::string& series, const std::string& x) {
    const std::size_t at = svg.find("data-series=\"" + series + "\" data-x=\"" + x + "\"");
    const std::size_t c0 = svg.rfind("cy=\"", at);
    return svg.substr(c0 + 4, svg.find('"', c0 + 4) - c0 - 4);
  };
  EXPECT_EQ(cy("compute", "1"), cy("compute", "2"));
  EXPECT_NE(cy("data", "1"), cy("data", "2"));
}

TEST(PlanSummary, ReadsFactsPlanAndReasons) {
  RunReport r;
  read_plan_json(R"({"format": "dl-launch-plan", "version": 1,
    "facts": {"cpu": {"online": 4, "usable": 2, "reason": "cgroup quota 2"},
              "gpu": {"note": "no NVML", "devices": []}},
    "plan": {"device": {"value": "cpu", "reason": "no GPU"},
             "batch_size": {"value": 64, "reason": "--batch-size"}, "warnings": ["w1"]}})",
                 r);
  ASSERT_TRUE(r.has_plan);
  ASSERT_EQ(r.machine.size(), 2u);
  EXPECT_EQ(r.machine[0].value, "2 usable of 4 online");
  EXPECT_EQ(r.machine[0].reason, "cgroup quota 2");
  EXPECT_EQ(r.machine[1].value, "none");
  ASSERT_EQ(r.plan.size(), 2u);
  EXPECT_EQ(r.plan[1].name, "batch");
  EXPECT_EQ(r.plan[1].value, "64");
  EXPECT_EQ(r.plan_warnings, std::vector<std::string>{"w1"});

  RunReport bad;
  read_plan_json("{not json", bad);
  EXPECT_FALSE(bad.has_plan);
  EXPECT_THAT(bad.plan_note, HasSubstr("not a dl-launch plan"));
}

// The search's probes from plan.json become the report's throughput and memory charts: a marker
// per fitting, timed probe, the chosen one marked again, the budget as a line, and why it won.
TEST(PlanSummary, BatchSearchCurveIsDrawn) {
  RunReport r;
  read_plan_json(R"({"format": "dl-launch-plan", "version": 1,
    "batch_search": {"batch": 32, "budget_bytes": 629145600, "why": "the largest batch <within>",
      "trials": [
        {"batch": 8, "fits": true, "peak_bytes": 241172480, "step_seconds": 0.004},
        {"batch": 32, "fits": true, "peak_bytes": 251658240, "step_seconds": 0.0128,
         "samples_per_second": 2500},
        {"batch": 736, "fits": true, "peak_bytes": 610271232, "step_seconds": 3.08},
        {"batch": 800, "fits": false, "out_of_memory": false, "peak_bytes": 660602880,
         "step_seconds": 3.5}]}})",
                 r);
  ASSERT_EQ(r.batch_probes.size(), 4u);
  EXPECT_DOUBLE_EQ(r.batch_probes[0].samples_per_second, 2000.0) << "batch / step time";
  EXPECT_DOUBLE_EQ(r.batch_probes[1].samples_per_second, 2500.0);
  EXPECT_EQ(r.batch_chosen, 32);
  const std::string html = render_run_report(r);
  EXPECT_THAT(html, HasSubstr("<section id=\"batch-search\">"));
  EXPECT_THAT(html, HasSubstr("batch 32: the largest batch &lt;within&gt;"));
  EXPECT_EQ(count(html, "data-series=\"fits\""), 3u) << "the probe over budget is not a point";
  EXPECT_EQ(count(html, "data-series=\"chosen\" data-x=\"32\""), 1u);
  EXPECT_EQ(count(html, "data-series=\"peak\""), 4u);
  EXPECT_THAT(html, HasSubstr("data-series=\"budget\""));

  RunReport none;
  read_plan_json(R"({"format": "dl-launch-plan", "version": 1, "batch_search": null})", none);
  EXPECT_THAT(render_run_report(none), Not(HasSubstr("batch-search")));
}

TEST(MetricsHistory, ReadsRowsUpToTheResumedEpochKeepingTheLastOfEach) {
  const std::string csv =
      "epoch,train_loss,train_acc,val_loss,val_acc,lr,epoch_seconds,samples_per_second,"
      "data_wait_seconds,data_wait_percent,skipped_samples,overflow_steps\n"
      "1,0.9,0.7,0.8,0.72,0.001,10.0,1000.0,1.0,10.00,0,0\n"
      "2,0.5,0.8,0.6,0.80,0.0009,10.0,1100.0,1.0,9.00,0,0\n"
      "2,0.4,0.85,0.5,0.82,0.0009,10.0,1200.0,1.0,8.00,0,0\n"
      "garbage line\n"
      // an epoch of NaN fails every comparison: skipped, not cast to int (undefined)
      "nan,0.3,0.9,0.4,0.85,0.0008,10.0,1300.0,1.0,7.00,0,0\n"
      "3,0.3,0.9,0.4,0.85,0.0008,10.0,1300.0,1.0,7.00,0,0\n";
  const auto rows = parse_metrics_csv(csv, 2);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].epoch, 2);
  EXPECT_DOUBLE_EQ(rows[1].val_acc, 0.82);
  EXPECT_DOUBLE_EQ(rows[1].samples_per_second, 1200.0);
  EXPECT_DOUBLE_EQ(rows[1].data_wait_percent, 8.0);
}

// The time breakdown's columns are read in their order, and the verdict's text column does not
// make a row unreadable.
TEST(MetricsHistory, ReadsTheTimeBreakdownBesideTheVerdictsName) {
  const std::string csv =
      "epoch,epoch_seconds,time_data_s,time_compute_s,time_eval_s,bound\n"
      "1,10.0,4.0,5.0,1.0,data-bound\n"
      "2,10.0,x,5.0,1.0,data-bound\n";
  const auto rows = parse_metrics_csv(csv, 5);
  ASSERT_EQ(rows.size(), 1u) << "a number that is not one still drops its row";
  ASSERT_EQ(rows[0].time_seconds.size(), 3u);
  EXPECT_EQ(rows[0].time_seconds[0].first, "data");
  EXPECT_DOUBLE_EQ(rows[0].time_seconds[0].second, 4.0);
  EXPECT_EQ(rows[0].time_seconds[2].first, "eval");
  EXPECT_EQ(rows[0].bound, "data-bound");
  // A bound that is not a verdict's name (the file is the workspace's) is not kept.
  const auto odd = parse_metrics_csv("epoch,time_data_s,bound\n1,1.0,<script>\n", 5);
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(odd[0].bound, "");
}

// The page says in words what the stacked chart shows: the epochs each bound held, and the last
// epoch's shares.
TEST(RunReport, SaysWhichBoundEachRunOfEpochsHad) {
  RunReport r;
  r.run_name = "v";
  for (int e = 1; e <= 4; ++e) {
    EpochPoint p;
    p.epoch = e;
    p.bound = e <= 2 ? "data-bound" : "compute-bound";
    p.time_seconds = {{"data", e <= 2 ? 6.0 : 1.0},
                      {"compute", e <= 2 ? 4.0 : 8.0},
                      {"eval", e <= 2 ? 0.0 : 1.0}};
    r.epochs.push_back(p);
  }
  const std::string html = render_run_report(r);
  EXPECT_NE(html.find("<p id=\"time-verdict\"><strong>epochs 1-2: data-bound; epochs 3-4: "
                      "compute-bound</strong><br><span class=\"muted\">epoch 4: data 10% | "
                      "compute 80% | eval 10%</span></p>"),
            std::string::npos)
      << html;
  r.epochs.resize(1);
  EXPECT_NE(render_run_report(r).find("<strong>epoch 1: data-bound</strong>"), std::string::npos);
  for (auto& e : r.epochs) e.bound.clear();
  EXPECT_EQ(render_run_report(r).find("time-verdict"), std::string::npos)
      << "no verdict column (a script's metrics.csv): no line";
}

TEST(ResourceHistory, StaysBoundedAndSpansTheRun) {
  ResourceHistory h(8);
  for (int i = 0; i < 100; ++i) {
    ResourcePoint p;
    p.seconds = i;
    h.add(p);
  }
  const auto points = h.snapshot();
  EXPECT_LE(points.size(), 8u);
  EXPECT_EQ(points.front().seconds, 0);
  EXPECT_EQ(points.back().seconds, 99);
}

}  // namespace
}  // namespace dl::report
