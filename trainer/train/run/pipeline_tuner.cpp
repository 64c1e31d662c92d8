// Timing of loading and training steps for the worker/thread choice (see pipeline_tuner.h).
#include "train/run/pipeline_tuner.h"

#include <sched.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <vector>

#include "core/seconds_since.h"
#include "data/loader.h"
#include "train/amp/train_step.h"
#include "train/run/model_setup.h"

namespace dl::train {
namespace {

using Clock = std::chrono::steady_clock;

// Each measurement repeats until it has `most` samples or `budget` seconds, with one at least.
constexpr int kMostBatches = 6;
constexpr int kMostSteps = 3;
constexpr double kBudgetSeconds = 1.0;

}  // namespace

int usable_cores() {
  if (const char* v = std::getenv("DL_CORES")) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && n >= 1 && n <= 4096) return static_cast<int>(n);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

PipelineCosts measure_pipeline(const TuneSetup& setup, int cores,
                               const std::vector<int>& thread_counts) {
  PipelineCosts costs;
  costs.cores = cores;
  const TrainConfig& config = *setup.config;

  // Loading: the training loader's own batches of epoch 0, on this thread (0 workers), as the
  // training thread would load them. The first one warms the file cache and the buffers; the
  // timed ones are kept (their buffers are pooled, so a handful).
  data::LoaderConfig lc;
  lc.batch_size = config.batch_size;
  lc.workers = 0;
  lc.shuffle = true;
  lc.drop_last = false;
  lc.seed = config.seed;
  lc.transform = setup.transform;
  lc.allocate = setup.feed->allocator();
  lc.release = setup.feed->releaser();
  data::Loader loader(*setup.source, lc);
  loader.start_epoch(0);
  std::optional<data::Batch> first = loader.next();
  if (!first || first->n() == 0) return costs;
  std::vector<data::Batch> batches;
  const auto load_start = Clock::now();
  while (batches.size() < kMostBatches &&
         (batches.empty() || seconds_since(load_start) < kBudgetSeconds)) {
    std::optional<data::Batch> b = loader.next();
    if (!b) break;
    if (b->n() > 0) batches.push_back(std::move(*b));
  }
  if (batches.empty()) batches.push_back(std::move(*first));
  costs.load_seconds = seconds_since(load_start) / static_cast<double>(batches.size());

  // Host normalisation and upload, once per loaded batch; the steps then reuse the last one.
  at::Tensor images, labels;
  const std::size_t loaded = batches.size();
  const auto upload_start = Clock::now();
  for (data::Batch& b : batches) {
    setup.feed->upload(std::move(b), &images, &labels);
    (void)images.view({-1})[0].item<float>();  // waits for the device
  }
  const double upload_seconds = seconds_since(upload_start) / static_cast<double>(loaded);

  // The step: a scratch model with its own optimizer and scaler.
  const std::unique_ptr<model::Model> net = build_model(setup.spec, setup.device);
  net->set_training(true);
  std::vector<at::Tensor> params = net->parameters();
  torch::optim::AdamW opt(params, adamw_options(config));
  GradScaler scaler(setup.scaler, setup.device);
  StepRunner runner(*net, opt, params, scaler, setup.precision, setup.device, config.clip_norm);
  auto one_step = [&] {
    const StepResult r = runner.train(images, labels);
    (void)r.totals.loss_sum.item<double>();  // waits for the device
  };
  bool warm = false;
  for (int threads : thread_counts) {
    torch::set_num_threads(threads);
    if (!warm) one_step();  // first use: allocator, cuDNN's algorithm search, optimizer state
    warm = true;
    one_step();
    int steps = 0;
    const auto start = Clock::now();
    while (steps < kMostSteps && (steps == 0 || seconds_since(start) < kBudgetSeconds)) {
      one_step();
      ++steps;
    }
    costs.step_seconds[threads] = upload_seconds + seconds_since(start) / steps;
  }
  return costs;
}

}  // namespace dl::train
