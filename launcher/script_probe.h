// One probe of a user's own program (the command after `--`) under the probe protocol that the
// companion module dl_plan answers (docs/python.md, "The probe protocol"): the program started in
// the workspace with DL_PROBE and a result file of its own, a handshake expected within seconds,
// the answer read from that file (never from the program's output, which goes to a log file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/run_as.h"
#include "launcher/batch_search.h"
#include "launcher/worker_search.h"

namespace dl {

constexpr int kProbeProtocol = 1;

struct ScriptProbeSetup {
  std::vector<std::string> command;  // the program's argv (argv[0] absolute)
  std::string workspace;             // working directory
  // The environment the program would train with, as one process; each probe adds its own.
  std::vector<std::pair<std::string, std::string>> env;
  std::optional<Identity> identity;  // whom the probes run as (the workspace's owner)
  std::string probe_dir;  // absolute: result files, logs and the probes' DL_RUN_DIR (exists)
  // Before each log's name: one start's logs are kept apart from another's ("20261204-150102-
  // 4242-step-64.log"), so the log a plan names is still there after the next start.
  std::string log_prefix;
  double handshake_seconds = 30;  // a program that has not shaken hands by then does not speak it
  double timeout_seconds = 300;
};

// How a probe went, beyond its measurement.
struct ScriptProbeOutcome {
  bool handshake = false;  // the program answered the handshake
  std::string failure;     // one line: the probe, its exit status and its log; "" when it answered
  // It failed before its handshake (an exit status other than 0, a signal, no start at all): an
  // error of the script's or of its environment (no torch, a missing file, a bad argument), not
  // a program that does not speak the protocol. `failure` then quotes its last error line.
  bool failed_early = false;
  std::string log_path;      // the program's output
  std::string torch;         // the module's report of torch's version, where it gave one
  int signal = 0;            // the program died of this signal (9: the kernel's OOM killer?)
  std::int64_t samples = 0;  // a step probe's data set size, where the module saw it; 0: unknown
};

// A loader probe at `workers` DataLoader workers (DL_WORKERS); its failure (also in
// trial.error) names the probe, its exit status and its log file.
WorkerTrial run_loader_probe(const ScriptProbeSetup& setup, int workers,
                             ScriptProbeOutcome* outcome);

// A step probe at `batch` (DL_BATCH_SIZE), with the data loaded in the main process: it measures
// the step's memory, not the loader's.
ProbeResult run_step_probe(const ScriptProbeSetup& setup, std::int64_t batch,
                           ScriptProbeOutcome* outcome);

// The result records in a result file's text: the handshake seen, and the last "result" line.
// Exposed for tests.
struct ProbeRecords {
  bool hello = false;
  std::string torch;
  std::optional<std::string> result;  // the last result line, as text
  int malformed = 0;                  // lines that are not the protocol's JSON
};
ProbeRecords parse_probe_records(const std::string& text);

// The program's own last word on a failure: the last non-empty line of its stderr (Python's
// exception line, "ModuleNotFoundError: No module named 'torch'"), else of its stdout; at most
// 300 characters; "" when it printed nothing.
std::string last_error_line(const std::string& err, const std::string& out);

// Keeps the newest `keep` probe logs (*.log, named by their start's time) in `probe_dir`,
// removing the older ones, as `identity`.
void prune_probe_logs(const std::string& probe_dir, const std::optional<Identity>& identity,
                      std::size_t keep);

}  // namespace dl
