// Fuzzes the IDX reader (open_idx, raw and gzip files). An input is both files: its first two
// bytes (big-endian) give the labels file's length, the labels file follows, then the images
// file (make_corpus.py writes the seeds so). DataError is the reader's documented refusal;
// anything else escaping, a crash or a sanitizer report is a finding. An accepted data set is
// read back: its labels, and its first and last samples at the native size and resized to 8x8.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "data/data_error.h"
#include "data/idx.h"
#include "fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t labels_size = std::min<std::size_t>((data[0] << 8) | data[1], size - 2);
  const std::string labels = dl::fuzz::write_input("labels", data + 2, labels_size);
  const std::string images =
      dl::fuzz::write_input("images", data + 2 + labels_size, size - 2 - labels_size);
  try {
    const auto source = dl::data::open_idx(images, labels);
    std::int64_t sum = source->num_classes();
    for (std::int64_t i = 0; i < source->size(); ++i) sum += source->label(i);
    std::mt19937 rng(0);
    for (const bool native : {true, false}) {
      dl::data::Transform t;
      t.out = native ? source->native_shape() : dl::data::ImageShape{1, 8, 8};
      std::vector<std::uint8_t> out(t.out.bytes());
      for (const std::int64_t i : {std::int64_t{0}, source->size() - 1}) {
        if (!source->load(i, t, rng, out.data())) __builtin_trap();  // memory samples always load
      }
      sum += out.front();
    }
    dl::fuzz::sink = sum;
    return 0;
  } catch (const dl::data::DataError&) {
    return 0;
  }
}
