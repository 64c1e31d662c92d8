// The launcher's flow: options -> probe -> plan -> (dry run: report) -> run directory and
// plan.json -> spawn and supervise. Everything that can fail on bad input is checked before the
// first byte is written to the workspace.
#include "launcher/app.h"

#include <sched.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <iostream>
#include <map>
#include <optional>

#include "core/act_as.h"
#include "core/checkpoint_note.h"
#include "core/data_location.h"
#include "core/dir_fd.h"
#include "core/errors.h"
#include "core/files.h"
#include "core/ports.h"
#include "core/probe.h"
#include "core/run_as.h"
#include "core/run_lock.h"
#include "core/system_host.h"
#include "core/text.h"
#include "core/version.h"
#include "core/workspace.h"
#include "launcher/batch_cache.h"
#include "launcher/batch_tuner.h"
#include "launcher/checkpoint_command.h"
#include "launcher/command.h"
#include "launcher/data_facts.h"
#include "launcher/doctor.h"
#include "launcher/init.h"
#include "launcher/launch.h"
#include "launcher/options.h"
#include "launcher/plan.h"
#include "launcher/program_kind.h"
#include "launcher/rank_supervisor.h"
#include "launcher/report.h"
#include "launcher/script_tuner.h"
#include "launcher/stop_request.h"
#include "launcher/subcommand.h"
#include "launcher/supervisor.h"
#include "launcher/topology.h"

namespace dl {
namespace {

// Fashion-MNIST, what dl-train trains on when the workspace has no data of its own.
constexpr std::int64_t kDefaultDataSamples = 60000;
constexpr std::uint64_t kDefaultDataSampleBytes = 1 * 28 * 28 * 4;

// Python programs pass batches from DataLoader workers through /dev/shm.
bool passes_batches_through_shm(const std::vector<std::string>& argv) {
  const std::string exe = argv[0].substr(argv[0].rfind('/') + 1);
  if (exe.rfind("python", 0) == 0 || exe == "torchrun") return true;
  return ends_with(exe, ".py");
}

// What the batch-size search's answer depends on, as far as the launcher can tell before probing.
BatchCacheKey cache_key(const LaunchOptions& opts, const Launch& l) {
  BatchCacheKey k;
  k.model = opts.model;
  if (ends_with(opts.model, ".pt")) {
    // A TorchScript file scripted again under the same name is another model.
    const std::string path = opts.model[0] == '/' ? opts.model : l.workspace + "/" + opts.model;
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) {
      k.model += " (" + std::to_string(st.st_size) + " bytes, modified " +
                 std::to_string(st.st_mtime) + ")";
    }
  }
  if (!opts.input_shape.empty()) {
    k.input = opts.input_shape;
  } else if (!opts.data.empty()) {
    k.input = "data " + opts.data;
  } else if (holds_data_set(l.workspace + "/data")) {
    k.input = "data " + l.workspace + "/data";
  } else {
    k.input = "Fashion-MNIST 1x28x28";
  }
  if (!opts.image_size.empty()) k.input += " at image-size " + opts.image_size;
  k.precision = l.plan.precision.value;
  k.objective = l.request.batch_objective.value;
  const std::string& device = l.plan.device.value;
  k.device = device == "cpu" ? "cpu" : "cuda";
  if (device != "cpu") {
    const auto& gpu = l.facts.gpu.gpus.at(std::stoul(device.substr(5)));
    k.gpu = gpu.name + ", " + std::to_string(gpu.total_bytes) + " bytes";
  }
  const Request& r = l.request;
  if (r.memory_budget) {
    k.budget = std::to_string(r.memory_budget->value) + " bytes";
  } else {
    k.budget =
        device == "cpu" ? "usable RAM" : "free memory less " + format_number(r.memory_margin.value);
  }
  return k;
}

// The data named by --data, DL_DATA or dl.conf is there: a typo stops here, dry run or not, before
// the probes and before anything is written. Looked at as the workspace's owner, who will read it.
void check_data(const LaunchOptions& opts, const Launch& launch) {
  if (opts.data.empty()) return;
  const ActAs owner(launch.run_as);
  // A shard pattern (train-{000000..000146}.tar) is checked by its folder here; dl-train then
  // names the first shard missing.
  std::string path = opts.data_path;
  // A remote store's URL is dl-train's to judge (it says in one line what it reads).
  for (const char* scheme : {"http://", "https://", "s3://"}) {
    if (path.rfind(scheme, 0) == 0) return;
  }
  if (path.compare(0, 7, "file://") == 0) path = path.substr(7);
  if (const std::size_t brace = path.find('{'); brace != std::string::npos) {
    const std::size_t slash = path.rfind('/', brace);
    path = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  }
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) return;
  throw UserError(exit_code::kMissing,
                  opts.data_source + ": data " + opts.data_path + " cannot be found (" +
                      std::strerror(errno) +
                      "); expected an MNIST/Fashion-MNIST IDX or CIFAR-10 directory, an "
                      "ImageFolder tree, a CSV manifest or WebDataset shards");
}

