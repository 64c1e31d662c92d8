// A checkpoint's position inside an epoch (epoch_position.h).
#include "train/resume/epoch_position.h"

#include <stdexcept>

namespace dl::train {
namespace {

// The keys, under "extra" in the checkpoint's dict (Python reads ckpt["extra"]["position_epoch"]).
constexpr const char* kEpoch = "position_epoch";
constexpr const char* kBatches = "position_batches";
constexpr const char* kGlobalBatch = "position_global_batch";
constexpr const char* kLossSum = "position_loss_sum";
constexpr const char* kCorrect = "position_correct";
constexpr const char* kSamples = "position_samples";
constexpr const char* kOverflow = "position_overflow_steps";
constexpr const char* kSkippedPrefix = "position_skipped_";

std::int64_t integer(const ExtraMap& extra, const std::string& key) {
  const auto it = extra.find(key);
  if (it == extra.end()) throw std::invalid_argument("the epoch position lacks " + key);
  if (const auto* v = std::get_if<std::int64_t>(&it->second)) {
    if (*v < 0) throw std::invalid_argument(key + " is negative");
    return *v;
  }
  throw std::invalid_argument(key + " is not an integer");
}

}  // namespace

void put_position(ExtraMap& extra, const EpochPosition& p) {
  extra[kEpoch] = p.epoch;
  extra[kBatches] = p.batches;
  extra[kGlobalBatch] = p.global_batch;
  extra[kLossSum] = p.loss_sum;
  extra[kCorrect] = p.correct;
  extra[kSamples] = p.samples;
  extra[kOverflow] = p.overflow_steps;
  for (std::size_t r = 0; r < data::kSkipReasons; ++r) {
    extra[kSkippedPrefix + std::to_string(r)] = p.skipped[r];
  }
}

std::optional<EpochPosition> get_position(const ExtraMap& extra) {
  if (extra.find(kEpoch) == extra.end()) return std::nullopt;
  EpochPosition p;
  p.epoch = integer(extra, kEpoch);
  p.batches = integer(extra, kBatches);
  p.global_batch = integer(extra, kGlobalBatch);
  if (p.global_batch < 1) throw std::invalid_argument(std::string(kGlobalBatch) + " is 0");
  const auto loss = extra.find(kLossSum);
  if (loss == extra.end() || !std::holds_alternative<double>(loss->second)) {
    throw std::invalid_argument(std::string("the epoch position lacks ") + kLossSum);
  }
  p.loss_sum = std::get<double>(loss->second);
  p.correct = integer(extra, kCorrect);
  p.samples = integer(extra, kSamples);
  p.overflow_steps = integer(extra, kOverflow);
  for (std::size_t r = 0; r < data::kSkipReasons; ++r) {
    const std::string key = kSkippedPrefix + std::to_string(r);
    // "cut short" came after the first five: a checkpoint written before it has no count for it.
    if (r == static_cast<std::size_t>(data::SkipReason::kCutShort) && extra.count(key) == 0) {
      continue;
    }
    p.skipped[r] = integer(extra, key);
  }
  return p;
}

ResumeStart resume_start(const EpochPosition& position, std::int64_t global_batch_now) {
  ResumeStart start;
  if (global_batch_now == position.global_batch) {
    start.first_batch = position.batches;
    return start;
  }
  const std::int64_t taken = position.batches * position.global_batch;
  start.first_batch = taken / global_batch_now;
  start.repeated = taken - start.first_batch * global_batch_now;
  start.exact = start.repeated == 0;
  return start;
}

}  // namespace dl::train
