// Worker calibration. A loader's rate rises with its workers until the cores (or the storage) are
// saturated, then stays flat or falls as workers contend. Three coarse probes (0, half, all) find
// the region; each further probe halves the gap below the current answer, where the rate crosses
// "within tolerance of the best", or next to the best where the rate falls away on that side, so
// that a higher peak can hide there and raise the bar. With max_workers 16 that is 5 probes where
// an exhaustive sweep takes 17.
#include "launcher/worker_search.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

namespace dl {
namespace {

class Calibration {
 public:
  Calibration(const WorkerProbeFn& probe, const WorkerSearchOptions& o) : probe_(probe), o_(o) {}

  bool can_probe() const {
    return static_cast<int>(result.trials.size()) < o_.max_probes && !result.failed();
  }

  void measure(int workers) {
    if (!can_probe() || by_count_.count(workers) != 0) return;
    WorkerTrial t = probe_(workers);
    t.workers = workers;
    result.trials.push_back(t);
    by_count_[workers] = t.samples_per_second;
  }

  double best() const {
    double b = 0;
    for (const auto& [w, rate] : by_count_) b = std::max(b, rate);
    return b;
  }

  // The rate an answer must reach: within tolerance of the best, or enough for the step.
  double bar() const {
    const double near_best = (1.0 - o_.tolerance) * best();
    return o_.consumer_rate > 0 ? std::min(near_best, kFeedHeadroom * o_.consumer_rate) : near_best;
  }

  // The fewest workers measured that reach the bar.
  int answer() const {
    const double bar = this->bar();
    for (const auto& [w, rate] : by_count_) {
      if (rate >= bar) return w;
    }
    return by_count_.empty() ? 0 : by_count_.begin()->first;
  }

  // The next count worth a probe, or nullopt when every gap that matters is closed.
  std::optional<int> next() const {
    const int a = answer();
    // Below the answer: the largest measured count under it, and the gap between.
    auto it = by_count_.find(a);
    if (it != by_count_.begin()) {
      const int below = std::prev(it)->first;
      if (a - below > 1) return below + (a - below) / 2;
    }
    // Around the best: where the rate falls below the bar on one side, a higher peak may hide
    // in the gap (where the neighbour is within the bar, the curve is flat there).
    int best_count = a;
    for (const auto& [w, rate] : by_count_) {
      if (rate > by_count_.at(best_count)) best_count = w;
    }
    const double bar = this->bar();
    const auto at = by_count_.find(best_count);
    std::optional<int> gap;
    int widest = 1;
    if (at != by_count_.begin() && std::prev(at)->second < bar &&
        best_count - std::prev(at)->first > widest) {
      widest = best_count - std::prev(at)->first;
      gap = std::prev(at)->first + widest / 2;
    }
    if (std::next(at) != by_count_.end() && std::next(at)->second < bar &&
        std::next(at)->first - best_count > widest) {
      widest = std::next(at)->first - best_count;
      gap = best_count + (widest + 1) / 2;
    }
    return gap;
  }

  WorkerSearchResult result;

 private:
  const WorkerProbeFn& probe_;
  const WorkerSearchOptions& o_;
  std::map<int, double> by_count_;
};

std::string rate_text(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", r);
  return buf;
}

}  // namespace

const WorkerTrial* WorkerSearchResult::failed() const {
  for (const auto& t : trials) {
    if (!t.error.empty()) return &t;
  }
  return nullptr;
}

std::string worker_trials_text(const std::vector<WorkerTrial>& trials) {
  std::vector<WorkerTrial> sorted = trials;
  std::sort(sorted.begin(), sorted.end(),
            [](const WorkerTrial& a, const WorkerTrial& b) { return a.workers < b.workers; });
  std::string text;
  for (const auto& t : sorted) {
    text += (text.empty() ? "" : ", ") + std::to_string(t.workers) + " -> " +
            (t.error.empty() ? rate_text(t.samples_per_second) : "failed");
  }
  return text + " samples/s";
}

WorkerSearchResult search_workers(const WorkerProbeFn& probe, const WorkerSearchOptions& options) {
  Calibration c(probe, options);
  const int top = std::max(0, options.max_workers);
  for (int w : {0, (top + 1) / 2, top}) c.measure(w);
  while (c.can_probe()) {
    const std::optional<int> w = c.next();
    if (!w) break;
    c.measure(*w);
  }
  WorkerSearchResult r = std::move(c.result);
  if (r.failed() != nullptr) {
    r.reason = "the loader probe at " + std::to_string(r.failed()->workers) +
               " workers failed: " + r.failed()->error;
    return r;
  }
  r.workers = c.answer();
  char tolerance[16];
  std::snprintf(tolerance, sizeof tolerance, "%g%%", 100 * options.tolerance);
  const double best = c.best();
  if (options.consumer_rate > 0 &&
      kFeedHeadroom * options.consumer_rate < (1 - options.tolerance) * best) {
    char feed[96];
    std::snprintf(feed, sizeof feed,
                  "; the fewest that feed the step's %.0f samples/s with %.0f%% to spare",
                  options.consumer_rate, 100 * (kFeedHeadroom - 1));
    r.reason = "measured: " + worker_trials_text(r.trials) + feed;
  } else {
    r.reason = "measured: " + worker_trials_text(r.trials) + "; the fewest within " + tolerance +
               " of the best";
  }
  return r;
}

}  // namespace dl
