// The training loop. Images arrive from the loader as uint8 and are converted and normalised on
// the device; the loss and accuracy are accumulated on the device and read back only at log points
// and epoch ends, so a GPU is never made to wait for the host inside an epoch (fp16's loss scaler
// reads one flag per step, as PyTorch's does). The step itself (precision, micro-batches,
// out-of-memory recovery) is train_step.*.
#include "train/trainer.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <optional>

#include "core/errors.h"
#include "core/files.h"
#include "core/text.h"
#include "data/loader.h"
#include "model/adamw_state.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "train/data_setup.h"
#include "train/device.h"
#include "train/device_feed.h"
#include "train/grad_scaler.h"
#include "train/metrics.h"
#include "train/model_setup.h"
#include "train/monitor.h"
#include "train/pipeline_plan.h"
#include "train/pipeline_tuner.h"
#include "train/precision.h"
#include "train/progress.h"
#include "train/train_step.h"

namespace dl::train {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_stop_signal{0};

void on_stop_signal(int sig) {
  g_stop_signal.store(sig);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
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

// The learning rate of CosineAnnealingLR(T_max = epochs, eta_min = 0) stepped once per epoch.
double cosine_lr(double base, int epoch_index, int epochs) {
  return base * 0.5 * (1.0 + std::cos(M_PI * epoch_index / epochs));
}

void set_lr(torch::optim::AdamW& opt, double lr) {
  for (auto& group : opt.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
}

struct Totals {
  double loss = 0, correct = 0;
  std::int64_t samples = 0;
};

// Runs the model over the validation set, under the training precision.
Totals evaluate(model::Model& net, StepRunner& runner, data::Loader& loader, DeviceFeed& feed,
                torch::Device device) {
  torch::NoGradGuard no_grad;
  net.set_training(false);
  loader.start_epoch(0);
  torch::Tensor loss_sum =
      torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  torch::Tensor correct =
      torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
  std::int64_t seen = 0;
  while (auto batch = loader.next()) {
    if (batch->n() == 0) continue;
    const std::int64_t n = batch->n();
    torch::Tensor images, labels;
    feed.upload(std::move(*batch), &images, &labels);
    const BatchTotals b = runner.evaluate(images, labels);
    loss_sum += b.loss_sum;
    correct += b.correct;
    seen += n;
  }
  Totals t;
  t.samples = seen;
  t.loss = seen > 0 ? loss_sum.item<double>() / static_cast<double>(seen) : 0.0;
  t.correct = static_cast<double>(correct.item<std::int64_t>());
  return t;
}

model::CheckpointData snapshot(model::Model& net, torch::optim::AdamW& opt,
                               const std::vector<torch::Tensor>& params, const GradScaler& scaler,
                               int epoch, double val_acc, double best_acc, std::int64_t step) {
  model::CheckpointData c;
  for (const auto& [name, tensor] : net.state())
    c.model_state.emplace_back(name, tensor.detach().cpu());
  c.optimizer = model::export_adamw(opt, params);
  c.scaler = scaler.state();
  c.epoch = epoch;
  c.val_acc = val_acc;
  c.extra["best_val_acc"] = best_acc;
  c.extra["global_step"] = static_cast<std::int64_t>(step);
  return c;
}

void save(const std::string& path, const model::CheckpointData& c) {
  try {
    model::save_checkpoint(path, c);
  } catch (const std::runtime_error& e) {
    throw UserError(exit_code::kCantWrite, e.what());
  }
}

// Workers and compute threads: the user's numbers where given, the rest measured (pipeline_plan.h).
// Sets LibTorch's thread count and returns the loader's worker count.
int choose_workers_and_threads(const TrainConfig& config, const DataSetup& d,
                               const model::ModelSpec& spec, const torch::Device& device,
                               Precision precision, const ScalerOptions& scaler, DeviceFeed& feed) {
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
      "predicted{} (measured in {:.1f} s)",
      describe_costs(costs), cores, choice.workers, choice.threads, 1e3 * choice.predicted_seconds,
      versus, seconds_since(start));
  return choice.workers;
}

}  // namespace

int run_training(const TrainConfig& config) {
  install_stop_handlers();
  // Device and precision first: a setting that cannot work here leaves no run directory behind.
  const torch::Device device = choose_device(config.device);
  const PrecisionChoice precision =
      resolve_precision(config.precision, config.precision_source, device);
  prepare_run_dir(config.run_dir);
  // Everything logged also goes to the run's train.log.
  spdlog::default_logger()->sinks().push_back(
      std::make_shared<spdlog::sinks::basic_file_sink_mt>(config.run_dir + "/train.log"));
  if (config.threads > 0) torch::set_num_threads(config.threads);
  if (device.is_cuda()) at::globalContext().setBenchmarkCuDNN(true);
  if (!precision.warning.empty()) spdlog::warn("precision: {}", precision.warning);

  DataSetup d = setup_data(config);
  const data::ImageShape shape = d.train_transform.out;
  const int classes = d.train->num_classes();
  spdlog::info("data: {} ({} training, {} validation samples, {} classes, {}x{}x{})", d.location,
               d.train->size(), d.val->size(), classes, shape.channels, shape.height, shape.width);

  const model::ModelSpec spec = model_spec(config, d);
  const ScalerOptions scaler_settings = scaler_options(config, precision.precision);
  DeviceFeed feed(device, shape.channels, d.mean, d.std);
  const int workers = choose_workers_and_threads(config, d, spec, device, precision.precision,
                                                 scaler_settings, feed);
  // After the measurement (whose scratch model drew random numbers): the model's initial weights
  // depend on the seed only.
  torch::manual_seed(config.seed);
  const std::unique_ptr<model::Model> net = build_model(spec, device);
  std::vector<torch::Tensor> params = net->parameters();
  torch::optim::AdamW opt(params, adamw_options(config));
  GradScaler scaler(scaler_settings, device);

  int start_epoch = 0;
  double best_acc = 0.0;
  double last_val_acc = 0.0;
  std::int64_t global_step = 0;
  const std::string last_path = config.run_dir + "/last.pt";
  const std::string best_path = config.run_dir + "/best.pt";
  if (config.resume) {
    if (access(last_path.c_str(), F_OK) != 0) {
      throw UserError(exit_code::kMissing, "--resume: " + last_path +
                                               " does not exist; expected the last checkpoint "
                                               "of this run (name the run with --name)");
    }
    model::CheckpointData c;
    try {
      c = model::load_checkpoint(last_path);
      net->load_state(c.model_state);
      model::import_adamw(opt, params, c.optimizer);
      // A run resumed in another precision keeps going: without saved scaler state (fp32 or
      // bf16 before) fp16 starts from the initial scale; scaler state is unused without fp16.
      if (scaler.enabled() && c.scaler.enabled) {
        scaler.load(c.scaler);
      } else if (scaler.enabled()) {
        spdlog::info("resume: {} has no loss-scaler state; starting the scale at {:g}", last_path,
                     config.loss_scale);
      }
    } catch (const std::exception& e) {
      throw UserError(exit_code::kBadData, std::string("--resume: ") + e.what());
    }
    start_epoch = static_cast<int>(c.epoch);
    last_val_acc = c.val_acc;
    if (auto it = c.extra.find("best_val_acc"); it != c.extra.end()) {
      best_acc = std::get<double>(it->second);
    }
    if (auto it = c.extra.find("global_step"); it != c.extra.end()) {
      global_step = std::get<std::int64_t>(it->second);
    }
    spdlog::info("resumed from {} after epoch {} (best val_acc {:.2f}%)", last_path, start_epoch,
                 100.0 * best_acc);
  }
  spdlog::info(
      "model {} ({} parameters) on {}, {} threads, {} workers, batch {}, {} epochs", net->name(),
      [&] {
        std::int64_t n = 0;
        for (const auto& p : params) n += p.numel();
        return n;
      }(),
      device.str(), torch::get_num_threads(), workers, config.batch_size, config.epochs);
  spdlog::info("precision {} ({}){}", precision_name(precision.precision), precision.reason,
               scaler.enabled() ? fmt::format(", loss scale {:g}", scaler.current_scale()) : "");
  StepRunner runner(*net, opt, params, scaler, precision.precision, device, config.clip_norm);

  data::LoaderConfig train_cfg;
  train_cfg.allocate = feed.allocator();
  train_cfg.release = feed.releaser();
  train_cfg.batch_size = config.batch_size;
  train_cfg.workers = workers;
  train_cfg.shuffle = true;
  train_cfg.drop_last = true;
  train_cfg.seed = config.seed;
  train_cfg.transform = d.train_transform;
  data::Loader train_loader(*d.train, train_cfg);
  data::LoaderConfig val_cfg = train_cfg;
  val_cfg.shuffle = false;
  val_cfg.drop_last = false;
  val_cfg.transform = d.eval_transform;
  data::Loader val_loader(*d.val, val_cfg);

  Monitor monitor(config.monitor_every, [](const std::string& line) { spdlog::info("{}", line); });
  const bool terminal = isatty(STDOUT_FILENO) != 0;
  const std::int64_t batches =
      config.limit_batches > 0 ? std::min(config.limit_batches, train_loader.batches_per_epoch())
                               : train_loader.batches_per_epoch();
  std::int64_t skipped_total = 0;

  for (int epoch = start_epoch; epoch < config.epochs; ++epoch) {
    const double lr = cosine_lr(config.lr, epoch, config.epochs);
    set_lr(opt, lr);
    net->set_training(true);
    train_loader.start_epoch(epoch);
    Progress progress(epoch + 1, config.epochs, batches, config.log_every, terminal);
    const auto epoch_start = Clock::now();
    double wait = 0.0;
    auto dev_double = torch::TensorOptions().dtype(torch::kDouble).device(device);
    torch::Tensor loss_sum = torch::zeros({}, dev_double);
    torch::Tensor correct =
        torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
    std::int64_t seen = 0, index = 0, skipped = 0, overflows = 0;
    while (true) {
      const auto t0 = Clock::now();
      auto batch = train_loader.next();
      wait += seconds_since(t0);
      if (!batch) break;
      skipped += batch->skipped();
      if (batch->n() == 0) continue;
      const std::int64_t n = batch->n();
      torch::Tensor images, labels;
      feed.upload(std::move(*batch), &images, &labels);
      const StepResult step = runner.train(images, labels);
      ++global_step;
      if (!step.stepped) ++overflows;
      loss_sum += step.totals.loss_sum;
      correct += step.totals.correct;
      seen += n;
      const bool report = terminal || (index + 1) % config.log_every == 0 || index + 1 == batches;
      if (report) {
        const double mean_loss = loss_sum.item<double>() / static_cast<double>(seen);
        if (!std::isfinite(mean_loss)) {
          spdlog::error(
              "loss became {} in epoch {} by batch {}; stopping. Last good checkpoint: {}",
              mean_loss, epoch + 1, index + 1,
              access(last_path.c_str(), F_OK) == 0 ? last_path : "none yet");
          return exit_code::kDiverged;
        }
        progress.update(
            index, mean_loss,
            static_cast<double>(correct.item<std::int64_t>()) / static_cast<double>(seen),
            static_cast<double>(seen) / seconds_since(epoch_start));
      }
      ++index;
      if (g_stop_signal.load() != 0 || index == batches) break;
    }
    progress.finish();
    if (const int sig = g_stop_signal.load(); sig != 0) {
      // Stopped mid-epoch (docker stop, Ctrl-C): the weights trained so far are saved, counted as
      // the last completed epoch, so a resume repeats this epoch from them and nothing is lost.
      const double loss_now = loss_sum.item<double>();
      if (std::isfinite(loss_now)) {
        auto ckpt = snapshot(*net, opt, params, scaler, epoch, last_val_acc, best_acc, global_step);
        ckpt.extra["interrupted_in_epoch"] = static_cast<std::int64_t>(epoch + 1);
        ckpt.extra["interrupted_after_batches"] = index;
        save(last_path, ckpt);
        spdlog::warn(
            "{} received in epoch {} after {} batches: saved {}; --resume repeats the "
            "epoch from there",
            strsignal(sig), epoch + 1, index, last_path);
      } else {
        spdlog::warn(
            "{} received in epoch {}, whose loss is {}: these weights are not saved; {} "
            "keeps the last good epoch",
            strsignal(sig), epoch + 1, loss_now, last_path);
      }
      return 128 + sig;
    }
    const double train_seconds = seconds_since(epoch_start);
    skipped_total += skipped;
    const double bad_fraction = static_cast<double>(skipped) /
                                static_cast<double>(std::max<std::int64_t>(1, seen + skipped));
    if (skipped > 0) {
      const auto bad = d.train->failures();
      std::string names;
      for (std::size_t i = 0; i < bad.size() && i < 5; ++i) names += (i ? ", " : "") + bad[i];
      if (bad.size() > 5) names += " and " + std::to_string(bad.size() - 5) + " more";
      spdlog::warn("{} sample(s) could not be decoded and were skipped this epoch ({:.2f}%){}{}",
                   skipped, 100.0 * bad_fraction, names.empty() ? "" : ": ", names);
    }
    if (bad_fraction > config.max_bad_fraction) {
      throw UserError(exit_code::kBadData,
                      "data " + d.location + ": " + std::to_string(skipped) + " of " +
                          std::to_string(seen + skipped) +
                          " samples could not be decoded, above --max-bad-fraction " +
                          format_number(config.max_bad_fraction));
    }

    const Totals val = evaluate(*net, runner, val_loader, feed, device);
    const double train_loss =
        loss_sum.item<double>() / static_cast<double>(std::max<std::int64_t>(1, seen));
    if (!std::isfinite(train_loss)) {
      spdlog::error("loss became {} in epoch {}; stopping. Last good checkpoint: {}", train_loss,
                    epoch + 1, access(last_path.c_str(), F_OK) == 0 ? last_path : "none yet");
      return exit_code::kDiverged;
    }
    const double seconds = seconds_since(epoch_start);
    EpochMetrics m;
    m.epoch = epoch + 1;
    m.train_loss = train_loss;
    m.train_acc = static_cast<double>(correct.item<std::int64_t>()) /
                  static_cast<double>(std::max<std::int64_t>(1, seen));
    m.val_loss = val.loss;
    m.val_acc = val.samples > 0 ? val.correct / static_cast<double>(val.samples) : 0.0;
    m.lr = lr;
    m.seconds = seconds;
    m.samples_per_second = static_cast<double>(seen) / train_seconds;
    m.data_wait_seconds = wait;
    m.data_wait_percent = 100.0 * wait / train_seconds;
    m.skipped = skipped;
    m.overflow_steps = overflows;
    last_val_acc = m.val_acc;

    const bool best = m.val_acc > best_acc || access(best_path.c_str(), F_OK) != 0;
    if (best) best_acc = std::max(best_acc, m.val_acc);
    const auto ckpt =
        snapshot(*net, opt, params, scaler, epoch + 1, m.val_acc, best_acc, global_step);
    save(last_path, ckpt);
    if (best) save(best_path, ckpt);
    append_metrics(config.run_dir + "/metrics.csv", m);
    // fp16 says how many steps the loss scaler skipped and where the scale stands.
    const std::string scaling = scaler.enabled()
                                    ? fmt::format(" | {} overflow step(s) skipped, loss scale {:g}",
                                                  overflows, scaler.current_scale())
                                    : "";
    spdlog::info(
        "epoch {}/{}: train loss {:.4f} acc {:.2f}% | val loss {:.4f} acc {:.2f}%{} | {:.1f} s, "
        "{:.0f} samples/s, data wait {:.2f} s ({:.1f}%) | lr {:.3g}{}",
        m.epoch, config.epochs, m.train_loss, 100.0 * m.train_acc, m.val_loss, 100.0 * m.val_acc,
        best ? " (best)" : "", m.seconds, m.samples_per_second, m.data_wait_seconds,
        m.data_wait_percent, lr, scaling);
  }
  if (skipped_total > 0) {
    spdlog::warn("{} undecodable sample(s) were skipped in all", skipped_total);
  }
  spdlog::info("done: validation accuracy {:.2f}% (best {:.2f}%); checkpoints {} and {}",
               100.0 * last_val_acc, 100.0 * best_acc, last_path, best_path);
  return exit_code::kOk;
}

}  // namespace dl::train
