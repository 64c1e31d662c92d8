// dl_gpu_check: the measurements behind tests/gpu/gpu_check.sh, one subcommand each, using the
// trainer's own step code (dl::amp). Each prints its findings and then table rows, lines
// "row: | check | result | detail |", which the script gathers into its closing table.
//
//   dl_gpu_check scaler     [--device cpu|cuda]  GradScaler: fused CUDA ops vs the plain
//                           implementation on the same gradients with injected inf/NaN (same
//                           scale sequence, same unscaled gradients, same weights), both against
//                           PyTorch's expected sequence. On the CPU the fused ops run only where
//                           LibTorch has CPU kernels for them (not 1.13).
//   dl_gpu_check precision  [--device cuda]      fp16 and bf16 training steps vs fp32: the first
//                           loss (same weights) and the loss after 10 steps within tolerance.
//   dl_gpu_check memory     [--batch 64]         ResNet-50 at 224x224: peak allocated memory of
//                           training steps in fp32 and fp16 at the same batch (goal <= 0.55x).
//   dl_gpu_check throughput [--max-batch 2048]   ResNet-50 at 224x224: each precision's largest
//                           batch (doubling, then bisection) and its samples/s.
//   dl_gpu_check grid       [--max-batch 256]    The tutorial's precision x batch-size table for
//                           ResNet-50 at 224x224: peak memory and samples/s of fp32, fp16 and
//                           bf16 (compute capability 8.0 and up) at batch 32, 64, ... up to
//                           --max-batch, "OOM" where a size does not fit.
//
// Exit status: 0 all checks passed, 1 a check failed, 2 bad usage or no CUDA device for a
// CUDA-only check.
#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "train/amp/cuda_support.h"
#include "train/amp/grad_scaler.h"
#include "train/amp/oom.h"
#include "train/amp/precision.h"
#include "train/amp/train_step.h"

namespace {

using dl::train::Precision;

struct Args {
  std::string command;
  std::string device = "cuda";
  std::int64_t batch = 64;
  std::int64_t max_batch = 2048;
};

void row(const std::string& check, const std::string& result, const std::string& detail) {
  std::printf("row: | %s | %s | %s |\n", check.c_str(), result.c_str(), detail.c_str());
  std::fflush(stdout);
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

torch::Device parse_device(const std::string& name) {
  if (name == "cpu") return torch::kCPU;
  return torch::Device(name == "cuda" ? std::string("cuda:0") : name);
}

// --- scaler ----------------------------------------------------------------------------------

struct ScalerTrace {
  std::vector<double> scales;
  std::vector<std::int64_t> trackers;
  std::vector<bool> stepped;
  std::vector<at::Tensor> first_unscaled;  // the gradients of iteration 0 after unscale
  std::vector<at::Tensor> weights;         // after the last iteration
};

// 12 iterations with growth interval 3: inf at 3 and 11, NaN at 7 (PyTorch's expected sequence
// below). Gradients are drawn on the CPU from a fixed seed, so every run sees the same numbers;
// one parameter has a million elements, so the fused op's multi-tensor chunking is exercised.
ScalerTrace run_scaler(dl::train::ScalerKernels kernels, torch::Device device) {
  const std::vector<std::vector<std::int64_t>> shapes = {
      {1}, {3, 3}, {1000, 1000}, {64, 32, 3, 3}, {7}};
  torch::manual_seed(0);
  std::vector<at::Tensor> params;
  for (const auto& s : shapes) params.push_back(torch::randn(s).to(device).requires_grad_());
  torch::optim::SGD sgd(params, 0.01);
  dl::train::ScalerOptions o;
  o.enabled = true;
  o.growth_interval = 3;
  dl::train::GradScaler scaler(o, device, kernels);
  ScalerTrace t;
  for (int i = 0; i < 12; ++i) {
    torch::manual_seed(100 + static_cast<std::uint64_t>(i));
    for (auto& p : params) p.mutable_grad() = (torch::randn(p.sizes()) * 65536.0).to(device);
    torch::NoGradGuard no_grad;
    if (i == 3) params[2].mutable_grad()[5][7] = std::numeric_limits<float>::infinity();
    if (i == 7) params[0].mutable_grad()[0] = std::numeric_limits<float>::quiet_NaN();
    if (i == 11) params[4].mutable_grad()[2] = -std::numeric_limits<float>::infinity();
    scaler.unscale(sgd);
    if (i == 0) {
      for (const auto& p : params) t.first_unscaled.push_back(p.grad().cpu().clone());
    }
    t.stepped.push_back(scaler.step(sgd));
    scaler.update();
    t.scales.push_back(scaler.current_scale());
    t.trackers.push_back(scaler.growth_tracker());
  }
  for (const auto& p : params) t.weights.push_back(p.detach().cpu().clone());
  return t;
}

double max_diff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  }
  return worst;
}

