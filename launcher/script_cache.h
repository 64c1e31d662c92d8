// The workspace's memory of a user's program's probes (<workspace>/.dl/script-cache.json): whether
// it speaks the probe protocol and the worker count its loader probes chose, under a key naming
// the command, its files (size and modification time), the data, the cores and the device. The
// next start with the same key plans at once; --retune probes again. A missing, unreadable or
// malformed cache is an empty one: it never fails a launch. (The batch size a program's step
// probes found lives in the batch-size cache, batch_cache.h, with the rest.)
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/worker_search.h"

namespace dl {

class DirFd;

struct ScriptProbeRecord {
  bool speaks_protocol = false;  // false: no handshake (the rule of thumb applies)
  std::string no_handshake;      // why, when it did not speak it
  // It failed before its handshake, on an error of its own or of its environment: never cached,
  // so that the next start, after the fix, probes again.
  bool failed_early = false;
  bool workers_searched = false;
  WorkerSearchResult workers;  // the calibration, when workers_searched
  double seconds = 0;          // the probes' wall time
  std::string probed_at;       // UTC, ISO 8601
  bool cached = false;         // read from the cache: no probe ran this time
};

using ScriptCacheEntries = std::vector<std::pair<std::string, ScriptProbeRecord>>;

// <workspace>/.dl/script-cache.json
std::string script_cache_path(const std::string& workspace);

std::string render_script_cache(const ScriptCacheEntries& entries);
ScriptCacheEntries parse_script_cache(const std::string& text);

std::optional<ScriptProbeRecord> lookup_script_cache(const std::string& path,
                                                     const std::string& key);

// Stores `record` under `key`, keeping the 32 most recent other keys; written atomically in .dl/
// (a link there is refused). Throws UserError 73 when it cannot be written.
void store_script_cache(const DirFd& workspace, const std::string& key,
                        const ScriptProbeRecord& record);

}  // namespace dl
