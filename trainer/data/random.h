// Small random-number helpers with fully specified algorithms. The standard distributions
// (uniform_real_distribution, std::shuffle, ...) are implementation-defined, so libstdc++ and
// libc++ would give different augmentations and orders for the same seed; these do not.
#pragma once

#include <cstdint>
#include <random>

namespace dl::data {

// Sebastiano Vigna's splitmix64 finaliser: a cheap bijection whose output bits all depend on all
// input bits, so nearby inputs (epoch 3 and 4, position 17 and 18) give unrelated seeds.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Combines a seed with one more value; not symmetric, so mix(a, b) != mix(b, a).
inline std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t value) {
  return splitmix64(seed ^ splitmix64(value + 0x632BE59BD9B4E019ull));
}

// Uniform in [0, 1) from 32 random bits (float has 24 bits of mantissa, double keeps all 32).
inline double uniform01(std::mt19937& rng) {
  return static_cast<double>(rng()) * 0x1p-32;
}

inline double uniform_real(std::mt19937& rng, double lo, double hi) {
  return lo + (hi - lo) * uniform01(rng);
}

// Uniform integer in [lo, hi] (inclusive); rejection sampling keeps it exactly unbiased.
inline int uniform_int(std::mt19937& rng, int lo, int hi) {
  const std::uint32_t span = static_cast<std::uint32_t>(hi - lo) + 1u;
  if (span == 0) return lo + static_cast<int>(rng());  // the whole 32-bit range
  const std::uint32_t limit = (0u - span) % span;      // values below this are biased
  // mt19937's result_type is uint_fast32_t (64 bits wide on Linux) holding 32-bit values.
  std::uint32_t r = static_cast<std::uint32_t>(rng());
  while (r < limit) r = static_cast<std::uint32_t>(rng());
  return lo + static_cast<int>(r % span);
}

// Uniform in [0, n) for n > 0, 64-bit: the shuffle of data sets larger than 2^32 samples still
// works.
inline std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t limit = (0ull - n) % n;
  std::uint64_t r = rng();
  while (r < limit) r = rng();
  return r % n;
}

}  // namespace dl::data