std::string sequence(const std::vector<double>& scales) {
  std::string s;
  for (double v : scales) s += (s.empty() ? "" : " ") + fixed(v / 1024.0, 0) + "k";
  return s;
}

int check_scaler(const Args& args) {
  const torch::Device device = parse_device(args.device);
  const std::vector<double> expected = {65536,  65536, 131072, 65536, 65536,  65536,
                                        131072, 65536, 65536,  65536, 131072, 65536};
  const std::vector<std::int64_t> expected_trackers = {1, 2, 0, 0, 1, 2, 0, 0, 1, 2, 0, 0};
  const ScalerTrace plain = run_scaler(dl::train::ScalerKernels::kPlain, device);
  const bool plain_ok = plain.scales == expected && plain.trackers == expected_trackers;
  std::printf("plain scales: %s (%s PyTorch's sequence)\n", sequence(plain.scales).c_str(),
              plain_ok ? "equal to" : "DIFFERENT FROM");
  row("scaler plain vs PyTorch sequence (" + device.str() + ")", plain_ok ? "same" : "FAIL",
      "12 steps, inf/NaN at 3, 7, 11: " + sequence(plain.scales));
  bool ok = plain_ok;
  try {
    const ScalerTrace fused = run_scaler(dl::train::ScalerKernels::kFused, device);
    const double grad_diff = max_diff(fused.first_unscaled, plain.first_unscaled);
    const double weight_diff = max_diff(fused.weights, plain.weights);
    const bool same = fused.scales == plain.scales && fused.trackers == plain.trackers &&
                      fused.stepped == plain.stepped && grad_diff == 0.0 && weight_diff == 0.0;
    std::printf("fused scales: %s; unscaled gradients differ by %g, weights by %g\n",
                sequence(fused.scales).c_str(), grad_diff, weight_diff);
    row("scaler fused vs plain (" + device.str() + ")", same ? "same" : "FAIL",
        "scale/tracker/skips equal, max grad diff " + fixed(grad_diff, 9) + ", weight diff " +
            fixed(weight_diff, 9));
    ok = ok && same;
  } catch (const c10::Error& e) {
    if (device.is_cuda()) throw;
    // LibTorch 1.13 registers the fused ops for CUDA only (the reason for the plain path).
    const std::string message = e.what_without_backtrace();
    std::printf("fused ops on %s: not available in this LibTorch (%s)\n", device.str().c_str(),
                message.substr(0, message.find(". ")).c_str());
    row("scaler fused vs plain (" + device.str() + ")", "n/a",
        "no CPU kernels for the fused ops in LibTorch " TORCH_VERSION);
  }
  return ok ? 0 : 1;
}

// --- training helpers ----------------------------------------------------------------------

struct Net {
  std::unique_ptr<dl::model::Model> model;
  std::vector<at::Tensor> params;
  std::unique_ptr<torch::optim::AdamW> adamw;
  std::unique_ptr<dl::train::GradScaler> scaler;
};

Net make_net(const std::string& name, int channels, int size, int classes, Precision precision,
             torch::Device device, std::uint64_t seed) {
  torch::manual_seed(seed);
  dl::model::ModelSpec spec;
  spec.name = name;
  spec.in_channels = channels;
  spec.input_size = size;
  spec.num_classes = classes;
  Net n;
  n.model = dl::model::make_model(spec);
  n.model->to(device);
  n.model->set_training(true);
  n.params = n.model->parameters();
  n.adamw = std::make_unique<torch::optim::AdamW>(n.params, torch::optim::AdamWOptions(1e-3));
  dl::train::ScalerOptions o;
  o.enabled = dl::train::uses_scaler(precision);
  n.scaler = std::make_unique<dl::train::GradScaler>(o, device);
  return n;
}

