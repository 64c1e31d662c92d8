// Fuzzes the CIFAR-10 binary reader (open_cifar10): the input is a directory's test_batch.bin.
// DataError is the reader's documented refusal; anything else escaping, a crash or a sanitizer
// report is a finding. An accepted batch is read back: every label, and the first and last
// samples at the native size and as an augmented 3x24x24 training crop.
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "data/cifar.h"
#include "data/data_error.h"
#include "fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dl::fuzz::write_input("test_batch.bin", data, size);
  try {
    const auto source = dl::data::open_cifar10(dl::fuzz::scratch_dir(), /*train=*/false);
    std::int64_t sum = source->num_classes();
    for (std::int64_t i = 0; i < source->size(); ++i) sum += source->label(i);
    std::mt19937 rng(static_cast<unsigned>(size));
    for (const bool native : {true, false}) {
      dl::data::Transform t;
      t.train = !native;
      t.out = native ? source->native_shape() : dl::data::ImageShape{3, 24, 24};
      std::vector<std::uint8_t> out(t.out.bytes());
      for (const std::int64_t i : {std::int64_t{0}, source->size() - 1}) {
        if (!source->load(i, t, rng, out.data())) __builtin_trap();  // memory samples always load
      }
      sum += out.back();
    }
    dl::fuzz::sink = sum;
    return 0;
  } catch (const dl::data::DataError&) {
    return 0;
  }
}
