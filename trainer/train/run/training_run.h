// One training run's state, set up in the order that keeps bad input cheap: device and precision
// first (a setting that cannot work leaves no run directory behind), the other ranks of a
// distributed run (the rendezvous), then the run directory and
// its log, the data, the measured workers and threads, the model, optimizer and loss scaler, the
// state of a resumed run, and the loaders. The loop (trainer.cpp) reads and advances it.
#pragma once

#include <c10/core/Device.h>
#include <torch/optim/adamw.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/checkpoint_note.h"
#include "core/run_lock.h"
#include "data/loader.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "report/event_file.h"
#include "train/amp/gpu_phase_clock.h"
#include "train/amp/grad_scaler.h"
#include "train/amp/precision.h"
#include "train/amp/train_step.h"
#include "train/dist/distributed_step.h"
#include "train/dist/world.h"
#include "train/monitor/confusion.h"
#include "train/monitor/live_report.h"
#include "train/monitor/monitor.h"
#include "train/monitor/time_breakdown.h"
#include "train/resume/checkpoint_writer.h"
#include "train/resume/epoch_position.h"
#include "train/run/config.h"
#include "train/run/data_setup.h"
#include "train/run/device_feed.h"
#include "train/run/pipeline_plan.h"

namespace dl::train {

struct TrainingRun {
  // Throws UserError for bad input: device, precision, data, model, run directory, --resume.
  explicit TrainingRun(const TrainConfig& config);
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  // The model, optimizer and scaler as a checkpoint after `epochs_done` epochs. The tensors are
  // copies: training may go on while the snapshot is written (CheckpointWriter).
  model::CheckpointData snapshot(int epochs_done, double val_acc) const;

  // Writes `checkpoint` to `path` atomically, in the process that writes (World::writes).
  // Throws UserError 73 when it cannot.
  void save(const std::string& path, const model::CheckpointData& checkpoint) const;

  // Whether --checkpoint-every wants last.pt after global step `step`, by this process's clock
  // (rank 0's decides: the others answer no, and the ranks agree on rank 0's answer).
  bool checkpoint_due(std::int64_t step) const;

  const TrainConfig& config;
  DistContract contract;  // the torchrun variables: rank 0 of 1 unless launched distributed
  c10::Device device;
  World world;
  PrecisionChoice precision;
  DataSetup data;
  std::unique_ptr<DeviceFeed> feed;
  std::unique_ptr<model::Model> net;
  std::vector<at::Tensor> params;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::unique_ptr<GradScaler> scaler;
  std::unique_ptr<DistributedStep> dist_step;  // several ranks: gradients averaged over them
  std::unique_ptr<StepRunner> runner;
  // On a GPU with the time breakdown on: the copy, compute and optimizer on CUDA events.
  std::unique_ptr<GpuPhaseClock> gpu_clock;
  std::unique_ptr<data::Loader> train_loader;
  std::unique_ptr<data::Loader> val_loader;
  std::unique_ptr<report::EventFile> events;  // rank 0's TensorBoard scalars
  std::unique_ptr<LiveReport> report;         // rank 0's report.html
  std::unique_ptr<Monitor> monitor;           // stopped first (~TrainingRun): it writes `events`
  int batch_size = 0;                         // per rank: the smallest --batch-size of any rank
  std::int64_t micro_batch = 0;        // --micro-batch, or --global-batch's pieces (0: whole)
  double base_lr = 0;                  // --lr, scaled by --lr-scaling over the ranks
  std::int64_t batches_per_epoch = 0;  // --limit-batches, or the loader's full epoch
  bool terminal = false;               // stdout is a terminal: a redrawn progress bar
  std::string last_path, best_path;
  std::optional<RunLock> run_lock;  // rank 0's: one live run per run directory
  CheckpointWriter writer;          // rank 0's checkpoints between epoch ends (--checkpoint-every)
  std::chrono::steady_clock::time_point last_checkpoint;  // last.pt last written, or the start

  // Where training stands: from the resumed checkpoint, then after each epoch.
  int start_epoch = 0;
  // A checkpoint written inside an epoch: where in start_epoch the resumed run goes on, with the
  // epoch's totals so far (the first epoch only).
  std::optional<EpochPosition> resume_position;
  std::int64_t resume_first_batch = 0;
  // last.json of the run resumed (rank 0's, shared with every rank): its recipe, the global batch
  // and learning rate, is kept unless --global-batch is given.
  std::optional<CheckpointNote> resumed_note;
  // The recipe's global batch where this world trains at another (one that cannot split it):
  // what last.json keeps recording. 0: the batch trained at.
  std::int64_t recipe_global_batch = 0;
  double best_val_acc = 0.0;
  double last_val_acc = 0.0;
  std::atomic<std::int64_t> global_step{0};  // also read by the monitor's thread
  // Nanoseconds the checkpoint writer's thread spent writing beside training (the time breakdown
  // counts them against the steps on a CPU, whose cores the write shares).
  std::atomic<std::int64_t> background_write_ns{0};
  TimeBreakdown time_total;                     // where the epochs' time went, over the run
  std::int64_t steps_total = 0;                 // the steps time_total holds
  std::atomic<int> background_writes{0};        // --checkpoint-every writes beside training
  int workers = 0;                              // the training loader's
  std::optional<PipelineCosts> pipeline_costs;  // the loader and the step timed at start
  std::int64_t skipped_total = 0;               // undecodable samples over all epochs
  data::SkipCounts skip_counts_total{};         // skipped_total, by reason

  // The classes in label order and what rebuilds the model: recorded in every checkpoint.
  std::vector<std::string> class_names;
  model::ModelInfo model_info;
  // The latest validation's confusion matrix over every rank (rows true, columns predicted).
  Confusion last_confusion;
};

}  // namespace dl::train
