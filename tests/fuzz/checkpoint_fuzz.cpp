// Fuzzes the checkpoint reader (parse_checkpoint: the bytes of a --resume file, read by LibTorch's
// unpickler and then validated entry by entry). std::runtime_error naming the file is the reader's
// documented refusal; anything else escaping (a c10::Error, say), a crash or a sanitizer report
// is a finding. Only the project's code is instrumented: LibTorch is Debian's build, so crashes
// inside it show, but its branches do not guide the fuzzer.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/checkpoint.h"

namespace {
volatile std::int64_t sink = 0;
}

// LibTorch 1.13 leaks miniz's reader state (a few hundred bytes) whenever PyTorchStreamReader's
// constructor throws on a damaged zip archive: the throw skips the destructor that would free it.
// That is LibTorch's, not the reader's, and costs a process that reads one checkpoint nothing, so
// leaks allocated inside libtorch_cpu are not findings. (Matched by module: LibTorch is built
// without frame pointers, so the stack LeakSanitizer records ends at its first frame there.)
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libtorch_cpu.so\n";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<char> bytes(data, data + size);
  try {
    const dl::model::CheckpointData checkpoint = dl::model::parse_checkpoint(bytes, "fuzz.pt");
    sink = static_cast<std::int64_t>(checkpoint.model_state.size() +
                                     checkpoint.optimizer.state.size() + checkpoint.extra.size()) +
           checkpoint.epoch;
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    if (message.rfind("checkpoint fuzz.pt: ", 0) != 0) __builtin_trap();  // names the file
  }
  return 0;
}
