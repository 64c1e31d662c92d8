// Fuzzes Slurm's hostlist and task-count syntax (launcher/hostlist.h), as dl-launch reads
// SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE to find the rendezvous host and the ranks per node.
// The input's first line is the hostlist, the rest the task counts. nullopt is the documented
// refusal. An accepted list has between 1 and kMaxHosts hosts, none empty, and first_host (which
// does not expand the rest) agrees with its first; accepted counts are all positive.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_files.h"
#include "launcher/hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::size_t eol = text.find('\n');
  const std::string list = text.substr(0, eol);
  const std::string counts = eol == std::string::npos ? std::string() : text.substr(eol + 1);
  std::int64_t sum = 0;
  const auto hosts = dl::expand_hostlist(list);
  const auto first = dl::first_host(list);
  if (hosts) {
    if (hosts->empty() || hosts->size() > dl::kMaxHosts) __builtin_trap();
    for (const std::string& h : *hosts) {
      if (h.empty()) __builtin_trap();
      sum += static_cast<std::int64_t>(h.size());
    }
    if (!first || *first != hosts->front()) __builtin_trap();
  }
  if (const auto tasks = dl::expand_tasks_per_node(counts)) {
    if (tasks->empty() || tasks->size() > dl::kMaxHosts) __builtin_trap();
    for (const int n : *tasks) {
      if (n <= 0) __builtin_trap();
      sum += n;
    }
  }
  dl::fuzz::sink = sum;
  return 0;
}
