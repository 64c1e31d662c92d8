// Fuzzes what dl-launch reads from the programs it probes: dl-train's probe report
// (parse_probe_output, the last JSON object line of its stdout), a `--` program's result file
// (parse_probe_records: dl_plan's protocol lines, written by the user's own script), the last
// error line it quotes from either, and the scan of a script's source for `import dl_plan`
// (imports_dl_plan). The input is the output text. None of them refuses: each answers. A
// report's batch is the one asked for, its step time a time (finite, not negative) unless it is
// an error; a quoted line is at most 300 characters.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_files.h"
#include "launcher/batch_probe.h"
#include "launcher/program_kind.h"
#include "launcher/script_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const dl::ProbeResult r = dl::parse_probe_output(text, 64);
  if (r.batch != 64) __builtin_trap();
  if (!std::isfinite(r.step_seconds) || r.step_seconds < 0) __builtin_trap();
  const dl::ProbeRecords records = dl::parse_probe_records(text);
  if (records.result && records.result->find('\n') != std::string::npos) __builtin_trap();
  const std::string said = dl::last_error_line(text, text);
  if (said.size() > 300) __builtin_trap();
  const std::string trainer_said = dl::trainer_error_line(text);
  dl::fuzz::sink = static_cast<std::int64_t>(said.size() + trainer_said.size() + r.error.size() +
                                             (records.hello ? 1 : 0) + records.malformed) +
                   (dl::imports_dl_plan(text) ? 1 : 0);
  return 0;
}
