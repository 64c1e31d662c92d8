// Micro-batch splitting.
#include "train/amp/micro_batch.h"

#include <algorithm>

namespace dl::train {

std::vector<std::pair<std::int64_t, std::int64_t>> MicroBatching::split(std::int64_t n) const {
  std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
  const std::int64_t size = piece(n);
  for (std::int64_t start = 0; start < n; start += size) {
    pieces.emplace_back(start, std::min(size, n - start));
  }
  return pieces;
}

bool MicroBatching::shrink(std::int64_t n) {
  const std::int64_t current = piece(n);
  if (current <= 1) return false;
  limit_ = (current + 1) / 2;
  return true;
}

std::string MicroBatching::describe_shrink(std::int64_t n) const {
  const auto pieces = split(n);
  const std::string b = std::to_string(n);
  return "out of memory at batch " + b + ": continuing with " + std::to_string(pieces.size()) +
         " micro-batches of " + std::to_string(piece(n)) +
         " (gradient accumulation keeps the batch at " + b + ")";
}

}  // namespace dl::train
