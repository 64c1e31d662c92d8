// The worker/thread choice from measured costs (see pipeline_plan.h).
#include "train/run/pipeline_plan.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace dl::train {

double predict_batch_seconds(const PipelineCosts& costs, int workers, int threads) {
  const double step = costs.step_seconds.at(threads);
  if (workers <= 0) return costs.load_seconds + step;
  return std::max(step, kLoadHeadroom * costs.load_seconds / workers);
}

std::string predicted_bound(const PipelineCosts& costs, int workers, int threads) {
  const double step = costs.step_seconds.at(threads);
  const double load =
      workers <= 0 ? costs.load_seconds : kLoadHeadroom * costs.load_seconds / workers;
  return load > step ? "the loader" : "the steps";
}

std::vector<int> thread_candidates(int cores, const PipelineLimits& limits) {
  if (limits.threads > 0) return {limits.threads};
  cores = std::max(1, cores);
  // With fixed workers, compute gets what they leave (at least one thread).
  const int most = limits.workers > 0 ? std::max(1, cores - limits.workers) : cores;
  std::vector<int> t;
  if (most <= 4) {
    for (int n = most; n >= 1; --n) t.push_back(n);
    return t;
  }
  for (int n : {most, most - 1, most - 2, 3 * most / 4, most / 2, most / 4, 1}) {
    if (n >= 1 && std::find(t.begin(), t.end(), n) == t.end()) t.push_back(n);
  }
  std::sort(t.rbegin(), t.rend());
  return t;
}

PipelineChoice choose_pipeline(const PipelineCosts& costs, const PipelineLimits& limits) {
  const int cores = std::max(1, costs.cores);
  std::vector<PipelineChoice> options;
  for (const auto& [threads, seconds] : costs.step_seconds) {
    (void)seconds;
    if (limits.threads > 0 && threads != limits.threads) continue;
    const int max_workers = limits.workers >= 0 ? limits.workers : std::max(0, cores - threads);
    const int min_workers = limits.workers >= 0 ? limits.workers : 0;
    for (int w = min_workers; w <= max_workers; ++w) {
      options.push_back({w, threads, predict_batch_seconds(costs, w, threads)});
    }
  }
  if (options.empty()) {
    // Nothing measured fits the limits: fall back to the user's numbers or the rule.
    PipelineChoice rule = cores_minus_two(cores);
    if (limits.workers >= 0) rule.workers = limits.workers;
    if (limits.threads > 0) rule.threads = limits.threads;
    return rule;
  }
  double best = std::numeric_limits<double>::infinity();
  for (const auto& o : options) best = std::min(best, o.predicted_seconds);
  const PipelineChoice* chosen = nullptr;
  for (const auto& o : options) {
    if (o.predicted_seconds > best * 1.03) continue;
    if (chosen == nullptr || o.workers < chosen->workers ||
        (o.workers == chosen->workers && o.predicted_seconds < chosen->predicted_seconds)) {
      chosen = &o;
    }
  }
  return *chosen;
}

PipelineChoice cores_minus_two(int cores) {
  PipelineChoice c;
  c.workers = std::max(1, cores - 2);
  c.threads = std::max(1, cores - c.workers);
  return c;
}

std::string describe_costs(const PipelineCosts& costs) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "loading %.2f ms/batch; step", costs.load_seconds * 1e3);
  std::string text = buffer;
  bool first = true;
  for (auto it = costs.step_seconds.rbegin(); it != costs.step_seconds.rend(); ++it) {
    std::snprintf(buffer, sizeof buffer, "%s %.1f ms (%d thread%s)", first ? "" : ",",
                  it->second * 1e3, it->first, it->first == 1 ? "" : "s");
    text += buffer;
    first = false;
  }
  return text;
}

}  // namespace dl::train
