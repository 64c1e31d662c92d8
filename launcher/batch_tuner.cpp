// Cache first, then the search.
#include "launcher/batch_tuner.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>

#include "core/text.h"
#include "launcher/stop_request.h"

namespace dl {
namespace {

std::string seconds_text(double s, const char* format = "%.1f s") {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, s);
  return buf;
}

}  // namespace

BatchSearchRecord tune_batch_size(TuneRequest request) {
  const StopPhase phase("searching the batch size");
  if (!request.probe_fn) request.key.torch = trainer_torch_version(request.probe);
  const std::string key = request.key.text();
  const std::string path = batch_cache_path(request.probe.workspace);
  if (request.use_cache) {
    if (auto cached = lookup_batch_cache(path, key)) {
      cached->cache_key = key;
      spdlog::info(
          "batch size {} from the cache {} (searched {} in {} probes, {}); --retune "
          "searches again",
          cached->result.batch, path, cached->searched_at, cached->result.trials.size(),
          seconds_text(cached->seconds));
      return *cached;
    }
  }

  spdlog::info(
      "batch-size search: the {} batch within {} ({}){}", objective_name(request.search.objective),
      format_bytes(request.search.budget_bytes), request.budget_reason,
      request.search.max_batch > 0 ? ", at most " + std::to_string(request.search.max_batch) +
                                         " (" + request.max_reason + ")"
                                   : std::string());
  const auto start = std::chrono::steady_clock::now();
  double earlier = 0;  // probes made before the search, counted in its time
  const ProbeFn probe = [&](std::int64_t batch) {
    const auto t0 = std::chrono::steady_clock::now();
    ProbeResult r =
        request.probe_fn ? request.probe_fn(batch) : run_batch_probe(request.probe, batch);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.earlier_seconds > took) {
      earlier += r.earlier_seconds - took;
      took = r.earlier_seconds;
    }
    spdlog::info("probe batch {}: {}{}{} ({})", batch,
                 trial_outcome(r, request.search.budget_bytes),
                 r.error.empty() && !r.out_of_memory ? ", peak " + format_bytes(r.peak_bytes) : "",
                 r.step_seconds > 0 ? ", " + seconds_text(r.step_seconds, "%.3f s/step") + ", " +
                                          seconds_text(samples_per_second(r), "%.0f samples/s")
                                    : "",
                 seconds_text(took));
    return r;
  };
  BatchSearchRecord record;
  record.result = search_batch(probe, request.search);
  record.seconds =
      earlier + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  record.objective = objective_name(request.search.objective);
  record.budget = request.search.budget_bytes;
  record.budget_reason = request.budget_reason;
  record.max_batch = request.search.max_batch;
  record.max_reason = request.max_reason;
  record.searched_at = utc_now_iso();
  record.cache_file = path;
  record.cache_key = key;
  spdlog::info("batch-size search: {} after {} probes in {} ({}; {})", record.result.batch,
               record.result.trials.size(), seconds_text(record.seconds), record.result.choice.why,
               record.result.reason);
  return record;
}

}  // namespace dl