// What this start would do to the run directory, checked where rank 0 runs (the other nodes take
// its word, as dl-train does): --resume needs a last.pt (dl-train's, or --init-from's weights; a
// command's, which dl_plan's TrainingState saves), and a fresh start does not replace an earlier
// run's checkpoints without --overwrite.
void check_run_dir(const LaunchOptions& opts, const Launch& launch) {
  if (launch.plan.topology.first_rank != 0) return;
  const ActAs owner(launch.run_as);
  const std::vector<std::string> saved = run_checkpoints(launch.run_dir);
  const bool has_last = std::find(saved.begin(), saved.end(), "last.pt") != saved.end();
  const bool dl_train = launch.request.default_program;
  if (opts.resume && !has_last && !(dl_train && opts.init_from_given)) {
    const std::string named =
        opts.run_name.empty() ? "; no --name was given (runs/ lists the names)" : "";
    const std::string saver = dl_train ? ""
                                       : " (a script saves it with dl_plan's TrainingState, "
                                         "docs/python.md)";
    throw UserError(exit_code::kMissing, "--resume: " + launch.run_dir +
                                             "/last.pt does not exist; expected the last "
                                             "checkpoint of an earlier run under this --name" +
                                             saver + named);
  }
  if (!opts.resume && !opts.overwrite) refuse_overwrite(launch.run_dir);
}

// The environment a probe runs in: everything training gets, but DL_BATCH_SIZE (and `also`) is
// each probe's own (batch_probe.cpp): the first plan's would be a meaningless value that changes
// with the plan, and so would the probes' environment (and, by a few MiB, their heap layout and
// resident memory) between the search and a later probe of its answer. A probe is one process on
// one GPU, whatever the run's ranks.
EnvList probe_environment(const Launch& l, const char* also = "") {
  const std::map<std::string, std::string> single = {{"DL_DEVICE", l.plan.device.value},
                                                     {"RANK", "0"},
                                                     {"LOCAL_RANK", "0"},
                                                     {"WORLD_SIZE", "1"},
                                                     {"LOCAL_WORLD_SIZE", "1"},
                                                     {"GROUP_RANK", "0"}};
  EnvList env;
  for (const auto& [name, value] : l.env) {
    if (name == "DL_BATCH_SIZE" || name == "DL_MICRO_BATCH" || name == also) continue;
    const auto it = single.find(name);
    env.emplace_back(name, it == single.end() ? value : it->second);
  }
  return env;
}

// The search's budget, bounds, cache and the workspace it runs in; the probes are the caller's.
TuneRequest batch_tune_request(const LaunchOptions& opts, const Launch& l) {
  TuneRequest t;
  t.probe.trainer = l.command;
  t.probe.workspace = l.workspace;
  t.probe.identity = l.run_as;
  t.probe.env = probe_environment(l);
  const Choice<std::uint64_t> budget = batch_search_budget(l.facts, l.request, l.plan.device.value);
  t.search.budget_bytes = budget.value;
  t.search.objective = l.request.batch_objective.value == "largest" ? BatchObjective::kLargest
                                                                    : BatchObjective::kFastest;
  t.budget_reason = budget.reason;
  if (l.request.samples && l.request.samples->value > 0) {
    t.search.max_batch = l.request.samples->value;
  }
  t.key = cache_key(opts, l);
  // --global-batch: no piece need be larger than the share a rank steps on.
  const int world = l.plan.topology.world_size.value;
  if (l.request.global_batch && world > 0 && l.request.global_batch->value % world == 0) {
    const std::int64_t share = l.request.global_batch->value / world;
    if (t.search.max_batch == 0 || share < t.search.max_batch) {
      t.search.max_batch = share;
      t.max_reason =
          "a rank's share of --global-batch " + std::to_string(l.request.global_batch->value);
      t.key.at_most = std::to_string(share) + " (" + t.max_reason + ")";
    }
  }
  t.use_cache = !opts.retune;
  return t;
}

// The cached answer, or a search by probes of dl-train with the environment it would train in.
BatchSearchRecord search_batch_size(const LaunchOptions& opts, const Launch& l) {
  return tune_batch_size(batch_tune_request(opts, l));
}

// How long a program after -- may take to shake hands: long enough for `import torch` on a
// loaded machine, short enough that a program that does not speak the protocol costs little (and
// once: the cache remembers it).
constexpr double kHandshakeSeconds = 20;

// A number of seconds from the environment (DL_PROBE_HANDSHAKE, DL_PROBE_TIMEOUT: not settings,
// knobs of the probe protocol, docs/python.md), else `fallback`.
double seconds_from_env(const char* name, double fallback) {
  const char* raw = std::getenv(name);
  if (raw == nullptr || *raw == '\0') return fallback;
  char* end = nullptr;
  const double v = std::strtod(raw, &end);
  if (end == raw || *end != '\0' || !(v > 0) || v > 86400) {
    throw UserError(exit_code::kUsage,
                    std::string(name) + "='" + raw + "': expected a number of seconds above 0");
  }
  return v;
}

// The plan again, around what a measurement found (or what the request learnt), keeping the
// port the first plan settled: rank 0's port is chosen once.
void replan(Launch& launch, const BatchSearchRecord* search = nullptr) {
  const Choice<int> port = launch.plan.topology.master_port;
  launch.plan = make_plan(launch.facts, launch.request, search);
  launch.plan.topology.master_port = port;
}

// A program after --, as far as the launcher can tell what its measurements depend on: the
// command, each file it names (size and modification time, looked at as the workspace's owner),
// and the batch key's input, precision, device and budget; the cores of one process.
std::string script_identity(const Launch& l) {
  const ActAs owner(l.run_as);
  std::string key = "command=";
  for (std::size_t i = 0; i < l.command.size(); ++i) key += (i > 0 ? " " : "") + l.command[i];
  for (std::size_t i = 1; i < l.command.size(); ++i) {
    const std::string& a = l.command[i];
    if (a.empty() || a[0] == '-') continue;
    const std::string path = a[0] == '/' ? a : l.workspace + "/" + a;
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      key += "; " + a + " (" + std::to_string(st.st_size) + " bytes, modified " +
             std::to_string(st.st_mtime) + ")";
    }
  }
  return key;
}

