// Which sample goes where in an epoch, and which random stream augments it. Both depend only on
// (seed, epoch, sample index), never on the worker or the process that happens to load the sample,
// which is what makes batches byte-identical for any number of workers or ranks.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace dl::data {

// The sample indices of one epoch in order: 0..size-1, or a Fisher-Yates permutation drawn from
// (seed, epoch) when `shuffle`.
std::vector<std::int64_t> epoch_order(std::int64_t size, bool shuffle, std::uint64_t seed,
                                      int epoch);

// The seed of the augmentation stream of a sample in an epoch; `key` is the sample's index.
// 32 bits, because mt19937 seeds from one 32-bit word in a few microseconds, where a seed_seq
// over more bits costs several times that per sample; 2^32 streams are plenty for augmentation.
std::uint32_t sample_seed(std::uint64_t seed, int epoch, std::int64_t key);

inline std::mt19937 sample_rng(std::uint64_t seed, int epoch, std::int64_t key) {
  return std::mt19937(sample_seed(seed, epoch, key));
}

}  // namespace dl::data
