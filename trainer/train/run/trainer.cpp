// The training loop, in the shape of pytorch/examples: per epoch, train (train_epoch), validate
// (validate), then finish the epoch (finish_epoch: the stop decisions, metrics, checkpoints, the
// epoch's line). Images arrive from the loader as uint8 and are converted and normalised on the
// device; the loss and accuracy are summed on the device and read back only at log points and
// epoch ends, so a GPU is never made to wait for the host inside an epoch (fp16's loss scaler
// reads one flag per step, as PyTorch's does). The setup is training_run.*, the step (precision,
// micro-batches, out-of-memory recovery) train_step.*.
#include "train/run/trainer.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/errors.h"
#include "core/files.h"
#include "core/seconds_since.h"
#include "core/text.h"
#include "core/workspace.h"
#include "data/packed_decode.h"
#include "data/random.h"
#include "data/skip_reason.h"
#include "train/monitor/confusion.h"
#include "train/monitor/metrics.h"
#include "train/monitor/prediction_counter.h"
#include "train/monitor/prescription.h"
#include "train/monitor/progress.h"
#include "train/monitor/scalars.h"
#include "train/resume/epoch_position.h"
#include "train/resume/stop_signal.h"
#include "train/run/pipeline_tuner.h"
#include "train/run/training_run.h"

