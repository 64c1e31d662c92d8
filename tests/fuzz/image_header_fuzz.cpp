// Fuzzes the image header reader (read_image_header), which reads the first bytes of every image
// file of an ImageFolder, a CSV manifest or a shard before any decoder runs, to refuse a
// decompression bomb by its declared size, and the walk to the end the file's structure declares
// (cut_short, image_extent.h), which refuses a file cut short. The input is the file. The reader
// never throws and never reads past the end (AddressSanitizer sees libFuzzer's buffer end exactly);
// a size it reports is positive in both directions, a pixel count that does not wrap, and the same
// when the bytes are read again from a copy with trailing bytes (its answer depends on the header
// alone).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "data/image_extent.h"
#include "data/image_header.h"
#include "fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using dl::data::ImageFormat;
  const dl::data::ImageHeader h = dl::data::read_image_header(data, size);
  if (h.format == ImageFormat::kUnknown && (h.width != 0 || h.height != 0)) __builtin_trap();
  if (h.width < 0 || h.height < 0) __builtin_trap();
  if ((h.width > 0) != (h.height > 0)) __builtin_trap();  // both known or neither
  // The pixel count never wraps (TIFF's LONG sizes and PNM's ten digits multiply past 2^63): it
  // is at least each side, or the decoder's pixel limit could be slipped under.
  if (h.sized() && (h.pixels() < h.width || h.pixels() < h.height)) __builtin_trap();
  if (std::strlen(dl::data::format_name(h.format)) == 0) __builtin_trap();
  if (h.sized()) {
    std::vector<std::uint8_t> longer(data, data + size);
    longer.resize(size + 64, 0xAB);
    const dl::data::ImageHeader again = dl::data::read_image_header(longer.data(), longer.size());
    if (again.format != h.format || again.width != h.width || again.height != h.height) {
      __builtin_trap();
    }
  }
  // One phrase without commas (it goes into predict's CSV cell), or nothing.
  const std::string short_by = dl::data::cut_short(h, data, size);
  if (short_by.find(',') != std::string::npos || short_by.find('\n') != std::string::npos) {
    __builtin_trap();
  }
  // Summed unsigned: pixels() may be INT64_MAX.
  dl::fuzz::sink = static_cast<std::int64_t>(
      static_cast<std::uint64_t>(h.sized() ? h.pixels() : static_cast<std::int64_t>(h.format)) +
      short_by.size());
  return 0;
}
