// Timing copies between buffers (memory_bandwidth.h).
#include "launcher/memory_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace dl {
namespace {

using Clock = std::chrono::steady_clock;

struct Buffers {
  std::vector<char> from, to;
  explicit Buffers(std::size_t bytes) : from(bytes, 1), to(bytes, 0) {}  // touched: no page faults
  void copy() {
    std::memcpy(to.data(), from.data(), from.size());
    asm volatile("" : : "r"(to.data()) : "memory");  // the copy is used: not optimised away
  }
};

// The best of `rounds` rounds in which `threads` threads copy their own buffers together.
double copy_rate(int threads, std::size_t bytes, int rounds) {
  std::vector<Buffers> buffers;
  buffers.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) buffers.emplace_back(bytes);
  double best = 0;
  for (int round = 0; round < rounds; ++round) {
    const auto start = Clock::now();
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t) workers.emplace_back([&buffers, t] { buffers[t].copy(); });
    buffers[0].copy();
    for (auto& w : workers) w.join();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    // Read and written: STREAM's convention, so the figure compares with published ones.
    best = std::max(best, 2.0 * static_cast<double>(bytes) * threads / 1e9 / s);
  }
  return best;
}

}  // namespace

MemoryBandwidth measure_memory_bandwidth(int threads, std::size_t bytes_per_thread, int rounds) {
  MemoryBandwidth m;
  m.threads = std::max(1, threads);
  m.bytes_per_thread = bytes_per_thread;
  m.one_core_gb_s = copy_rate(1, bytes_per_thread, rounds);
  m.all_cores_gb_s =
      m.threads == 1 ? m.one_core_gb_s : copy_rate(m.threads, bytes_per_thread, rounds);
  return m;
}

}  // namespace dl