// The probe logs kept in the workspace's .dl/probes: the last few starts' worth.
constexpr std::size_t kKeptProbeLogs = 64;

// "20261204-150102-4242-": this start's time and pid, before each of its probe logs' names.
std::string probe_log_prefix() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return std::string(buf) + "-" + std::to_string(getpid()) + "-";
}

// A program after --, measured where the plan leaves its workers or its batch size to the
// launcher: step probes for the batch (on a GPU or with --memory-budget), then loader probes for
// the workers, each answer cached (script_tuner.h). A program that does not answer the handshake
// keeps the rule of thumb, and the plan says why.
void tune_user_program(const LaunchOptions& opts, Launch& launch) {
  Request& req = launch.request;
  const bool workers = !req.workers;
  const bool batch = req.batch_size.source == "default" &&
                     (req.memory_budget || launch.plan.device.value != "cpu");
  if (!workers && !batch) return;
  std::optional<std::string> why_not;
  {
    const ActAs owner(launch.run_as);
    why_not = why_not_probed(launch.command, launch.workspace, opts.probe_command);
  }
  if (why_not) {
    // A command is started only for the run itself unless it opted in: a probe runs it for real.
    req.no_protocol = "not measured: " + *why_not;
    if (is_python_program(launch.command) && opts.probe_command == "auto") {
      req.no_protocol +=
          "; to have it measured, import dl_plan and wrap its DataLoader in dl_plan.loader() and "
          "its training step in dl_plan.step() (docs/python.md)";
    }
    req.probe_unavailable = req.no_protocol;
    replan(launch);
    return;
  }
  ScriptTuneRequest t;
  t.probe.command = launch.command;
  t.probe.workspace = launch.workspace;
  t.probe.env = probe_environment(launch, "DL_WORKERS");
  t.probe.identity = launch.run_as;
  {
    const ActAs owner(launch.run_as);
    DirFd probes = DirFd::open(launch.workspace).subdir(".dl").subdir("probes");
    // Where several dl-launch processes share a workspace (one per node, or one per srun task),
    // each probes into a folder of its own.
    const int first = launch.plan.topology.first_rank;
    if (first != 0) probes = probes.subdir("rank-" + std::to_string(first));
    probes.subdir("run");
    t.probe.probe_dir = probes.path();
  }
  t.probe.log_prefix = probe_log_prefix();
  prune_probe_logs(t.probe.probe_dir, launch.run_as, kKeptProbeLogs);
  t.probe.handshake_seconds = seconds_from_env("DL_PROBE_HANDSHAKE", kHandshakeSeconds);
  t.probe.timeout_seconds = seconds_from_env("DL_PROBE_TIMEOUT", kProbeTimeoutSeconds);
  t.use_cache = !opts.retune;
  t.tune_workers = workers;
  // One process's share: the probes run once on this node, and each rank gets the answer.
  t.max_workers = launch.plan.ranks.front().cores.value;
  t.tune_batch = batch;
  t.loader_batch = launch.plan.batch_size.value;
  const std::string identity = script_identity(launch);
  if (batch) {
    t.batch = batch_tune_request(opts, launch);
    t.batch.key.model = identity;
    t.batch.key.torch = "the program's";
  }
  const BatchCacheKey b = cache_key(opts, launch);
  t.cache_key = identity + "; input=" + b.input + "; precision=" + b.precision +
                "; device=" + b.device + (b.gpu.empty() ? "" : "; gpu=" + b.gpu) +
                "; budget=" + (batch ? b.budget + "; objective=" + b.objective : "none") +
                "; cores=" + std::to_string(t.max_workers);

  const ScriptTuning tuned = tune_script(t);
  // The plan's data row: the size the program's own probe saw, where nothing else gave one.
  if (!req.samples && tuned.data_samples > 0) {
    req.samples = Sourced<std::int64_t>{tuned.data_samples,
                                        "the program's step probe (its data set's length)"};
  }
  launch.script_probe = tuned.record;
  launch.script_cache_key = t.cache_key;
  if (!tuned.record.speaks_protocol) {
    req.no_protocol = tuned.record.failed_early ? early_failure_note(tuned.record.no_handshake)
                                                : no_protocol_note(tuned.record.no_handshake);
    req.probe_unavailable = req.no_protocol;
  } else {
    req.probe_unavailable.clear();
    if (tuned.record.workers_searched) {
      const ScriptProbeRecord& r = tuned.record;
      req.measured_workers =
          Choice<int>{r.workers.workers,
                      r.workers.reason +
                          (r.cached ? "; cached, --retune measures again"
                                    : "; " + std::to_string(r.workers.trials.size()) + " probes, " +
                                          format_number(std::round(r.seconds * 10) / 10) + " s")};
    }
  }
  replan(launch, tuned.batch ? &*tuned.batch : nullptr);
}

void setup_logging() {
  auto logger = spdlog::stderr_color_mt("dl-launch");
  logger->set_pattern("%^dl-launch %l:%$ %v");
  spdlog::set_default_logger(logger);
}