std::pair<at::Tensor, at::Tensor> batch(std::int64_t n, int channels, int size, int classes,
                                        torch::Device device) {
  torch::manual_seed(1234);
  return {torch::randn({n, channels, size, size}).to(device),
          torch::randint(0, classes, {n}, torch::kLong).to(device)};
}

// --- precision -----------------------------------------------------------------------------

struct Losses {
  std::vector<double> values;
  int skipped = 0;
};

Losses train_losses(const std::string& model, int channels, int size, Precision precision,
                    torch::Device device, int steps) {
  Net n = make_net(model, channels, size, 10, precision, device, 7);
  dl::train::StepRunner runner(*n.model, *n.adamw, n.params, *n.scaler, precision, device, 1.0);
  const auto [x, y] = batch(64, channels, size, 10, device);
  Losses l;
  for (int i = 0; i < steps; ++i) {
    const dl::train::StepResult r = runner.train(x, y);
    l.values.push_back(r.totals.loss_sum.item<double>() / 64.0);
    if (!r.stepped) ++l.skipped;
  }
  return l;
}

int check_precision(const Args& args) {
  const torch::Device device = parse_device(args.device);
  if (device.is_cuda()) at::globalContext().setBenchmarkCuDNN(true);
  bool ok = true;
  struct Case {
    std::string model;
    int channels, size;
  };
  for (const Case& c : {Case{"cnn", 1, 28}, Case{"resnet18", 3, 32}}) {
    const Losses fp32 = train_losses(c.model, c.channels, c.size, Precision::kFp32, device, 10);
    for (Precision p : {Precision::kFp16, Precision::kBf16}) {
      if (p == Precision::kFp16 && !device.is_cuda()) continue;
      const Losses amp = train_losses(c.model, c.channels, c.size, p, device, 10);
      // The first loss comes from the same weights: only the forward's rounding differs.
      // After 10 steps fp16 may have skipped a few (the scale starts at 65536 and backs off),
      // so the end is compared loosely: decreased, and within 10% (+0.02 absolute, as the
      // loss of the memorised batch heads for 0).
      const double first = std::abs(amp.values.front() / fp32.values.front() - 1.0);
      const double last_diff = std::abs(amp.values.back() - fp32.values.back());
      const double first_tol = p == Precision::kFp16 ? 0.005 : 0.02;
      const bool pass = first <= first_tol && last_diff <= 0.10 * fp32.values.back() + 0.02 &&
                        amp.values.back() < amp.values.front();
      std::printf("%s %s: losses %.4f -> %.4f (fp32 %.4f -> %.4f), %d skipped steps\n",
                  c.model.c_str(), dl::train::precision_name(p), amp.values.front(),
                  amp.values.back(), fp32.values.front(), fp32.values.back(), amp.skipped);
      row(c.model + " " + dl::train::precision_name(p) + " vs fp32 loss (" + device.str() + ")",
          pass ? "ok" : "FAIL",
          "first " + fixed(100 * first, 3) + "% (tol " + fixed(100 * first_tol, 1) +
              "%), after 10 steps " + fixed(amp.values.back(), 4) + " vs " +
              fixed(fp32.values.back(), 4) + " (tol 10% + 0.02), " + std::to_string(amp.skipped) +
              " skipped");
      ok = ok && pass;
    }
  }
  return ok ? 0 : 1;
}

// --- memory and throughput (ResNet-50, 224x224, CUDA) -------------------------------------

// One raw training step, as the trainer's but without its out-of-memory recovery: an OOM
// propagates, so the caller learns the batch does not fit.
void raw_step(Net& n, Precision precision, torch::Device device, const at::Tensor& x,
              const at::Tensor& y) {
  n.adamw->zero_grad();
  const at::Tensor logits = dl::train::forward_logits(*n.model, x, precision, device);
  n.scaler->scale(torch::nn::functional::cross_entropy(logits, y)).backward();
  n.scaler->unscale(*n.adamw);
  torch::nn::utils::clip_grad_norm_(n.params, 1.0);
  n.scaler->step(*n.adamw);
  n.scaler->update();
}

