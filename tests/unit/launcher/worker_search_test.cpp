// The worker calibration against synthetic rate curves whose answer is known from an exhaustive
// sweep: saturating, peaked, best without workers, flat, noisy; a failing probe; the probe count.
// The bar: the answer's true rate within 5% of the sweep's best, in at most 5 probes, no count
// measured twice.
#include "launcher/worker_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>

namespace dl::test {
namespace {

using Curve = std::function<double(int)>;  // workers -> samples/s

struct Counted {
  int calls = 0;
  std::set<int> asked;
};

WorkerProbeFn probe_of(const Curve& curve, Counted* counted) {
  return [curve, counted](int w) {
    ++counted->calls;
    EXPECT_TRUE(counted->asked.insert(w).second) << w << " workers measured twice";
    WorkerTrial t;
    t.workers = w;
    t.samples_per_second = curve(w);
    return t;
  };
}

void expect_good(const Curve& truth, const Curve& measured, int max_workers,
                 const std::string& what) {
  SCOPED_TRACE(what + ", up to " + std::to_string(max_workers) + " workers");
  Counted counted;
  WorkerSearchOptions o;
  o.max_workers = max_workers;
  const WorkerSearchResult r = search_workers(probe_of(measured, &counted), o);
  double best = 0;
  for (int w = 0; w <= max_workers; ++w) best = std::max(best, truth(w));
  EXPECT_LE(counted.calls, 5);
  EXPECT_EQ(r.trials.size(), static_cast<std::size_t>(counted.calls));
  EXPECT_GE(r.workers, 0);
  EXPECT_LE(r.workers, max_workers);
  EXPECT_GE(truth(r.workers), 0.95 * best) << r.reason;
  EXPECT_EQ(r.failed(), nullptr);
  EXPECT_EQ(r.reason.rfind("measured: ", 0), 0u) << r.reason;
}

TEST(WorkerSearch, SaturatingCurveFindsTheKnee) {
  for (int cores : {2, 4, 8, 16, 64}) {
    for (int knee : {1, 3, 5, 12}) {
      const Curve c = [knee](int w) { return 100.0 * std::min(w + 1, knee + 1); };
      expect_good(c, c, cores, "knee at " + std::to_string(knee));
    }
  }
}

TEST(WorkerSearch, PeakedCurveWithContentionPastIt) {
  for (int cores : {4, 16, 32}) {
    for (int peak : {2, cores / 2, cores - 1}) {
      // Up by 150 a worker to the peak, then down 1% a worker as workers contend for the cores
      // and memory bandwidth (a sharper peak than 5 probes can resolve on 32 cores is not a
      // loader's curve: past saturation, extra workers mostly wait).
      const Curve c = [peak](int w) {
        const double top = 300.0 + 150.0 * peak;
        return w <= peak ? 300.0 + 150.0 * w : top * std::pow(0.99, w - peak);
      };
      expect_good(c, c, cores, "peak at " + std::to_string(peak));
    }
  }
}

TEST(WorkerSearch, NoWorkersIsBestForACheapDataSet) {
  // Tensors already in memory: workers only add the cost of passing batches between processes.
  const Curve c = [](int w) { return w == 0 ? 50000.0 : 20000.0 + 500.0 * w; };
  Counted counted;
  WorkerSearchOptions o;
  o.max_workers = 16;
  const WorkerSearchResult r = search_workers(probe_of(c, &counted), o);
  EXPECT_EQ(r.workers, 0) << r.reason;
  expect_good(c, c, 16, "cheap data set");
}

TEST(WorkerSearch, AFlatCurveTakesTheFewest) {
  const Curve c = [](int) { return 1000.0; };
  Counted counted;
  WorkerSearchOptions o;
  o.max_workers = 8;
  const WorkerSearchResult r = search_workers(probe_of(c, &counted), o);
  EXPECT_EQ(r.workers, 0) << r.reason;
  EXPECT_EQ(counted.calls, 3);  // nothing to refine
}

// Noise of 1% either way: with the 2% tolerance, the answer is within 4% of the truth's best.
TEST(WorkerSearch, NoisyMeasurementsStayWithinFivePercentOfTheSweep) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> noise(-0.01, 0.01);
  for (int trial = 0; trial < 200; ++trial) {
    const int cores = std::uniform_int_distribution<int>(1, 48)(random);
    const int knee = std::uniform_int_distribution<int>(0, cores)(random);
    const double per_worker = std::uniform_real_distribution<double>(50, 500)(random);
    const double base = std::uniform_real_distribution<double>(10, 1000)(random);
    const Curve truth = [=](int w) {
      return base + per_worker * std::min(w, knee) -
             (w > knee ? 0.01 * per_worker * (w - knee) : 0);
    };
    const Curve measured = [&, truth](int w) { return truth(w) * (1.0 + noise(random)); };
    expect_good(truth, measured, cores, "noisy #" + std::to_string(trial));
  }
}

TEST(WorkerSearch, SmallMachines) {
  const Curve c = [](int w) { return 100.0 + 80.0 * w; };
  Counted none;
  WorkerSearchOptions o;
  o.max_workers = 0;
  EXPECT_EQ(search_workers(probe_of(c, &none), o).workers, 0);
  EXPECT_EQ(none.calls, 1);
  Counted one;
  o.max_workers = 1;
  EXPECT_EQ(search_workers(probe_of(c, &one), o).workers, 1);
  EXPECT_EQ(one.calls, 2);
}

TEST(WorkerSearch, AFailedProbeStopsTheSearchAndIsNamed) {
  int calls = 0;
  WorkerSearchOptions o;
  o.max_workers = 8;
  const WorkerSearchResult r = search_workers(
      [&](int w) {
        ++calls;
        WorkerTrial t;
        t.samples_per_second = 100.0 * (w + 1);
        if (w == 4) t.error = "exit status 1; log /w/runs/a/probes/loader-4.log";
        return t;
      },
      o);
  EXPECT_EQ(calls, 2);  // 0, then 4 failed: 8 is never tried
  ASSERT_NE(r.failed(), nullptr);
  EXPECT_EQ(r.failed()->workers, 4);
  EXPECT_EQ(r.reason,
            "the loader probe at 4 workers failed: exit status 1; log "
            "/w/runs/a/probes/loader-4.log");
}

TEST(WorkerSearch, NoMoreWorkersThanTheStepConsumes) {
  // Loading scales to 8 workers, but the step takes 350 samples/s: 3 workers (400) feed it with
  // 15% to spare, where the best rate would have asked for 8.
  const Curve c = [](int w) { return 100.0 + 100.0 * std::min(w, 8); };
  Counted counted;
  WorkerSearchOptions o;
  o.max_workers = 16;
  o.consumer_rate = 350;
  const WorkerSearchResult r = search_workers(probe_of(c, &counted), o);
  EXPECT_EQ(r.workers, 4) << r.reason;  // 3 -> 400 < 402.5 (350 x 1.15); 4 -> 500 feeds it
  EXPECT_LE(counted.calls, 5);
  EXPECT_NE(r.reason.find("the fewest that feed the step's 350 samples/s with 15% to spare"),
            std::string::npos)
      << r.reason;
  // A step faster than any loader: the near-best rule, as without it.
  Counted fast;
  o.consumer_rate = 5000;
  const WorkerSearchResult all = search_workers(probe_of(c, &fast), o);
  EXPECT_GE(c(all.workers), 0.98 * 900) << all.reason;
  EXPECT_NE(all.reason.find("within 2% of the best"), std::string::npos) << all.reason;
}

TEST(WorkerSearch, TheReasonListsEveryMeasurementInOrder) {
  std::vector<WorkerTrial> trials(3);
  trials[0] = {6, 2290.4, 0, ""};
  trials[1] = {0, 610, 0, ""};
  trials[2] = {2, 1800, 0, ""};
  EXPECT_EQ(worker_trials_text(trials), "0 -> 610, 2 -> 1800, 6 -> 2290 samples/s");
}

}  // namespace
}  // namespace dl::test
