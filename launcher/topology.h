// The ranks of a run: how many processes this dl-launch starts, their global and local ranks, the
// world, and where rank 0's rendezvous store listens (torchrun's contract). Pure: the scheduler is
// read from an environment lookup, the options override it, and every value says where it came
// from, so Slurm, a PyTorchJob and torchrun are tested by setting variables.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/sourced.h"

namespace dl {

// Reads one variable of an environment: the process's, or a test's map.
using EnvLookup = std::function<std::optional<std::string>(const char*)>;

// What the environment says about the run's ranks.
struct SchedulerEnv {
  enum class Kind { kNone, kTorchrun, kSlurm, kPyTorchJob };
  Kind kind = Kind::kNone;
  std::string name = "none";  // "torchrun", "slurm", "pytorchjob", "none"
  std::string evidence;       // "SLURM_PROCID and SLURM_STEP_ID are set"
  // The scheduler started one dl-launch per rank (torchrun, srun): it spawns exactly one process.
  bool one_worker = false;
  std::optional<Sourced<int>> rank, local_rank, world_size, local_world_size;
  std::optional<Sourced<int>> node_rank, nnodes;
  std::optional<Sourced<std::string>> nproc_per_node;  // PyTorchJob: N, auto, gpu or cpu
  std::optional<Sourced<std::string>> master_addr;
  std::optional<Sourced<int>> master_port;
  // Why the master's address could not be read (an unreadable SLURM_JOB_NODELIST); used only when
  // no --master-addr replaces it.
  std::string master_addr_error;
  std::vector<std::string> notes;  // for the plan: "Slurm job 12 but not an srun task: ..."
  // A run name every rank derives alike ("slurm-<job>.<step>", "torchrun-<run id>"), used when
  // --name is not given.
  std::optional<std::string> run_name;
};

// Reads the scheduler from `lookup` (a missing lookup reads the process's environment). Throws
// UserError 64 naming the variable when one of them holds a bad value.
SchedulerEnv detect_scheduler(const EnvLookup& lookup);

// What the options ask (each unset: the scheduler's, else the default).
struct RankRequest {
  Sourced<std::string> nproc_per_node{"auto"};  // N, auto or gpu; source "default": not given
  std::optional<Sourced<int>> nnodes;
  std::optional<Sourced<int>> node_rank;
  std::optional<Sourced<std::string>> master_addr;
  std::optional<Sourced<int>> master_port;
  Sourced<std::string> cpu_bind{"none"};  // none | cores
  Sourced<std::string> log_ranks{"0"};    // 0 | all
};

struct Topology {
  std::string scheduler = "none";
  std::string scheduler_evidence;
  bool one_worker = false;
  Choice<int> nproc{1, "default"};  // the processes this dl-launch starts
  Choice<int> nnodes{1, "default"};
  Choice<int> node_rank{0, "default"};
  Choice<int> world_size{1, "one process"};
  int first_rank = 0;        // global rank of the first process started here
  int first_local_rank = 0;  // its local rank (a Slurm task's SLURM_LOCALID)
  int local_world_size = 1;  // LOCAL_WORLD_SIZE: the ranks on this node
  Choice<std::string> master_addr{"127.0.0.1", "default"};
  Choice<int> master_port{29500, "default"};
  // The port is found at start by binding port 0 on the master address (one node, none given).
  bool pick_free_port = false;
  // This dl-launch starts global rank 0, whose store listens on the port: the port is tried
  // before anything starts, and one in use is an error (exit 75).
  bool check_port = false;
  std::vector<std::string> notes;
};

// The topology for a plan on `device` ("cpu" or "cuda:N") with `gpus` visible GPUs. `device_asked`
// is the --device setting ("auto", "cuda", "cuda:N", "cpu"); `default_program`: the program is
// dl-train (auto is then the default of --nproc-per-node). Throws UserError: 64 for settings that
// contradict each other (--node-rank >= --nnodes, several nodes without --master-addr), 69 for
// more processes than GPUs, 75 when the scheduler's node list cannot be read.
Topology plan_topology(const SchedulerEnv& env, const RankRequest& request,
                       const std::string& device, const std::string& device_asked, int gpus,
                       bool default_program);

// The device of the local process `index` (0-based among those started here): cuda:LOCAL_RANK on
// a GPU plan, or the planned device itself for a single process that was given one.
std::string rank_device(const Topology& t, const std::string& device,
                        const std::string& device_asked, int gpus, int index);

// Splits `cores` between `ranks`: as evenly as possible, the first ranks taking the remainder,
// at least 1 each.
std::vector<int> split_cores(int cores, int ranks);

// Disjoint blocks of `cpus` (an affinity mask's CPU numbers) for `ranks` ranks, sized as
// split_cores sizes them; nullopt when there are fewer CPUs than ranks.
std::optional<std::vector<std::vector<int>>> split_cpus(const std::vector<int>& cpus, int ranks);

// "0-3,8,10-11" for a list of CPU numbers (sorted).
std::string cpu_list_text(const std::vector<int>& cpus);

// Slurm's rendezvous port for a job: 10000 + job id % 50000 (every task derives the same).
int slurm_port(unsigned long long job_id);

}  // namespace dl
