// Epoch permutations and per-sample random streams (see epoch_order.h).
#include "data/epoch_order.h"

#include <numeric>
#include <utility>

#include "data/random.h"

namespace dl::data {
namespace {

// Keeps the shuffle stream and the augmentation streams apart even where their inputs coincide.
constexpr std::uint64_t kShuffleDomain = 0x53485546464C4531ull;  // "SHUFFLE1"
constexpr std::uint64_t kAugmentDomain = 0x4155474D454E5431ull;  // "AUGMENT1"

}  // namespace

std::vector<std::int64_t> epoch_order(std::int64_t size, bool shuffle, std::uint64_t seed,
                                      int epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(size));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!shuffle || size < 2) return order;
  std::mt19937_64 rng(mix_seed(mix_seed(seed ^ kShuffleDomain, static_cast<std::uint64_t>(epoch)),
                               static_cast<std::uint64_t>(size)));
  // Fisher-Yates written out, because std::shuffle's algorithm differs between standard libraries.
  for (std::size_t i = order.size() - 1; i > 0; --i) {
    const std::size_t j = static_cast<std::size_t>(uniform_below(rng, i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

std::uint32_t sample_seed(std::uint64_t seed, int epoch, std::int64_t key) {
  const std::uint64_t mixed =
      mix_seed(mix_seed(seed ^ kAugmentDomain, static_cast<std::uint64_t>(epoch)),
               static_cast<std::uint64_t>(key));
  return static_cast<std::uint32_t>(mixed ^ (mixed >> 32));
}

}  // namespace dl::data