// The workspace, its owner and the program to start, with what the plan needs to know of them.
// `path` with its links and dots resolved, or as given where it cannot be.
std::string real_path_or(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

// The script a command runs is there: the command runs in the workspace, where a path typed
// relative to another directory means another file (or none). Refused before any probe, with the
// path that would work, rather than by Python after the plan was shown.
void check_script_path(const Launch& launch) {
  const CommandScript script = command_script(launch.command);
  if (script.kind != CommandScript::Kind::kFile || script.text.empty()) return;
  {
    const ActAs owner(launch.run_as);
    if (!script_file(script, launch.workspace).empty()) return;
  }
  const std::string& typed = script.text;
  std::string line = "the script " + typed + " of the command after -- is not in the workspace " +
                     launch.workspace + ", where the command runs";
  const std::string found = typed[0] == '/' ? "" : script_file(script, current_directory());
  if (!found.empty()) {
    // The file the user meant, and how to name it from the workspace where it is inside.
    const std::string real = real_path_or(found);
    const std::string ws = launch.workspace + "/";  // check_workspace resolved it already
    line += " (it is " + real + ", relative to where dl-launch was started); give it as " +
            (starts_with(real, ws) ? real.substr(ws.size()) + " (relative to the workspace) or "
                                   : std::string()) +
            real;
  } else {
    line += "; expected a file there (an absolute path, or one relative to the workspace)";
  }
  throw UserError(exit_code::kMissing, line);
}

// A missing trainer is an error unless this is a dry run, which shows the plan all the same and
// says why in `missing_trainer`.
Launch resolve_launch(LaunchOptions& opts, std::optional<std::string>* missing_trainer) {
  Launch launch;
  launch.workspace = check_workspace(opts.workspace.value, opts.workspace.source);
  launch.run_as = workspace_owner(launch.workspace, opts.run_as_owner);
  launch.config_file = opts.config_file;
  launch.settings = opts.settings;
  const bool default_program = opts.command.empty();
  if (!default_program) {
    launch.command = resolve_command(opts.command);
    check_script_path(launch);
    launch.companion_dir = companion_directory(self_directory());
  } else {
    try {
      launch.command = trainer_command(opts.trainer, self_directory());
    } catch (const UserError& e) {
      if (!opts.dry_run) throw;
      launch.command = {opts.trainer};
      *missing_trainer = e.what();
    }
  }

  Request& req = opts.request;
  req.shm_batches = passes_batches_through_shm(launch.command);
  req.trainer_measures = default_program && !*missing_trainer;
  req.default_program = default_program;
  req.scheduler = detect_scheduler({});
  if (!default_program) {
    const ActAs owner(launch.run_as);  // the workspace's files are read as their owner
    const auto source = command_source(launch.command, launch.workspace);
    req.program_splits_batches = source && splits_micro_batches(*source);
  }
  if (!default_program) {
    req.probe_unavailable = "the program is " + launch.command[0] + ", not dl-train";
  } else if (*missing_trainer) {
    req.probe_unavailable = "dl-train was not found";
  } else {
    req.probe_unavailable.clear();
  }
  if (default_program && !opts.data_given && !holds_data_set(launch.workspace + "/data")) {
    if (!req.samples) req.samples = Sourced<std::int64_t>{kDefaultDataSamples, "Fashion-MNIST"};
    if (req.sample_bytes.source == Request{}.sample_bytes.source) {
      req.sample_bytes = {kDefaultDataSampleBytes, "Fashion-MNIST"};
    }
  }
  // NVIDIA's CUDA images set CUDA_VERSION to the toolkit the image (and dl-train) was built with.
  if (const char* cuda = std::getenv("CUDA_VERSION"); cuda != nullptr && *cuda != '\0') {
    req.required_cuda = Sourced<std::string>{cuda, "CUDA_VERSION"};
  }
  launch.request = req;
  return launch;
}

// The search on every GPU this node's ranks use, once per kind of GPU (identical GPUs have one
// answer, as the cache has); the smallest answer, which every rank can run.
BatchSearchRecord search_local_gpus(const LaunchOptions& opts, const Launch& launch,
                                    std::string* note) {
  std::vector<std::string> devices;
  for (const auto& r : launch.plan.ranks) {
    if (r.device != "cpu" && std::find(devices.begin(), devices.end(), r.device) == devices.end()) {
      devices.push_back(r.device);
    }
  }
  if (devices.size() <= 1) return search_batch_size(opts, launch);
  std::map<std::string, BatchSearchRecord> by_gpu;  // GPU name and size -> its answer
  std::string answers;
  std::optional<BatchSearchRecord> smallest;
  for (const auto& device : devices) {
    Launch one = launch;
    one.plan.device.value = device;
    const std::string gpu = cache_key(opts, one).gpu;
    auto it = by_gpu.find(gpu);
    if (it == by_gpu.end()) it = by_gpu.emplace(gpu, search_batch_size(opts, one)).first;
    answers +=
        (answers.empty() ? "" : ", ") + device + " " + std::to_string(it->second.result.batch);
    if (!smallest || it->second.result.batch < smallest->result.batch) smallest = it->second;
  }
  *note = by_gpu.size() == 1 ? "; the same for all " + std::to_string(devices.size()) +
                                   " identical GPUs of this node"
                             : "; the smallest of this node's GPUs (" + answers + ")";
  return *smallest;
}

// Rank 0's port: a free one found (and held) for one node, or the one given tried where rank 0
// starts here.
void settle_port(Launch& launch) {
  Topology& t = launch.plan.topology;
  if (t.pick_free_port) {
    if (!launch.port_hold) {
      launch.port_hold = std::make_shared<const PortReservation>(PortReservation::take());
    }
    t.master_port.value = launch.port_hold->port();
  } else if (t.check_port) {
    check_port_free(t.master_port.value);
  }
}

// --cpu-bind cores: each rank's block of the CPUs in this process's affinity mask.
void pin_ranks(Plan& plan) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  const Topology& t = plan.topology;
  const int blocks_wanted = t.one_worker ? t.local_world_size : t.nproc.value;
  const auto blocks = split_cpus(cpus, blocks_wanted);
  if (!blocks) {
    throw UserError(exit_code::kUsage,
                    "--cpu-bind cores: the affinity mask has " + std::to_string(cpus.size()) +
                        " CPUs (" + cpu_list_text(cpus) + "), fewer than the " +
                        std::to_string(blocks_wanted) + " ranks of this node; use --cpu-bind none");
  }
  for (std::size_t i = 0; i < plan.ranks.size(); ++i) {
    const auto index =
        static_cast<std::size_t>(t.one_worker ? plan.ranks[i].local_rank : static_cast<int>(i));
    if (index < blocks->size()) plan.ranks[i].cpus = (*blocks)[index];
  }
}

