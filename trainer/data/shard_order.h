// The order of an epoch over shards, as WebDataset reads them: the shards' order shuffled per
// epoch, the samples of each shard in file order, split between the ranks by contiguous runs of
// that stream (so each rank reads whole shards, but for the two it shares at its ends), then
// mixed by a shuffle buffer of a set size. Every rank gets the same number of samples, fixed
// for the run, so every rank takes the same number of steps; across the ranks an epoch covers
// each sample once (but for the remainder of the division by the world size in training).
// Pure: the order depends only on the shards' sample counts, the spec and the epoch.
#pragma once

#include <cstdint>
#include <vector>

namespace dl::data {

struct ShardOrderSpec {
  int world = 1;
  int rank = 0;
  bool shuffle = true;  // the shards' order and the buffer; false: the stream as stored
  std::uint64_t seed = 0;
  std::int64_t buffer = 0;  // the shuffle buffer's samples; 0 or 1: none
  // Training: every rank the same total/world samples (the rest left out this epoch).
  // Validation (false): the ranks' shares add up to the whole set, differing by at most one.
  bool equal_shares = true;
};

// The samples rank `spec.rank` takes per epoch, given each shard's sample count in index order
// (shard s holds indices first_s .. first_s + counts[s] - 1, first_s the sum of those before).
std::int64_t shard_epoch_size(const std::vector<std::int64_t>& counts, const ShardOrderSpec& spec);

// Rank `spec.rank`'s sample indices of epoch `epoch`, in the order it reads them.
std::vector<std::int64_t> shard_epoch_indices(const std::vector<std::int64_t>& counts,
                                              const ShardOrderSpec& spec, int epoch);

}  // namespace dl::data
