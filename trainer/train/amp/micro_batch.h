// Micro-batches: a loader batch split into pieces that are run one after the other with their
// gradients accumulated, each piece's mean loss weighted by its share of the batch
// (micro_n / n), so the accumulated gradient is the full batch's. This is how a step that ran out
// of memory is retried without changing the effective batch size (or the learning dynamics).
// Exact for models without batch statistics; BatchNorm sees the smaller pieces.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dl::train {

class MicroBatching {
 public:
  // limit 0: whole batches.
  explicit MicroBatching(std::int64_t limit = 0) : limit_(limit) {}

  std::int64_t limit() const { return limit_; }

  // [start, length) of each piece of a batch of n: pieces of `limit` samples, the last one
  // shorter when limit does not divide n.
  std::vector<std::pair<std::int64_t, std::int64_t>> split(std::int64_t n) const;

  // After an out-of-memory on a batch of n: the pieces become half as large (rounded up).
  // Returns false when they are single samples already.
  bool shrink(std::int64_t n);

  // Takes pieces of `limit` samples when they are smaller than this one's (another rank's after
  // its out-of-memory: every rank of a distributed run steps in the same pieces).
  void adopt(std::int64_t limit) {
    if (limit > 0 && (limit_ == 0 || limit < limit_)) limit_ = limit;
  }

  // "out of memory at batch 64: continuing with 2 micro-batches of 32 (gradient accumulation
  // keeps the batch at 64)"
  std::string describe_shrink(std::int64_t n) const;

 private:
  std::int64_t piece(std::int64_t n) const { return limit_ > 0 && limit_ < n ? limit_ : n; }
  std::int64_t limit_ = 0;
};

}  // namespace dl::train
