// Counting predictions on the device (prediction_counter.h).
#include "train/monitor/prediction_counter.h"

#include <torch/types.h>

#include <algorithm>

#include "train/dist/collectives.h"

namespace dl::train {

PredictionCounter::PredictionCounter(int classes, c10::Device device, int top_k)
    : classes_(classes),
      top_k_(std::min(top_k, classes)),
      confusion_(torch::zeros({static_cast<std::int64_t>(classes) * classes},
                              torch::TensorOptions().dtype(torch::kLong).device(device))),
      hits_(torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device))) {}

void PredictionCounter::add(const at::Tensor& logits, const at::Tensor& labels) {
  if (logits.size(0) == 0) return;
  const at::Tensor y = labels.to(torch::kLong);
  const at::Tensor predicted = logits.argmax(1);
  // Pair (true, predicted) -> one cell index; bincount counts them all at once.
  confusion_ +=
      torch::bincount(y * classes_ + predicted, {}, static_cast<std::int64_t>(classes_) * classes_)
          .narrow(0, 0, static_cast<std::int64_t>(classes_) * classes_);
  if (top_k_ > 0) {
    const at::Tensor top = std::get<1>(logits.topk(top_k_, 1));
    hits_ += top.eq(y.unsqueeze(1)).any(1).sum();
  }
}

Confusion PredictionCounter::read(Collectives* group) {
  at::Tensor both = torch::cat({confusion_, hits_.unsqueeze(0)});
  if (group != nullptr) group->sum(both);
  both = both.cpu();
  const std::int64_t* p = both.data_ptr<std::int64_t>();
  const std::size_t cells = static_cast<std::size_t>(classes_) * classes_;
  top_k_hits_ = p[cells];
  return Confusion(classes_, std::vector<std::int64_t>(p, p + cells));
}

}  // namespace dl::train
