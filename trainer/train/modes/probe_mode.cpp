// The memory probe. It runs what a training step really allocates (the uint8 batch on its way to
// the device, the forward pass with its saved activations, the backward pass, gradient clipping,
// AdamW's step with its two state tensors per parameter, then a validation forward without
// gradients) so that the peak it reports is the peak training will reach, and nothing else
// (no loader threads, no run directory, no checkpoints).
#include "train/modes/probe_mode.h"

#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>

// Only where trainer/CMakeLists.txt found that CUDA's headers compile and link (a CUDA build of
// LibTorch); the CPU build compiles the same file without them.
#if defined(DL_HAVE_C10_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "core/errors.h"
#include "core/json.h"
#include "core/settings.h"
#include "core/step_timing.h"
#include "core/text.h"
#include "data/batch.h"
#include "data/buffer_pool.h"
#include "model/model.h"
#include "train/amp/grad_scaler.h"
#include "train/amp/oom.h"
#include "train/amp/precision.h"
#include "train/amp/train_step.h"
#include "train/run/data_setup.h"
#include "train/run/device.h"
#include "train/run/device_feed.h"
#include "train/run/model_setup.h"

namespace dl::train {
namespace {

using Clock = std::chrono::steady_clock;

// The process's peak resident memory (VmHWM): on the CPU, the memory training takes is the
// process's, model, optimizer state, activations, data set and LibTorch's own code together.
std::uint64_t peak_resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    std::uint64_t kib = 0;
    fields >> kib;
    return kib * 1024;
  }
  return 0;
}

// Peak memory on the probe's device; sets `error` when it cannot be known.
std::uint64_t peak_bytes(const torch::Device& device, std::string* error) {
  if (!device.is_cuda()) return peak_resident_bytes();
#if defined(DL_HAVE_C10_CUDA)
  (void)error;  // the CUDA build always knows
  // Reserved, not allocated: what the caching allocator took from the device, fragmentation
  // included, is what other allocations compete with. Index 0 is StatType::AGGREGATE (all pools)
  // in every LibTorch version, whose spelling of the enum's scope has changed.
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  return static_cast<std::uint64_t>(stats.reserved_bytes[0].peak);
#else
  *error =
      "peak GPU memory unknown: this dl-train was built without the CUDA caching allocator's "
      "header (c10/cuda/CUDACachingAllocator.h)";
  return 0;
#endif
}

// A batch of random uint8 images and labels, in a buffer from the pool the device feed supplies
// (pinned host memory on CUDA), as the loader would hand it over.
data::Batch synthetic_batch(const std::shared_ptr<data::BufferPool>& pool, data::ImageShape shape,
                            std::int64_t n, int classes) {
  data::Batch batch(pool->acquire(), shape, n);
  const auto bytes = static_cast<std::int64_t>(shape.bytes());
  torch::from_blob(batch.images(), {n * bytes}, torch::kUInt8).random_(0, 256);
  torch::from_blob(batch.labels(), {n}, torch::kLong).random_(0, classes);
  batch.set_counts(n, {}, 0);
  return batch;
}

struct Run {
  const TrainConfig& config;
  torch::Device device;
  Precision precision;
  model::Model& net;
  DeviceFeed& feed;
  std::shared_ptr<data::BufferPool> pool;
  data::ImageShape shape;
  int classes;
};

