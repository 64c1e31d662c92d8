// Where the time went: the verdict names the largest overhead from 15% of the time, else compute;
// the shares and the table add up; and metrics.csv carries the phases that report.html reads back.
#include "train/monitor/time_breakdown.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/metrics_history.h"
#include "support/files.h"
#include "support/temp_dir.h"
#include "train/monitor/metrics.h"

namespace dl::test {
namespace {

using ::testing::HasSubstr;
using train::Phase;

train::TimeBreakdown of(double data, double compute, double checkpoint = 0, double eval = 0,
                        double exchange = 0) {
  train::TimeBreakdown t;
  t[Phase::kData] = data;
  t[Phase::kCompute] = compute;
  t[Phase::kCheckpoint] = checkpoint;
  t[Phase::kEval] = eval;
  t[Phase::kExchange] = exchange;
  return t;
}

TEST(TimeBreakdown, TheLargestOverheadFromFifteenPercentBoundsTheRun) {
  const train::Verdict data = train::verdict(of(41, 59));
  EXPECT_EQ(data.bound, Phase::kData);
  EXPECT_EQ(data.line, "data-bound: 41% of the time waiting for data");
  // Two overheads: the larger one names the bound.
  EXPECT_EQ(train::verdict(of(20, 40, 30, 10)).name, "checkpoint-bound");
  EXPECT_EQ(train::verdict(of(5, 50, 0, 10, 35)).name, "exchange-bound");
  EXPECT_EQ(train::verdict(of(1, 40, 0, 59)).line,
            "evaluation-bound: 59% of the time in validation");
  // 14% waiting is below the line: compute, with the optimizer counted in it.
  train::TimeBreakdown t = of(14, 80);
  t[Phase::kOptimizer] = 6;
  const train::Verdict compute = train::verdict(t);
  EXPECT_EQ(compute.bound, Phase::kCompute);
  EXPECT_EQ(compute.line, "compute-bound: 86% of the time in forward, backward and the optimizer");
  EXPECT_EQ(train::verdict(of(15, 85)).name, "data-bound") << "15% is the line itself";
  EXPECT_EQ(train::verdict(train::TimeBreakdown()).line, "no time measured");
}

TEST(TimeBreakdown, SharesAndTableAddUp) {
  train::TimeBreakdown t = of(1, 2, 0, 1);
  EXPECT_DOUBLE_EQ(t.total(), 4);
  EXPECT_EQ(train::shares_line(t), "data 25% | compute 50% | eval 25%");
  t += of(1, 2, 0, 1);
  EXPECT_DOUBLE_EQ(t[Phase::kCompute], 4);
  const std::string table = train::breakdown_table(t);
  EXPECT_THAT(table, HasSubstr("  compute           4.00   50.0%  in forward and backward\n"));
  EXPECT_THAT(table, HasSubstr("  data              2.00   25.0%"));
  EXPECT_THAT(table, ::testing::Not(HasSubstr("checkpoint"))) << "it took no time";
  EXPECT_THAT(table, HasSubstr("  total             8.00"));
}

// The writer's columns are the reader's: report.html's chart is drawn from what dl-train wrote.
TEST(TimeBreakdown, MetricsCsvCarriesEveryPhaseAndTheVerdict) {
  TempDir dir;
  const std::string path = dir / "metrics.csv";
  train::EpochMetrics m;
  m.epoch = 1;
  m.seconds = 10;
  m.time = of(4, 5, 0, 1);
  train::append_metrics(path, m);
  m.epoch = 2;
  m.time = of(0.5, 8.5, 0, 1);
  train::append_metrics(path, m);
  const std::string text = read_file(path);
  EXPECT_THAT(text,
              HasSubstr(",time_data_s,time_copy_s,time_compute_s,time_optimizer_s,"
                        "time_exchange_s,time_checkpoint_s,time_eval_s,time_other_s,bound\n"));
  EXPECT_THAT(text, HasSubstr(",4.000,0.000,5.000,0.000,0.000,0.000,1.000,0.000,data-bound\n"));
  EXPECT_THAT(text, HasSubstr(",compute-bound\n"));
  const auto rows = report::parse_metrics_csv(text, 2);
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_EQ(rows[1].time_seconds.size(), train::kPhases);
  EXPECT_EQ(rows[1].time_seconds[2].first, "compute");
  EXPECT_DOUBLE_EQ(rows[1].time_seconds[2].second, 8.5);
}

}  // namespace
}  // namespace dl::test
