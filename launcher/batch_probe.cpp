// Starting probes and reading what they say.
#include "launcher/batch_probe.h"

#include <cmath>

#include "core/errors.h"
#include "core/json.h"
#include "core/text.h"
#include "launcher/captured_run.h"
#include "launcher/stop_request.h"

namespace dl {

std::string trainer_error_line(const std::string& err) {
  std::string last;
  for (const auto& line : split(err, '\n')) {
    if (!trim(line).empty()) last = trim(line);
  }
  if (last.size() > 11 && last[0] == '[' && last[9] == ']' && last[10] == ' ') {
    const auto space = last.find(' ', 11);
    if (space != std::string::npos) last = last.substr(space + 1);
  }
  return last;
}

bool is_trainer_input_error(int code) {
  return code >= 64 && code <= 78 && code != exit_code::kInternal;
}

ProbeResult parse_probe_output(const std::string& out, std::int64_t batch) {
  ProbeResult r;
  r.batch = batch;
  if (const auto json = last_json_object_line(out)) {
    r.out_of_memory = json->get_bool("out_of_memory", false);
    r.peak_bytes = json->get_u64("peak_bytes", 0);
    r.step_seconds = json->get_double("step_seconds", 0.0);
    r.error = json->get_string("error", "");
    if (!r.out_of_memory && r.error.empty() && r.peak_bytes == 0) {
      r.error = "the probe reported no peak memory";
    }
    // A time the search could not rank (a negative one would come first): an error, not a winner.
    if (!std::isfinite(r.step_seconds) || r.step_seconds < 0) {
      if (r.error.empty()) r.error = "the probe reported a step time that is not a time";
      r.step_seconds = 0;
    }
    return r;
  }
  r.error = "the probe printed no JSON report";
  return r;
}

ProbeResult run_batch_probe(const ProbeSetup& setup, std::int64_t batch) {
  std::vector<std::string> argv = setup.trainer;
  argv.push_back("--probe-batch");
  argv.push_back(std::to_string(batch));
  // DL_BATCH_SIZE too, so that a batch size of "auto" in the environment or dl.conf (the
  // launcher's setting) never reaches the trainer, which wants a number.
  auto env = setup.env;
  env.emplace_back("DL_BATCH_SIZE", std::to_string(batch));
  const StopPhase phase(base_name(setup.trainer[0]) + " --probe-batch " + std::to_string(batch));
  const CapturedRun run =
      run_captured(argv, setup.workspace, env, setup.timeout_seconds, setup.identity);
  const std::string what = setup.trainer[0] + " --probe-batch " + std::to_string(batch);
  ProbeResult r;
  r.batch = batch;
  if (!run.start_error.empty()) {
    r.error = "cannot start " + what + ": " + run.start_error;
  } else if (run.timed_out) {
    r.error = "stopped after " + format_number(setup.timeout_seconds) + " s";
  } else if (run.signal != 0) {
    // On a machine without swap a probe far over the RAM is ended by the kernel's OOM killer.
    r.error = "killed by signal " + std::to_string(run.signal) +
              (run.signal == 9 ? " (the kernel's out-of-memory killer?)" : "");
  } else if (run.code != 0) {
    const std::string message = trainer_error_line(run.err);
    if (is_trainer_input_error(run.code)) {
      throw UserError(run.code, "batch-size search: " + what + " failed: " + message);
    }
    r.error = "exit code " + std::to_string(run.code) + (message.empty() ? "" : ": " + message);
  } else {
    r = parse_probe_output(run.out, batch);
  }
  return r;
}

std::string trainer_torch_version(const ProbeSetup& setup) {
  std::vector<std::string> argv = {setup.trainer[0], "--version"};
  const StopPhase phase(base_name(setup.trainer[0]) + " --version");
  const CapturedRun run = run_captured(argv, setup.workspace, setup.env, 60, setup.identity);
  const std::string tag = "(LibTorch ";
  const auto at = run.out.find(tag);
  if (run.code != 0 || at == std::string::npos) return "unknown";
  const auto end = run.out.find(')', at);
  return run.out.substr(at + tag.size(), end == std::string::npos ? end : end - at - tag.size());
}

}  // namespace dl
