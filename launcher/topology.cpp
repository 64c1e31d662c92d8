// Scheduler detection and the rank layout. The order of detection: torchrun's own variables (this
// is one of its workers), an srun task, a PyTorchJob pod, the bare contract (RANK and WORLD_SIZE
// set by hand), else a plain start.
#include "launcher/topology.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/errors.h"
#include "core/text.h"
#include "launcher/hostlist.h"

namespace dl {
namespace {

constexpr int kMaxRanks = 1 << 20;
constexpr int kTorchrunPort = 29500;
constexpr int kSlurmPortBase = 10000;
constexpr int kSlurmPortSpan = 50000;

std::optional<std::string> process_env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

// Reads variables through the lookup; each read remembers the name it came from.
class Env {
 public:
  explicit Env(const EnvLookup& lookup) : lookup_(lookup) {}

  std::optional<std::string> get(const char* name) const {
    auto v = lookup_ ? lookup_(name) : process_env(name);
    if (v && trim(*v).empty()) return std::nullopt;
    if (v) return trim(*v);
    return v;
  }
  bool has(const char* name) const { return get(name).has_value(); }

  // The first of `names` that is set, as a whole number in [min, max].
  std::optional<Sourced<int>> integer(std::initializer_list<const char*> names, long long min,
                                      long long max = kMaxRanks) const {
    for (const char* name : names) {
      const auto v = get(name);
      if (!v) continue;
      const auto n = parse_i64(*v);
      if (!n || *n < min || *n > max) {
        throw UserError(exit_code::kUsage, std::string(name) + ": expected a whole number >= " +
                                               std::to_string(min) + ", got '" + *v + "'");
      }
      return Sourced<int>{static_cast<int>(*n), name};
    }
    return std::nullopt;
  }

  std::optional<Sourced<std::string>> text(std::initializer_list<const char*> names) const {
    for (const char* name : names) {
      if (auto v = get(name)) return Sourced<std::string>{*v, name};
    }
    return std::nullopt;
  }

