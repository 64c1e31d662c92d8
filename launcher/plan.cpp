// The planner. Pure: no I/O, no clock, no environment; the same facts and request give the same
// plan, so every rule here is tested directly.
#include "launcher/plan.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/errors.h"
#include "core/lr_scaling.h"
#include "core/text.h"
#include "launcher/cuda_compat.h"

namespace dl {
namespace {

// Memory a DataLoader worker process costs beyond its batches (a forked Python interpreter with
// torch imported, measured at 300-500 MiB resident); a dl-train loader thread costs only its
// batches.
constexpr std::uint64_t kPythonWorkerBytes = 512ull << 20;
// Share of usable RAM the loader may take; the rest is the model's, the optimizer's and the OS's.
constexpr std::uint64_t kLoaderRamShareDiv = 4;
// Share of free /dev/shm the workers' in-flight batches may fill.
constexpr std::uint64_t kShmShareDiv = 2;

std::string from(const std::string& source) {
  return source == "default" ? source : "from " + source;
}

std::string gib(std::uint64_t bytes) {
  return format_bytes(bytes);
}

std::string usable_cores(int n) {
  return std::to_string(n) + (n == 1 ? " usable core" : " usable cores");
}

Choice<std::string> plan_device(const Facts& facts, const Request& req) {
  const std::string& asked = req.device.value;
  const auto& gpus = facts.gpu.gpus;
  if (asked == "cpu") return {"cpu", from(req.device.source)};
  if (asked == "auto") {
    if (gpus.empty()) return {"cpu", "no GPU visible: " + facts.gpu.note};
    const auto& g = gpus.front();
    std::string reason = std::to_string(gpus.size()) + " GPU" + (gpus.size() > 1 ? "s" : "") +
                         "; cuda:0 is " + g.name + ", " + gib(g.total_bytes);
    return {"cuda:0", reason};
  }
  // "cuda" or "cuda:N", validated by the options.
  const int index = asked == "cuda" ? 0 : std::stoi(asked.substr(5));
  if (gpus.empty()) {
    // In a container, a GPU machine without the NVIDIA runtime looks exactly like this.
    throw UserError(exit_code::kUnavailable,
                    req.device.source + " " + asked + ": no NVIDIA GPU visible (" + facts.gpu.note +
                        "): run the container with the NVIDIA runtime (docker compose: "
                        "deploy.resources.reservations.devices; docker run --gpus all) or use "
                        "the CPU service (docker compose up train-cpu, or --device cpu)");
  }
  if (index >= static_cast<int>(gpus.size())) {
    throw UserError(
        exit_code::kUnavailable,
        req.device.source + " asks for " + asked + ", but only " + std::to_string(gpus.size()) +
            " GPU(s) are visible (cuda:0..cuda:" + std::to_string(gpus.size() - 1) + ")");
  }
  return {"cuda:" + std::to_string(index), from(req.device.source)};
}

const GpuInfo* gpu_of(const Facts& facts, const std::string& device) {
  if (device.rfind("cuda:", 0) != 0) return nullptr;
  const size_t index = std::stoul(device.substr(5));
  return index < facts.gpu.gpus.size() ? &facts.gpu.gpus[index] : nullptr;
}

Choice<std::string> plan_precision(const Facts& facts, const Request& req,
                                   const std::string& device, std::vector<std::string>* warnings) {
  const GpuInfo* gpu = gpu_of(facts, device);
  const std::string& asked = req.precision.value;
  if (asked == "auto") {
    if (gpu == nullptr) return {"fp32", "CPU: fp32 unless asked (--precision bf16 for autocast)"};
    const std::string cc = std::to_string(gpu->cc_major) + "." + std::to_string(gpu->cc_minor);
    if (gpu->cc_major >= 8) return {"bf16", "compute capability " + cc + " >= 8.0 has bf16"};
    return {"fp16", "compute capability " + cc + " < 8.0: fp16 autocast with a GradScaler"};
  }
  if (asked == "fp16" && gpu == nullptr) {
    throw UserError(exit_code::kUsage, req.precision.source +
                                           ": fp16 needs a CUDA device (CPU autocast is bf16 "
                                           "only); expected fp32 or bf16 on " +
                                           device);
  }
  if (asked == "bf16" && gpu != nullptr && gpu->cc_major < 8) {
    warnings->push_back("bf16 on " + gpu->name + " (compute capability " +
                        std::to_string(gpu->cc_major) + "." + std::to_string(gpu->cc_minor) +
                        " < 8.0) is emulated and slow; fp16 is the fast choice there");
  }
  return {asked, from(req.precision.source)};
}

Choice<int> plan_workers(const Facts& facts, const Request& req, int batch_size,
                         std::vector<std::string>* warnings) {
  const int cores = facts.cpu.usable;
  if (req.workers) {
    const int w = req.workers->value;
    if (w > cores) {
      warnings->push_back(std::to_string(w) + " workers on " + std::to_string(cores) +
                          " usable cores oversubscribe the CPU; data loading will slow down");
    }
    return {w, from(req.workers->source)};
  }
  if (req.measured_workers) return *req.measured_workers;
  if (req.samples && req.samples->value < kSmallDataset) {
    return {0, std::to_string(req.samples->value) + " samples < " + std::to_string(kSmallDataset) +
                   ": loading in the main process is cheaper than starting workers"};
  }

  Choice<int> c;
  c.value = std::max(1, cores - 2);
  c.reason = usable_cores(cores) + " - 2" + (cores - 2 < 1 ? ", at least 1" : "");
  if (!req.no_protocol.empty()) c.reason += "; rule of thumb: " + req.no_protocol;

  // Never more workers than the host can feed: their memory, their batches in /dev/shm, and the
  // batches an epoch has.
  const std::uint64_t batch_bytes = static_cast<std::uint64_t>(batch_size) * req.sample_bytes.value;
  const std::uint64_t per_worker_ram =
      kPrefetchPerWorker * batch_bytes + (req.shm_batches ? kPythonWorkerBytes : 0);
  const std::uint64_t ram_budget = facts.memory.usable / kLoaderRamShareDiv;
  if (per_worker_ram > 0) {
    const auto ram_cap = static_cast<int>(std::max<std::uint64_t>(1, ram_budget / per_worker_ram));
    if (ram_cap < c.value) {
      c.value = ram_cap;
      c.reason += "; capped at " + std::to_string(ram_cap) + ": each worker needs about " +
                  gib(per_worker_ram) + " of " + gib(ram_budget) + " (1/4 of usable RAM)";
    }
  }
  if (req.shm_batches && facts.shm.present) {
    const std::uint64_t per_worker_shm = kPrefetchPerWorker * batch_bytes;
    const std::uint64_t shm_budget = facts.shm.free / kShmShareDiv;
    const auto shm_cap =
        per_worker_shm == 0 ? c.value : static_cast<int>(shm_budget / per_worker_shm);
    if (shm_cap < c.value) {
      c.value = shm_cap;
      c.reason += "; capped at " + std::to_string(shm_cap) + " by /dev/shm: " + gib(shm_budget) +
                  " (half of free) holds " + std::to_string(shm_cap) + " worker(s) of " +
                  std::to_string(kPrefetchPerWorker) + " batches x " + gib(batch_bytes);
    }
  }
  if (req.samples && req.samples->value > 0) {
    const std::int64_t batches = std::max<std::int64_t>(1, req.samples->value / batch_size);
    if (batches < c.value) {
      c.value = static_cast<int>(batches);
      c.reason += "; capped at " + std::to_string(batches) + " batches per epoch";
    }
  }
  return c;
}

std::string percent(double share) {
  return format_number(std::round(share * 1000.0) / 10.0) + "%";
}

[[noreturn]] void nothing_fits(const Request& req, const BatchSearchRecord& s) {
  const ProbeResult* smallest = nullptr;
  const ProbeResult* failed = nullptr;
  for (const auto& t : s.result.trials) {
    if (!t.error.empty()) {
      if (failed == nullptr) failed = &t;
      continue;
    }
    if (smallest == nullptr || t.batch < smallest->batch) smallest = &t;
  }
  if (smallest == nullptr) {
    throw UserError(exit_code::kUnavailable,
                    "batch-size search: every probe failed (batch " +
                        std::to_string(failed != nullptr ? failed->batch : 0) + ": " +
                        (failed != nullptr ? failed->error : std::string("no probe ran")) +
                        "); give --batch-size to train without the search");
  }
  const std::string what = smallest->out_of_memory
                               ? "batch " + std::to_string(smallest->batch) + " ran out of memory"
                               : "batch " + std::to_string(smallest->batch) + " peaked at " +
                                     format_bytes(smallest->peak_bytes);
  // A budget the user gave is bad input; a GPU without enough free memory is unavailable.
  throw UserError(req.memory_budget ? exit_code::kUsage : exit_code::kUnavailable,
                  "batch-size search: no batch fits in " + format_bytes(s.budget) + " (" +
                      s.budget_reason + "): " + what + "; " +
                      (req.memory_budget ? "raise --memory-budget" : "free GPU memory") +
                      " or give --batch-size");
}

Choice<int> plan_batch(const Facts& facts, const Request& req, const std::string& device,
                       const BatchSearchRecord* search, std::vector<std::string>* warnings) {
  if (req.batch_size.source != "default") {
    if (req.memory_budget) {
      warnings->push_back(req.memory_budget->source + " is not used: the batch size is given (" +
                          req.batch_size.source + ")");
    }
    if (req.samples && req.samples->value > 0 && req.batch_size.value > req.samples->value) {
      warnings->push_back("batch size " + std::to_string(req.batch_size.value) + " exceeds the " +
                          std::to_string(req.samples->value) + " samples of the data set");
    }
    return {req.batch_size.value, from(req.batch_size.source)};
  }
  if (search == nullptr) {
    if (req.memory_budget || gpu_of(facts, device) != nullptr) {
      return {req.batch_size.value, "default; no batch-size search: " + req.probe_unavailable};
    }
    return {req.batch_size.value,
            "default; the largest batch that fits is searched for on a GPU or with "
            "--memory-budget"};
  }
  const SearchResult& r = search->result;
  if (r.batch <= 0) nothing_fits(req, *search);
  if (req.memory_budget && gpu_of(facts, device) == nullptr &&
      req.memory_budget->value > facts.memory.usable) {
    warnings->push_back(req.memory_budget->source + " (" + format_bytes(req.memory_budget->value) +
                        ") is more than the usable RAM (" + format_bytes(facts.memory.usable) +
                        "): training at this batch size may be killed for memory");
  }
  const bool largest = r.choice.largest == 0 || r.batch == r.choice.largest;
  std::string reason = std::string(largest ? "largest that fits " : "fastest that fits ") +
                       format_bytes(search->budget) + " (" + search->budget_reason + ")";
  for (const auto& t : r.trials) {
    if (t.batch == r.batch && t.error.empty() && !t.out_of_memory) {
      reason += ": peak " + format_bytes(t.peak_bytes);
      if (samples_per_second(t) > 0) {
        reason += ", " + format_number(std::round(samples_per_second(t))) + " samples/s";
      }
    }
  }
  if (!largest) {
    // Slower only where measured: the largest's probe may have timed no steps.
    double largest_rate = 0;
    for (const auto& t : r.trials) {
      if (t.batch == r.choice.largest && t.error.empty() && !t.out_of_memory) {
        largest_rate = samples_per_second(t);
      }
    }
    reason += " (the largest, " + std::to_string(r.choice.largest) +
              (largest_rate > 0
                   ? ", is slower: " + format_number(std::round(largest_rate)) + " samples/s)"
                   : ", trains at an unmeasured rate)");
  }
  if (search->max_batch > 0 && r.batch >= search->max_batch) {
    reason +=
        search->max_reason == "the data set" ? ", the whole data set" : ", " + search->max_reason;
  }
  reason += search->cached ? "; cached, --retune searches again"
                           : "; " + std::to_string(r.trials.size()) + " probes, " +
                                 format_number(std::round(search->seconds * 10.0) / 10.0) + " s";
  return {static_cast<int>(r.batch), reason};
}

Choice<int> plan_threads(const Facts& facts, const Request& req, int workers,
                         std::vector<std::string>* warnings) {
  const int cores = facts.cpu.usable;
  if (req.threads) {
    if (req.threads->value + workers > cores) {
      warnings->push_back(std::to_string(req.threads->value) + " threads + " +
                          std::to_string(workers) + " workers exceed " + std::to_string(cores) +
                          " usable cores: they will compete for the CPU");
    }
    return {req.threads->value, from(req.threads->source)};
  }
  if (workers == 0) return {cores, usable_cores(cores) + ", no workers"};
  const int threads = std::max(1, cores - workers);
  return {threads, usable_cores(cores) + " - " + std::to_string(workers) + " worker" +
                       (workers > 1 ? "s" : "") + (cores - workers < 1 ? ", at least 1" : "")};
}

// A driver too old for the program's CUDA fails here, in one line, rather than at the first
// kernel inside the trainer.
void check_driver(const Facts& facts, const Request& req, const std::string& device,
                  std::vector<std::string>* warnings) {
  if (device == "cpu" || !req.required_cuda) return;
  const DriverVerdict v =
      check_cuda_driver(facts.gpu, req.required_cuda->value, req.required_cuda->source);
  if (!v.ok) throw UserError(exit_code::kUnavailable, device + ": " + v.message);
  if (!v.message.empty()) warnings->push_back(v.message);
}

// How many processes share this node's usable cores, and why.
Choice<int> core_sharers(const Facts& facts, const Topology& t) {
  if (!t.one_worker) {
    return {t.nproc.value, t.nproc.value == 1 ? std::string("one process")
                                              : std::to_string(t.nproc.value) + " processes"};
  }
  // A scheduler that bound each task to its own CPUs (srun --cpu-bind, a pod's quota) already
  // gave this process its share; one that did not leaves every task on all of the node's CPUs.
  const bool bound = facts.cpu.affinity && *facts.cpu.affinity < facts.cpu.online;
  if (bound || facts.cpu.quota || t.local_world_size <= 1) {
    return {1, "this task's own CPUs (affinity or quota set by the scheduler)"};
  }
  return {t.local_world_size,
          std::to_string(t.local_world_size) + " tasks on this node (LOCAL_WORLD_SIZE), unbound"};
}

// Each process started here: its ranks, device, core share, and the workers and threads planned
// from that share (with its share of RAM and /dev/shm for the loader's caps).
void plan_ranks(const Facts& facts, const Request& req, Plan* plan) {
  const Topology& t = plan->topology;
  const Choice<int> sharers = core_sharers(facts, t);
  const std::vector<int> shares = split_cores(facts.cpu.usable, sharers.value);
  if (facts.cpu.usable < sharers.value) {
    plan->warnings.push_back(std::to_string(sharers.value) + " processes share " +
                             usable_cores(facts.cpu.usable) +
                             ": each gets 1 and the CPU is oversubscribed");
  }
  const int gpus = static_cast<int>(facts.gpu.gpus.size());
  const auto per = static_cast<std::uint64_t>(sharers.value);
  for (int i = 0; i < t.nproc.value; ++i) {
    RankPlan r;
    r.local_rank = t.first_local_rank + i;
    r.global_rank = t.first_rank + i;
    r.device = rank_device(t, plan->device.value, req.device.value, gpus, i);
    const int share_index = t.one_worker ? r.local_rank % sharers.value : i;
    const int share = shares[static_cast<std::size_t>(share_index)];
    r.cores = {share, sharers.value == 1 ? usable_cores(facts.cpu.usable)
                                         : "share of " + usable_cores(facts.cpu.usable) +
                                               " split between " + sharers.reason};
    Facts view = facts;
    view.cpu.usable = share;
    view.memory.usable = facts.memory.usable / per;
    view.shm.free = facts.shm.free / per;
    std::vector<std::string> warnings;
    r.workers = plan_workers(view, req, plan->batch_size.value, &warnings);
    r.threads = plan_threads(view, req, r.workers.value, &warnings);
    // dl-train times a few batches of loading and a few training steps at start and picks from
    // them (its pipeline plan), which beats any rule when loading is cheap or expensive.
    if (req.trainer_measures && !req.workers) {
      r.workers.reason =
          "measured by dl-train at start (rule of thumb: " + std::to_string(r.workers.value) +
          ", " + r.workers.reason + ")";
    }
    if (req.trainer_measures && !req.threads) {
      r.threads.reason = "measured by dl-train at start, up to " + usable_cores(share);
    }
    for (auto& w : warnings) {
      if (std::find(plan->warnings.begin(), plan->warnings.end(), w) == plan->warnings.end()) {
        plan->warnings.push_back(w);
      }
    }
    plan->ranks.push_back(r);
  }
}

// "--global-batch 256", with where it came from when not the option itself: "(from dl.conf:3)".
std::string named_global_batch(const Request& req) {
  const Sourced<std::int64_t>& g = *req.global_batch;
  const std::string named = "--global-batch " + std::to_string(g.value);
  return g.source == "--global-batch" ? named : named + " (from " + g.source + ")";
}

// --global-batch: the batch planned so far (searched, given or the default) becomes the largest
// piece a rank runs at once, and the batch a rank takes per optimizer step is its share.
void plan_accumulation(const Request& req, Plan* plan) {
  if (!req.global_batch) return;
  const Sourced<std::int64_t>& g = *req.global_batch;
  const int world = plan->topology.world_size.value;
  Accumulation a;
  try {
    a = split_global_batch(g.value, world, plan->batch_size.value);
  } catch (const std::invalid_argument& e) {
    throw UserError(exit_code::kUsage, g.source + " " + std::to_string(g.value) + ": " + e.what());
  }
  const std::string cap = "the batch size " + std::to_string(plan->batch_size.value) +
                          " caps a micro-batch: " + plan->batch_size.reason;
  plan->batch_size = {static_cast<int>(a.per_rank), "a rank's share of " + named_global_batch(req) +
                                                        ": " + describe(a, world) + " (" + cap +
                                                        ")"};
  plan->accumulation = a;
  if (!req.default_program && !req.program_splits_batches && a.steps > 1) {
    plan->warnings.push_back(
        "--global-batch: the program after -- is handed batches of DL_BATCH_SIZE=" +
        std::to_string(a.per_rank) + " and DL_MICRO_BATCH=" + std::to_string(a.micro) +
        ", the most to run at once; it keeps the recipe only if it splits its batches so "
        "(dl_plan: plan.micro_batches, docs/python.md)");
  }
}

// The batch over all ranks and the learning rate for it.
void plan_global_batch(const Request& req, Plan* plan) {
  const int world = plan->topology.world_size.value;
  const long long global = static_cast<long long>(plan->batch_size.value) * world;
  plan->global_batch = {
      global, plan->accumulation
                  ? named_global_batch(req) + ": " + describe(*plan->accumulation, world)
              : world == 1 ? std::string("one rank")
                           : "per-rank batch " + std::to_string(plan->batch_size.value) + " x " +
                                 std::to_string(world) + " ranks"};
  const std::string& rule = req.lr_scaling.value;
  const double lr = req.lr.value;
  const std::string lr_from = req.lr.source == "default" ? "default" : "from " + req.lr.source;
  const std::string rule_from =
      req.lr_scaling.source == "default" ? "default" : "from " + req.lr_scaling.source;
  plan->learning_rate_asked = rule != "none" || req.reference_batch.has_value() || req.resumed_lr;
  if (req.resumed_lr) {
    // dl-train trains on at the run's rate: the rule was applied when the run started.
    plan->learning_rate = {format_number(req.resumed_lr->value),
                           "kept from " + req.resumed_lr->source +
                               " (dl-train keeps it; another --lr replaces it, and "
                               "--lr-scaling and --reference-batch apply to a fresh start)"};
    return;
  }
  const LrScale scale =
      lr_scale(rule, global, plan->batch_size.value, plan->accumulation.has_value(),
               req.reference_batch ? req.reference_batch->value : 0);
  const std::string reference =
      scale.reference_given ? req.reference_batch->source + " " + std::to_string(scale.reference)
      : plan->accumulation  ? "the kept global batch " + std::to_string(scale.reference)
                            : "one rank's batch " + std::to_string(scale.reference);
  if (rule == "none") {
    const std::string scalable =
        world > 1 || scale.reference_given ? "; linear or sqrt scale it with the global batch" : "";
    plan->learning_rate =
        req.default_program
            ? Choice<std::string>{format_number(lr), "kept (--lr-scaling none, " + rule_from +
                                                         "; lr " + lr_from + ")" + scalable}
            : Choice<std::string>{"x1", "the program's learning rate kept (--lr-scaling none, " +
                                            rule_from + ")" + scalable};
    if (scale.reference_given) {
      plan->warnings.push_back(req.reference_batch->source + " " + std::to_string(scale.reference) +
                               " is not used: --lr-scaling none keeps --lr whatever the batch; "
                               "expected --lr-scaling linear or sqrt with it");
    }
    return;
  }
  const std::string ratio = std::to_string(global) + "/" + std::to_string(scale.reference) +
                            " (the global batch over " + reference + ")";
  plan->lr_factor = scale.factor;
  if (!req.default_program) {
    // A program after -- has a learning rate of its own: the plan gives the factor for it.
    plan->learning_rate = {
        "x" + format_number(scale.factor),
        "the program's learning rate x " +
            (scale.factor == 1 ? std::string("1")
                               : (rule == "sqrt" ? "sqrt(" + ratio + ")" : ratio)) +
            " (--lr-scaling " + rule + ", " + rule_from +
            "); dl_plan's plan.scaled_lr(lr) applies it"};
    return;
  }
  plan->learning_rate = {
      format_number(lr * scale.factor),
      scale.factor == 1
          ? "kept (lr " + lr_from + "): " +
                (plan->accumulation && !scale.reference_given
                     ? std::string("--global-batch keeps each step's batch")
                     : "the global batch " + std::to_string(global) + " is " + reference) +
                ", so --lr-scaling " + rule + " (" + rule_from + ") scales it by 1"
          : "--lr-scaling " + rule + " (" + rule_from + "): lr " + format_number(lr) + " (" +
                lr_from + ") x " + (rule == "sqrt" ? "sqrt(" + ratio + ")" : ratio)};
}

}  // namespace

bool wants_batch_search(const Request& req, const std::string& device) {
  return req.batch_size.source == "default" && req.probe_unavailable.empty() &&
         (req.memory_budget || device != "cpu");
}

Choice<std::uint64_t> batch_search_budget(const Facts& facts, const Request& req,
                                          const std::string& device) {
  if (req.memory_budget) return {req.memory_budget->value, from(req.memory_budget->source)};
  if (const GpuInfo* gpu = gpu_of(facts, device)) {
    // The margin leaves room for what the allocator's statistics do not count: the CUDA context,
    // cuDNN's and cuBLAS's handles, fragmentation, other processes' growth.
    const double margin = req.memory_margin.value;
    const auto budget =
        static_cast<std::uint64_t>(static_cast<double>(gpu->free_bytes) * (1.0 - margin));
    return {budget, "free memory of " + device + " (" + format_bytes(gpu->free_bytes) + ") less " +
                        percent(margin) +
                        (req.memory_margin.source == "default"
                             ? std::string(" (memory-margin)")
                             : " (memory-margin " + from(req.memory_margin.source) + ")")};
  }
  return {facts.memory.usable, "usable RAM: " + facts.memory.usable_reason};
}

// On the CPU the batches in flight share the RAM with the model: the loader's prefetched ones
// (workers x kPrefetchPerWorker), the one being trained and the next one being staged. Where
// even they exceed the usable RAM, the kernel's OOM killer would end the run mid-epoch; that is
// refused here, with the numbers. The model's own memory comes on top and is not known before a
// probe, so this is a floor: a batch it lets through may still be too large (the batch-size search,
// --memory-budget, measures that).
void check_batches_fit_ram(const Facts& facts, const Request& req, Plan* plan) {
  if (plan->device.value != "cpu") return;
  std::uint64_t batches = 0;
  int workers = 0;
  for (const auto& r : plan->ranks) {
    batches += static_cast<std::uint64_t>(r.workers.value) * kPrefetchPerWorker + 2;
    workers += r.workers.value;
  }
  const auto batch = static_cast<std::uint64_t>(plan->batch_size.value);
  const double need = static_cast<double>(batches) * static_cast<double>(batch) *
                      static_cast<double>(req.sample_bytes.value);
  if (need <= static_cast<double>(facts.memory.usable)) return;
  const std::string ranks =
      plan->ranks.size() > 1 ? " over " + std::to_string(plan->ranks.size()) + " ranks" : "";
  const std::string what =
      "batch " + std::to_string(batch) + " with " + std::to_string(workers) + " worker(s)" + ranks +
      " needs " + std::to_string(batches) + " batches in flight (" +
      std::to_string(kPrefetchPerWorker) + " prefetched per worker, 2 in training) x " +
      std::to_string(batch) + " samples x " + gib(req.sample_bytes.value) + " (" +
      req.sample_bytes.source + ") = " + gib(static_cast<std::uint64_t>(std::min(need, 1.8e19))) +
      ", more than the usable RAM (" + gib(facts.memory.usable) + ")";
  // An assumed sample size is no ground for refusing; a known one is.
  if (req.sample_bytes.source == Request{}.sample_bytes.source) {
    plan->warnings.push_back(what + ": training may be killed for memory");
    return;
  }
  throw UserError(exit_code::kUnavailable, what + "; lower --batch-size or --workers");
}

Plan make_plan(const Facts& facts, const Request& req, const BatchSearchRecord* search) {
  Plan plan;
  plan.device = plan_device(facts, req);
  check_driver(facts, req, plan.device.value, &plan.warnings);
  plan.precision = plan_precision(facts, req, plan.device.value, &plan.warnings);
  plan.batch_size = plan_batch(facts, req, plan.device.value, search, &plan.warnings);
  if (search != nullptr) plan.batch_search = *search;
  plan.topology = plan_topology(req.scheduler, req.ranks, plan.device.value, req.device.value,
                                static_cast<int>(facts.gpu.gpus.size()), req.default_program);
  plan_accumulation(req, &plan);
  plan_ranks(facts, req, &plan);
  plan.workers = plan.ranks.front().workers;
  plan.threads = plan.ranks.front().threads;
  plan.workers_measured = req.trainer_measures && !req.workers;
  plan.threads_measured = req.trainer_measures && !req.threads;
  plan_global_batch(req, &plan);
  check_batches_fit_ram(facts, req, &plan);

  if (facts.shm.present && facts.shm.total <= kDockerDefaultShm) {
    plan.warnings.push_back(
        "/dev/shm is only " + gib(facts.shm.total) +
        " (Docker's default): PyTorch DataLoader workers die with 'bus error'. Fix: set "
        "`shm_size: 8gb` (or `ipc: host`) for the service in docker-compose.yml, or pass "
        "`--shm-size=8g` to docker run");
  } else if (!facts.shm.present) {
    plan.warnings.push_back("/dev/shm is missing: PyTorch DataLoader workers cannot share batches");
  }
  return plan;
}

}  // namespace dl