// dl-train's word on the data (data_facts.h) where the request does not know it: data other than
// the default Fashion-MNIST, and no --samples. Returns a warning for the plan where there is no
// answer; dl-train refusing the data ends the start, as training would, but for a dry run.
std::optional<std::string> learn_data_facts(const LaunchOptions& opts, Launch& launch) {
  const StopPhase phase("reading the data's size");
  ProbeSetup setup;
  setup.trainer = launch.command;
  setup.workspace = launch.workspace;
  setup.identity = launch.run_as;
  setup.env = probe_environment(launch);
  DataFactsResult r;
  try {
    r = read_data_facts(setup);
  } catch (const UserError& e) {
    if (!opts.dry_run) throw;
    launch.refused_code = e.code();
    launch.refused = e.what();
    return std::string(e.what());
  }
  if (!r.facts) return "data size unknown: " + r.error;
  const DataFacts& f = *r.facts;
  Request& req = launch.request;
  const std::string held = ", " + std::to_string(f.val_samples) + " held for validation";
  req.samples = Sourced<std::int64_t>{
      f.train_samples,
      "dl-train --data-facts: " +
          (f.estimated
               ? "estimated from the first of " + std::to_string(f.shards) + " shards" + held
               : (f.shards > 0 ? std::to_string(f.shards) + " shards" : f.kind) + held + ", " +
                     std::to_string(f.classes) + " classes")};
  if (req.sample_bytes.source == Request{}.sample_bytes.source) {
    req.sample_bytes = {f.sample_bytes, "dl-train --data-facts: " + std::to_string(f.channels) +
                                            "x" + std::to_string(f.height) + "x" +
                                            std::to_string(f.width) + " float32"};
  }
  return std::nullopt;
}

// --resume of dl-train: the recipe its last.json records (the global batch where this world
// splits it, and the learning rate while --lr is the run's), which dl-train keeps, so that the
// plan, plan.json and the batch handed over say what training will do. dl-train reads the note
// again itself (and says what it keeps); a missing or stale note changes nothing here.
void adopt_resumed_recipe(Launch& launch) {
  std::optional<CheckpointNote> note;
  {
    const ActAs owner(launch.run_as);
    note = read_checkpoint_note(launch.run_dir + "/last.pt");
  }
  if (!note) return;
  Request& req = launch.request;
  const std::string from = "--resume: runs/" + launch.run_name + "/" + kCheckpointNoteName;
  bool changed = false;
  if (note->lr && note->base_lr && *note->lr == req.lr.value) {
    req.resumed_lr = Sourced<double>{*note->base_lr, from};
    changed = true;
  }
  const int world = launch.plan.topology.world_size.value;
  if (!req.global_batch && note->global_batch && world > 0 && *note->global_batch % world == 0) {
    req.global_batch = Sourced<std::int64_t>{*note->global_batch, from};
    changed = true;
  }
  if (changed) replan(launch);
}

// Probe, plan, the run's name and, with `check_run`, what the start would do to its directory;
// where the plan wants it, the batch-size search and a second plan around its answer; then rank
// 0's port, the pinning and the program's environment.
void plan_launch(const LaunchOptions& opts, Launch& launch, bool check_run, bool measure = true) {
  const SystemHost host(opts.nvml_library);
  launch.facts = probe(host);
  launch.plan = make_plan(launch.facts, launch.request);
  std::string name = opts.run_name;
  if (name.empty() && launch.request.scheduler.run_name) name = *launch.request.scheduler.run_name;
  launch.run_name = choose_run_name(launch.workspace, name, std::time(nullptr));
  launch.run_dir = launch.workspace + "/runs/" + launch.run_name;
  launch.forwarded = opts.trainer_env;
  if (launch.config_file) launch.forwarded.emplace_back("DL_CONFIG", *launch.config_file);
  // Before the batch-size search's probes: a start that would be refused says so at once.
  if (check_run) check_run_dir(opts, launch);
  if (opts.resume && launch.request.default_program) adopt_resumed_recipe(launch);
  settle_port(launch);
  launch.env = child_environment(launch);
  std::optional<std::string> facts_warning;
  if (launch.request.trainer_measures && !launch.request.samples) {
    facts_warning = learn_data_facts(opts, launch);
    replan(launch);
    launch.env = child_environment(launch);
  }
  if (!measure) {
    // dl-launch doctor: the plan as it stands, no probe of the program.
  } else if (!launch.request.default_program) {
    tune_user_program(opts, launch);
  } else if (wants_batch_search(launch.request, launch.plan.device.value)) {
    // Probes get the environment training would get (the first plan's threads, device and
    // precision); the chosen batch then re-plans the workers, which depend on it.
    std::optional<BatchSearchRecord> searched;
    std::optional<std::string> probe_failure;
    std::string note;
    try {
      searched = search_local_gpus(opts, launch, &note);
    } catch (const UserError& e) {
      // dl-train refused its input: training would refuse it too. A dry run still shows the plan.
      if (!opts.dry_run) throw;
      launch.request.probe_unavailable = "its probe failed";
      probe_failure = e.what();
      if (launch.refused_code == 0) {
        launch.refused_code = e.code();
        launch.refused = e.what();
      }
    }
    replan(launch, searched ? &*searched : nullptr);
    launch.plan.batch_size.reason += note;
    if (probe_failure) launch.plan.warnings.push_back(*probe_failure);
  }
  if (facts_warning) launch.plan.warnings.push_back(*facts_warning);
  if (launch.request.ranks.cpu_bind.value == "cores") pin_ranks(launch.plan);
  launch.env = child_environment(launch);
}