double gib(std::int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
}

// Peak bytes allocated during 3 steps at `batch` (after one warm-up step, so the optimizer state
// exists and cuDNN's algorithm search is done).
std::int64_t peak_bytes(Precision precision, torch::Device device, std::int64_t batch_size) {
  std::int64_t peak = -1;
  {
    Net n = make_net("resnet50", 3, 224, 1000, precision, device, 7);
    const auto [x, y] = batch(batch_size, 3, 224, 1000, device);
    raw_step(n, precision, device, x, y);
    torch::cuda::synchronize();
    dl::train::cuda::reset_peak(device.index());
    for (int i = 0; i < 3; ++i) raw_step(n, precision, device, x, y);
    torch::cuda::synchronize();
    peak = dl::train::cuda::peak_allocated_bytes(device.index());
  }
  dl::train::cuda::empty_cache();
  return peak;
}

int require_cuda(const torch::Device& device, const char* what) {
  if (device.is_cuda() && torch::cuda::is_available()) return 0;
  std::fprintf(stderr, "dl_gpu_check %s: needs a CUDA device\n", what);
  return 2;
}

int check_memory(const Args& args) {
  const torch::Device device = parse_device(args.device);
  if (int rc = require_cuda(device, "memory")) return rc;
  at::globalContext().setBenchmarkCuDNN(true);
  const std::int64_t fp32 = peak_bytes(Precision::kFp32, device, args.batch);
  const std::int64_t fp16 = peak_bytes(Precision::kFp16, device, args.batch);
  const double ratio = static_cast<double>(fp16) / static_cast<double>(fp32);
  std::printf("resnet50 224 batch %lld: peak fp32 %.2f GiB, fp16 %.2f GiB (%.2fx)\n",
              static_cast<long long>(args.batch), gib(fp32), gib(fp16), ratio);
  row("resnet50 224x224 peak memory, batch " + std::to_string(args.batch),
      fixed(ratio, 2) + "x " + (ratio <= 0.55 ? "(goal met)" : "(goal 0.55x NOT met)"),
      "fp32 " + fixed(gib(fp32), 2) + " GiB, fp16 " + fixed(gib(fp16), 2) + " GiB");
  // A measurement, not a pass/fail of the code: the ratio is reported either way.
  return 0;
}

// Samples per second over `steps` training steps (the device synchronised at both ends).
double samples_per_second(Net& n, Precision p, torch::Device device, const at::Tensor& x,
                          const at::Tensor& y, int steps) {
  torch::cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) raw_step(n, p, device, x, y);
  torch::cuda::synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(x.size(0) * steps) / s;
}

// Whether two steps at `batch_size` fit.
bool fits(Precision precision, torch::Device device, std::int64_t batch_size) {
  bool ok = true;
  try {
    Net n = make_net("resnet50", 3, 224, 1000, precision, device, 7);
    const auto [x, y] = batch(batch_size, 3, 224, 1000, device);
    for (int i = 0; i < 2; ++i) raw_step(n, precision, device, x, y);
    torch::cuda::synchronize();
  } catch (const std::exception& e) {
    if (!dl::train::is_out_of_memory(e)) throw;
    ok = false;
  }
  dl::train::cuda::empty_cache();
  std::printf("  %s batch %lld: %s\n", dl::train::precision_name(precision),
              static_cast<long long>(batch_size), ok ? "fits" : "out of memory");
  std::fflush(stdout);
  return ok;
}

