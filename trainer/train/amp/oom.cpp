// Out-of-memory recognition, clean-up and the fault-injection hook.
#include "train/amp/oom.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "train/amp/cuda_support.h"

namespace dl::train {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr) return true;
  // c10::Error's what() carries a C++ backtrace whose frame names must not match: read the
  // message alone.
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string m =
      lower(c10_error != nullptr ? c10_error->what_without_backtrace() : e.what());
  if (contains(m, "out of memory") || contains(m, "can't allocate memory") ||
      contains(m, "status_alloc_failed")) {
    return true;
  }
  // cuDNN answers a size it cannot fit with "not supported" or no algorithm rather than an
  // allocation error.
  return contains(m, "cudnn") &&
         (contains(m, "not_supported") || contains(m, "not supported") || contains(m, "no valid") ||
          contains(m, "unable to find an engine"));
}

void release_cached_memory(c10::Device device) {
  if (device.is_cuda()) cuda::empty_cache();
}

std::int64_t injected_oom_limit() {
  static const std::int64_t limit = [] {
    const char* v = std::getenv("DL_FAULT_OOM_ABOVE");
    if (v == nullptr || *v == '\0') return std::int64_t{0};
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    return *end == '\0' && n > 0 ? static_cast<std::int64_t>(n) : std::int64_t{0};
  }();
  return limit;
}

void maybe_inject_oom(std::int64_t samples) {
  const std::int64_t limit = injected_oom_limit();
  if (limit > 0 && samples > limit) {
    throw c10::OutOfMemoryError({__func__, __FILE__, static_cast<std::uint32_t>(__LINE__)},
                                "simulated out of memory: a forward on " + std::to_string(samples) +
                                    " samples, above DL_FAULT_OOM_ABOVE=" + std::to_string(limit));
  }
}

}  // namespace dl::train
