// Planning: a pure function from the machine's facts and what the user asked to the settings the
// training program gets. Every derived value carries the reason it was chosen.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe.h"

namespace dl {

// A value and where it came from ("--workers", "DL_WORKERS", "/ws/dl.conf", "default").
template <typename T>
struct Sourced {
  T value{};
  std::string source = "default";
};

struct Request {
  std::optional<Sourced<int>> workers;  // unset: derive
  std::optional<Sourced<int>> threads;  // unset: derive
  Sourced<int> batch_size{64};
  Sourced<std::string> precision{"auto"};        // auto | fp32 | fp16 | bf16
  Sourced<std::string> device{"auto"};           // auto | cpu | cuda | cuda:N
  std::optional<Sourced<std::int64_t>> samples;  // data set size when known
  Sourced<std::uint64_t> sample_bytes{3 * 224 * 224 * 4, "3x224x224 assumed"};  // one float sample
  // The program passes batches between processes through /dev/shm (PyTorch's DataLoader does).
  bool shm_batches = false;
};

template <typename T>
struct Choice {
  T value{};
  std::string reason;
};

struct Plan {
  Choice<std::string> device;  // "cpu" or "cuda:N"
  Choice<std::string> precision;
  Choice<int> workers;
  Choice<int> threads;
  Choice<int> batch_size;
  std::vector<std::string> warnings;
};

// Throws UserError when the request cannot be met on this machine (cuda without a GPU, fp16 on
// CPU).
Plan make_plan(const Facts& facts, const Request& request);

// Docker's default /dev/shm size; at or below it PyTorch's DataLoader workers die with "bus error".
constexpr std::uint64_t kDockerDefaultShm = 64ull << 20;
// Batches a DataLoader worker keeps in flight (PyTorch's prefetch_factor default).
constexpr int kPrefetchPerWorker = 2;
// Below this many samples, worker start-up costs more than it saves (the tutorial's rule).
constexpr std::int64_t kSmallDataset = 1000;

}  // namespace dl
