// DistributedSampler's index lists (distributed_sampler.h), after torch/utils/data/distributed.py.
#include "train/dist/distributed_sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>

namespace dl::train {

std::int64_t shard_size(std::int64_t size, int world, bool drop_last) {
  if (drop_last && size % world != 0) return (size - world + world - 1) / world;  // ceil((n-w)/w)
  return (size + world - 1) / world;
}

std::vector<std::int64_t> shard(const std::vector<std::int64_t>& order, int world, int rank,
                                bool drop_last) {
  const auto size = static_cast<std::int64_t>(order.size());
  const std::int64_t per_rank = shard_size(size, world, drop_last);
  const std::int64_t total = per_rank * world;
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(per_rank));
  // Position p of the padded list is order[p % size]: the head repeated as often as needed.
  for (std::int64_t p = rank; p < total; p += world) {
    mine.push_back(order[static_cast<std::size_t>(p % size)]);
  }
  return mine;
}

std::vector<std::int64_t> torch_randperm(std::int64_t size, std::uint64_t seed) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  const at::Tensor perm = torch::randperm(size, generator, torch::kLong);
  const auto* p = perm.data_ptr<std::int64_t>();
  return std::vector<std::int64_t>(p, p + size);
}

std::vector<std::int64_t> distributed_indices(std::int64_t size, const ShardSpec& spec, int epoch) {
  std::vector<std::int64_t> order;
  if (spec.shuffle) {
    order = torch_randperm(size, spec.seed + static_cast<std::uint64_t>(epoch));
  } else {
    order.resize(static_cast<std::size_t>(size));
    for (std::int64_t i = 0; i < size; ++i) order[static_cast<std::size_t>(i)] = i;
  }
  if (order.empty()) return order;
  return shard(order, spec.world, spec.rank, spec.drop_last);
}

std::vector<std::int64_t> strided_indices(std::int64_t size, int world, int rank) {
  std::vector<std::int64_t> mine;
  for (std::int64_t i = rank; i < size; i += world) mine.push_back(i);
  return mine;
}

}  // namespace dl::train