// Whether a measurement of this start is to be kept for the next (a cached answer is kept
// already).
bool has_new_measurements(const Launch& launch) {
  const auto& search = launch.plan.batch_search;
  return (search && search->cache_written) ||
         (launch.script_probe && !launch.script_probe->cached &&
          !launch.script_probe->failed_early);
}

// The searches' answers, kept for the next start with the same model or program, input and
// device: the batch-size search's and a program's probes.
void store_measurements(const DirFd& workspace, const Launch& launch) {
  const auto& search = launch.plan.batch_search;
  if (search && search->cache_written) store_batch_cache(workspace, search->cache_key, *search);
  // A program that failed before its handshake is asked again next time (script_cache.h).
  if (launch.script_probe && !launch.script_probe->cached && !launch.script_probe->failed_early) {
    store_script_cache(workspace, launch.script_cache_key, *launch.script_probe);
  }
}

// What the run leaves in the workspace before the program starts: the run directory (locked: one
// live run per name), the batch-size cache, a HOME for the workspace's owner, plan.json. All of it
// is written with the owner's credentials, relative to the workspace's descriptor, and a link
// where one of our directories belongs is refused (act_as.h, dir_fd.h).
bool write_run_files(Launch& launch) {
  const ActAs owner(launch.run_as);
  const DirFd workspace = DirFd::open(launch.workspace);
  struct stat st {};
  const bool fresh = lstat(launch.run_dir.c_str(), &st) != 0;
  const DirFd run = workspace.subdir("runs").subdir(launch.run_name);
  // Where rank 0 runs, before anything goes into the directory. Nodes without rank 0 write only
  // their own plan-rank-N.json (a shared file system holds rank 0's lock).
  if (launch.plan.topology.first_rank == 0) {
    launch.run_lock = std::make_shared<const RunLock>(RunLock::take(run));
  }
  store_measurements(workspace, launch);
  if (launch.run_as) {
    launch.run_as->home = home_for(*launch.run_as, workspace);
    launch.env.emplace_back("HOME", launch.run_as->home);
  }
  run.write_file(plan_file_name(launch), render_json(launch));
  if (launch.run_lock) {
    launch.env.emplace_back(RunLock::kFdVariable,
                            std::to_string(launch.run_lock->share_with_children()));
  }
  return fresh;
}

// The measurements' answers in the workspace's caches, for a dry run (a real run stores them with
// the rest of its files).
void store_search(const Launch& launch) {
  if (!has_new_measurements(launch)) return;
  const ActAs owner(launch.run_as);
  store_measurements(DirFd::open(launch.workspace), launch);
}

// A start the program refused on its input (64-79: a bad setting, missing or bad data) leaves
// nothing behind in a run directory it created: plan.json, the lock and the log go with it. The
// program's code is passed on.
int after_exit(const Launch& launch, bool fresh, int code) {
  if (!fresh || code < 64 || code > 79 || launch.plan.topology.first_rank != 0) return code;
  const ActAs owner(launch.run_as);
  const DirFd runs = DirFd::open(launch.workspace).subdir("runs");
  if (remove_refused_run_dir(runs.fd(), launch.run_name)) {
    spdlog::info("removed {}: the start was refused, nothing was saved", launch.run_dir);
  }
  return code;
}

// Every rank started here, its environment, pinning, and whether the terminal shows it.
RankGroupSpec rank_group(const LaunchOptions& opts, const Launch& launch) {
  const Topology& t = launch.plan.topology;
  const bool all = launch.request.ranks.log_ranks.value == "all";
  RankGroupSpec g;
  g.argv = launch.command;
  g.cwd = launch.workspace;
  g.log_dir = launch.run_dir;
  g.grace_seconds = opts.grace_seconds;
  g.identity = launch.run_as;
  g.prefix = all && t.world_size.value > 1;
  if (launch.run_lock) g.pass_fds = {launch.run_lock->fd()};
  for (std::size_t i = 0; i < launch.plan.ranks.size(); ++i) {
    const RankPlan& r = launch.plan.ranks[i];
    RankSpawn spawn;
    spawn.global_rank = r.global_rank;
    spawn.env = rank_environment(launch, i);
    if (launch.run_as) spawn.env.emplace_back("HOME", launch.run_as->home);
    if (launch.run_lock) {
      spawn.env.emplace_back(RunLock::kFdVariable, std::to_string(launch.run_lock->fd()));
    }
    spawn.cpus = r.cpus;
    // This node's first local rank is on the terminal: rank 0 on node 0.
    spawn.shown = all || r.local_rank == 0;
    g.ranks.push_back(std::move(spawn));
  }
  return g;
}

