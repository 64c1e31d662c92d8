// Asking dl-train what the data holds, and reading its answer.
#include "launcher/data_facts.h"

#include "core/errors.h"
#include "core/json.h"
#include "core/text.h"
#include "launcher/captured_run.h"
#include "launcher/stop_request.h"

namespace dl {

std::optional<DataFacts> parse_data_facts(const std::string& out) {
  if (const auto json = last_json_object_line(out)) {
    DataFacts f;
    f.train_samples = json->get_i64("train_samples", -1);
    f.sample_bytes = json->get_u64("sample_bytes", 0);
    if (f.train_samples < 0 || f.sample_bytes == 0) return std::nullopt;
    f.kind = json->get_string("kind", "");
    f.location = json->get_string("location", "");
    f.val_samples = json->get_i64("val_samples", 0);
    f.classes = static_cast<int>(json->get_i64("classes", 0));
    f.shards = json->get_i64("shards", 0);
    f.estimated = json->get_bool("estimated", false);
    f.channels = static_cast<int>(json->get_i64("channels", 0));
    f.height = static_cast<int>(json->get_i64("height", 0));
    f.width = static_cast<int>(json->get_i64("width", 0));
    return f;
  }
  return std::nullopt;
}

DataFactsResult read_data_facts(const ProbeSetup& setup) {
  std::vector<std::string> argv = {setup.trainer[0], "--data-facts"};
  const StopPhase phase(base_name(setup.trainer[0]) + " --data-facts");
  const CapturedRun run =
      run_captured(argv, setup.workspace, setup.env,
                   std::min(setup.timeout_seconds, kDataFactsTimeoutSeconds), setup.identity);
  const std::string what = setup.trainer[0] + " --data-facts";
  DataFactsResult r;
  if (!run.start_error.empty()) {
    r.error = "cannot start " + what + ": " + run.start_error;
  } else if (run.timed_out) {
    r.error = what + " stopped after " +
              format_number(std::min(setup.timeout_seconds, kDataFactsTimeoutSeconds)) + " s";
  } else if (run.signal != 0) {
    r.error = what + " was killed by signal " + std::to_string(run.signal);
  } else if (run.code != 0) {
    const std::string message = trainer_error_line(run.err);
    if (is_trainer_input_error(run.code)) throw UserError(run.code, message);
    r.error = what + " ended with exit code " + std::to_string(run.code) +
              (message.empty() ? "" : ": " + message);
  } else {
    r.facts = parse_data_facts(run.out);
    if (!r.facts) r.error = what + " printed no facts";
  }
  return r;
}

}  // namespace dl
