// Batch-size search. Lightning's finder doubles then bisects (many trials, and the answer can
// still run out of memory later); Accelerate retries at 0.9x on each OOM. Here a linear model of
// memory from two probes predicts the answer directly, a probe verifies it, a refit from the two
// largest fitting probes refines it, and a failed prediction steps down by 5%: within 5% of the
// true largest batch in at most 6 probes on linear, stepped and noisy curves. Where probes remain
// and it gains more than 2%, the next size up is checked too, so that on the bumpy curves of a
// CPU process's resident memory the answer's neighbour is known not to fit. DeepSpeed's autotuner
// searches its micro-batch for throughput; here the probes that found the largest batch also
// timed their steps, so the rate curve costs two more probes at most: geometric midpoints on the
// wider side of the best rate, where it peaks between two probes.
#include "launcher/batch_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "core/text.h"

namespace dl {
namespace {

std::string signed_bytes(double bytes) {
  const std::string magnitude = format_bytes(static_cast<std::uint64_t>(std::fabs(bytes)));
  return bytes < 0 ? "-" + magnitude : magnitude;
}

std::int64_t round_down(std::int64_t b, std::int64_t multiple) {
  return b >= multiple && multiple > 1 ? b / multiple * multiple : b;
}

class Search {
 public:
  Search(const ProbeFn& probe, const SearchOptions& o)
      : probe_(probe), o_(o), limit_(std::min(o.memory_probes, o.max_probes)) {}

  bool can_probe() const { return static_cast<int>(result.trials.size()) < limit_; }
  void allow(int probes) { limit_ = probes; }
  bool probed(std::int64_t batch) const {
    for (const auto& t : result.trials) {
      if (t.batch == batch) return true;
    }
    return false;
  }

  // Probes `batch` (once: repeated sizes reuse the first answer); true when it fits.
  bool fits(std::int64_t batch) {
    for (const auto& t : result.trials) {
      if (t.batch == batch) return ok(t);
    }
    result.trials.push_back(probe_(batch));
    result.trials.back().batch = batch;
    return ok(result.trials.back());
  }

  bool ok(const ProbeResult& t) const {
    return !t.out_of_memory && t.error.empty() && t.peak_bytes <= o_.budget_bytes;
  }

  std::int64_t cap(std::int64_t b) const {
    b = std::max<std::int64_t>(1, b);
    return o_.max_batch > 0 ? std::min(b, o_.max_batch) : b;
  }

  // The largest batch the line through two fitting probes allows under the budget.
  std::optional<std::int64_t> predict(const ProbeResult& a, const ProbeResult& b) {
    if (a.batch == b.batch) return std::nullopt;
    const double slope = (static_cast<double>(b.peak_bytes) - static_cast<double>(a.peak_bytes)) /
                         static_cast<double>(b.batch - a.batch);
    const double fixed = static_cast<double>(a.peak_bytes) - slope * static_cast<double>(a.batch);
    result.fixed_bytes = fixed;
    result.per_sample_bytes = slope;
    if (slope <= 0) return std::nullopt;  // noise between close probes, or flat memory
    const double b_max = (static_cast<double>(o_.budget_bytes) - fixed) / slope;
    if (b_max >= 9e15) return std::nullopt;
    return cap(round_down(static_cast<std::int64_t>(std::floor(b_max)), o_.multiple));
  }

  const ProbeResult* smallest_fitting() const {
    const ProbeResult* best = nullptr;
    for (const auto& t : result.trials) {
      if (ok(t) && (best == nullptr || t.batch < best->batch)) best = &t;
    }
    return best;
  }

  const ProbeResult* largest_fitting(std::int64_t below_batch = INT64_MAX) const {
    const ProbeResult* best = nullptr;
    for (const auto& t : result.trials) {
      if (ok(t) && t.batch < below_batch && (best == nullptr || t.batch > best->batch)) best = &t;
    }
    return best;
  }