// `env` with `name` set to `value`, replacing what it had.
void set_variable(EnvList& env, const std::string& name, const std::string& value) {
  env.erase(std::remove_if(env.begin(), env.end(), [&](const auto& v) { return v.first == name; }),
            env.end());
  env.emplace_back(name, value);
}

// What a restart adds to every rank's environment: --resume from the newest last.pt, or, before
// the first one was written, a start over the run's own files. On a node without rank 0, whose
// disk may not hold last.pt, --resume: rank 0 decides for every rank whether there is one.
EnvList restart_variables(const Launch& launch, std::string* from) {
  const std::string last = launch.run_dir + "/last.pt";
  if (launch.plan.topology.first_rank != 0) {
    *from = "resuming from rank 0's last.pt where it has one";
    return {{"DL_RESUME", "true"}};
  }
  const ActAs owner(launch.run_as);  // the workspace's files are read as their owner
  if (access(last.c_str(), F_OK) == 0) {
    const auto note = read_checkpoint_note(last);
    *from = "resuming from " + last + (note ? " (" + describe_checkpoint_note(*note) + ")" : "");
    return {{"DL_RESUME", "true"}};
  }
  *from = "starting over: no last.pt was written yet";
  return {{"DL_RESUME", "false"}, {"DL_OVERWRITE", "true"}};
}

// The program's processes to their end: dl-train alone (it inherits the terminal, so a progress
// bar redraws) or every local rank, each logged to runs/<name>/rank-N.log. With --max-restarts N, a
// failure a restart may fix (restart_policy.h) stops the others as always and then starts every
// rank again, up to N times, one line each naming the rank, the cause and what it resumes from.
// Returns 0, the code of a failure not retried, or the first failure's code once the restarts are
// used up (torchrun's choice: the first failure is the cause, the later ones its echo).
int run_supervised(const LaunchOptions& opts, const Launch& launch) {
  const Topology& t = launch.plan.topology;
  // dl-train alone in one process inherits the terminal (it writes its own train.log); a command
  // after -- goes through the ranks' supervisor even alone, for its runs/<name>/rank-0.log.
  const bool single =
      launch.request.default_program && t.world_size.value == 1 && launch.plan.ranks.size() <= 1;
  std::optional<int> first_failure;
  EnvList extra;
  for (int restart = 0;; ++restart) {
    SupervisedEnd end;
    int code = 0;
    if (single) {
      SpawnSpec spec;
      spec.argv = launch.command;
      spec.cwd = launch.workspace;
      spec.env = launch.env;
      for (const auto& [name, value] : extra) set_variable(spec.env, name, value);
      spec.grace_seconds = opts.grace_seconds;
      spec.identity = launch.run_as;
      if (launch.run_lock) spec.pass_fds = {launch.run_lock->fd()};
      code = supervise(spec, &end);
      if (code != 0) spdlog::warn("{} exited with code {}", launch.command[0], code);
    } else {
      RankGroupSpec group = rank_group(opts, launch);
      for (RankSpawn& r : group.ranks) {
        for (const auto& [name, value] : extra) set_variable(r.env, name, value);
      }
      code = supervise_ranks(group, &end);
    }
    if (code == 0 || opts.max_restarts == 0) return code;
    if (!first_failure) first_failure = code;
    const std::string refusal = restart_refusal(code, end);
    if (!refusal.empty()) {
      // A stop the user asked for is no failure to report.
      spdlog::log(end.stop_requested ? spdlog::level::info : spdlog::level::err,
                  "not restarting (--max-restarts): {}", refusal);
      return code;
    }
    if (restart == opts.max_restarts) {
      spdlog::error(
          "rank {} {}: the {} restart(s) of --max-restarts are used up; exit {}, the "
          "first failure's",
          end.failed_rank, end.cause, opts.max_restarts, *first_failure);
      return *first_failure;
    }
    std::string from;
    extra = restart_variables(launch, &from);
    spdlog::warn("restart {} of {} (--max-restarts): rank {} {}; starting {} again, {}",
                 restart + 1, opts.max_restarts, end.failed_rank, end.cause,
                 single ? "it"
                 : launch.plan.ranks.size() == 1
                     ? "this node's rank"
                     : fmt::format("all {} local ranks", launch.plan.ranks.size()),
                 from);
  }
}

// evaluate and predict are dl-train's, in one process: no command after --, one rank.
void restrict_to_checkpoint_command(const CheckpointCommand& c, LaunchOptions& opts) {
  if (!opts.command.empty()) {
    throw UserError(exit_code::kUsage, "dl-launch " + c.word + " starts dl-train " + c.word +
                                           "; it takes no command after --");
  }
  if (opts.request.ranks.nproc_per_node.source != "default" &&
      opts.request.ranks.nproc_per_node.value != "1") {
    throw UserError(exit_code::kUsage, opts.request.ranks.nproc_per_node.source + ": dl-launch " +
                                           c.word + " runs one process, not " +
                                           opts.request.ranks.nproc_per_node.value);
  }
  opts.request.ranks.nproc_per_node = {"1", "dl-launch " + c.word};
}

