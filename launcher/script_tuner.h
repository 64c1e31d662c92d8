// Measuring a user's own program (the command after `--`) as dl-train is measured: its batch size
// by the batch-size search over step probes, then its DataLoader workers by loader probes at that
// batch (script_probe.h, worker_search.h); each answer from the workspace's caches where one
// matches. A program that does not answer the handshake gets no measurement, and the plan says
// why; one that fails a probe stops the start with one line naming the probe and its log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "launcher/batch_tuner.h"
#include "launcher/script_cache.h"
#include "launcher/script_probe.h"

namespace dl {

struct ScriptTuneRequest {
  ScriptProbeSetup probe;
  std::string cache_key;  // the script cache's key (script_cache.h)
  bool use_cache = true;  // false with --retune
  bool tune_workers = false;
  int max_workers = 0;  // the cores of one process
  bool tune_batch = false;
  TuneRequest batch;               // the search's budget, bounds and cache key
  std::int64_t loader_batch = 64;  // the loader probes' batch where none is searched
};

struct ScriptTuning {
  ScriptProbeRecord record;                // the protocol and the workers
  std::optional<BatchSearchRecord> batch;  // the search, when one ran or was cached
  std::int64_t data_samples = 0;           // the data set's size a step probe reported; 0: none did
};

// Throws UserError (exit_code::kProbeFailed) naming the probe, how it ended and its log when a
// probe of a program that shook hands fails: crashes, hangs past its limit, reports an error.
ScriptTuning tune_script(const ScriptTuneRequest& request);

// "a user program that does not speak the probe protocol ..." for the plan's lines: what was
// seen and how to opt in.
std::string no_protocol_note(const std::string& no_handshake);

// "not measured: <the probe's failure>; the next start probes again": a program that failed
// before its handshake (ScriptProbeRecord::failed_early).
std::string early_failure_note(const std::string& failure);

}  // namespace dl