  // Least squares through the probes that measured a peak; returns how many there were.
  int fit_all() {
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& t : result.trials) {
      if (t.out_of_memory || !t.error.empty()) continue;
      const double x = static_cast<double>(t.batch), y = static_cast<double>(t.peak_bytes);
      n += 1;
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const double d = n * sxx - sx * sx;
    if (n >= 2 && d > 0) {
      result.per_sample_bytes = (n * sxy - sx * sy) / d;
      result.fixed_bytes = (sy - result.per_sample_bytes * sx) / n;
    }
    return static_cast<int>(n);
  }

  SearchResult result;

 private:
  const ProbeFn& probe_;
  SearchOptions o_;
  int limit_;
};

// Even the small probe fails: halve down to 1.
void search_below_first(Search& s, std::int64_t first) {
  for (std::int64_t b = first / 2; b >= 1 && s.can_probe(); b /= 2) {
    if (s.fits(b)) {
      s.result.batch = b;
      s.result.reason = "only small batches fit: " + std::to_string(b);
      return;
    }
  }
  s.result.reason = "nothing fits: batch " + std::to_string(first) + " already exceeds the budget";
}

// The budget ends between the two small probes: bisect there with what probes remain.
void bisect_below(Search& s, std::int64_t second) {
  std::int64_t lo = s.largest_fitting()->batch, hi = second;
  while (hi - lo > 1 && s.can_probe()) {
    const std::int64_t mid = (lo + hi) / 2;
    (s.fits(mid) ? lo : hi) = mid;
  }
  s.result.batch = lo;
  s.result.reason = "bisected below " + std::to_string(hi);
}

void whole_data_set(Search& s, std::int64_t batch) {
  s.result.batch = batch;
  s.result.reason = "the whole data set fits in one batch";
}

// The size the line through the probes points at; nullopt when it says nothing more.
std::optional<std::int64_t> predict_next(Search& s, const SearchOptions& o, std::int64_t failed) {
  const ProbeResult* top = s.largest_fitting();
  const ProbeResult* below = s.largest_fitting(top->batch);
  // A probe over the budget that still ran measured its peak: it is a point of the curve too.
  const ProbeResult* over = nullptr;
  for (const auto& t : s.result.trials) {
    if (t.batch == failed && !t.out_of_memory && t.error.empty()) over = &t;
  }
  std::optional<std::int64_t> next =
      over != nullptr ? s.predict(*top, *over) : s.predict(*below, *top);
  // Two close probes can measure the same peak, or a falling one (a process's resident memory
  // moves with the heap's layout): the line through the smallest and the largest fitting
  // probes is steadier.
  if (!next) next = s.predict(*s.smallest_fitting(), *top);
  if (!next && o.max_batch > 0 && failed == INT64_MAX) next = o.max_batch;  // memory does not grow
  return next;
}

// Where the line sees nothing more: the next size up on the grid, or nullopt when not worth it.
std::optional<std::int64_t> step_up(const Search& s, const SearchOptions& o, std::int64_t answer,
                                    std::int64_t failed) {
  // Memory curves are not exactly lines (a process's resident memory moves by a few percent with
  // its heap's layout): between the answer and a size that failed, bisect on the grid; with no
  // failure yet, check the next size up. Not for 2% or less (not worth a probe).
  const std::int64_t step = answer >= o.multiple && o.multiple > 1 ? o.multiple : 1;
  std::int64_t up = round_down(answer, step) + step;
  if (failed != INT64_MAX) up = std::max(up, round_down((answer + failed) / 2, step));
  if (up >= failed || (up - answer) * 50 <= answer || s.cap(up) != up) return std::nullopt;
  return up;
}

// Predict from the line through the two largest fitting probes (a secant: curvature near the
// answer shows up in it), probe, and repeat. A size that failed bounds the answer from above;
// where the line points past it (a step in the curve), bisect instead. The first prediction,
// extrapolated furthest from tiny batches, is probed at 90% so it is likely to fit and to make
// the next secant short. Two failures in a row bisect too: the secant then keeps its lower end
// and creeps down from the top (regula falsi's stall), and on a bumpy curve, whose failures
// land a few MiB over the budget, it spends every probe there and returns the small probe.
// Returns the largest size that fitted.
std::int64_t search_by_prediction(Search& s, const SearchOptions& o, std::int64_t answer) {
  std::int64_t failed = INT64_MAX;
  bool first_prediction = true;
  int failures_in_a_row = 0;
  while (s.can_probe()) {
    std::optional<std::int64_t> next = predict_next(s, o, failed);
    if (!next) break;
    if (first_prediction && failed == INT64_MAX && !(o.max_batch > 0 && *next >= o.max_batch)) {
      next = s.cap(round_down(*next * 9 / 10, o.multiple));
    }
    first_prediction = false;
    const std::int64_t mid = answer + (failed - answer) / 2;  // no overflow while failed is unset
    const std::int64_t rounded = round_down(mid, o.multiple);
    const std::int64_t bisected = rounded > answer ? rounded : mid;
    if (*next >= failed || (failures_in_a_row >= 2 && *next > bisected)) next = bisected;
    if (*next <= answer || (*next - answer) * 50 < answer) {
      next = step_up(s, o, answer, failed);
      if (!next) break;
    }
    if (s.fits(*next)) {
      answer = *next;
      failures_in_a_row = 0;
    } else {
      failed = *next;
      ++failures_in_a_row;
    }
  }
  return answer;
}

// The geometric midpoint of two sizes (throughput curves are read on a log scale of the batch),
// on the grid where the sizes allow.
std::int64_t midpoint(std::int64_t lo, std::int64_t hi, std::int64_t multiple) {
  const double m = std::sqrt(static_cast<double>(lo) * static_cast<double>(hi));
  if (m >= 2.0 * static_cast<double>(multiple)) {
    return static_cast<std::int64_t>(std::llround(m / static_cast<double>(multiple))) * multiple;
  }
  return static_cast<std::int64_t>(std::llround(m));
}

// With the probes left, where the best measured rate lies between two probes further apart than
// o.refine_ratio, probes the midpoint on the wider side, and again around the new best. Nothing
// to refine where the rate still rises at the largest size that fits.
void refine_rates(Search& s, const SearchOptions& o) {
  s.allow(o.max_probes);
  while (s.can_probe()) {
    std::vector<const ProbeResult*> timed;
    for (const auto& t : s.result.trials) {
      if (s.ok(t) && samples_per_second(t) > 0) timed.push_back(&t);
    }
    std::sort(timed.begin(), timed.end(),
              [](const ProbeResult* a, const ProbeResult* b) { return a->batch < b->batch; });
    if (timed.size() < 2) return;
    std::size_t best = 0;
    for (std::size_t i = 1; i < timed.size(); ++i) {
      if (samples_per_second(*timed[i]) > samples_per_second(*timed[best])) best = i;
    }
    if (best + 1 == timed.size()) return;
    std::vector<std::pair<std::int64_t, std::int64_t>> sides = {
        {timed[best]->batch, timed[best + 1]->batch}};
    if (best > 0) sides.emplace_back(timed[best - 1]->batch, timed[best]->batch);
    std::sort(sides.begin(), sides.end(), [](const auto& a, const auto& b) {
      return static_cast<double>(a.second) / static_cast<double>(a.first) >
             static_cast<double>(b.second) / static_cast<double>(b.first);
    });
    bool probed = false;
    for (const auto& [lo, hi] : sides) {
      if (static_cast<double>(hi) < o.refine_ratio * static_cast<double>(lo)) continue;
      const std::int64_t mid = midpoint(lo, hi, o.multiple);
      if (mid <= lo || mid >= hi || s.probed(mid)) continue;
      s.fits(mid);
      probed = true;
      break;
    }
    if (!probed) return;
  }
}

// The largest batch that fits: its probes, the fitted line and how it was found.
void search_largest(Search& s, const SearchOptions& o) {
  const std::int64_t first = s.cap(o.first);
  if (!s.fits(first)) {
    search_below_first(s, first);
    return;
  }
  if (o.max_batch > 0 && first >= o.max_batch) {
    whole_data_set(s, first);
    return;
  }
  const std::int64_t second = s.cap(std::max(o.second, first * 2));
  if (!s.fits(second)) {
    bisect_below(s, second);
    return;
  }
  if (o.max_batch > 0 && second >= o.max_batch) {
    whole_data_set(s, second);
    return;
  }
  s.result.batch = search_by_prediction(s, o, second);
  // For the record, the line through every measured probe (least squares), not only the last
  // secant: what the model costs before the first sample, and what each sample adds.
  const int measured = s.fit_all();
  s.result.reason = "memory ~ " + signed_bytes(s.result.fixed_bytes) + " + " +
                    signed_bytes(s.result.per_sample_bytes) + " per sample (fit over " +
                    std::to_string(measured) + " probes); the answer verified by probing";
}

std::string rate_text(double rate) {
  return format_number(std::round(rate)) + " samples/s";
}

std::string percent_text(double share) {
  return format_number(std::round(share * 100.0)) + "%";
}

}  // namespace

const char* objective_name(BatchObjective objective) {
  return objective == BatchObjective::kLargest ? "largest" : "fastest";
}

double samples_per_second(const ProbeResult& t) {
  return t.step_seconds > 0 && t.batch > 0 ? static_cast<double>(t.batch) / t.step_seconds : 0;
}

std::string trial_outcome(const ProbeResult& t, std::uint64_t budget_bytes) {
  if (!t.error.empty()) return "error: " + t.error;
  if (t.out_of_memory) return "out of memory";
  return t.peak_bytes <= budget_bytes ? "fits" : "over budget";
}

BatchChoice choose_batch(const std::vector<ProbeResult>& trials, std::uint64_t budget_bytes,
                         BatchObjective objective, double tolerance) {
  BatchChoice c;
  double largest_rate = 0;
  for (const auto& t : trials) {
    if (!t.error.empty() || t.out_of_memory || t.peak_bytes > budget_bytes) continue;
    if (t.batch > c.largest) {
      c.largest = t.batch;
      largest_rate = samples_per_second(t);
    }
    if (samples_per_second(t) > c.best_rate) {
      c.best_rate = samples_per_second(t);
      c.fastest = t.batch;
    }
  }
  if (c.largest == 0) {
    c.why = "nothing fits";
    return c;
  }
  const std::string best = rate_text(c.best_rate) + " at " + std::to_string(c.fastest);
  if (objective == BatchObjective::kLargest || c.best_rate <= 0) {
    c.batch = c.largest;
    c.why = objective == BatchObjective::kLargest
                ? "the largest that fits (--batch-objective largest)"
                : "the largest that fits: no probe timed its steps";
    if (c.best_rate > 0 && c.fastest != c.largest) {
      c.why += "; it trains " + rate_text(largest_rate) + ", the fastest probe " + best;
    }
    return c;
  }
  const double floor = (1.0 - tolerance) * c.best_rate;
  double chosen_rate = 0;
  for (const auto& t : trials) {
    if (!t.error.empty() || t.out_of_memory || t.peak_bytes > budget_bytes) continue;
    if (samples_per_second(t) >= floor && t.batch > c.batch) {
      c.batch = t.batch;
      chosen_rate = samples_per_second(t);
    }
  }
  const std::string within =
      "within " + percent_text(tolerance) + " of the best rate (" + best + ")";
  if (c.batch == c.largest) {
    c.why = "the largest that fits, " + rate_text(chosen_rate) +
            (c.fastest == c.batch ? ", the best rate measured" : ", " + within);
    return c;
  }
  c.why = "the largest batch " + within + ": " + rate_text(chosen_rate) +
          "; the largest that fits, " + std::to_string(c.largest) + ", trains " +
          (largest_rate > 0 ? rate_text(largest_rate) : std::string("at an unmeasured rate"));
  if (largest_rate > 0) {
    char slower[32];
    std::snprintf(slower, sizeof slower, " (%.1fx slower)", chosen_rate / largest_rate);
    c.why += slower;
  }
  c.why += "; --batch-objective largest picks it";
  return c;
}

SearchResult search_batch(const ProbeFn& probe, const SearchOptions& o) {
  Search s(probe, o);
  search_largest(s, o);
  if (s.result.batch > 0 && o.objective == BatchObjective::kFastest) refine_rates(s, o);
  s.result.choice = choose_batch(s.result.trials, o.budget_bytes, o.objective, o.rate_tolerance);
  s.result.batch = s.result.choice.batch;
  return s.result;
}

}  // namespace dl
