// Fuzzes the state-dict pickle reader (read_state_dict_pickle: the data.pkl of an --init-from
// file, read without LibTorch). StateDictError is the reader's documented refusal; anything else
// escaping, a crash, a leak or a sanitizer report is a finding. Every view the reader accepts
// must lie inside its storage, as weights_file.cpp relies on: checked here again.
#include <cstddef>
#include <cstdint>

#include "model/state_pickle.h"

namespace {
volatile std::uint64_t sink = 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const dl::model::PickledStateDict d = dl::model::read_state_dict_pickle(data, size);
    if (d.tensors.empty()) __builtin_trap();  // documented: at least one tensor or a refusal
    for (const auto& [name, t] : d.tensors) {
      if (t.sizes.size() != t.strides.size()) __builtin_trap();
      std::uint64_t last = t.offset;
      bool empty = false;
      for (std::size_t i = 0; i < t.sizes.size(); ++i) {
        if (t.sizes[i] < 0 || t.strides[i] < 0) __builtin_trap();
        if (t.sizes[i] == 0) empty = true;
        if (!empty)
          last +=
              static_cast<std::uint64_t>(t.sizes[i] - 1) * static_cast<std::uint64_t>(t.strides[i]);
      }
      if (!empty && last >= t.storage_numel) __builtin_trap();
      sink = sink + name.size() + last;
    }
  } catch (const dl::model::StateDictError&) {
  }
  return 0;
}
