// The batch-size search against synthetic memory curves whose largest fitting batch is known:
// linear, with a step, with noise, everything fits, nothing fits. The bar: within 5% of the true
// largest batch, in at most 6 probes, and never an answer that does not fit.
#include "launcher/batch_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>

namespace dl::test {
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

// Peak resident memory (MiB) of `dl-train --probe-batch N` for the small CNN on Fashion-MNIST
// (fp32, 1 thread), measured at every multiple of 8: a bumpy curve, the heap's layout moving it by
// up to 10%, with falls (296 -> 304) that a secant through close probes turns into a negative
// slope.
const std::map<std::int64_t, double> kCpuResidentMiB = {
    {8, 236.9},   {16, 239.3},  {24, 246.8},  {32, 253.0},  {40, 257.3},  {48, 264.7},
    {56, 274.8},  {64, 277.5},  {72, 274.3},  {80, 285.3},  {88, 289.3},  {96, 315.0},
    {104, 314.3}, {112, 325.7}, {120, 323.6}, {128, 320.3}, {136, 335.5}, {144, 324.3},
    {152, 334.7}, {160, 334.1}, {168, 393.0}, {176, 346.2}, {184, 353.4}, {192, 340.4},
    {200, 363.7}, {208, 358.6}, {216, 358.7}, {224, 379.3}, {232, 406.8}, {240, 418.4},
    {248, 418.5}, {256, 393.9}, {264, 386.0}, {272, 429.4}, {280, 411.9}, {288, 441.1},
    {296, 446.8}, {304, 401.6}, {312, 443.2}, {320, 463.9}, {328, 446.2}, {336, 411.2},
    {344, 426.1}, {352, 409.5}, {360, 430.7}, {368, 445.6}, {376, 439.6}, {384, 454.8},
    {392, 440.9}, {400, 473.5}, {408, 476.6}, {416, 473.2}, {424, 486.2}, {432, 470.3},
    {440, 497.5}, {448, 479.0}, {456, 507.0}, {464, 489.6}, {472, 526.2}, {480, 450.8},
    {488, 501.1}, {496, 517.5}, {504, 521.8}, {512, 491.6}, {520, 531.1}};

ProbeFn measured_cpu_probe() {
  return [](std::int64_t b) {
    ProbeResult r;
    r.batch = b;
    const auto it = kCpuResidentMiB.find(b);
    // Off the table's grid (never probed here): the next size's figure, the larger one nearby.
    const double mib = it != kCpuResidentMiB.end() ? it->second
                       : kCpuResidentMiB.lower_bound(b) != kCpuResidentMiB.end()
                           ? kCpuResidentMiB.lower_bound(b)->second
                           : 600.0;
    r.peak_bytes = static_cast<std::uint64_t>(mib * static_cast<double>(MiB));
    return r;
  };
}

TEST(BatchSearch, BumpyCurveEndsNextToASizeThatDoesNotFit) {
  // The budget of the CPU end-to-end test: the probe at 8 plus 60 MiB. 88 fits (289.3), 96 does
  // not (315.0); the line through 8 and 32 points far too high, the secants come back, and the
  // next size up is checked rather than assumed.
  SearchOptions o;
  o.budget_bytes = static_cast<std::uint64_t>((236.9 + 60.0) * static_cast<double>(MiB));
  o.max_batch = 60000;
  const SearchResult r = search_batch(measured_cpu_probe(), o);
  EXPECT_EQ(r.batch, 88) << r.reason;
  EXPECT_LE(r.trials.size(), 6u);
  bool checked_96 = false;
  for (const auto& t : r.trials) checked_96 |= t.batch == 96 && t.peak_bytes > o.budget_bytes;
  EXPECT_TRUE(checked_96) << "the answer's neighbour was probed and found over the budget";
}

TEST(BatchSearch, AFallingSecantDoesNotJumpToTheDataSetSize) {
  // 272 and 280 both fit, 280 with less memory: the secant through them falls. The search must
  // not read that as "memory does not grow" and probe all 60000 samples (tens of GiB on a CPU).
  SearchOptions o;
  o.budget_bytes = static_cast<std::uint64_t>((236.9 + 200.0) * static_cast<double>(MiB));
  o.max_batch = 60000;
  const SearchResult r = search_batch(measured_cpu_probe(), o);
  for (const auto& t : r.trials) EXPECT_LT(t.batch, 1000) << r.reason;
  EXPECT_GE(r.batch, 264);
  EXPECT_LE(r.trials.size(), 6u);
}

}  // namespace
}  // namespace dl::test
