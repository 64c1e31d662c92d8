// The order: the batch first (its step probes load data in the main process, so they are cheap
// to start), then the workers at that batch, since a loader's rate in samples/s depends on the
// batch it collates, and only as many as the step consumes. The first probe is the handshake.
#include "launcher/script_tuner.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/errors.h"
#include "core/text.h"
#include "launcher/stop_request.h"

namespace dl {
namespace {

using Clock = std::chrono::steady_clock;

// The timed part of a loader probe: enough batches for a rate within a few percent.
constexpr double kLoaderProbeSeconds = 4;

// Thrown out of the batch search's probe callback: the program does not speak the protocol.
struct NoHandshake {
  std::string why;
  bool failed_early = false;  // ScriptProbeOutcome::failed_early
};

[[noreturn]] void probe_failed(const std::string& failure) {
  throw UserError(exit_code::kProbeFailed, failure);
}

// The samples/s the program's step takes at `batch`: from the search's trial at that size, else
// from a step probe of its own (which is then the handshake; it sets `samples` to the data set's
// size where the module reported one). 0 where the step does not fit.
double step_rate(const ScriptTuneRequest& request, const std::optional<BatchSearchRecord>& search,
                 std::int64_t batch, std::int64_t* samples) {
  if (search) {
    for (const ProbeResult& t : search->result.trials) {
      if (t.batch == batch && t.error.empty() && !t.out_of_memory && t.step_seconds > 0) {
        return static_cast<double>(batch) / t.step_seconds;
      }
    }
  }
  ScriptProbeOutcome outcome;
  const ProbeResult r = run_step_probe(request.probe, batch, &outcome);
  if (!outcome.handshake) throw NoHandshake{outcome.failure, outcome.failed_early};
  if (outcome.samples > 0) *samples = outcome.samples;
  if (!outcome.failure.empty()) probe_failed(outcome.failure);
  if (r.out_of_memory || !r.error.empty() || !(r.step_seconds > 0)) {
    spdlog::info("step probe at batch {}: no step time (it {}): the loader's best rate decides",
                 batch, r.out_of_memory ? "ran out of memory" : "timed no step");
    return 0;
  }
  const double rate = static_cast<double>(batch) / r.step_seconds;
  spdlog::info("step probe at batch {}: {:.3f} s a step, {:.0f} samples/s to feed", batch,
               r.step_seconds, rate);
  return rate;
}

// The workers at the answer's batch (else the plan's): loader probes against the step's rate.
void calibrate_workers(const ScriptTuneRequest& request, ScriptTuning& t) {
  const StopPhase phase("calibrating the data workers");
  const std::int64_t at =
      t.batch && t.batch->result.batch > 0 ? t.batch->result.batch : request.loader_batch;
  ScriptProbeSetup setup = request.probe;
  setup.env.emplace_back("DL_BATCH_SIZE", std::to_string(at));
  // A few seconds of timed batches a probe, however large the batch (docs/python.md).
  setup.env.emplace_back("DL_PROBE_SECONDS", format_number(kLoaderProbeSeconds));
  spdlog::info("worker calibration: loader probes of {} at batch {}, 0 to {} workers",
               request.probe.command[0], at, request.max_workers);
  WorkerSearchOptions options;
  options.max_workers = request.max_workers;
  options.consumer_rate = step_rate(request, t.batch, at, &t.data_samples);
  t.record.workers = search_workers(
      [&](int workers) {
        ScriptProbeOutcome outcome;
        const auto t0 = Clock::now();
        WorkerTrial trial = run_loader_probe(setup, workers, &outcome);
        if (!outcome.handshake) throw NoHandshake{outcome.failure, outcome.failed_early};
        if (!outcome.failure.empty()) probe_failed(outcome.failure);
        spdlog::info("loader probe {} workers: {:.0f} samples/s, {} host memory ({:.1f} s)",
                     workers, trial.samples_per_second, format_bytes(trial.host_bytes),
                     std::chrono::duration<double>(Clock::now() - t0).count());
        return trial;
      },
      options);
  t.record.workers_searched = true;
  spdlog::info("worker calibration: {} workers ({})", t.record.workers.workers,
               t.record.workers.reason);
}

}  // namespace

std::string no_protocol_note(const std::string& no_handshake) {
  return "the program does not speak the probe protocol (" + no_handshake +
         "); to have it measured, import dl_plan and wrap its DataLoader in dl_plan.loader() "
         "and its training step in dl_plan.step() (docs/python.md)";
}

std::string early_failure_note(const std::string& failure) {
  return "not measured: " + failure + "; the next start probes again";
}

ScriptTuning tune_script(const ScriptTuneRequest& request) {
  ScriptTuning t;
  const std::string cache = script_cache_path(request.probe.workspace);
  std::optional<ScriptProbeRecord> cached;
  if (request.use_cache) cached = lookup_script_cache(cache, request.cache_key);
  if (cached && !cached->speaks_protocol) {
    spdlog::info(
        "{} does not speak the probe protocol, says the cache {} ({}); --retune asks "
        "again",
        request.probe.command[0], cache, cached->probed_at);
    t.record = *cached;
    return t;
  }
  const bool workers_cached = cached && cached->workers_searched;
  const auto start = Clock::now();
  t.record.speaks_protocol = true;
  t.record.probed_at = utc_now_iso();
  if (request.tune_workers && workers_cached) {
    t.record = *cached;
    spdlog::info("{} workers from the cache {} ({}); --retune measures again",
                 cached->workers.workers, cache, cached->probed_at);
  }
  try {
    if (request.tune_batch) {
      const StopPhase phase("searching the batch size");
      TuneRequest batch = request.batch;
      batch.use_cache = request.use_cache;
      // The data set's size bounds the search, as it does dl-train's: the module reports it with
      // each step probe, so the first one (made before the search and not repeated in it) tells.
      std::optional<ProbeResult> first;
      const auto step = [&](std::int64_t size) {
        if (first && first->batch == size) return *first;
        ScriptProbeOutcome outcome;
        ProbeResult r = run_step_probe(request.probe, size, &outcome);
        if (!outcome.handshake) throw NoHandshake{outcome.failure, outcome.failed_early};
        if (outcome.samples > 0) t.data_samples = outcome.samples;
        if (outcome.samples > 0 &&
            (batch.search.max_batch == 0 || outcome.samples < batch.search.max_batch)) {
          batch.search.max_batch = outcome.samples;
          batch.max_reason = "the data set";
        }
        // Killed before it could answer, at a size that may not fit: a CPU process far over the
        // RAM is ended by the kernel's out-of-memory killer. The search steps down, as for
        // dl-train's probes.
        if (outcome.signal == 9) return r;
        // An error in the program's step is its own, at every size: no batch to plan with.
        if (!outcome.failure.empty()) probe_failed(outcome.failure);
        return r;
      };
      batch.probe_fn = step;
      if (!(batch.use_cache &&
            lookup_batch_cache(batch_cache_path(request.probe.workspace), batch.key.text()))) {
        const auto t0 = Clock::now();
        first = step(batch.search.first);
        first->earlier_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      }
      t.batch = tune_batch_size(batch);
    }
    if (request.tune_workers && !workers_cached) calibrate_workers(request, t);
  } catch (const NoHandshake& e) {
    t.record = ScriptProbeRecord{};
    t.record.no_handshake = e.why;
    t.record.failed_early = e.failed_early;
    t.record.probed_at = utc_now_iso();
    t.batch.reset();
    spdlog::warn("{}: the rule of thumb applies",
                 e.failed_early ? early_failure_note(e.why) : no_protocol_note(e.why));
  }
  if (!t.record.cached) {
    t.record.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return t;
}

}  // namespace dl
