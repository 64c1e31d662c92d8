// The global batch's split over ranks and micro-batches (accumulation.h).
#include "core/accumulation.h"

#include <algorithm>
#include <stdexcept>

namespace dl {

Accumulation split_global_batch(std::int64_t global, int world, std::int64_t fits) {
  if (world < 1 || global < 1 || fits < 1) throw std::invalid_argument("non-positive sizes");
  if (global % world != 0) {
    throw std::invalid_argument("expected a multiple of the " + std::to_string(world) +
                                " ranks, so that each takes an equal share");
  }
  Accumulation a;
  a.per_rank = global / world;
  a.steps = (a.per_rank + fits - 1) / fits;
  // As many pieces as needed, each as even as possible: 200 in pieces of at most 136 is 2 x 100,
  // not 136 + 64 (the smaller piece would run at the slower rate of a small batch).
  a.micro = (a.per_rank + a.steps - 1) / a.steps;
  return a;
}

std::string describe(const Accumulation& a, int world) {
  std::string s = std::to_string(a.per_rank);
  if (world > 1) s += " per rank x " + std::to_string(world) + " ranks,";
  return s + (a.steps > 1 ? " in " + std::to_string(a.steps) + " micro-batches of at most " +
                                std::to_string(a.micro)
                          : " at once");
}

}  // namespace dl
