// Fuzzes the CSV manifest reader (open_csv_manifest): the input is the manifest file. DataError is
// the reader's documented refusal; anything else escaping, a crash or a sanitizer report is a
// finding. An accepted manifest's listing is read back (size, labels, description); its images
// are not loaded: the paths are the input's, and may name any file on the machine.
#include <cstddef>
#include <cstdint>

#include "data/csv_manifest.h"
#include "data/data_error.h"
#include "fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = dl::fuzz::write_input("manifest.csv", data, size);
  try {
    const auto source = dl::data::open_csv_manifest(path);
    std::int64_t sum = source->num_classes();
    for (std::int64_t i = 0; i < source->size(); ++i) {
      // num_classes is max label + 1: every label must lie below it.
      if (source->label(i) < 0 || source->label(i) >= source->num_classes()) __builtin_trap();
      sum += source->label(i);
    }
    sum += static_cast<std::int64_t>(source->describe().size());
    dl::fuzz::sink = sum;
    return 0;
  } catch (const dl::data::DataError&) {
    return 0;
  }
}
