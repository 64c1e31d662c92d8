// Fuzzes the metrics.csv reader (parse_metrics_csv), which a resumed run uses to draw its earlier
// epochs in report.html: the file lies in the workspace, so anything may be in it. The input's
// first byte is the epoch the run resumes after, the rest the file. The reader skips what does
// not parse (no refusal); the epochs it keeps are distinct, increasing and within 1..up_to, and
// the run report drawn from them renders whole (every chart, every value escaped).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_files.h"
#include "report/metrics_history.h"
#include "report/run_report.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int up_to = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto rows = dl::report::parse_metrics_csv(text, up_to);
  int last = 0;
  for (const auto& p : rows) {
    if (p.epoch <= last || p.epoch > up_to) __builtin_trap();
    last = p.epoch;
  }
  dl::report::RunReport report;
  report.run_name = "fuzz";
  report.epochs_total = up_to;
  report.epochs = rows;
  const std::string page = dl::report::render_run_report(report);
  if (page.find("</html>") == std::string::npos) __builtin_trap();
  dl::fuzz::sink = static_cast<std::int64_t>(page.size());
  return 0;
}
