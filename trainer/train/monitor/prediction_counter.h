// The confusion matrix and top-k hits of an evaluation pass, counted on the device batch by batch
// (a bincount: no read-back inside the pass), summed over the ranks of a distributed run and read
// back once at the end as a Confusion (confusion.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

#include "train/monitor/confusion.h"

namespace dl::train {

class Collectives;

class PredictionCounter {
 public:
  // top_k: also counts samples whose true class is among the k highest logits (0: not counted).
  PredictionCounter(int classes, c10::Device device, int top_k = 0);
  // logits: n x classes (any floating type); labels: n, int64, 0 <= label < classes.
  void add(const at::Tensor& logits, const at::Tensor& labels);
  // The counts, summed over `group`'s ranks first when it is not null (every rank must call).
  Confusion read(Collectives* group);
  // After read(): samples with their class among the top k (0 when top_k was 0).
  std::int64_t top_k_hits() const { return top_k_hits_; }

 private:
  int classes_;
  int top_k_;
  at::Tensor confusion_;  // classes * classes, int64, on the device
  at::Tensor hits_;       // int64 scalar, on the device
  std::int64_t top_k_hits_ = 0;
};

}  // namespace dl::train