// The steps, as the trainer's StepRunner takes them on a whole batch (forward under autocast, the
// loss in fp32, loss scaling for fp16, unscale, clip, step) but without its recovery: an
// out-of-memory here must reach the report, not be retried in micro-batches. Throws whatever
// LibTorch throws. Returns the timing of the steps (core/step_timing.h: warm-up steps, then the
// median of enough timed ones).
StepTiming steps(Run& r, std::int64_t n) {
  std::vector<torch::Tensor> params = r.net.parameters();
  torch::optim::AdamW opt(params, adamw_options(r.config));
  GradScaler scaler(scaler_options(r.config, r.precision), r.device);
  r.net.set_training(true);
  StepTiming timing;
  for (int step = 0; !timing.done(); ++step) {
    const auto t0 = Clock::now();
    torch::Tensor images, labels;
    r.feed.upload(synthetic_batch(r.pool, r.shape, n, r.classes), &images, &labels);
    opt.zero_grad();
    const auto logits = forward_logits(r.net, images, r.precision, r.device);
    const auto loss = torch::nn::functional::cross_entropy(logits, labels);
    scaler.scale(loss).backward();
    scaler.unscale(opt);
    if (r.config.clip_norm > 0) torch::nn::utils::clip_grad_norm_(params, r.config.clip_norm);
    scaler.step(opt);
    scaler.update();
    // Reading the loss waits for the device, so the time is the step's, not its launch's.
    (void)loss.item<double>();
    timing.add(step, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  torch::NoGradGuard no_grad;
  r.net.set_training(false);
  torch::Tensor images, labels;
  r.feed.upload(synthetic_batch(r.pool, r.shape, n, r.classes), &images, &labels);
  const auto logits = forward_logits(r.net, images, r.precision, r.device);
  (void)torch::nn::functional::cross_entropy(logits, labels).item<double>();
  return timing;
}

}  // namespace

std::string probe_json(const ProbeReport& r) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.6g", r.step_seconds);
  std::ostringstream out;
  out << "{\"batch\":" << r.batch << ",\"fits\":" << (r.fits() ? "true" : "false")
      << ",\"out_of_memory\":" << (r.out_of_memory ? "true" : "false")
      << ",\"peak_bytes\":" << r.peak_bytes << ",\"step_seconds\":" << seconds
      << ",\"timed_steps\":" << r.timed_steps << ",\"device\":" << JsonWriter::escape(r.device)
      << ",\"precision\":" << JsonWriter::escape(r.precision)
      << ",\"error\":" << JsonWriter::escape(r.error) << "}";
  return out.str();
}

std::optional<std::int64_t> probe_batch_setting(int argc, const char* const argv[]) {
  namespace po = boost::program_options;
  po::options_description d;
  d.add_options()("help,h", "")("version,V", "")("config,c", po::value<std::string>(), "");
  d.add(settings::train()).add(settings::launch());
  settings::Layers s;
  s.add_command_line(std::vector<std::string>(argv + 1, argv + argc), d);
  s.add_environment();
  if (auto n = s.integer("probe-batch")) return *n;
  return std::nullopt;
}

int run_probe(const TrainConfig& config, std::int64_t batch) {
  if (config.threads > 0) torch::set_num_threads(config.threads);
  torch::manual_seed(config.seed);
  ProbeReport report;
  report.batch = batch;
  const torch::Device device = choose_device(config.device);
  report.device = device.str();
  if (device.is_cuda()) at::globalContext().setBenchmarkCuDNN(true);
  // The precision training would run in (fp16 on the CPU is refused here as it is there).
  const PrecisionChoice precision =
      resolve_precision(config.precision, config.precision_source, device);
  report.precision = precision_name(precision.precision);
  if (!precision.warning.empty()) spdlog::warn("{}", precision.warning);

  // The real data set gives the input shape, the class count and the normalisation; its samples
  // stay loaded, as they are while training.
  const DataSetup d = setup_data(config);
  const data::ImageShape shape = d.train_transform.out;
  const model::ModelSpec spec = model_spec(config, d);
  const std::unique_ptr<model::Model> net = build_model(spec, device);

  {
    DeviceFeed feed(device, shape.channels, d.mean, d.std);
    Run run{config,
            device,
            precision.precision,
            *net,
            feed,
            data::BufferPool::create(data::Batch::block_bytes(shape, batch), feed.allocator(),
                                     feed.releaser()),
            shape,
            spec.num_classes};
    try {
      const StepTiming timing = steps(run, batch);
      report.step_seconds = timing.median();
      report.timed_steps = static_cast<int>(timing.timed_steps());
    } catch (const std::bad_alloc&) {
      report.out_of_memory = true;
    } catch (const std::exception& e) {
      // c10::OutOfMemoryError, the CPU allocator's "can't allocate memory", cuDNN finding no
      // algorithm for the size: the trainer's own test (oom.h), so the probe and training agree.
      report.out_of_memory = is_out_of_memory(e);
      if (!report.out_of_memory) {
        const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
        report.error = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
      }
    }
  }
  report.peak_bytes = peak_bytes(device, &report.error);
  if (!report.error.empty()) {
    spdlog::warn("probe at batch {} failed: {}", batch, report.error);
    // The first line only: the launcher shows it in a table row.
    report.error = first_line(report.error);
  }
  std::cout << probe_json(report) << std::endl;
  return exit_code::kOk;
}

}  // namespace dl::train