 private:
  const EnvLookup& lookup_;
};

std::string plural(int n, const std::string& word) {
  const std::string many = word.back() == 's' ? word + "es" : word + "s";
  return std::to_string(n) + " " + (n == 1 ? word : many);
}

// Letters, digits, '.', '-' and '_': usable in a run directory's name.
bool safe_name(const std::string& s) {
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  return !s.empty();
}

[[noreturn]] void usage_error(const std::string& message) {
  throw UserError(exit_code::kUsage, message);
}

void check_rank_in_world(const Sourced<int>& rank, const Sourced<int>& world) {
  if (rank.value >= world.value) {
    usage_error(rank.source + " " + std::to_string(rank.value) + " is not below " + world.source +
                " " + std::to_string(world.value) + ": expected 0 <= rank < world size");
  }
}

void read_master(const Env& env, SchedulerEnv* s) {
  s->master_addr = env.text({"MASTER_ADDR"});
  s->master_port = env.integer({"MASTER_PORT"}, 1, 65535);
}

// torchrun (or the bare contract): this process is one rank, with everything given.
SchedulerEnv torchrun_worker(const Env& env, const std::string& evidence) {
  SchedulerEnv s;
  s.kind = SchedulerEnv::Kind::kTorchrun;
  s.name = "torchrun";
  s.evidence = evidence;
  s.one_worker = true;
  s.world_size = env.integer({"WORLD_SIZE"}, 1);
  s.rank = env.integer({"RANK"}, 0);
  check_rank_in_world(*s.rank, *s.world_size);
  s.local_rank = env.integer({"LOCAL_RANK"}, 0);
  s.local_world_size = env.integer({"LOCAL_WORLD_SIZE"}, 1);
  s.node_rank = env.integer({"GROUP_RANK"}, 0);
  s.nnodes = env.integer({"GROUP_WORLD_SIZE"}, 1);
  read_master(env, &s);
  // Every worker of one torchrun run shares its id (a uuid under --standalone).
  if (const auto id = env.get("TORCHELASTIC_RUN_ID");
      id && *id != "none" && id->size() <= 100 && safe_name(*id)) {
    s.run_name = "torchrun-" + *id;
  }
  return s;
}

// An srun task: one rank per task, the master the first host of the step's node list.
SchedulerEnv slurm_task(const Env& env) {
  SchedulerEnv s;
  s.kind = SchedulerEnv::Kind::kSlurm;
  s.name = "slurm";
  s.one_worker = true;
  s.rank = env.integer({"SLURM_PROCID"}, 0);
  s.world_size = env.integer({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"}, 1);
  if (!s.world_size) usage_error("SLURM_NTASKS is not set: expected the number of tasks of srun");
  check_rank_in_world(*s.rank, *s.world_size);
  s.local_rank = env.integer({"SLURM_LOCALID"}, 0);
  s.node_rank = env.integer({"SLURM_NODEID"}, 0);
  s.nnodes = env.integer({"SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"}, 1);
  const auto job = env.text({"SLURM_JOB_ID", "SLURM_JOBID"});
  s.evidence = "SLURM_PROCID and SLURM_STEP_ID are set: an srun task" +
               (job ? " of job " + job->value : std::string());

  // Tasks on this node: --ntasks-per-node when given, else this node's entry of the per-node
  // counts ("2(x3),1").
  if (auto n = env.integer({"SLURM_NTASKS_PER_NODE"}, 1)) {
    s.local_world_size = n;
  } else if (auto counts = env.text({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"})) {
    const auto per_node = expand_tasks_per_node(counts->value);
    if (!per_node) {
      usage_error(counts->source + ": expected Slurm's task counts such as 4(x2),3, got '" +
                  counts->value + "'");
    }
    const int node = s.node_rank ? s.node_rank->value : 0;
    if (node < static_cast<int>(per_node->size())) {
      s.local_world_size = Sourced<int>{(*per_node)[node], counts->source};
    }
  }

  read_master(env, &s);
  if (!s.master_addr) {
    const auto list = env.text({"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"});
    if (!list) {
      s.master_addr_error = "SLURM_JOB_NODELIST is not set";
    } else if (const auto first = first_host(list->value)) {
      s.master_addr = Sourced<std::string>{*first, "the first host of " + list->source};
      if (!s.nnodes) {
        const auto hosts = expand_hostlist(list->value);
        if (hosts) s.nnodes = Sourced<int>{static_cast<int>(hosts->size()), list->source};
      }
    } else {
      s.master_addr_error = list->source + " '" + list->value +
                            "' is not a Slurm hostlist (expected e.g. node[01-04,07],gpu1)";
    }
  }
  const auto step = env.text({"SLURM_STEP_ID", "SLURM_STEPID"});
  if (job && step && parse_u64(job->value) && parse_u64(step->value)) {
    s.run_name = "slurm-" + job->value + "." + step->value;
  }
  if (!s.master_port && job) {
    const auto id = parse_u64(job->value);
    if (!id) usage_error(job->source + ": expected a job number, got '" + job->value + "'");
    s.master_port =
        Sourced<int>{slurm_port(*id), "10000 + " + job->source + " " + job->value + " % 50000"};
  }
  return s;
}

// A PyTorchJob pod: the training operator sets the master and, with nprocPerNode, PET_*.
SchedulerEnv pytorchjob_pod(const Env& env) {
  SchedulerEnv s;
  s.kind = SchedulerEnv::Kind::kPyTorchJob;
  s.name = "pytorchjob";
  s.evidence = "PET_NPROC_PER_NODE or PET_NNODES is set: a Kubeflow PyTorchJob pod";
  s.nproc_per_node = env.text({"PET_NPROC_PER_NODE"});
  if (const auto nnodes = env.text({"PET_NNODES"})) {
    // "2" or an elastic "2:2"; a range of sizes is elastic training, which this launcher does not
    // do.
    const auto parts = split(nnodes->value, ':');
    const auto lo = parse_u64(parts.front());
    const auto hi = parse_u64(parts.back());
    if (parts.size() > 2 || !lo || !hi || *lo != *hi || *lo < 1 || *lo > kMaxRanks) {
      usage_error(
          "PET_NNODES: expected a number of nodes (elastic ranges are not supported), got '" +
          nnodes->value + "'");
    }
    s.nnodes = Sourced<int>{static_cast<int>(*lo), "PET_NNODES"};
  }
  // RANK is the pod's index among the replicas (Master 0, Workers 1...), which is the node rank.
  s.node_rank = env.integer({"PET_NODE_RANK", "RANK"}, 0);
  s.master_addr = env.text({"MASTER_ADDR", "PET_MASTER_ADDR"});
  s.master_port = env.integer({"MASTER_PORT", "PET_MASTER_PORT"}, 1, 65535);
  return s;
}

int resolve_nproc(const Sourced<std::string>& asked, const std::string& device, int gpus) {
  const std::string& v = asked.value;
  const bool on_gpu = device != "cpu";
  if (v == "auto") return on_gpu ? std::max(gpus, 1) : 1;
  if (v == "cpu") return 1;
  if (v == "gpu") {
    if (gpus == 0) {
      throw UserError(exit_code::kUnavailable,
                      asked.source +
                          " gpu: no NVIDIA GPU visible; give a number of processes "
                          "(--nproc-per-node N) to run on the CPU");
    }
    if (!on_gpu) {
      usage_error(asked.source +
                  " gpu starts one process per GPU, but the device is cpu; use "
                  "--nproc-per-node N on the CPU");
    }
    return gpus;
  }
  const auto n = parse_i64(v);
  if (!n || *n < 1 || *n > kMaxRanks) {
    usage_error(asked.source + ": expected a number of processes, auto or gpu, got '" + v + "'");
  }
  if (on_gpu && *n > gpus) {
    throw UserError(exit_code::kUnavailable,
                    asked.source + " " + v + " on " + device + ": only " + plural(gpus, "GPU") +
                        " visible, and each process uses its own (cuda:LOCAL_RANK); start at "
                        "most " +
                        std::to_string(gpus) + " or run on the CPU (--device cpu)");
  }
  return static_cast<int>(*n);
}

std::string nproc_reason(const Sourced<std::string>& asked, int n, const std::string& device) {
  const std::string from = asked.source == "default" ? "default" : "from " + asked.source;
  if (asked.value == "auto") {
    return from + " auto: " +
           (device == "cpu" ? std::string("one process on the CPU")
                            : "one process per visible GPU (" + plural(n, "GPU") + ")");
  }
  if (asked.value == "gpu") return from + " gpu: one process per visible GPU";
  return from;
}

}  // namespace

SchedulerEnv detect_scheduler(const EnvLookup& lookup) {
  const Env env(lookup);
  const bool contract = env.has("RANK") && env.has("WORLD_SIZE");
  if (env.has("TORCHELASTIC_RUN_ID") && contract) {
    return torchrun_worker(env,
                           "TORCHELASTIC_RUN_ID, RANK and WORLD_SIZE are set: a torchrun "
                           "worker");
  }
  if (env.has("LOCAL_RANK") && contract) {
    return torchrun_worker(env, "RANK, LOCAL_RANK and WORLD_SIZE are set: a torchrun worker");
  }
  if (env.has("SLURM_PROCID") && (env.has("SLURM_STEP_ID") || env.has("SLURM_STEPID"))) {
    return slurm_task(env);
  }
  if (env.has("PET_NPROC_PER_NODE") || env.has("PET_NNODES")) return pytorchjob_pod(env);
  if (contract) {
    return torchrun_worker(env, "RANK and WORLD_SIZE are set: one rank of a run started outside");
  }
  SchedulerEnv s;
  if (const auto job = env.text({"SLURM_JOB_ID", "SLURM_JOBID"})) {
    s.notes.push_back("in Slurm job " + job->value +
                      " but not an srun task (no SLURM_STEP_ID): ranks on this node only; "
                      "run dl-launch under srun for several nodes (deploy/slurm/train.sbatch)");
  }
  return s;
}

Topology plan_topology(const SchedulerEnv& env, const RankRequest& req, const std::string& device,
                       const std::string& device_asked, int gpus, bool default_program) {
  Topology t;
  t.scheduler = env.name;
  t.scheduler_evidence = env.evidence;
  t.one_worker = env.one_worker;
  t.notes = env.notes;
  const bool one_device = starts_with(device_asked, "cuda:");

  // Processes started here.
  if (env.one_worker) {
    if (req.nproc_per_node.source != "default" && req.nproc_per_node.value != "auto" &&
        req.nproc_per_node.value != "1") {
      usage_error(req.nproc_per_node.source + " " + req.nproc_per_node.value +
                  ": dl-launch is one of " + env.name + "'s workers here (" + env.evidence +
                  ") and starts exactly one process; let " + env.name +
                  " start the others, or drop the option");
    }
    t.nproc = {1, "one process per " + env.name + " worker (" + env.evidence + ")"};
  } else {
    Sourced<std::string> asked = req.nproc_per_node;
    if (asked.source == "default" && env.nproc_per_node) asked = *env.nproc_per_node;
    if (asked.source == "default" && !default_program) asked.value = "1";
    if (one_device && asked.value == "auto") {
      t.nproc = {1, "one process: --device " + device_asked + " names one GPU"};
    } else {
      const int n = resolve_nproc(asked, device, gpus);
      if (one_device && n > 1) {
        usage_error("--device " + device_asked + " names one GPU, but " + asked.source + " " +
                    asked.value + " starts " + std::to_string(n) +
                    " processes, each on cuda:LOCAL_RANK; choose the GPUs with "
                    "CUDA_VISIBLE_DEVICES instead");
      }
      std::string reason = nproc_reason(asked, n, device);
      if (asked.source == "default" && !default_program) {
        reason = "default for a command: 1 (--nproc-per-node auto starts one per GPU)";
      }
      t.nproc = {n, reason};
    }
  }

  // Nodes, this node's rank.
  const std::optional<Sourced<int>>& nnodes = req.nnodes ? req.nnodes : env.nnodes;
  if (nnodes) t.nnodes = {nnodes->value, "from " + nnodes->source};
  const std::optional<Sourced<int>>& node_rank = req.node_rank ? req.node_rank : env.node_rank;
  if (node_rank) t.node_rank = {node_rank->value, "from " + node_rank->source};
  if (t.node_rank.value >= t.nnodes.value && !env.one_worker) {
    usage_error((node_rank ? node_rank->source : std::string("--node-rank")) + " " +
                std::to_string(t.node_rank.value) + " is not below " +
                (nnodes ? nnodes->source : std::string("--nnodes")) + " " +
                std::to_string(t.nnodes.value) + ": node ranks run from 0 to nnodes - 1");
  }

  // Ranks.
  if (env.one_worker) {
    t.world_size = {env.world_size->value, "from " + env.world_size->source};
    t.first_rank = env.rank->value;
    t.first_local_rank = env.local_rank ? env.local_rank->value : 0;
    t.local_world_size = env.local_world_size ? env.local_world_size->value : 1;
  } else {
    const long long world = static_cast<long long>(t.nnodes.value) * t.nproc.value;
    if (world > kMaxRanks) usage_error("--nnodes x --nproc-per-node: too many ranks");
    t.world_size = {static_cast<int>(world),
                    t.nnodes.value == 1 ? plural(t.nproc.value, "process") + " on this node"
                                        : std::to_string(t.nnodes.value) + " nodes x " +
                                              plural(t.nproc.value, "process")};
    t.first_rank = t.node_rank.value * t.nproc.value;
    t.local_world_size = t.nproc.value;
  }

  // Rank 0's store: the address.
  if (req.master_addr) {
    t.master_addr = {req.master_addr->value, "from " + req.master_addr->source};
  } else if (env.master_addr) {
    t.master_addr = {env.master_addr->value, "from " + env.master_addr->source};
  } else if (!env.master_addr_error.empty()) {
    throw UserError(exit_code::kRendezvous,
                    "cannot tell where rank 0 runs: " + env.master_addr_error +
                        "; give --master-addr HOST (the first node of the job)");
  } else if (t.nnodes.value > 1) {
    usage_error("--nnodes " + std::to_string(t.nnodes.value) +
                ": the other nodes need rank 0's address: give --master-addr HOST (the host of "
                "node rank 0), the same on every node");
  } else {
    t.master_addr = {"127.0.0.1", "one node: the loopback"};
  }
  // The port.
  if (req.master_port) {
    t.master_port = {req.master_port->value, "from " + req.master_port->source};
  } else if (env.master_port) {
    t.master_port = {env.master_port->value, "from " + env.master_port->source};
  } else if (t.nnodes.value == 1 && !env.one_worker) {
    t.master_port = {0, "a free port on this node, found by binding port 0"};
    t.pick_free_port = true;
  } else {
    t.master_port = {kTorchrunPort, "default (torchrun's), the same on every node"};
  }
  t.check_port = !env.one_worker && t.first_rank == 0 && !t.pick_free_port;
  return t;
}

std::string rank_device(const Topology& t, const std::string& device,
                        const std::string& device_asked, int gpus, int index) {
  if (device == "cpu") return device;
  if (starts_with(device_asked, "cuda:")) return device;  // one GPU named: that one
  const int local = t.first_local_rank + index;
  if (local < gpus) return "cuda:" + std::to_string(local);
  // A scheduler that gave each task its own GPU (srun --gpus-per-task, a CUDA_VISIBLE_DEVICES of
  // one) leaves LOCAL_RANK above the visible count: the task's GPU is its cuda:0.
  if (t.one_worker && gpus == 1) return "cuda:0";
  throw UserError(exit_code::kUnavailable, "local rank " + std::to_string(local) +
                                               " would use cuda:" + std::to_string(local) +
                                               ", but only " + plural(gpus, "GPU") +
                                               " visible on this node; start one task per GPU");
}

std::vector<int> split_cores(int cores, int ranks) {
  std::vector<int> out;
  if (ranks <= 0) return out;
  const int base = cores / ranks;
  const int extra = cores % ranks;
  for (int i = 0; i < ranks; ++i) out.push_back(std::max(1, base + (i < extra ? 1 : 0)));
  return out;
}

std::optional<std::vector<std::vector<int>>> split_cpus(const std::vector<int>& cpus, int ranks) {
  if (ranks <= 0 || static_cast<int>(cpus.size()) < ranks) return std::nullopt;
  std::vector<std::vector<int>> out;
  std::size_t next = 0;
  for (int size : split_cores(static_cast<int>(cpus.size()), ranks)) {
    out.emplace_back(cpus.begin() + static_cast<long>(next),
                     cpus.begin() + static_cast<long>(next + static_cast<std::size_t>(size)));
    next += static_cast<std::size_t>(size);
  }
  return out;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

int slurm_port(unsigned long long job_id) {
  return kSlurmPortBase + static_cast<int>(job_id % kSlurmPortSpan);
}

}  // namespace dl
