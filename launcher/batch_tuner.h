// Choosing the batch size by measurement: the answer the workspace's cache holds for this model,
// input, precision, device and LibTorch, or else a search whose trials are probes of dl-train.
// Every trial is logged as it ends.
#pragma once

#include <string>

#include "launcher/batch_cache.h"
#include "launcher/batch_probe.h"
#include "launcher/batch_search.h"
#include "launcher/plan.h"

namespace dl {

struct TuneRequest {
  ProbeSetup probe;  // how dl-train's probe mode is started (its workspace names the cache)
  // Another program's probes (a user's script under the probe protocol, script_probe.h): the
  // trial of each batch; then `key` is complete as given and dl-train is not asked for its
  // LibTorch version.
  ProbeFn probe_fn;
  BatchCacheKey key;          // all but the LibTorch version, which dl-train is asked for
  SearchOptions search;       // the budget and the data set's size
  std::string budget_reason;  // where the budget comes from, for the report
  // What search.max_batch is: the data set's size, or a rank's share of --global-batch (no piece
  // need be larger than the share a rank steps on).
  std::string max_reason = "the data set";
  bool use_cache = true;  // false with --retune: search even when the cache has an answer
};

// The cached record, or a fresh search's (not stored: store_batch_cache does that, outside a dry
// run). Throws UserError when dl-train refuses its input (batch_probe.h).
BatchSearchRecord tune_batch_size(TuneRequest request);

}  // namespace dl
