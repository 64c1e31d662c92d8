// cudaHostAlloc and cudaFreeHost looked up in a loaded CUDA runtime (see pinned_host.h).
#include "loader_module/pinned_host.h"

#include <dlfcn.h>

#include <cstddef>
#include <new>

namespace dl::loader_module {
namespace {

// cudaError_t is an int enum; cudaSuccess is 0. cudaHostAllocDefault is 0.
using HostAlloc = int (*)(void** ptr, std::size_t size, unsigned int flags);
using FreeHost = int (*)(void* ptr);

}  // namespace

std::optional<PinnedHost> pinned_host(const std::string& path, std::string* why) {
  // RTLD_NOLOAD: only a library torch loaded, never a second CUDA runtime of another version.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) {
    *why = path + " is not loaded in this process";
    return std::nullopt;
  }
  const auto alloc = reinterpret_cast<HostAlloc>(dlsym(library, "cudaHostAlloc"));
  const auto free_host = reinterpret_cast<FreeHost>(dlsym(library, "cudaFreeHost"));
  if (alloc == nullptr || free_host == nullptr) {
    *why = path + " has no cudaHostAlloc/cudaFreeHost";
    dlclose(library);
    return std::nullopt;
  }
  // The handle stays open: buffers may be released after the loader is gone, until exit.
  PinnedHost host;
  host.allocate = [alloc](std::size_t bytes) {
    void* ptr = nullptr;
    if (alloc(&ptr, bytes, 0) != 0 || ptr == nullptr) throw std::bad_alloc();
    return ptr;
  };
  host.release = [free_host](void* block) { free_host(block); };
  return host;
}

}  // namespace dl::loader_module