int check_throughput(const Args& args) {
  const torch::Device device = parse_device(args.device);
  if (int rc = require_cuda(device, "throughput")) return rc;
  at::globalContext().setBenchmarkCuDNN(true);
  std::vector<Precision> precisions = {Precision::kFp32, Precision::kFp16};
  if (dl::train::cuda::major_capability(device.index()) >= 8) {
    precisions.push_back(Precision::kBf16);
  }
  for (Precision p : precisions) {
    // Doubling from 32 to the first failure, then two bisection rounds.
    std::int64_t lo = 0, hi = 0;
    for (std::int64_t b = 32; b <= args.max_batch; b *= 2) {
      if (!fits(p, device, b)) {
        hi = b;
        break;
      }
      lo = b;
    }
    for (int round = 0; round < 2 && hi > 0 && hi - lo > 8; ++round) {
      const std::int64_t mid = (lo + hi) / 2 / 8 * 8;
      if (fits(p, device, mid)) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    if (lo == 0) {
      row(std::string("resnet50 224x224 ") + dl::train::precision_name(p), "FAIL",
          "batch 32 does not fit");
      return 1;
    }
    double rate = 0;
    {
      Net n = make_net("resnet50", 3, 224, 1000, p, device, 7);
      const auto [x, y] = batch(lo, 3, 224, 1000, device);
      for (int i = 0; i < 3; ++i) raw_step(n, p, device, x, y);
      rate = samples_per_second(n, p, device, x, y, 10);
    }
    dl::train::cuda::empty_cache();
    const std::string largest =
        (hi == 0 ? ">= " : "") + std::to_string(lo) + (hi == 0 ? " (cap)" : "");
    std::printf("%s: largest batch %s, %.0f samples/s\n", dl::train::precision_name(p),
                largest.c_str(), rate);
    row(std::string("resnet50 224x224 ") + dl::train::precision_name(p) + " throughput",
        fixed(rate, 0) + " samples/s", "largest batch " + largest);
  }
  return 0;
}

// The tutorial's second table: memory and speed against precision x batch size.
int check_grid(const Args& args) {
  const torch::Device device = parse_device(args.device);
  if (int rc = require_cuda(device, "grid")) return rc;
  at::globalContext().setBenchmarkCuDNN(true);
  std::vector<Precision> precisions = {Precision::kFp32, Precision::kFp16};
  if (dl::train::cuda::major_capability(device.index()) >= 8) {
    precisions.push_back(Precision::kBf16);
  }
  for (Precision p : precisions) {
    std::string cells;
    for (std::int64_t b = 32; b <= args.max_batch; b *= 2) {
      std::string cell;
      try {
        Net n = make_net("resnet50", 3, 224, 1000, p, device, 7);
        const auto [x, y] = batch(b, 3, 224, 1000, device);
        for (int i = 0; i < 2; ++i) raw_step(n, p, device, x, y);
        torch::cuda::synchronize();
        dl::train::cuda::reset_peak(device.index());
        const double rate = samples_per_second(n, p, device, x, y, 5);
        const double peak = gib(dl::train::cuda::peak_allocated_bytes(device.index()));
        cell = fixed(peak, 1) + " GiB " + fixed(rate, 0) + "/s";
      } catch (const std::exception& e) {
        if (!dl::train::is_out_of_memory(e)) throw;
        cell = "OOM";
      }
      dl::train::cuda::empty_cache();
      std::printf("  %s batch %lld: %s\n", dl::train::precision_name(p), static_cast<long long>(b),
                  cell.c_str());
      std::fflush(stdout);
      cells += (cells.empty() ? "" : ", ") + std::to_string(b) + ": " + cell;
    }
    row(std::string("resnet50 224x224 ") + dl::train::precision_name(p) + " by batch", "measured",
        cells);
  }
  return 0;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: dl_gpu_check scaler|precision|memory|throughput|grid [--device cpu|cuda|cuda:N] "
      "[--batch N] [--max-batch N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  Args args;
  args.command = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--device") {
      args.device = value;
    } else if (key == "--batch") {
      args.batch = std::atoll(value.c_str());
    } else if (key == "--max-batch") {
      args.max_batch = std::atoll(value.c_str());
    } else {
      return usage();
    }
  }
  try {
    if (args.command == "scaler") return check_scaler(args);
    if (args.command == "precision") return check_precision(args);
    if (args.command == "memory") return check_memory(args);
    if (args.command == "throughput") return check_throughput(args);
    if (args.command == "grid") return check_grid(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dl_gpu_check %s: %s\n", args.command.c_str(), e.what());
    row(args.command, "FAIL", "error, see the log");
    return 1;
  }
  return usage();
}
