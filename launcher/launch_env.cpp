// The environment contract between dl-launch and the program it starts (docs/reference.md,
// "Environment"; docs/distributed.md for several ranks).
#include <cstdlib>

#include "launcher/launch.h"

namespace dl {
namespace {

std::optional<std::string> process_env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

// A plan made without a topology (tests building a Launch by hand): one process, all cores.
RankPlan single_rank(const Launch& launch) {
  RankPlan r;
  r.device = launch.plan.device.value;
  r.cores = {launch.facts.cpu.usable, ""};
  r.workers = launch.plan.workers;
  r.threads = launch.plan.threads;
  return r;
}

}  // namespace

EnvList rank_environment(const Launch& launch, std::size_t index, const EnvLookup& lookup) {
  auto get = [&](const char* name) { return lookup ? lookup(name) : process_env(name); };
  const Plan& p = launch.plan;
  const Topology& t = p.topology;
  const RankPlan r = index < p.ranks.size() ? p.ranks[index] : single_rank(launch);
  EnvList env = {
      {"DL_WORKSPACE", launch.workspace},
      {"DL_RUN_NAME", launch.run_name},
      {"DL_RUN_DIR", launch.run_dir},
      {"DL_PLAN", launch.run_dir + "/" + plan_file_name(launch)},
      {"DL_DEVICE", r.device},
      {"DL_PRECISION", p.precision.value},
      {"DL_WORKERS", p.workers_measured ? "auto" : std::to_string(r.workers.value)},
      {"DL_THREADS", p.threads_measured ? "auto" : std::to_string(r.threads.value)},
      {"DL_BATCH_SIZE", std::to_string(p.batch_size.value)},
      // The cores this process may use (its share of the cgroup quota and affinity), for its own
      // measurement.
      {"DL_CORES", std::to_string(r.cores.value)},
  };
  // --global-batch: the pieces a rank's batch runs in, for dl-train's --micro-batch and dl_plan's
  // plan.micro_batch (unset where a batch runs whole, so a dl.conf's micro-batch still counts).
  if (p.accumulation) {
    env.emplace_back("DL_GLOBAL_BATCH",
                     std::to_string(p.accumulation->per_rank * p.topology.world_size.value));
  }
  if (p.accumulation && p.accumulation->steps > 1) {
    env.emplace_back("DL_MICRO_BATCH", std::to_string(p.accumulation->micro));
  }
  // Intra-op threads for OpenMP/MKL users (Python's torch, numpy); an explicit user setting wins.
  // A measuring dl-train sets its own count and may try every core of its share.
  const int omp = p.threads_measured ? r.cores.value : r.threads.value;
  for (const char* var : {"OMP_NUM_THREADS", "MKL_NUM_THREADS"}) {
    if (!get(var)) env.emplace_back(var, std::to_string(omp));
  }
  // torchrun's contract, from the topology (which holds a scheduler's values where one set them).
  const int local_rank = t.first_local_rank + static_cast<int>(index);
  env.emplace_back("RANK", std::to_string(t.first_rank + static_cast<int>(index)));
  env.emplace_back("LOCAL_RANK", std::to_string(local_rank));
  env.emplace_back("WORLD_SIZE", std::to_string(t.world_size.value));
  env.emplace_back("LOCAL_WORLD_SIZE", std::to_string(t.local_world_size));
  env.emplace_back("GROUP_RANK", std::to_string(t.node_rank.value));
  env.emplace_back("MASTER_ADDR", t.master_addr.value);
  env.emplace_back("MASTER_PORT", std::to_string(t.master_port.value));
  // A program after -- imports dl_plan from beside this dl-launch first: the module it finds
  // then speaks this launcher's probe protocol, whatever else the user's PYTHONPATH holds.
  if (!launch.companion_dir.empty()) {
    const auto user = get("PYTHONPATH");
    env.emplace_back("PYTHONPATH", user && !user->empty() ? launch.companion_dir + ":" + *user
                                                          : launch.companion_dir);
  }
  // Its output reaches the terminal and runs/<name>/rank-N.log through a pipe, which Python
  // buffers by 8 KiB blocks: lines would show late, and a kill -9 would lose what was printed.
  if (!launch.companion_dir.empty() && !get("PYTHONUNBUFFERED")) {
    env.emplace_back("PYTHONUNBUFFERED", "1");
  }
  env.insert(env.end(), launch.forwarded.begin(), launch.forwarded.end());
  return env;
}

std::string plan_file_name(const Launch& launch) {
  const int first = launch.plan.topology.first_rank;
  return first == 0 ? "plan.json" : "plan-rank-" + std::to_string(first) + ".json";
}

EnvList child_environment(const Launch& launch, const EnvLookup& lookup) {
  return rank_environment(launch, 0, lookup);
}

}  // namespace dl
