// Page-locked (pinned) host memory for the loader's batch buffers on CUDA machines, so that a
// batch's copy to the GPU can be asynchronous (non_blocking) without a staging copy. The module
// links no CUDA: it takes cudaHostAlloc and cudaFreeHost from the CUDA runtime that torch already
// loaded into the process (the Python side finds its path in /proc/self/maps).
#pragma once

#include <optional>
#include <string>

#include "data/buffer_pool.h"

namespace dl::loader_module {

struct PinnedHost {
  data::AllocateFn allocate;  // throws std::bad_alloc when CUDA refuses
  data::ReleaseFn release;
};

// The allocator of the CUDA runtime library at `path`, which must be loaded already; nullopt (and
// `why` set) when it is not, or lacks the two functions.
std::optional<PinnedHost> pinned_host(const std::string& path, std::string* why);

}  // namespace dl::loader_module
