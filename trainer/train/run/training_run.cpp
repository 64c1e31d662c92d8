// Setting up a training run (training_run.h): the order of the steps is the order of the
// checks, and each step's log line says what it chose.
#include "train/run/training_run.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "core/accumulation.h"
#include "core/checkpoint_note.h"
#include "core/dir_fd.h"
#include "core/errors.h"
#include "core/files.h"
#include "core/lr_scaling.h"
#include "core/text.h"
#include "core/workspace.h"
#include "data/shard_order.h"
#include "model/adamw_state.h"
#include "model/weights_file.h"
#include "train/dist/distributed_sampler.h"
#include "train/monitor/scalars.h"
#include "train/resume/stop_signal.h"
#include "train/run/device.h"
#include "train/run/line_flushed_file_sink.h"
#include "train/run/model_setup.h"
#include "train/run/pipeline_plan.h"
#include "train/run/pipeline_tuner.h"

namespace dl::train {
namespace {

using Clock = std::chrono::steady_clock;

bool exists(const std::string& path) {
  return access(path.c_str(), F_OK) == 0;
}

// The run directory (and its parents), checked writable before training starts.
void prepare_run_dir(const std::string& path) {
  try {
    make_dirs(path);
  } catch (const UserError& e) {
    throw UserError(e.code(), "run directory " + path + ": " + e.what());
  }
  if (access(path.c_str(), W_OK) != 0) {
    throw UserError(exit_code::kCantWrite,
                    "run directory " + path + " is not writable (" + std::strerror(errno) + ")");
  }
}

// The run directory's lock: the one dl-launch took and handed on (DL_RUN_LOCK_FD), else its own.
RunLock lock_run_dir(const std::string& path) {
  const DirFd dir = DirFd::open(path);
  if (const char* fd = std::getenv(RunLock::kFdVariable); fd != nullptr) {
    if (const auto n = parse_i64(fd); n && *n >= 0 && *n <= std::numeric_limits<int>::max()) {
      if (auto adopted = RunLock::adopt(static_cast<int>(*n), dir)) return std::move(*adopted);
    }
  }
  return RunLock::take(dir);
}

// A run killed while it wrote a checkpoint (kill -9, the OOM killer, a lost node) left its
// temporary file; the checkpoints themselves are whole (written by rename). Each save also
// removes these, but a run that fails before its first save should not keep them either.
void remove_interrupted_writes(const TrainingRun& run) {
  for (const std::string& path : {run.last_path, run.best_path}) {
    const std::vector<std::string> removed = remove_stale_temporaries(path);
    if (!removed.empty()) {
      spdlog::info("removed {} temporary file(s) of an interrupted checkpoint write: {}",
                   // Joined first: fmt 7 (spdlog 1.8) refuses a join view passed on by reference.
                   removed.size(), fmt::format("{}", fmt::join(removed, ", ")));
    }
  }
}

// Workers and compute threads: the user's numbers where given, the rest measured (pipeline_plan.h).
// Sets LibTorch's thread count and returns the loader's worker count; what was measured goes to
// *measured, for the run's end to prescribe from.
int choose_workers_and_threads(const TrainConfig& config, const DataSetup& d,
                               const model::ModelSpec& spec, const torch::Device& device,
                               Precision precision, const ScalerOptions& scaler, DeviceFeed& feed,
                               std::optional<PipelineCosts>* measured) {
  if (config.workers >= 0 && config.threads > 0) {
    torch::set_num_threads(config.threads);
    return config.workers;
  }
  const PipelineLimits limits{config.workers, config.threads};
  const int cores = usable_cores();
  TuneSetup setup;
  setup.source = d.train.get();
  setup.transform = d.train_transform;
  setup.spec = spec;
  setup.device = device;
  setup.precision = precision;
  setup.scaler = scaler;
  setup.config = &config;
  setup.feed = &feed;
  const auto start = Clock::now();
  const PipelineCosts costs = measure_pipeline(setup, cores, thread_candidates(cores, limits));
  const PipelineChoice choice = choose_pipeline(costs, limits);
  *measured = costs;
  torch::set_num_threads(choice.threads);
  const PipelineChoice rule = cores_minus_two(cores);
  std::string versus;
  if (costs.step_seconds.count(rule.threads) != 0 &&
      (rule.workers != choice.workers || rule.threads != choice.threads)) {
    versus =
        fmt::format("; cores-2 would give {} worker(s) + {} thread(s): {:.1f} ms", rule.workers,
                    rule.threads, 1e3 * predict_batch_seconds(costs, rule.workers, rule.threads));
  }
  spdlog::info(
      "pipeline: {} on {} core(s) -> {} worker(s), {} thread(s), {:.1f} ms/batch "
      "predicted, {} bound{} (measured in {:.1f} s)",
      describe_costs(costs), cores, choice.workers, choice.threads, 1e3 * choice.predicted_seconds,
      predicted_bound(costs, choice.workers, choice.threads), versus,
      std::chrono::duration<double>(Clock::now() - start).count());
  return choice.workers;
}

// Restores the model, optimizer and loss scaler from last.pt, and where training stood.
// In a distributed run rank 0 reads the file and every rank gets its bytes: the other nodes
// need not see rank 0's disk, and every rank resumes from the same state.
void resume(TrainingRun& run) {
  std::vector<char> bytes;
  if (run.world.writes()) {
    if (!exists(run.last_path)) {
      throw UserError(exit_code::kMissing, "--resume: " + run.last_path +
                                               " does not exist; expected the last checkpoint "
                                               "of this run (name the run with --name)");
    }
    try {
      bytes = read_whole_file(run.last_path);
    } catch (const std::exception& e) {
      throw UserError(exit_code::kBadData, "--resume: cannot read " + run.last_path + " (" +
                                               e.what() +
                                               "); expected the last checkpoint of "
                                               "this run");
    }
  }
  bytes = run.world.broadcast_from_first(std::move(bytes));
  model::CheckpointData c;
  std::optional<EpochPosition> position;
  try {
    c = model::parse_checkpoint(bytes, run.last_path);
    position = get_position(c.extra);
    run.net->load_state(c.model_state);
    model::import_adamw(*run.optimizer, run.params, c.optimizer);
    // A run resumed in another precision keeps going: without saved scaler state (fp32 or
    // bf16 before) fp16 starts from the initial scale; scaler state is unused without fp16.
    if (run.scaler->enabled() && c.scaler.enabled) {
      run.scaler->load(c.scaler);
    } else if (run.scaler->enabled()) {
      spdlog::info("resume: {} has no loss-scaler state; starting the scale at {:g}", run.last_path,
                   run.config.loss_scale);
    }
  } catch (const std::exception& e) {
    throw UserError(exit_code::kBadData, std::string("--resume: ") + e.what());
  }
  run.start_epoch = static_cast<int>(c.epoch);
  run.last_val_acc = c.val_acc;
  if (auto it = c.extra.find("best_val_acc"); it != c.extra.end()) {
    run.best_val_acc = std::get<double>(it->second);
  }
  if (auto it = c.extra.find("global_step"); it != c.extra.end()) {
    run.global_step = std::get<std::int64_t>(it->second);
  }
  const std::string best = run.start_epoch == 0
                               ? "no validation yet"
                               : fmt::format("best val_acc {:.2f}%", 100.0 * run.best_val_acc);
  const auto stopped_in = c.extra.find("interrupted_in_epoch");
  const auto stopped_after = c.extra.find("interrupted_after_batches");
  if (position && position->epoch == c.epoch) {
    // Written inside an epoch (a stop signal or --checkpoint-every): the epoch goes on.
    const std::int64_t global_batch = static_cast<std::int64_t>(run.batch_size) * run.world.size();
    const ResumeStart start = resume_start(*position, global_batch);
    run.resume_position = position;
    run.resume_first_batch = start.first_batch;
    if (start.exact && global_batch == position->global_batch) {
      spdlog::info(
          "resumed from {} inside epoch {} at step {} ({}): the epoch goes on at batch {}, the "
          "next sample an uninterrupted run takes",
          run.last_path, position->epoch + 1, run.global_step.load(), best, start.first_batch + 1);
    } else {
      spdlog::warn(
          "resumed from {} inside epoch {}, written with a global batch of {} and run now with "
          "{}: the epoch goes on at batch {}{}",
          run.last_path, position->epoch + 1, position->global_batch, global_batch,
          start.first_batch + 1,
          start.repeated > 0 ? fmt::format(", {} of its samples taken again", start.repeated)
                             : std::string(", no sample taken twice"));
    }
  } else if (stopped_in != c.extra.end() && stopped_after != c.extra.end()) {
    // Saved by a stop signal during an epoch: that epoch runs again from its first batch.
    const auto epoch = std::get<std::int64_t>(stopped_in->second);
    spdlog::info(
        "resumed from {}, saved by a stop in epoch {} after {} batches ({}); epoch {} starts "
        "again with the saved weights and optimizer state",
        run.last_path, epoch, std::get<std::int64_t>(stopped_after->second), best, epoch);
  } else {
    spdlog::info("resumed from {} after epoch {} ({})", run.last_path, run.start_epoch, best);
  }
}

// Whether this run continues from last.pt: rank 0's --resume and rank 0 has one. Rank 0 decides
// for all (the other ranks need not see its disk, and a restarted node that cannot see it asks
// for --resume whatever rank 0 has), so every rank takes part in the decision.
bool resumes(const TrainingRun& run) {
  if (run.world.size() == 1) return run.config.resume && exists(run.last_path);
  const bool here = run.world.writes() && run.config.resume && exists(run.last_path);
  return run.world.min(run.world.writes() ? (here ? 1 : 0) : 1) == 1;
}

std::int64_t count_parameters(const std::vector<at::Tensor>& params) {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

// The rendezvous and the process group of a distributed run.
void connect(TrainingRun& run) {
  const TrainConfig& c = run.config;
  GroupOptions options;
  options.backend = c.dist_backend;
  options.rendezvous_seconds = c.rdzv_timeout;
  options.collective_seconds = c.dist_timeout;
  run.world = World(Collectives::connect(run.contract, options, run.device));
  spdlog::info("rank {} of {} (local rank {} of {}, node {}) on {}: {} process group via {}:{}",
               run.contract.rank, run.contract.world_size, run.contract.local_rank,
               run.contract.local_world_size, run.contract.group_rank, run.device.str(),
               run.world.group()->backend(), run.contract.master_addr, run.contract.master_port);
}

// last.json beside the resumed last.pt as rank 0 reads it, given to every rank (the other nodes
// need not see rank 0's disk); nullopt where it is absent, stale or malformed.
std::optional<CheckpointNote> shared_note(const TrainingRun& run) {
  std::string text;
  if (run.world.writes()) {
    if (const auto note = read_checkpoint_note(run.last_path)) {
      text = render_checkpoint_note(*note);
    } else {
      const std::string path = parent_directory(run.last_path) + "/" + kCheckpointNoteName;
      spdlog::warn(
          "--resume: {} {}: the global batch and learning rate are this start's, not the run's "
          "(--global-batch and --lr set them)",
          path,
          ::access(path.c_str(), F_OK) == 0
              ? "does not describe last.pt as it is (stale or damaged)"
              : "is not there");
    }
  }
  const std::vector<char> bytes =
      run.world.broadcast_from_first(std::vector<char>(text.begin(), text.end()));
  if (bytes.empty()) return std::nullopt;
  return parse_checkpoint_note(std::string(bytes.begin(), bytes.end()));
}

// What a resumed run keeps of its checkpoint's recipe (last.json), each part on its own: the
// global batch, unless --global-batch is given or this world cannot split it evenly (a warning
// then, naming the nearest that split), and the learning rate it trained at, unless --lr now
// differs from its --lr. `recipe_batch` is what the next last.json records: the recipe's batch,
// even while a world that cannot split it trains at another. What replaces a part of the recipe
// says so in a line.
struct KeptRecipe {
  std::int64_t global_batch = 0;  // 0: not kept
  double base_lr = 0;             // 0: not kept
  std::int64_t recipe_batch = 0;  // 0: this start's global batch
};

KeptRecipe kept_recipe(const TrainingRun& run) {
  const TrainConfig& c = run.config;
  KeptRecipe kept;
  if (!run.resumed_note) return kept;
  const CheckpointNote& note = *run.resumed_note;
  if (note.lr && note.base_lr) {
    if (*note.lr == c.lr) {
      kept.base_lr = *note.base_lr;
    } else {
      spdlog::info(
          "--resume: --lr {:g} replaces the checkpoint's learning rate {:g} (its --lr {:g})", c.lr,
          *note.base_lr, *note.lr);
    }
  }
  if (!note.global_batch) return kept;  // a note written before the recipe was recorded
  const std::int64_t g = *note.global_batch;
  if (c.global_batch > 0) {
    if (c.global_batch != g) {
      spdlog::info("--resume: --global-batch {} replaces the checkpoint's global batch {}",
                   c.global_batch, g);
    }
    return kept;
  }
  const std::int64_t w = run.world.size();
  if (g % w != 0) {
    const std::int64_t now = static_cast<std::int64_t>(run.batch_size) * w;
    const std::int64_t below = g / w * w;
    spdlog::warn(
        "--resume: the checkpoint's global batch {} does not split evenly over {} ranks; "
        "training goes on at {} ({} x {}){}: give --global-batch {} or {} to keep closer to it",
        g, w, now, run.batch_size, w,
        kept.base_lr > 0 ? fmt::format(" at its learning rate {:g}", kept.base_lr) : "",
        below > 0 ? below : below + w, below + w);
    kept.recipe_batch = g;
    return kept;
  }
  kept.global_batch = g;
  return kept;
}

// Every rank steps with the same batch (the smallest any rank was given: nodes planned apart may
// differ), and the learning rate follows --lr-scaling.
void agree_on_batch_and_lr(TrainingRun& run) {
  const TrainConfig& c = run.config;
  run.batch_size = static_cast<int>(run.world.min(c.batch_size));
  if (run.batch_size != c.batch_size) {
    spdlog::warn("batch {} lowered to {}, the smallest of any rank's", c.batch_size,
                 run.batch_size);
  }
  run.micro_batch = c.micro_batch;
  const KeptRecipe kept = kept_recipe(run);
  const std::int64_t global_batch = c.global_batch > 0 ? c.global_batch : kept.global_batch;
  run.recipe_global_batch = kept.recipe_batch;
  if (global_batch > 0) {
    // dl-launch hands over a rank's share as the batch size and its pieces as --micro-batch; on
    // its own, dl-train splits the same way, the batch size capping a piece.
    const std::int64_t cap = c.micro_batch > 0 && c.micro_batch < run.batch_size
                                 ? c.micro_batch
                                 : static_cast<std::int64_t>(run.batch_size);
    Accumulation a;
    try {
      a = split_global_batch(global_batch, run.world.size(), cap);
    } catch (const std::invalid_argument& e) {
      throw UserError(exit_code::kUsage,
                      "--global-batch " + std::to_string(global_batch) + ": " + e.what());
    }
    if (c.global_batch == 0) {
      spdlog::info(
          "--resume keeps the checkpoint's global batch {}: {} (batch size {} caps a "
          "micro-batch; --global-batch chooses another)",
          global_batch, describe(a, run.world.size()), run.batch_size);
    } else if (a.per_rank != run.batch_size) {
      spdlog::info("--global-batch {}: {} (batch size {} caps a micro-batch)", global_batch,
                   describe(a, run.world.size()), run.batch_size);
    }
    run.batch_size = static_cast<int>(a.per_rank);
    run.micro_batch = a.steps > 1 ? a.micro : 0;
  }
  const std::int64_t step_batch = static_cast<std::int64_t>(run.batch_size) * run.world.size();
  const LrScale scale =
      lr_scale(c.lr_scaling, step_batch, run.batch_size, global_batch > 0, c.reference_batch);
  run.base_lr = kept.base_lr > 0 ? kept.base_lr : c.lr * scale.factor;
  if (kept.base_lr > 0) {
    // The rule was applied when the run started; asked again now, it would give another rate.
    const double asked = c.lr * scale.factor;
    const bool differs = (c.lr_scaling != "none" || scale.reference_given) &&
                         std::abs(asked - kept.base_lr) > 1e-9 * kept.base_lr;
    spdlog::info("--resume keeps the checkpoint's learning rate {:g} (--lr {:g}, as then){}",
                 run.base_lr, c.lr,
                 differs ? fmt::format("; --lr-scaling {} would give {:g} at this start's batch: "
                                       "another --lr replaces the rate",
                                       c.lr_scaling, asked)
                         : "");
  } else if (c.lr_scaling == "none" && scale.reference_given) {
    spdlog::warn(
        "--reference-batch {} is not used: --lr-scaling none keeps --lr {:g} whatever the batch; "
        "expected --lr-scaling linear or sqrt with it",
        c.reference_batch, c.lr);
  } else if (scale.factor != 1 && run.world.size() == 1) {
    spdlog::info(
        "lr {:g}: --lr {:g} x {:.4g}, --lr-scaling {} from --reference-batch {} to the "
        "batch {}",
        run.base_lr, c.lr, scale.factor, c.lr_scaling, scale.reference, step_batch);
  }
  if (run.world.size() > 1) {
    spdlog::info("batch {} per rank x {} ranks = {} global; lr {:g} ({})", run.batch_size,
                 run.world.size(), step_batch, run.base_lr,
                 kept.base_lr > 0         ? "the checkpoint's"
                 : c.lr_scaling == "none" ? "--lr kept"
                 : scale.factor == 1
                     ? fmt::format("--lr kept: the global batch {} is the one --lr was tuned for",
                                   step_batch)
                     : fmt::format("--lr {:g} x {:.4g}, --lr-scaling {} from {} {}", c.lr,
                                   scale.factor, c.lr_scaling,
                                   scale.reference_given ? "--reference-batch" : "one rank's batch",
                                   scale.reference));
  }
}

// The training loader walks DistributedSampler's share of the data (the whole permutation in
// one process); validation is split between the ranks without padding.
void make_loaders(TrainingRun& run, int workers) {
  const TrainConfig& config = run.config;
  data::LoaderConfig train_cfg;
  train_cfg.allocate = run.feed->allocator();
  train_cfg.release = run.feed->releaser();
  train_cfg.batch_size = run.batch_size;
  train_cfg.workers = workers;
  train_cfg.shuffle = true;
  train_cfg.drop_last = true;
  train_cfg.seed = config.seed;
  train_cfg.transform = run.data.train_transform;
  ShardSpec shard;
  shard.world = run.world.size();
  shard.rank = run.world.rank();
  shard.seed = config.seed;
  const std::int64_t train_size = run.data.train->size();
  const std::vector<std::int64_t> shard_counts = run.data.train->shard_counts();
  if (shard_counts.empty()) {
    train_cfg.order = [train_size, shard](int epoch) {
      return distributed_indices(train_size, shard, epoch);
    };
  } else {
    // Shards are read shard by shard, as WebDataset reads them (shard_order.h).
    data::ShardOrderSpec spec;
    spec.world = shard.world;
    spec.rank = shard.rank;
    spec.seed = config.seed;
    spec.buffer = config.shuffle_buffer;
    train_cfg.order = [shard_counts, spec](int epoch) {
      return data::shard_epoch_indices(shard_counts, spec, epoch);
    };
  }
  run.train_loader = std::make_unique<data::Loader>(*run.data.train, train_cfg);
  data::LoaderConfig val_cfg = train_cfg;
  val_cfg.shuffle = false;
  val_cfg.drop_last = false;
  val_cfg.transform = run.data.eval_transform;
  val_cfg.order = nullptr;
  const std::vector<std::int64_t> val_counts = run.data.val->shard_counts();
  if (!val_counts.empty()) {
    data::ShardOrderSpec spec;
    spec.world = run.world.size();
    spec.rank = run.world.rank();
    spec.shuffle = false;
    spec.equal_shares = false;
    const auto mine = data::shard_epoch_indices(val_counts, spec, 0);
    val_cfg.order = [mine](int) { return mine; };
  } else if (run.world.size() > 1) {
    const auto mine = strided_indices(run.data.val->size(), run.world.size(), run.world.rank());
    val_cfg.order = [mine](int) { return mine; };
  }
  run.val_loader = std::make_unique<data::Loader>(*run.data.val, val_cfg);
}

// Rank 0's run directory: made, locked (one live run per name), train.log attached to the log,
// and the temporaries of interrupted checkpoint writes removed.
void open_run_dir(TrainingRun& run) {
  prepare_run_dir(run.config.run_dir);
  run.run_lock = lock_run_dir(run.config.run_dir);
  // Everything logged also goes to the run's train.log, each line flushed as it is logged and
  // before the terminal gets it: after a crash or a kill -9 the file holds every line printed.
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.insert(sinks.begin(), line_flushed_file_sink(run.config.run_dir + "/train.log"));
  remove_interrupted_writes(run);
}

// --resume from last.pt where there is one; else --init-from's weights, already in the model, or
// a refusal when --resume has nothing to start from.
void restore_or_start(TrainingRun& run, bool resuming) {
  if (resuming) {
    if (!run.config.init_from.empty()) {
      spdlog::info("--resume: continuing from {}; --init-from {} is not used", run.last_path,
                   run.config.init_from);
    }
    resume(run);
  } else if (run.config.resume && !run.config.init_from.empty()) {
    spdlog::info("--resume: no {} yet; started from --init-from {}", run.last_path,
                 run.config.init_from);
  } else if (run.config.resume && run.world.writes()) {
    resume(run);  // refuses with 66: no last.pt and nothing else to start from
  }
}

// Data-parallel training: the gradients averaged over the ranks in buckets, during or after
// backward.
void attach_distributed_step(TrainingRun& run) {
  BucketOptions buckets;
  buckets.bucket_bytes = static_cast<std::size_t>(run.config.bucket_mb * (1 << 20));
  buckets.first_bucket_bytes = std::min<std::size_t>(buckets.bucket_bytes, 1u << 20);
  buckets.overlap = run.config.overlap;
  run.dist_step = std::make_unique<DistributedStep>(
      *run.world.group(), run.params, buckets, stop_signal,
      [&run] { return run.checkpoint_due(run.global_step + 1); }, run.device);
  run.runner->set_sync(run.dist_step.get());
  spdlog::info("gradients averaged over {} ranks in {} bucket(s), {} backward", run.world.size(),
               run.dist_step->buckets().bucket_count(),
               run.config.overlap ? "reduced during" : "reduced after");
}

// Rank 0's TensorBoard events file and live report, and every rank's resource monitor.
void start_reporting(TrainingRun& run) {
  // TensorBoard's events file, made last: a run refused during setup leaves none behind.
  Monitor::FigureSink figures;
  if (run.world.writes()) {
    run.events = std::make_unique<report::EventFile>(DirFd::open(run.config.run_dir),
                                                     report::EventFile::now());
    std::string runs = std::filesystem::path(run.config.run_dir).lexically_normal().parent_path();
    if (runs.empty()) runs = ".";
    spdlog::info("tensorboard: scalars in {} (view: tensorboard --logdir {})", run.events->path(),
                 runs);
    run.report = std::make_unique<LiveReport>(run);
    spdlog::info("report: {} (rewritten at each epoch end)", run.report->path());
    figures = [&run](const MonitorFigures& f) {
      run.report->add_figures(f);
      try {
        run.events->add(monitor_scalars(f), run.global_step.load());
      } catch (const std::exception& e) {
        spdlog::warn("monitor: {}", e.what());  // the monitor's thread must not end the run
      }
    };
  }
  run.monitor = std::make_unique<Monitor>(
      run.config.monitor_every, [](const std::string& line) { spdlog::info("{}", line); },
      std::string(), std::move(figures));
}
}  // namespace

TrainingRun::TrainingRun(const TrainConfig& cfg)
    : config(cfg),
      contract(read_contract()),
      device(choose_device(cfg.device, contract.local_rank)),
      precision(resolve_precision(cfg.precision, cfg.precision_source, device)),
      last_path(cfg.run_dir + "/last.pt"),
      best_path(cfg.run_dir + "/best.pt") {
  // A backend named explicitly forms a process group even for one rank (as Python's
  // init_process_group does): the NCCL or Gloo path then runs on a single GPU or CPU too.
  if (contract.distributed() || config.dist_backend != "auto") connect(*this);
  // --init-from's file is read before anything is written, so a file that holds no weights leaves
  // no run directory behind. Every rank reads it (the same path on every node), as every rank
  // builds the model; with a last.pt to resume from it is not needed.
  const bool resuming = resumes(*this);
  model::WeightsFile init_weights;
  if (!config.init_from.empty() && !resuming) {
    init_weights = model::read_weights_file(config.init_from);
  }
  // A fresh start does not replace an earlier run's checkpoints (--resume continues it).
  if (world.writes() && !resuming && !config.resume && !config.overwrite) {
    refuse_overwrite(absolute_path(config.run_dir, current_directory()));
  }
  if (world.writes()) open_run_dir(*this);
  // A fresh start (--overwrite over an earlier run, or a run that never saved) begins its own
  // metrics.csv: rows of another run's epochs would read as this one's.
  if (world.writes() && !resuming) ::unlink((config.run_dir + "/metrics.csv").c_str());
  if (config.threads > 0) torch::set_num_threads(config.threads);
  if (device.is_cuda()) at::globalContext().setBenchmarkCuDNN(true);
  if (!precision.warning.empty()) spdlog::warn("precision: {}", precision.warning);

  if (resuming) resumed_note = shared_note(*this);
  data = setup_data(config);
  const data::ImageShape shape = data.train_transform.out;
  spdlog::info("data: {} ({} training, {} validation samples, {} classes, {}x{}x{})", data.location,
               data.train->size(), data.val->size(), data.train->num_classes(), shape.channels,
               shape.height, shape.width);
  agree_on_batch_and_lr(*this);

  const model::ModelSpec spec = model_spec(config, data);
  class_names = data.train->class_names();
  model_info = describe_model(spec, data);
  const ScalerOptions scaler_settings = scaler_options(config, precision.precision);
  feed = std::make_unique<DeviceFeed>(device, shape.channels, data.mean, data.std);
  workers = choose_workers_and_threads(config, data, spec, device, precision.precision,
                                       scaler_settings, *feed, &pipeline_costs);
  // After the measurement (whose scratch model drew random numbers): the model's initial weights
  // depend on the seed only.
  torch::manual_seed(config.seed);
  net = build_model(spec, device);
  if (!init_weights.tensors.empty()) {
    init_from_weights(*net, init_weights, config.init_from, world.writes());
  }
  init_weights = {};  // the model holds its own copies
  freeze_modules(*net, config.freeze, world.writes());
  params = net->parameters();
  // Every rank starts from rank 0's weights and buffers, as DDP does.
  std::vector<at::Tensor> state;
  for (const auto& [name, tensor] : net->state()) state.push_back(tensor);
  world.broadcast_from_first(state);
  optimizer = std::make_unique<torch::optim::AdamW>(params, adamw_options(config));
  scaler = std::make_unique<GradScaler>(scaler_settings, device);
  restore_or_start(*this, resuming);
  spdlog::info("model {} ({} parameters) on {}, {} threads, {} workers, batch {}, {} epochs",
               net->name(), count_parameters(params), device.str(), torch::get_num_threads(),
               workers, batch_size, config.epochs);
  spdlog::info("precision {} ({}){}", precision_name(precision.precision), precision.reason,
               scaler->enabled() ? fmt::format(", loss scale {:g}", scaler->current_scale()) : "");
  const MicroBatching micro(micro_batch < batch_size ? micro_batch : 0);
  if (micro.limit() > 0) {
    spdlog::info(
        "batch {} in {} micro-batches of at most {} (gradient accumulation, --micro-batch)",
        batch_size, micro.split(batch_size).size(), micro.limit());
  }
  runner = std::make_unique<StepRunner>(*net, *optimizer, params, *scaler, precision.precision,
                                        device, config.clip_norm, micro);
  // On a GPU the host's clock sees the time to queue the optimizer's work, not to run it: CUDA
  // events on the stream time the copy, compute and optimizer there.
  runner->set_timed(config.time_breakdown && !device.is_cuda());
  if (config.time_breakdown && device.is_cuda() && GpuPhaseClock::available()) {
    gpu_clock = std::make_unique<GpuPhaseClock>(device.has_index() ? device.index() : 0);
    runner->set_gpu_clock(gpu_clock.get());
  }
  if (world.group() != nullptr) attach_distributed_step(*this);
  make_loaders(*this, workers);
  if (world.writes() && config.checkpoint_every.enabled()) {
    spdlog::info("checkpoints: last.pt {} and at epoch ends (--checkpoint-every)",
                 config.checkpoint_every.describe());
  }

  start_reporting(*this);
  last_checkpoint = std::chrono::steady_clock::now();
  terminal = world.writes() && isatty(STDOUT_FILENO) != 0;
  batches_per_epoch = config.limit_batches > 0
                          ? std::min(config.limit_batches, train_loader->batches_per_epoch())
                          : train_loader->batches_per_epoch();
}

// The monitor's thread writes to `events` and reads `global_step`: it stops before either goes.
TrainingRun::~TrainingRun() {
  monitor.reset();
}

model::CheckpointData TrainingRun::snapshot(int epochs_done, double val_acc) const {
  model::CheckpointData c;
  for (const auto& [name, tensor] : net->state()) {
    // A copy on the CPU too (.cpu() alone would share a CPU tensor's storage).
    c.model_state.emplace_back(name, tensor.detach().to(torch::kCPU, /*non_blocking=*/false,
                                                        /*copy=*/true));
  }
  c.optimizer = model::export_adamw(*optimizer, params);
  c.scaler = scaler->state();
  c.epoch = epochs_done;
  c.val_acc = val_acc;
  c.extra["best_val_acc"] = best_val_acc;
  c.extra["global_step"] = static_cast<std::int64_t>(global_step);
  c.classes = class_names;
  c.model_info = model_info;
  return c;
}

bool TrainingRun::checkpoint_due(std::int64_t step) const {
  if (!world.writes()) return false;
  const double since =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last_checkpoint).count();
  return config.checkpoint_every.due(step, since);
}

void TrainingRun::save(const std::string& path, const model::CheckpointData& checkpoint) const {
  if (!world.writes()) return;
  try {
    model::save_checkpoint(path, checkpoint);
  } catch (const std::runtime_error& e) {
    throw UserError(exit_code::kCantWrite, e.what());
  }
  if (path != last_path) return;
  // last.json after last.pt, for dl-launch's restart line (checkpoint_note.h).
  CheckpointNote note;
  note.epochs_done = checkpoint.epoch;
  if (const auto it = checkpoint.extra.find("global_step"); it != checkpoint.extra.end()) {
    note.step = std::get<std::int64_t>(it->second);
  }
  if (const auto it = checkpoint.extra.find("position_batches"); it != checkpoint.extra.end()) {
    note.epoch_batches = std::get<std::int64_t>(it->second);
  }
  note.global_batch = recipe_global_batch > 0
                          ? recipe_global_batch
                          : static_cast<std::int64_t>(batch_size) * world.size();
  note.lr = config.lr;
  note.base_lr = base_lr;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  note.bytes = static_cast<std::int64_t>(st.st_size);
  write_file_atomic(parent_directory(path) + "/" + kCheckpointNoteName,
                    render_checkpoint_note(note));
}

}  // namespace dl::train
