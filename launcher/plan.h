// Planning: a pure function from the machine's facts and what the user asked to the settings the
// training program gets. Every derived value carries the reason it was chosen.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/accumulation.h"
#include "core/probe.h"
#include "launcher/batch_search.h"
#include "launcher/sourced.h"
#include "launcher/topology.h"

namespace dl {

struct Request {
  std::optional<Sourced<int>> workers;  // unset: derive
  std::optional<Sourced<int>> threads;  // unset: derive
  // Left at the default (unset or "auto"): the largest batch that fits is searched for where the
  // search can run (a GPU, or a --memory-budget), else the default is used.
  Sourced<int> batch_size{64};
  std::optional<Sourced<std::uint64_t>> memory_budget;  // what the search may plan for
  Sourced<double> memory_margin{0.1};                   // share of free GPU memory kept back
  Sourced<std::string> batch_objective{"fastest"};      // fastest | largest (batch_search.h)
  // The recipe's batch per optimizer step over all ranks (accumulation.h); unset: batch x ranks.
  std::optional<Sourced<std::int64_t>> global_batch;
  // The program is dl-train, which measures workers and threads at start (their "auto"): the plan
  // then hands over the cores instead of fixing numbers the user did not give.
  bool trainer_measures = false;
  // Why the search cannot probe the program (dl-train's probe mode, or the probe protocol of a
  // program after --); "" when it can.
  std::string probe_unavailable = "the program is not dl-train";
  // The workers the loader probes of a program after -- chose for each process, with the
  // measurements (script_tuner.h); unset where none ran.
  std::optional<Choice<int>> measured_workers;
  // A program after -- that does not speak the probe protocol: why, and how to opt in (its
  // workers are the rule of thumb).
  std::string no_protocol;
  Sourced<std::string> precision{"auto"};  // auto | fp32 | fp16 | bf16
  Sourced<std::string> device{"auto"};     // auto | cpu | cuda | cuda:N
  // The CUDA the program was built for ("11.6.2", from the image's CUDA_VERSION); a GPU plan
  // checks the driver against it (cuda_compat.h). Unset: not checked.
  std::optional<Sourced<std::string>> required_cuda;
  std::optional<Sourced<std::int64_t>> samples;  // data set size when known
  Sourced<std::uint64_t> sample_bytes{3 * 224 * 224 * 4, "3x224x224 assumed"};  // one float sample
  // The program passes batches between processes through /dev/shm (PyTorch's DataLoader does).
  bool shm_batches = false;
  // Several processes: what the environment's scheduler says and what the options ask.
  SchedulerEnv scheduler;
  RankRequest ranks;
  // The program is dl-train (not a command after --): --nproc-per-node defaults to auto.
  bool default_program = false;
  // The program after -- splits its batches with dl_plan's plan.micro_batches (its script says
  // so): --global-batch's pieces reach it without a warning.
  bool program_splits_batches = false;
  // dl-train's learning rate and its rule for several ranks (forwarded; the plan shows them).
  Sourced<double> lr{0.001};
  Sourced<std::string> lr_scaling{"none"};  // none | linear | sqrt
  // The global batch --lr was tuned for (--reference-batch); unset: one rank's batch.
  std::optional<Sourced<std::int64_t>> reference_batch;
  // --resume of dl-train: the learning rate the run trains at (last.json's base_lr), which
  // dl-train keeps while --lr is the run's --lr.
  std::optional<Sourced<double>> resumed_lr;
};

// How the batch size was searched: now, by probes, or earlier, read from the workspace's cache.
struct BatchSearchRecord {
  SearchResult result;  // the batch (0: nothing fits), the trials, the fitted line, the choice
  std::string objective = "fastest";  // --batch-objective: fastest | largest
  std::uint64_t budget = 0;
  std::string budget_reason;   // "--memory-budget", "free memory of cuda:0 (...) less 10%"
  std::int64_t max_batch = 0;  // the data set's size, or a rank's share of --global-batch; 0: none
  std::string max_reason = "the data set";  // which of the two bounds the search
  double seconds = 0;          // wall time of the search (the earlier one's, when cached)
  std::string searched_at;     // when it ran, UTC, ISO 8601
  bool cached = false;         // read from the cache: no probe ran this time
  std::string cache_file;      // the cache read or written
  std::string cache_key;       // the line the answer is stored under
  bool cache_written = false;  // stored for the next start (never in a dry run)
};

// One process started here: its ranks, device and share of the CPU.
struct RankPlan {
  int local_rank = 0;
  int global_rank = 0;
  std::string device;  // "cpu" or "cuda:LOCAL_RANK"
  Choice<int> cores;   // its share of the usable cores (DL_CORES)
  Choice<int> workers;
  Choice<int> threads;
  std::vector<int> cpus;  // --cpu-bind cores: the CPUs it is pinned to; empty: not pinned
};

struct Plan {
  Choice<std::string> device;  // "cpu" or "cuda:N"
  Choice<std::string> precision;
  Choice<int> workers;
  Choice<int> threads;
  // Left to dl-train's measurement (DL_WORKERS/DL_THREADS=auto); the values above are then the
  // rule of thumb's, shown for comparison.
  bool workers_measured = false;
  bool threads_measured = false;
  Choice<int> batch_size;                         // per rank and optimizer step: the loader's batch
  std::optional<BatchSearchRecord> batch_search;  // when the batch size was searched
  // --global-batch's split: batch_size is a rank's share, run in micro-batches of at most
  // accumulation->micro (DL_MICRO_BATCH) where it does not fit at once.
  std::optional<Accumulation> accumulation;
  // The ranks: the topology, every process started here (the first is the one the fields above
  // describe), the batch over all ranks and the learning rate dl-train will use.
  Topology topology;
  std::vector<RankPlan> ranks;
  Choice<long long> global_batch;
  Choice<std::string> learning_rate;
  // --lr-scaling or --reference-batch was given: the plan shows the rate even for one rank.
  bool learning_rate_asked = false;
  // The factor the rule applies to a learning rate (a program after -- applies it to its own,
  // with dl_plan's plan.scaled_lr); 1 on --resume, whose rate is the run's.
  double lr_factor = 1;
  std::vector<std::string> warnings;
};

// Throws UserError when the request cannot be met on this machine (cuda without a GPU, a driver
// too old for the required CUDA, fp16 on CPU), or when the search found no batch that fits (64 with
// --memory-budget, else 69). `search` is the batch-size search's outcome when one ran
// (wants_batch_search).
Plan make_plan(const Facts& facts, const Request& request,
               const BatchSearchRecord* search = nullptr);

// Whether the batch size is to be searched on `device` (the plan's): no number was given, the
// program is dl-train, and there is a GPU or a --memory-budget.
bool wants_batch_search(const Request& request, const std::string& device);

// The memory the search plans for: --memory-budget, else the free memory of the plan's GPU less
// the margin, else the usable RAM (cgroup-aware).
Choice<std::uint64_t> batch_search_budget(const Facts& facts, const Request& request,
                                          const std::string& device);

// Docker's default /dev/shm size; at or below it PyTorch's DataLoader workers die with "bus error".
constexpr std::uint64_t kDockerDefaultShm = 64ull << 20;
// Batches a DataLoader worker keeps in flight (PyTorch's prefetch_factor default).
constexpr int kPrefetchPerWorker = 2;
// Below this many samples, worker start-up costs more than it saves (the tutorial's rule).
constexpr std::int64_t kSmallDataset = 1000;

}  // namespace dl
