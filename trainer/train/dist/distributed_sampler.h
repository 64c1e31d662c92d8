// Which samples each rank trains on: torch.utils.data.DistributedSampler's exact index lists.
// The epoch's order is torch.randperm(size) from a generator seeded with seed + epoch (or
// 0..size-1 without shuffling); without drop_last the list is padded from its own head to a
// multiple of the world size, with drop_last its tail is cut; rank r takes every world-th index
// from r. One process (world 1) gets the permutation itself, so a run over N ranks steps through
// the same samples as one process with N times the batch.
#pragma once

#include <cstdint>
#include <vector>

namespace dl::train {

struct ShardSpec {
  int world = 1;
  int rank = 0;
  bool shuffle = true;
  bool drop_last = false;
  std::uint64_t seed = 0;
};

// DistributedSampler.num_samples: the samples each rank gets per epoch.
std::int64_t shard_size(std::int64_t size, int world, bool drop_last);

// Rank `rank`'s share of an epoch's `order` (padding or cutting as above). Pure.
std::vector<std::int64_t> shard(const std::vector<std::int64_t>& order, int world, int rank,
                                bool drop_last);

// torch.randperm(size, generator=torch.Generator().manual_seed(seed)), through LibTorch.
std::vector<std::int64_t> torch_randperm(std::int64_t size, std::uint64_t seed);

// The indices rank `spec.rank` trains on in `epoch`.
std::vector<std::int64_t> distributed_indices(std::int64_t size, const ShardSpec& spec, int epoch);

// Validation's share: every world-th index from rank, no padding, so that the ranks' totals add
// up to exactly the whole set's.
std::vector<std::int64_t> strided_indices(std::int64_t size, int world, int rank);

}  // namespace dl::train
