// Training step and evaluation batch.
#include "train/amp/train_step.h"

#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <chrono>
#include <optional>
#include <utility>

#include "core/errors.h"
#include "train/amp/autocast.h"
#include "train/amp/oom.h"

namespace dl::train {

at::Tensor forward_logits(model::Model& net, const at::Tensor& images, Precision precision,
                          c10::Device device) {
  maybe_inject_oom(images.size(0));
  std::optional<AutocastGuard> autocast;
  if (uses_autocast(precision)) autocast.emplace(device.type(), autocast_dtype(precision));
  return net.forward(images).to(torch::kFloat);
}

StepRunner::StepRunner(model::Model& net, torch::optim::Optimizer& optimizer,
                       std::vector<at::Tensor> params, GradScaler& scaler, Precision precision,
                       c10::Device device, double clip_norm, MicroBatching micro)
    : net_(net),
      optimizer_(optimizer),
      params_(std::move(params)),
      scaler_(scaler),
      precision_(precision),
      device_(device),
      clip_norm_(clip_norm),
      micro_(micro) {}

void StepRunner::drop_gradients() {
  // Undefined rather than zeroed: the memory goes back to the allocator.
  for (auto& p : params_) p.mutable_grad() = at::Tensor();
}

void StepRunner::recover_from_oom(std::int64_t n, bool training) {
  release_cached_memory(device_);
  const char* where = training ? "in a training step" : "in validation";
  if (!micro_.shrink(n)) {
    throw UserError(exit_code::kUnavailable,
                    std::string("out of memory ") + where +
                        " even with micro-batches of 1 sample on " + device_.str() +
                        ": the model does not fit; use a smaller model or --image-size");
  }
  if (training) {
    spdlog::warn("{}", micro_.describe_shrink(n));
  } else {
    // Training shares the smaller pieces from now on.
    spdlog::warn("out of memory in validation at batch {}: continuing in pieces of {}", n,
                 micro_.limit());
  }
}

BatchTotals BatchTotals::zeros(c10::Device device) {
  BatchTotals t;
  t.loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  t.correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
  return t;
}

BatchTotals& BatchTotals::operator+=(const BatchTotals& other) {
  loss_sum += other.loss_sum;
  correct += other.correct;
  samples += other.samples;
  return *this;
}

double BatchTotals::mean_loss() const {
  return samples > 0 ? loss_sum.item<double>() / static_cast<double>(samples) : 0.0;
}

double BatchTotals::accuracy() const {
  return samples > 0
             ? static_cast<double>(correct.item<std::int64_t>()) / static_cast<double>(samples)
             : 0.0;
}

BatchTotals StepRunner::run_pieces(const at::Tensor& images, const at::Tensor& labels,
                                   bool training, at::Tensor* logits_out) {
  std::vector<at::Tensor> piece_logits;
  const std::int64_t n = images.size(0);
  const auto pieces = micro_.split(n);
  BatchTotals t = BatchTotals::zeros(device_);
  t.samples = n;
  for (const auto& [start, len] : pieces) {
    if (training && sync_ != nullptr) sync_->before_backward(start + len == n);
    const at::Tensor x = pieces.size() == 1 ? images : images.narrow(0, start, len);
    const at::Tensor y = pieces.size() == 1 ? labels : labels.narrow(0, start, len);
    const at::Tensor logits = forward_logits(net_, x, precision_, device_);
    if (training) {
      const at::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
      // The mean over the piece weighted by its share: the pieces' gradients sum to the batch's.
      const at::Tensor weighted =
          pieces.size() == 1 ? loss : loss * (static_cast<double>(len) / static_cast<double>(n));
      scaler_.scale(weighted).backward();
      t.loss_sum += loss.detach().to(torch::kDouble) * static_cast<double>(len);
    } else {
      t.loss_sum +=
          torch::nn::functional::cross_entropy(
              logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
              .to(torch::kDouble);
    }
    t.correct += logits.detach().argmax(1).eq(y).sum();
    if (logits_out != nullptr) piece_logits.push_back(logits.detach());
  }
  if (logits_out != nullptr) {
    *logits_out = piece_logits.size() == 1 ? piece_logits[0] : torch::cat(piece_logits);
  }
  return t;
}

StepResult StepRunner::train(const at::Tensor& images, const at::Tensor& labels) {
  const std::int64_t n = images.size(0);
  StepResult r;
  while (true) {
    optimizer_.zero_grad();
    bool failed = false;
    try {
      r.totals = run_pieces(images, labels, /*training=*/true);
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      failed = true;
    }
    // Outside the handler, so the exception (and anything it holds) is gone first; the step's
    // activations went with run_pieces' frames. Its partial gradients go now.
    if (failed) {
      drop_gradients();
      recover_from_oom(n, /*training=*/true);
    }
    if (sync_ != nullptr) {
      // Every rank retries when any failed, in the smallest pieces any rank needs.
      const StepAgreement agreed = sync_->agree(failed, micro_.limit());
      r.stop_signal = agreed.stop_signal;
      r.checkpoint = agreed.checkpoint;
      if (!agreed.failed) break;
      if (!failed) {
        drop_gradients();
        micro_.adopt(agreed.piece);
        spdlog::warn("another rank ran out of memory at batch {}: continuing in pieces of {}", n,
                     micro_.limit());
      } else {
        micro_.adopt(agreed.piece);
      }
      continue;
    }
    if (!failed) break;
  }
  const auto optimizing =
      timed_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  if (gpu_clock_ != nullptr) gpu_clock_->mark(StepMark::kBackwardDone);
  try {
    // Clipping needs the true gradients: unscale first (a no-op without loss scaling). In a
    // distributed run they are already the average over the ranks, so every rank clips, skips
    // or steps alike.
    scaler_.unscale(optimizer_);
    if (clip_norm_ > 0) torch::nn::utils::clip_grad_norm_(params_, clip_norm_);
    r.stepped = scaler_.step(optimizer_);
    scaler_.update();
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    throw UserError(exit_code::kUnavailable,
                    "out of memory in the optimizer step on " + device_.str() +
                        " (its state is allocated at the first step): the model does not fit");
  }
  if (gpu_clock_ != nullptr) gpu_clock_->mark(StepMark::kOptimized);
  if (timed_) {
    r.optimizer_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - optimizing).count();
  }
  return r;
}

BatchTotals StepRunner::evaluate(const at::Tensor& images, const at::Tensor& labels,
                                 at::Tensor* logits) {
  const std::int64_t n = images.size(0);
  while (true) {
    try {
      return run_pieces(images, labels, /*training=*/false, logits);
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
    }
    recover_from_oom(n, /*training=*/false);
  }
}

}  // namespace dl::train
