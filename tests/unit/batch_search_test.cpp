// The batch-size search against synthetic memory curves whose largest fitting batch is known:
// linear, with a step, with noise, everything fits, nothing fits. The bar: within 5% of the true
// largest batch, in at most 6 probes, and never an answer that does not fit.
#include "batch_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

namespace dl {
namespace {

constexpr std::uint64_t MiB = 1ull << 20;

using Curve = std::function<double(std::int64_t)>;  // batch -> bytes

ProbeFn probe_of(const Curve& curve, std::uint64_t oom_above) {
  return [curve, oom_above](std::int64_t b) {
    ProbeResult r;
    r.batch = b;
    const double bytes = curve(b);
    r.out_of_memory = bytes > static_cast<double>(oom_above);
    r.peak_bytes = r.out_of_memory ? 0 : static_cast<std::uint64_t>(bytes);
    return r;
  };
}

// The true answer: the largest batch whose memory is within the budget (curves are monotone).
std::int64_t truth(const Curve& curve, std::uint64_t budget, std::int64_t limit) {
  std::int64_t b = 0;
  while (b < limit && curve(b + 1) <= static_cast<double>(budget)) ++b;
  return b;
}

void expect_good(const SearchResult& r, const Curve& curve, std::uint64_t budget,
                 std::int64_t limit = 1 << 20) {
  const std::int64_t best = truth(curve, budget, limit);
  EXPECT_LE(r.trials.size(), 6u);
  EXPECT_LE(r.batch, best) << "the answer does not fit";
  EXPECT_GE(static_cast<double>(r.batch), 0.95 * static_cast<double>(best))
      << "answer " << r.batch << " vs true " << best << " (" << r.reason << ")";
  EXPECT_LE(curve(r.batch), static_cast<double>(budget));
}

TEST(BatchSearch, LinearCurveLandsOnAMultipleOf8WithinOnePercent) {
  const Curve c = [](std::int64_t b) { return 900.0 * MiB + 37.3 * MiB * static_cast<double>(b); };
  const std::uint64_t budget = 16000 * MiB;
  SearchOptions o;
  o.budget_bytes = budget;
  const SearchResult r = search_batch(probe_of(c, budget * 2), o);
  expect_good(r, c, budget);
  EXPECT_EQ(r.batch % 8, 0);
  EXPECT_LE(r.trials.size(), 4u) << "a straight line needs two probes and two checks";
}

TEST(BatchSearch, StepInTheCurveIsFoundByStepping) {
  // Above 300 a different convolution algorithm takes 2 GiB more workspace.
  const Curve c = [](std::int64_t b) {
    return 500.0 * MiB + 20.0 * MiB * static_cast<double>(b) + (b > 300 ? 2048.0 * MiB : 0.0);
  };
  const std::uint64_t budget = 8000 * MiB;
  SearchOptions o;
  o.budget_bytes = budget;
  expect_good(search_batch(probe_of(c, budget), o), c, budget);
}

TEST(BatchSearch, ConvexCurveIsRefined) {
  const Curve c = [](std::int64_t b) {
    const double x = static_cast<double>(b);
    return 1000.0 * MiB + 10.0 * MiB * x + 0.02 * MiB * x * x;
  };
  const std::uint64_t budget = 12000 * MiB;
  SearchOptions o;
  o.budget_bytes = budget;
  expect_good(search_batch(probe_of(c, budget), o), c, budget);
}

TEST(BatchSearch, NoisyMeasurementsStillLandWithinFivePercent) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> jitter(-0.02, 0.02);
    // The allocator's peak varies by up to 2% run to run, so the true largest batch is the
    // largest that always fits: the noiseless line with 2% headroom.
    const Curve clean = [](std::int64_t b) {
      return 700.0 * MiB + 25.0 * MiB * static_cast<double>(b);
    };
    const Curve noisy = [&](std::int64_t b) { return clean(b) * (1.0 + jitter(rng)); };
    const std::uint64_t budget = 10000 * MiB;
    SearchOptions o;
    o.budget_bytes = budget;
    const SearchResult r = search_batch(probe_of(noisy, budget), o);
    const Curve worst = [&](std::int64_t b) { return clean(b) * 1.02; };
    const std::int64_t best = truth(worst, budget, 1 << 20);
    EXPECT_LE(r.trials.size(), 6u);
    std::string trials;
    for (const auto& t : r.trials) {
      trials += " " + std::to_string(t.batch) + (t.out_of_memory ? "(oom)" : "");
    }
    EXPECT_GE(static_cast<double>(r.batch), 0.95 * static_cast<double>(best))
        << "seed " << seed << ": true " << best << ", trials" << trials;
    EXPECT_LE(clean(r.batch), static_cast<double>(budget) * 1.02) << "seed " << seed;
  }
}