// dl-launch doctor: planned as a dry run without the program's probes, then measured (doctor.h).
int doctor(int argc, const char* const argv[]) {
  const auto started = std::chrono::steady_clock::now();
  bool full = false;
  const std::vector<std::string> args = doctor_launcher_args(argc, argv, &full);
  std::vector<const char*> args_c;
  for (const std::string& a : args) args_c.push_back(a.c_str());
  const int n = static_cast<int>(args_c.size());
  LaunchOptions opts;
  try {
    opts = parse_options(n, args_c.data());
  } catch (const UserError&) {
    // An option the launcher does not know may be a misspelt --full.
    if (const std::string typo = doctor_typo(args); !typo.empty()) {
      throw UserError(exit_code::kUsage, typo);
    }
    throw;
  }
  if (const auto stray = stray_word(n, args_c.data(), option_accepts_value)) {
    throw UserError(exit_code::kUsage, *stray);
  }
  if (opts.help) {
    std::cout << doctor_usage();
    return exit_code::kOk;
  }
  install_stop_handlers();
  opts.dry_run = true;  // nothing is started or written; a refusal of the data is a finding
  std::optional<std::string> missing_trainer;
  Launch launch = resolve_launch(opts, &missing_trainer);
  check_data(opts, launch);
  plan_launch(opts, launch, /*check_run=*/false, /*measure=*/false);
  DoctorRequest r;
  r.started = started;
  r.full = full;
  r.json = opts.json;
  r.env = probe_environment(launch);
  r.nvml_library = opts.nvml_library;
  try {
    r.trainer = launch.request.default_program && !missing_trainer
                    ? launch.command
                    : trainer_command(opts.trainer, self_directory());
  } catch (const UserError& e) {
    r.missing_trainer = e.what();
  }
  return run_doctor(launch, r);
}

int run(int argc, const char* const argv[]) {
  if (argc >= 2 && std::string(argv[1]) == "doctor") return doctor(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "init") {
    return init_main(std::vector<std::string>(argv + 2, argv + argc), std::cout);
  }
  // dl-launch evaluate|predict: planned as training is, dl-train's subcommand started with it.
  std::optional<CheckpointCommand> checkpoint_command =
      split_checkpoint_command(argc, argv, option_takes_value);
  std::vector<const char*> launcher_argv;
  if (checkpoint_command) {
    for (const std::string& a : checkpoint_command->launcher_args)
      launcher_argv.push_back(a.c_str());
  }
  LaunchOptions opts = checkpoint_command ? parse_options(static_cast<int>(launcher_argv.size()),
                                                          launcher_argv.data())
                                          : parse_options(argc, argv);
  // After the options (a misspelled option's value is no stray word: the option is named first),
  // before anything else: a mistyped subcommand must not start the default training.
  if (const auto stray = stray_word(argc, argv, option_accepts_value)) {
    throw UserError(exit_code::kUsage, *stray);
  }
  if (checkpoint_command) {
    restrict_to_checkpoint_command(*checkpoint_command, opts);
    resolve_trainer_paths(*checkpoint_command, current_directory());
  }
  if (opts.help) {
    std::cout << usage_text();
    return exit_code::kOk;
  }
  if (opts.version) {
    std::cout << "dl-launch " << kVersion << "\n";
    return exit_code::kOk;
  }

  // From here on a stop signal stops whatever runs, probes included (stop_request.h).
  install_stop_handlers();
  std::optional<std::string> missing_trainer;
  Launch launch = resolve_launch(opts, &missing_trainer);
  check_data(opts, launch);
  plan_launch(opts, launch, /*check_run=*/!checkpoint_command);
  if (missing_trainer) launch.plan.warnings.push_back(*missing_trainer);
  // After the plan: its batch-size probes run dl-train itself, not the subcommand.
  if (checkpoint_command) {
    launch.command.push_back(checkpoint_command->word);
    launch.command.insert(launch.command.end(), checkpoint_command->trainer_args.begin(),
                          checkpoint_command->trainer_args.end());
  }
  // A search's answer is kept for the next start, a dry run's too (it is a measurement: the run
  // that follows a dry run must not probe again).
  auto& search = launch.plan.batch_search;
  if (search && !search->cached) search->cache_written = true;
  if (stop_requested()) throw StopRequested(stop_signal(), "planning the run");
  if (opts.dry_run) {
    store_search(launch);
    std::cout << (opts.json ? render_json(launch) : render_text(launch, true)) << std::flush;
    if (launch.refused_code != 0) {
      // The plan is shown, and the exit is the refusal's, as the run's would be.
      std::cerr << "dl-launch error: " << launch.refused << "\n";
      return launch.refused_code;
    }
    return exit_code::kOk;
  }

  std::cout << render_text(launch, false) << std::flush;
  const bool fresh = write_run_files(launch);
  try {
    return after_exit(launch, fresh, run_supervised(opts, launch));
  } catch (const StopRequested&) {
    // Stopped before the program started: like a refused start, it leaves no run directory.
    if (fresh && launch.plan.topology.first_rank == 0) {
      const ActAs owner(launch.run_as);
      remove_refused_run_dir(DirFd::open(launch.workspace).subdir("runs").fd(), launch.run_name);
    }
    throw;
  }
}

}  // namespace

int launcher_main(int argc, const char* const argv[]) {
  setup_logging();
  return run_reporting_errors(
      [&] {
        try {
          return run(argc, argv);
        } catch (const StopRequested& stop) {
          std::cerr << "dl-launch: " << stop.what() << "\n";
          return stop.exit_code();
        }
      },
      [](const std::string& line, bool internal) {
        spdlog::log(internal ? spdlog::level::critical : spdlog::level::err, "{}", line);
      });
}

}  // namespace dl
