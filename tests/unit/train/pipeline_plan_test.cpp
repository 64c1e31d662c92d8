// The worker/thread choice from measured costs: the 2-core case where cores-2 is wrong, loading-
// bound data where workers pay, a GPU-like step that does not care about threads, the user's fixed
// numbers, and the thread counts worth measuring.
#include "train/run/pipeline_plan.h"

#include <gtest/gtest.h>

namespace dl::test {
namespace {

using namespace dl::train;

PipelineCosts costs(int cores, double load_ms, std::map<int, double> step_ms) {
  PipelineCosts c;
  c.cores = cores;
  c.load_seconds = load_ms / 1e3;
  for (auto& [t, ms] : step_ms) c.step_seconds[t] = ms / 1e3;
  return c;
}

TEST(PipelinePlan, TwoCoresWithCheapLoadingComputeOnBoth) {
  // Fashion-MNIST and a small CNN: a batch loads in 1 ms, a step takes 40 ms on one thread.
  const auto c = costs(2, 1.0, {{1, 40.0}, {2, 24.0}});
  const PipelineChoice choice = choose_pipeline(c, {});
  EXPECT_EQ(choice.workers, 0);
  EXPECT_EQ(choice.threads, 2);
  EXPECT_NEAR(choice.predicted_seconds, 0.025, 1e-9);
  // The rule gives one worker and one thread: 40 ms, 1.6x slower.
  const PipelineChoice rule = cores_minus_two(2);
  EXPECT_EQ(rule.workers, 1);
  EXPECT_EQ(rule.threads, 1);
  EXPECT_NEAR(predict_batch_seconds(c, rule.workers, rule.threads), 0.040, 1e-9);
}

// The part that takes the larger share of a batch's predicted time bounds it: loading done by the
// training thread, or by workers (with the headroom) slower than the step.
TEST(PipelinePlan, ThePredictionNamesWhatBoundsIt) {
  PipelineCosts c;
  c.cores = 2;
  c.load_seconds = 0.02;
  c.step_seconds = {{2, 0.01}, {1, 0.03}};
  EXPECT_EQ(predicted_bound(c, 0, 2), "the loader");
  EXPECT_EQ(predicted_bound(c, 0, 1), "the steps");
  EXPECT_EQ(predicted_bound(c, 1, 1), "the steps");  // 23 ms loading beside a 30 ms step
  EXPECT_EQ(predicted_bound(c, 1, 2), "the loader");
}

TEST(PipelinePlan, LoadingAsCostlyAsTheStepGetsAWorker) {
  // JPEGs: loading takes as long as a one-thread step; overlapping them beats two threads.
  const auto c = costs(2, 30.0, {{1, 40.0}, {2, 24.0}});
  const PipelineChoice choice = choose_pipeline(c, {});
  EXPECT_EQ(choice.workers, 1);
  EXPECT_EQ(choice.threads, 1);
  EXPECT_NEAR(choice.predicted_seconds, 0.040, 1e-9);  // 0 workers: 30 + 24 = 54 ms
}

TEST(PipelinePlan, FewestWorkersThatKeepAGpuStepFed) {
  // A GPU step of 20 ms whatever the threads; a batch loads in 80 ms on one core. Five workers
  // (80 x 1.15 / 5 = 18.4 ms) keep up; four would not (23 ms).
  const auto c = costs(8, 80.0, {{1, 20.0}, {2, 20.0}, {3, 20.0}, {8, 20.0}});
  const PipelineChoice choice = choose_pipeline(c, {});
  EXPECT_EQ(choice.workers, 5);
  EXPECT_LE(choice.workers + choice.threads, 8);
  EXPECT_NEAR(choice.predicted_seconds, 0.020, 1e-9);
}

TEST(PipelinePlan, WithinThreePercentTheFewerWorkersWin) {
  // One worker would save 2% over none: not worth a core's worth of loading thread.
  const auto c = costs(4, 0.5, {{1, 60.0}, {2, 33.0}, {3, 24.0}, {4, 20.0}});
  const PipelineChoice choice = choose_pipeline(c, {});
  EXPECT_EQ(choice.workers, 0);
  EXPECT_EQ(choice.threads, 4);
}

TEST(PipelinePlan, NeverOversubscribesWithWorkers) {
  // Loading dominates: two workers and one thread would be fastest (57.5 ms) but need 3 cores;
  // on 2, one worker and one thread (115 ms) beat loading on the training thread (124 ms).
  const auto c = costs(2, 100.0, {{1, 40.0}, {2, 24.0}});
  const PipelineChoice choice = choose_pipeline(c, {});
  EXPECT_EQ(choice.workers, 1);
  EXPECT_EQ(choice.threads, 1);
}

TEST(PipelinePlan, RespectsWhatTheUserFixed) {
  const auto c = costs(4, 30.0, {{1, 40.0}, {2, 24.0}, {3, 18.0}, {4, 15.0}});
  PipelineLimits fixed_threads;
  fixed_threads.threads = 2;
  const PipelineChoice a = choose_pipeline(c, fixed_threads);
  EXPECT_EQ(a.threads, 2);
  EXPECT_EQ(a.workers, 2);  // 30 x 1.15 / 2 = 17.25 ms <= 24 ms; one worker (34.5 ms) would not
  PipelineLimits fixed_workers;
  fixed_workers.workers = 0;
  const PipelineChoice b = choose_pipeline(c, fixed_workers);
  EXPECT_EQ(b.workers, 0);
  EXPECT_EQ(b.threads, 4);
}

TEST(PipelinePlan, ThreadCandidates) {
  EXPECT_EQ(thread_candidates(1, {}), (std::vector<int>{1}));
  EXPECT_EQ(thread_candidates(2, {}), (std::vector<int>{2, 1}));
  EXPECT_EQ(thread_candidates(4, {}), (std::vector<int>{4, 3, 2, 1}));
  EXPECT_EQ(thread_candidates(16, {}), (std::vector<int>{16, 15, 14, 12, 8, 4, 1}));
  PipelineLimits w;
  w.workers = 3;
  EXPECT_EQ(thread_candidates(4, w), (std::vector<int>{1}));
  PipelineLimits t;
  t.threads = 3;
  EXPECT_EQ(thread_candidates(16, t), (std::vector<int>{3}));
}

TEST(PipelinePlan, RuleOfThumb) {
  EXPECT_EQ(cores_minus_two(1).workers, 1);
  EXPECT_EQ(cores_minus_two(1).threads, 1);
  EXPECT_EQ(cores_minus_two(8).workers, 6);
  EXPECT_EQ(cores_minus_two(8).threads, 2);
}

TEST(PipelinePlan, DescribesTheMeasurement) {
  EXPECT_EQ(describe_costs(costs(2, 3.14, {{1, 41.0}, {2, 24.25}})),
            "loading 3.14 ms/batch; step 24.2 ms (2 threads), 41.0 ms (1 thread)");
}

}  // namespace
}  // namespace dl::test