TEST(BatchSearch, EverythingFitsStopsAtTheDataSetSize) {
  const Curve c = [](std::int64_t b) { return 100.0 * MiB + 0.01 * MiB * static_cast<double>(b); };
  SearchOptions o;
  o.budget_bytes = 64000 * MiB;
  o.max_batch = 5000;
  const SearchResult r = search_batch(probe_of(c, o.budget_bytes), o);
  EXPECT_EQ(r.batch, 5000);
  EXPECT_LE(r.trials.size(), 3u);
}

TEST(BatchSearch, TinyDataSetIsOneBatch) {
  const Curve c = [](std::int64_t b) { return 100.0 * MiB + static_cast<double>(b) * MiB; };
  SearchOptions o;
  o.budget_bytes = 64000 * MiB;
  o.max_batch = 6;
  const SearchResult r = search_batch(probe_of(c, o.budget_bytes), o);
  EXPECT_EQ(r.batch, 6);
  EXPECT_EQ(r.trials.size(), 1u);
}

TEST(BatchSearch, NothingFits) {
  const Curve c = [](std::int64_t b) { return 9000.0 * MiB + static_cast<double>(b) * MiB; };
  SearchOptions o;
  o.budget_bytes = 8000 * MiB;
  const SearchResult r = search_batch(probe_of(c, o.budget_bytes), o);
  EXPECT_EQ(r.batch, 0);
  EXPECT_LE(r.trials.size(), 6u);
  EXPECT_NE(r.reason.find("nothing fits"), std::string::npos) << r.reason;
}

TEST(BatchSearch, OnlyTinyBatchesFit) {
  const Curve c = [](std::int64_t b) {
    return 1000.0 * MiB + 300.0 * MiB * static_cast<double>(b);
  };
  const std::uint64_t budget = 2000 * MiB;  // batch 3 fits, 4 does not
  SearchOptions o;
  o.budget_bytes = budget;
  const SearchResult r = search_batch(probe_of(c, budget * 4), o);
  EXPECT_GE(r.batch, 2);
  EXPECT_LE(r.batch, 3);
}

TEST(BatchSearch, BudgetBetweenTheTwoSmallProbesIsBisected) {
  const Curve c = [](std::int64_t b) {
    return 1000.0 * MiB + 100.0 * MiB * static_cast<double>(b);
  };
  const std::uint64_t budget = 3500 * MiB;  // true answer 25, between the probes 8 and 32
  SearchOptions o;
  o.budget_bytes = budget;
  expect_good(search_batch(probe_of(c, budget * 4), o), c, budget);
}

TEST(BatchSearch, ProbeErrorsCountAsNotFitting) {
  SearchOptions o;
  o.budget_bytes = 1000 * MiB;
  const SearchResult r = search_batch(
      [](std::int64_t b) {
        ProbeResult p;
        p.batch = b;
        p.error = "segfault";
        return p;
      },
      o);
  EXPECT_EQ(r.batch, 0);
}

}  // namespace
}  // namespace dl
