// Shard-wise epoch orders (see shard_order.h).
#include "data/shard_order.h"

#include <numeric>
#include <random>
#include <stdexcept>
#include <utility>

#include "data/random.h"

namespace dl::data {
namespace {

constexpr std::uint64_t kShardDomain = 0x5348415244534831ull;   // "SHARDSH1"
constexpr std::uint64_t kBufferDomain = 0x5348554642554631ull;  // "SHUFBUF1"

void check(const ShardOrderSpec& spec) {
  if (spec.world < 1 || spec.rank < 0 || spec.rank >= spec.world) {
    throw std::invalid_argument("shard order: rank " + std::to_string(spec.rank) + " of world " +
                                std::to_string(spec.world));
  }
}

// This rank's run of the stream: [begin, end).
std::pair<std::int64_t, std::int64_t> share(std::int64_t total, const ShardOrderSpec& spec) {
  if (spec.equal_shares) {
    const std::int64_t each = total / spec.world;
    return {each * spec.rank, each * (spec.rank + 1)};
  }
  return {total * spec.rank / spec.world, total * (spec.rank + 1) / spec.world};
}

}  // namespace

std::int64_t shard_epoch_size(const std::vector<std::int64_t>& counts, const ShardOrderSpec& spec) {
  check(spec);
  const std::int64_t total = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  const auto [begin, end] = share(total, spec);
  return end - begin;
}

std::vector<std::int64_t> shard_epoch_indices(const std::vector<std::int64_t>& counts,
                                              const ShardOrderSpec& spec, int epoch) {
  check(spec);
  std::vector<std::int64_t> first(counts.size());
  std::int64_t total = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    first[s] = total;
    total += counts[s];
  }
  std::vector<std::size_t> shards(counts.size());
  std::iota(shards.begin(), shards.end(), std::size_t{0});
  const auto e = static_cast<std::uint64_t>(epoch);
  if (spec.shuffle && shards.size() > 1) {
    std::mt19937_64 rng(mix_seed(mix_seed(spec.seed ^ kShardDomain, e), counts.size()));
    for (std::size_t i = shards.size() - 1; i > 0; --i) {
      std::swap(shards[i], shards[static_cast<std::size_t>(uniform_below(rng, i + 1))]);
    }
  }
  // The run [begin, end) of the stream of shards in that order.
  const auto [begin, end] = share(total, spec);
  std::vector<std::int64_t> run;
  run.reserve(static_cast<std::size_t>(end - begin));
  std::int64_t at = 0;
  for (const std::size_t s : shards) {
    const std::int64_t lo = std::max(begin, at), hi = std::min(end, at + counts[s]);
    for (std::int64_t k = lo; k < hi; ++k) run.push_back(first[s] + (k - at));
    at += counts[s];
    if (at >= end) break;
  }
  if (!spec.shuffle || spec.buffer < 2 || run.size() < 2) return run;
  // The shuffle buffer as webdataset's: filled from the stream, each arrival then sends out a
  // random resident, and the last ones leave in random order.
  std::mt19937_64 rng(
      mix_seed(mix_seed(spec.seed ^ kBufferDomain, e), static_cast<std::uint64_t>(spec.rank)));
  const auto capacity = static_cast<std::size_t>(spec.buffer);
  std::vector<std::int64_t> buffer, out;
  buffer.reserve(std::min(capacity, run.size()));
  out.reserve(run.size());
  for (const std::int64_t index : run) {
    if (buffer.size() < capacity) {
      buffer.push_back(index);
      continue;
    }
    const auto j = static_cast<std::size_t>(uniform_below(rng, buffer.size()));
    out.push_back(buffer[j]);
    buffer[j] = index;
  }
  while (!buffer.empty()) {
    const auto j = static_cast<std::size_t>(uniform_below(rng, buffer.size()));
    out.push_back(buffer[j]);
    buffer[j] = buffer.back();
    buffer.pop_back();
  }
  return out;
}

}  // namespace dl::data