namespace dl::train {
namespace {

using Clock = std::chrono::steady_clock;

// The learning rate of CosineAnnealingLR(T_max = epochs, eta_min = 0) stepped once per epoch.
double cosine_lr(double base, int epoch_index, int epochs) {
  return base * 0.5 * (1.0 + std::cos(M_PI * epoch_index / epochs));
}

void set_lr(torch::optim::AdamW& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
}

// A loss that is no longer finite ends the run (exit 80), naming the last good checkpoint.
void stop_if_diverged(const TrainingRun& run, double mean_loss, const std::string& where) {
  if (std::isfinite(mean_loss)) return;
  const bool saved = access(run.last_path.c_str(), F_OK) == 0;
  throw UserError(exit_code::kDiverged,
                  fmt::format("loss became {} in {}; stopping. Last good checkpoint: {}", mean_loss,
                              where, saved ? run.last_path : "none yet"));
}

// What one epoch of training did (a resumed epoch: its totals include those before the stop).
struct TrainedEpoch {
  BatchTotals totals;
  std::int64_t position = 0;         // the epoch's batches taken: the next one is `position`
  std::int64_t batches = 0;          // optimizer steps taken here (or skipped by the loss scaler)
  std::int64_t resumed_samples = 0;  // of totals.samples, those taken before a resume
  std::int64_t resumed_samples_all = 0;  // the same over every rank
  std::int64_t skipped = 0;              // samples that could not be decoded
  data::SkipCounts skip_counts{};        // skipped, by reason
  std::int64_t overflow_steps = 0;       // fp16: steps the loss scaler skipped (inf/NaN gradients)
  double data_wait_seconds = 0;          // waiting for the loader
  double step_seconds = 0;               // in the steps: upload, forward, backward, optimizer
  double comm_wait_seconds = 0;          // distributed: waiting for gradient buckets after backward
  TimeBreakdown time;                    // the loop's phases (time_breakdown.h); more at its end
  double seconds = 0;
  int stop_signal = 0;  // the signal that stopped the epoch early, 0 when it ran to its end
};

// The log point's figures in TensorBoard (rank 0): the progress line's numbers, and the loss
// scale (which reads the device, as the loss already did at this point).
void write_interval_scalars(TrainingRun& run, const TrainedEpoch& trained, double lr,
                            double elapsed) {
  IntervalFigures f;
  f.loss = trained.totals.mean_loss();
  f.accuracy = trained.totals.accuracy();
  f.lr = lr;
  f.samples_per_second =
      static_cast<double>(trained.totals.samples - trained.resumed_samples) / elapsed;
  f.data_wait_percent = 100.0 * trained.data_wait_seconds / elapsed;
  if (run.scaler->enabled()) f.loss_scale = run.scaler->current_scale();
  f.overflow_steps = trained.overflow_steps;
  run.events->add(interval_scalars(f), run.global_step);
}

// Each step's random numbers (dropout in a TorchScript model, say) come from (seed, step): a
// resumed run draws what an uninterrupted one draws, without generator states in checkpoints.
void seed_step(const TrainingRun& run) {
  torch::manual_seed(data::mix_seed(run.config.seed, static_cast<std::uint64_t>(run.global_step)));
}

// A copy of `totals` that a reduction over the ranks may change.
BatchTotals copy_of(const BatchTotals& totals) {
  BatchTotals copy;
  copy.loss_sum = totals.loss_sum.clone();
  copy.correct = totals.correct.clone();
  copy.samples = totals.samples;
  return copy;
}

// A resumed epoch starts where its checkpoint was written, with the totals so far (kept by rank 0
// alone: they are every rank's sum, and the epoch's end sums the ranks again).
void resume_inside_epoch(TrainingRun& run, int epoch, TrainedEpoch& trained) {
  if (!run.resume_position || run.resume_position->epoch != epoch) return;
  const EpochPosition& p = *run.resume_position;
  trained.position = std::min(run.resume_first_batch, run.batches_per_epoch);
  if (run.world.rank() == 0) {
    trained.totals.loss_sum += p.loss_sum;
    trained.totals.correct += p.correct;
    trained.totals.samples = p.samples;
    trained.resumed_samples = p.samples;
    trained.skip_counts = p.skipped;
    for (const std::int64_t k : p.skipped) trained.skipped += k;
  }
  trained.resumed_samples_all = p.samples;
  trained.overflow_steps = p.overflow_steps;
  run.resume_position.reset();
}

// last.pt inside epoch `epoch` after `trained.position` of its batches, with the epoch's totals so
// far over every rank. Every rank calls it after the same step (they agreed on it); rank 0 writes.
// In the background (the clock), training goes on once the state is copied; otherwise (a stop)
// the file is written before this returns. Returns false when the loss is no longer finite: such
// weights are not saved.
bool save_inside_epoch(TrainingRun& run, int epoch, const TrainedEpoch& trained, bool background) {
  const auto start = Clock::now();
  BatchTotals totals = copy_of(trained.totals);
  run.world.reduce(totals);
  EpochPosition p;
  p.epoch = epoch;
  p.batches = trained.position;
  p.global_batch = static_cast<std::int64_t>(run.batch_size) * run.world.size();
  p.loss_sum = totals.loss_sum.item<double>();
  p.correct = totals.correct.item<std::int64_t>();
  p.samples = totals.samples;
  p.overflow_steps = trained.overflow_steps;
  for (std::size_t r = 0; r < data::kSkipReasons; ++r) {
    p.skipped[r] = run.world.sum(trained.skip_counts[r]);
  }
  if (!std::isfinite(p.loss_sum)) return false;
  if (!run.world.writes()) return true;
  model::CheckpointData checkpoint = run.snapshot(epoch, run.last_val_acc);
  put_position(checkpoint.extra, p);
  if (trained.stop_signal != 0) {
    checkpoint.extra["interrupted_in_epoch"] = static_cast<std::int64_t>(epoch + 1);
    checkpoint.extra["interrupted_after_batches"] = trained.position;
  }
  run.last_checkpoint = Clock::now();
  if (!background) {
    run.writer.wait();  // an earlier write must not land after this one
    run.save(run.last_path, checkpoint);
    return true;
  }
  const double copy_seconds = seconds_since(start);
  const std::string where =
      fmt::format("step {} (epoch {}, batch {} of {})", run.global_step.load(), epoch + 1,
                  trained.position, run.batches_per_epoch);
  run.writer.start([&run, checkpoint = std::move(checkpoint), copy_seconds, where] {
    const auto writing = Clock::now();
    run.save(run.last_path, checkpoint);
    ++run.background_writes;
    run.background_write_ns +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - writing).count();
    spdlog::info(
        "checkpoint: {} at {}: training waited {:.0f} ms for the copy, the write took "
        "{:.2f} s beside it",
        run.last_path, where, 1e3 * copy_seconds, seconds_since(writing));
  });
  // One write at a time: a write still going when the next is due holds the step.
  if (run.writer.last_wait_seconds() > 0.1) {
    spdlog::warn(
        "checkpoint at {}: training also waited {:.2f} s for the previous write to end "
        "(checkpoints {} come faster than one is written: --checkpoint-every)",
        where, run.writer.last_wait_seconds(), run.config.checkpoint_every.describe());
  }
  return true;
}

// A --checkpoint-every write inside the epoch: the time training was held (the state's copy,
// a previous write still going) counts as checkpoint time, not as the step's.
void checkpoint_inside_epoch(TrainingRun& run, int epoch, TrainedEpoch& trained) {
  const auto start = Clock::now();
  save_inside_epoch(run, epoch, trained, /*background=*/true);
  trained.time[Phase::kCheckpoint] += seconds_since(start);
}

TrainedEpoch train_epoch(TrainingRun& run, int epoch, double lr) {
  const TrainConfig& config = run.config;
  run.net->set_training(true);
  TrainedEpoch trained;
  trained.totals = BatchTotals::zeros(run.device);
  resume_inside_epoch(run, epoch, trained);
  run.train_loader->start_epoch(epoch, trained.position);
  Progress progress(epoch + 1, config.epochs, run.batches_per_epoch, config.log_every,
                    run.terminal);
  // One process stops when it is asked to; the ranks of a distributed run stop at the step after
  // which they agreed to (StepResult::stop_signal), so that none waits on a collective.
  const bool alone = run.world.size() == 1;
  const bool copy_timed = config.time_breakdown && !run.device.is_cuda();
  const std::int64_t written_before = run.background_write_ns;
  const double comm_before = run.dist_step ? run.dist_step->wait_seconds() : 0.0;
  const auto start = Clock::now();
  while ((!alone || stop_signal() == 0) && trained.stop_signal == 0 &&
         trained.position < run.batches_per_epoch) {
    const auto waiting = Clock::now();
    auto batch = run.train_loader->next();
    trained.data_wait_seconds += seconds_since(waiting);
    if (!batch) break;
    trained.position = batch->index() + 1;
    trained.skipped += batch->skipped();
    data::add(trained.skip_counts, batch->skip_counts());
    // A batch none of whose samples decoded: one process skips it; a rank steps all the same,
    // contributing no gradient, because the others wait for its share.
    if (batch->n() == 0 && alone) continue;
    const auto stepping = Clock::now();
    at::Tensor images, labels;
    if (run.gpu_clock) run.gpu_clock->mark(StepMark::kStart);
    run.feed->upload(std::move(*batch), &images, &labels);
    if (run.gpu_clock) run.gpu_clock->mark(StepMark::kCopied);
    if (copy_timed) trained.time[Phase::kCopy] += seconds_since(stepping);
    seed_step(run);
    const StepResult step = run.runner->train(images, labels);
    trained.step_seconds += seconds_since(stepping);
    trained.time[Phase::kOptimizer] += step.optimizer_seconds;
    trained.stop_signal = step.stop_signal;
    ++run.global_step;
    ++trained.batches;
    if (!step.stepped) ++trained.overflow_steps;
    trained.totals += step.totals;
    const bool last = trained.position == run.batches_per_epoch;
    if (run.terminal || trained.position % config.log_every == 0 || last) {
      const double mean_loss = trained.totals.mean_loss();
      stop_if_diverged(run, mean_loss,
                       fmt::format("epoch {} by batch {}", epoch + 1, trained.position));
      progress.update(trained.position - 1, mean_loss, trained.totals.accuracy(),
                      static_cast<double>(trained.totals.samples - trained.resumed_samples) /
                          seconds_since(start));
      // A terminal redraws every batch; TensorBoard gets the log points only.
      if (run.events && (trained.position % config.log_every == 0 || last)) {
        write_interval_scalars(run, trained, lr, seconds_since(start));
      }
    }
    // --checkpoint-every, agreed by the ranks; the epoch's end (or a stop) writes its own.
    const bool due = alone ? run.checkpoint_due(run.global_step) : step.checkpoint;
    if (due && !last && trained.stop_signal == 0 && (!alone || stop_signal() == 0)) {
      checkpoint_inside_epoch(run, epoch, trained);
    }
  }
  progress.finish();
  if (alone) trained.stop_signal = stop_signal();
  if (run.dist_step) trained.comm_wait_seconds = run.dist_step->wait_seconds() - comm_before;
  trained.seconds = seconds_since(start);
  // Forward and backward: the steps less their copy, optimizer and exchange wait. On a GPU the
  // host's clock sees only their queueing: the steps' time less the exchange wait is split as
  // the CUDA events saw the stream spend it (take() waits for the last step: the epoch's totals
  // are read back next anyway).
  TimeBreakdown& t = trained.time;
  t[Phase::kData] = trained.data_wait_seconds;
  t[Phase::kExchange] = trained.comm_wait_seconds;
  if (run.gpu_clock) {
    const StepSplit split =
        split_step_seconds(trained.step_seconds - t[Phase::kExchange], run.gpu_clock->take());
    t[Phase::kCopy] = split.copy;
    t[Phase::kOptimizer] = split.optimizer;
  }
  t[Phase::kCompute] = std::max(
      0.0, trained.step_seconds - t[Phase::kCopy] - t[Phase::kOptimizer] - t[Phase::kExchange]);
  // On the CPU a write beside training takes cores from the steps (on a GPU it takes none from
  // the device): its time counts as the checkpoint's, out of compute. Measured with 2 cores,
  // resnet18 and last.pt every 2 steps: 68 -> 47 samples/s, of which the held time showed 2%.
  if (!run.device.is_cuda()) {
    const double beside = 1e-9 * static_cast<double>(run.background_write_ns - written_before);
    const double taken = std::min(beside, t[Phase::kCompute]);
    t[Phase::kCheckpoint] += taken;
    t[Phase::kCompute] -= taken;
  }
  return trained;
}

// Stopped mid-epoch (docker stop, Ctrl-C, a preemption notice, scancel): the state after the
// step in progress is saved with its position, so --resume goes on at the next sample and
// nothing is lost or repeated.
int stop_mid_epoch(TrainingRun& run, int epoch, const TrainedEpoch& trained) {
  const char* signal_name = strsignal(trained.stop_signal);
  const auto start = Clock::now();
  const bool saved = save_inside_epoch(run, epoch, trained, /*background=*/false);
  if (!run.world.writes()) {
    spdlog::warn("{} received in epoch {} after {} batches: rank 0 saves {}", signal_name,
                 epoch + 1, trained.position, run.last_path);
  } else if (saved) {
    spdlog::warn(
        "{} received in epoch {} after {} of {} batches (step {}): saved {} in {:.2f} s; "
        "--resume goes on at the next batch",
        signal_name, epoch + 1, trained.position, run.batches_per_epoch, run.global_step.load(),
        run.last_path, seconds_since(start));
  } else {
    spdlog::warn(
        "{} received in epoch {}, whose loss is no longer finite: these weights are not saved; "
        "{} keeps the last good state",
        signal_name, epoch + 1, run.last_path);
  }
  return 128 + trained.stop_signal;
}

// Names the samples that could not be decoded this epoch, grouped by reason, and ends the run
// (exit 65) when they are more than --max-bad-fraction of it.
// In a distributed run the counts are every rank's, so that all ranks decide alike; the files named
// are this rank's.
void check_decode_failures(TrainingRun& run, const TrainedEpoch& trained) {
  const std::int64_t skipped = run.world.sum(trained.skipped);
  if (skipped == 0) return;
  data::SkipCounts counts{};
  for (std::size_t r = 0; r < data::kSkipReasons; ++r) {
    counts[r] = run.world.sum(trained.skip_counts[r]);
  }
  run.skipped_total += skipped;
  data::add(run.skip_counts_total, counts);
  const std::int64_t seen = run.world.sum(trained.totals.samples) + skipped;
  const double bad_fraction = static_cast<double>(skipped) / static_cast<double>(seen);
  const std::string why = data::describe_skips(counts, run.data.train->failures());
  spdlog::warn("{} sample(s) could not be decoded and were skipped this epoch ({:.2f}%): {}",
               skipped, 100.0 * bad_fraction, why);
  if (bad_fraction > run.config.max_bad_fraction) {
    throw UserError(exit_code::kBadData,
                    "data " + run.data.location + ": " + std::to_string(skipped) + " of " +
                        std::to_string(seen) +
                        " samples could not be decoded, above --max-bad-fraction " +
                        format_number(run.config.max_bad_fraction) + " (" +
                        data::describe_skips(counts, {}) + ")");
  }
}

// The model over the validation set, under the training precision.
BatchTotals validate(TrainingRun& run) {
  torch::NoGradGuard no_grad;
  run.net->set_training(false);
  run.val_loader->start_epoch(0);
  BatchTotals totals = BatchTotals::zeros(run.device);
  PredictionCounter counter(static_cast<int>(run.class_names.size()), run.device);
  data::SkipCounts skipped{};
  while (auto batch = run.val_loader->next()) {
    data::add(skipped, batch->skip_counts());
    if (batch->n() == 0) continue;
    at::Tensor images, labels, logits;
    run.feed->upload(std::move(*batch), &images, &labels);
    totals += run.runner->evaluate(images, labels, &logits);
    counter.add(logits, labels);
  }
  run.last_confusion = counter.read(run.world.group());
  if (run.world.writes()) write_confusion(run.config.run_dir, run.last_confusion, run.class_names);
  // Skipped validation samples do not count against --max-bad-fraction (they cost no training),
  // but a validation score over fewer samples is worth a line.
  std::int64_t skipped_here = 0;
  for (const std::int64_t k : skipped) skipped_here += k;
  const std::int64_t skipped_all = run.world.sum(skipped_here);
  if (skipped_all > 0) {
    for (std::size_t r = 0; r < data::kSkipReasons; ++r) skipped[r] = run.world.sum(skipped[r]);
    spdlog::warn("{} validation sample(s) could not be decoded and were skipped: {}", skipped_all,
                 data::describe_skips(skipped, run.data.val->failures()));
  }
  return totals;
}

// The epoch's totals over every process, the divergence check, metrics.csv, last.pt (and best.pt
// when validation improved), and the epoch's line.
void finish_epoch(TrainingRun& run, int epoch, double lr, TrainedEpoch& trained, BatchTotals& val,
                  Clock::time_point epoch_start) {
  run.world.reduce(trained.totals);
  run.world.reduce(val);
  const double train_loss = trained.totals.mean_loss();
  stop_if_diverged(run, train_loss, fmt::format("epoch {}", epoch + 1));

  EpochMetrics m;
  m.epoch = epoch + 1;
  m.train_loss = train_loss;
  m.train_acc = trained.totals.accuracy();
  m.val_loss = val.mean_loss();
  m.val_acc = val.accuracy();
  m.lr = lr;
  m.samples_per_second =
      static_cast<double>(trained.totals.samples - trained.resumed_samples_all) / trained.seconds;
  m.data_wait_seconds = trained.data_wait_seconds;
  m.data_wait_percent = 100.0 * trained.data_wait_seconds / trained.seconds;
  m.skipped = trained.skipped;
  m.overflow_steps = trained.overflow_steps;
  run.last_val_acc = m.val_acc;

  const bool best = m.val_acc > run.best_val_acc || access(run.best_path.c_str(), F_OK) != 0;
  if (best) run.best_val_acc = std::max(run.best_val_acc, m.val_acc);
  // best.pt before last.pt: last.pt records this epoch's accuracy as the best so far, so a run
  // killed between the two writes must not resume from it with an older best.pt (the best
  // weights would never be written). Killed before last.pt is written, --resume repeats this
  // epoch and writes both again.
  const auto saving = Clock::now();
  const model::CheckpointData checkpoint = run.snapshot(epoch + 1, m.val_acc);
  run.writer.wait();  // a clock checkpoint still being written must not land after these
  if (best) run.save(run.best_path, checkpoint);
  run.save(run.last_path, checkpoint);
  run.last_checkpoint = Clock::now();
  // The epoch's time, its end's checkpoints included; what no phase holds is "other".
  trained.time[Phase::kCheckpoint] += seconds_since(saving);
  m.seconds = seconds_since(epoch_start);
  trained.time[Phase::kOther] = 0;
  trained.time[Phase::kOther] = std::max(0.0, m.seconds - trained.time.total());
  m.time = trained.time;
  run.time_total += trained.time;
  run.steps_total += trained.batches;
  if (run.world.writes()) append_metrics(run.config.run_dir + "/metrics.csv", m);
  if (run.events) run.events->add(epoch_scalars(m), run.global_step);
  if (run.report) {
    run.report->set_confusion(run.class_names, run.last_confusion.counts());
    run.report->epoch_done(run, m);
  }

  // fp16 says how many steps the loss scaler skipped and where the scale stands.
  const std::string scaling = run.scaler->enabled()
                                  ? fmt::format(" | {} overflow step(s) skipped, loss scale {:g}",
                                                trained.overflow_steps, run.scaler->current_scale())
                                  : "";
  spdlog::info(
      "epoch {}/{}: train loss {:.4f} acc {:.2f}% | val loss {:.4f} acc {:.2f}%{} | {:.1f} s, "
      "{:.0f} samples/s, data wait {:.2f} s ({:.1f}%) | lr {:.3g}{}",
      m.epoch, run.config.epochs, m.train_loss, 100.0 * m.train_acc, m.val_loss, 100.0 * m.val_acc,
      best ? " (best)" : "", m.seconds, m.samples_per_second, m.data_wait_seconds,
      m.data_wait_percent, lr, scaling);
  // Where the steps' time went; with several ranks, how much of it was spent waiting for the
  // gradient buckets after backward (communication that overlap did not hide).
  if (trained.batches > 0) {
    const double per_step = 1e3 * trained.step_seconds / static_cast<double>(trained.batches);
    const double comm = 1e3 * trained.comm_wait_seconds / static_cast<double>(trained.batches);
    spdlog::info("epoch {} steps: {} x {:.1f} ms, communication wait {:.1f} ms ({:.1f}%)", m.epoch,
                 trained.batches, per_step, comm, per_step > 0 ? 100.0 * comm / per_step : 0.0);
  }
  spdlog::info("epoch {} time: {} ({})", m.epoch, shares_line(m.time), verdict(m.time).name);
}

// Where the run's time went (time_breakdown.h), what bounds it, and what the measurements say
// would help (prescription.h): a table, the verdict line, a line a prescription. A data-bound
// run's own files are timed as stored and as `pack --max-side` would store them (rank 0 only,
// 16 files, a fraction of a second on photos).
void report_time(const TrainingRun& run, int epochs) {
  const Verdict v = verdict(run.time_total);
  spdlog::info("where the time went (this process{}):\n{}",
               run.world.size() > 1 ? ", rank " + std::to_string(run.world.rank()) : "",
               breakdown_table(run.time_total));
  spdlog::info("{}", v.line);
  // The start's prediction (pipeline_plan.h) against the batches as they ran: the loader's wait
  // and the steps, without checkpoints, validation and the rest.
  const TimeBreakdown& spent = run.time_total;
  if (run.pipeline_costs && run.steps_total > 0 &&
      run.pipeline_costs->step_seconds.count(torch::get_num_threads()) != 0) {
    const int threads = torch::get_num_threads();
    const double fed = spent[Phase::kData] + spent[Phase::kCopy] + spent[Phase::kCompute] +
                       spent[Phase::kOptimizer] + spent[Phase::kExchange];
    const double actual = fed / static_cast<double>(run.steps_total);
    const double predicted = predict_batch_seconds(*run.pipeline_costs, run.workers, threads);
    spdlog::info(
        "the start predicted {:.1f} ms a batch, {} bound; the batches took {:.1f} ms ({:+.0f}%), "
        "{} bound",
        1e3 * predicted, predicted_bound(*run.pipeline_costs, run.workers, threads), 1e3 * actual,
        100.0 * (actual / predicted - 1.0),
        spent[Phase::kData] >= kBoundShare * fed ? "the loader" : "the steps");
  }
  if (!run.world.writes()) return;
  RunFigures f;
  f.time = run.time_total;
  f.workers = run.workers;
  f.threads = torch::get_num_threads();
  f.cores = usable_cores();
  if (run.pipeline_costs) f.step_seconds = run.pipeline_costs->step_seconds;
  f.data = run.config.data;
  const int writes = run.background_writes;
  f.checkpoint_writes = writes;
  f.checkpoint_write_seconds =
      writes > 0 ? 1e-9 * static_cast<double>(run.background_write_ns) / writes : 0.0;
  f.val_samples = static_cast<double>(run.data.val->size());
  f.epochs = epochs;
  if (v.bound == Phase::kData) {
    const data::Transform& t = run.data.train_transform;
    f.packed = data::time_packed_decode(*run.data.train, t, run.config.max_image_pixels,
                                        data::pack_side_for(t.out), 16);
  }
  for (const std::string& line : prescribe(f, v)) spdlog::info("  -> {}", line);
}

// The epochs, from the first not yet done; returns the exit code.
int train_epochs(TrainingRun& run) {
  const TrainConfig& config = run.config;
  for (int epoch = run.start_epoch; epoch < config.epochs; ++epoch) {
    const double lr = cosine_lr(run.base_lr, epoch, config.epochs);
    set_lr(*run.optimizer, lr);
    const auto epoch_start = Clock::now();
    TrainedEpoch trained = train_epoch(run, epoch, lr);
    if (trained.stop_signal != 0) {
      const int code = stop_mid_epoch(run, epoch, trained);
      if (run.report) {
        run.report->finish(report::RunState::kStopped,
                           fmt::format("{} received in epoch {}; --resume continues the run",
                                       strsignal(trained.stop_signal), epoch + 1));
      }
      return code;
    }
    check_decode_failures(run, trained);
    const auto validating = Clock::now();
    BatchTotals val = validate(run);
    trained.time[Phase::kEval] = seconds_since(validating);
    finish_epoch(run, epoch, lr, trained, val, epoch_start);
  }
  if (run.time_total.total() > 0) report_time(run, config.epochs - run.start_epoch);
  if (run.skipped_total > 0) {
    spdlog::warn("{} training sample(s) were skipped in all: {}", run.skipped_total,
                 data::describe_skips(run.skip_counts_total, run.data.train->failures()));
  }
  spdlog::info("done: validation accuracy {:.2f}% (best {:.2f}%); checkpoints {} and {}{}",
               100.0 * run.last_val_acc, 100.0 * run.best_val_acc, run.last_path, run.best_path,
               run.world.writes() ? "" : " (written by rank 0)");
  if (run.report) {
    run.report->finish(report::RunState::kFinished,
                       fmt::format("done: validation accuracy {:.2f}% (best {:.2f}%)",
                                   100.0 * run.last_val_acc, 100.0 * run.best_val_acc));
  }
  return exit_code::kOk;
}

// A run directory this process made for a run whose setup refused its input (a bad data set, a
// model that does not fit) leaves with it: a refused start writes nothing (workspace.h). Started
// by dl-launch, the directory is the launcher's, which does the same.
std::unique_ptr<TrainingRun> set_up(const TrainConfig& config) {
  struct stat st {};
  const bool fresh = lstat(config.run_dir.c_str(), &st) != 0;
  try {
    return std::make_unique<TrainingRun>(config);
  } catch (const UserError& e) {
    if (fresh && e.code() >= 64 && e.code() <= 79) {
      const std::string parent = parent_directory(config.run_dir);
      const int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd >= 0) {
        remove_refused_run_dir(fd, config.run_dir.substr(config.run_dir.rfind('/') + 1));
        ::close(fd);
      }
    }
    throw;
  }
}

}  // namespace

int run_training(const TrainConfig& config) {
  install_stop_handlers();
  const std::unique_ptr<TrainingRun> owned = set_up(config);
  TrainingRun& run = *owned;
  try {
    return train_epochs(run);
  } catch (const std::exception& e) {
    // The page says how the run ended; the error itself is reported by the caller.
    if (run.report) run.report->finish(report::RunState::kFailed, e.what());
    throw;
  }
}

}  // namespace dl::train
