// The environment contract between dl-launch and the program it starts (docs/reference.md,
// "Environment").
#include <cstdlib>

#include "launcher/launch.h"

namespace dl {
namespace {

std::optional<std::string> process_env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

}  // namespace

EnvList child_environment(const Launch& launch, const EnvLookup& lookup) {
  auto get = [&](const char* name) { return lookup ? lookup(name) : process_env(name); };
  const Plan& p = launch.plan;
  EnvList env = {
      {"DL_WORKSPACE", launch.workspace},
      {"DL_RUN_NAME", launch.run_name},
      {"DL_RUN_DIR", launch.run_dir},
      {"DL_PLAN", launch.run_dir + "/plan.json"},
      {"DL_DEVICE", p.device.value},
      {"DL_PRECISION", p.precision.value},
      {"DL_WORKERS", p.workers_measured ? "auto" : std::to_string(p.workers.value)},
      {"DL_THREADS", p.threads_measured ? "auto" : std::to_string(p.threads.value)},
      {"DL_BATCH_SIZE", std::to_string(p.batch_size.value)},
      // The cores the program may use (cgroup quota and affinity), for its own measurement.
      {"DL_CORES", std::to_string(launch.facts.cpu.usable)},
  };
  // Intra-op threads for OpenMP/MKL users (Python's torch, numpy); an explicit user setting wins.
  // A measuring dl-train sets its own count and may try every usable core.
  const int omp = p.threads_measured ? launch.facts.cpu.usable : p.threads.value;
  for (const char* var : {"OMP_NUM_THREADS", "MKL_NUM_THREADS"}) {
    if (!get(var)) env.emplace_back(var, std::to_string(omp));
  }
  // The torchrun contract for a single process; a scheduler's values are kept.
  const std::pair<const char*, const char*> torchrun[] = {
      {"RANK", "0"},
      {"LOCAL_RANK", "0"},
      {"WORLD_SIZE", "1"},
      {"LOCAL_WORLD_SIZE", "1"},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", "29500"},
  };
  for (const auto& [name, value] : torchrun) {
    const auto existing = get(name);
    env.emplace_back(name, existing ? *existing : value);
  }
  env.insert(env.end(), launch.forwarded.begin(), launch.forwarded.end());
  return env;
}

}  // namespace dl
