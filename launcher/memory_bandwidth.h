// The machine's memory bandwidth as a copy loop sees it (STREAM's Copy: every byte read once and
// written once, both counted), on one core and on every usable core at once: the ceiling of the
// loader's copies, normalisation and collation, measured by dl-launch doctor.
#pragma once

#include <cstddef>

namespace dl {

struct MemoryBandwidth {
  double one_core_gb_s = 0;
  double all_cores_gb_s = 0;
  int threads = 1;
  std::size_t bytes_per_thread = 0;
};

// The best of `rounds` copies of `bytes_per_thread` (between two buffers each thread touched
// first) on one thread, then on `threads` threads together.
MemoryBandwidth measure_memory_bandwidth(int threads, std::size_t bytes_per_thread, int rounds);

}  // namespace dl
