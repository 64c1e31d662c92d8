// Fuzzes the partial JPEG decoder (decode_jpeg_window), which decodes the image files of
// ImageFolder and CSV data sets. Its last bytes choose the channels, the window (as a crop plan
// would, anywhere, even outside the image) and the size it must keep (so the scale); the rest is
// the file. The decoder refuses bad
// data by returning false and must not throw: any exception, crash or sanitizer report is a
// finding. A decoded window is read whole, row by row, as the transform reads it, so a region that
// points outside the buffer shows as a heap overflow. Differential too: the indexed Huffman decoder
// (jpeg_entropy.h), twice with an index lent (recording, then jumping), must give libjpeg's own
// decoder's outcome and bytes.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/jpeg_entropy.h"
#include "data/jpeg_region.h"
#include "fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const int channels = in.ConsumeBool() ? 3 : 1;
  dl::data::Window window;
  window.top = in.ConsumeIntegral<std::int16_t>();
  window.left = in.ConsumeIntegral<std::int16_t>();
  window.height = in.ConsumeIntegral<std::int16_t>();
  window.width = in.ConsumeIntegral<std::int16_t>();
  // The output size a crop must keep (0: full-size decode), so the scaled decodes are fuzzed too.
  window.min_height = in.ConsumeIntegral<std::uint8_t>();
  window.min_width = in.ConsumeIntegral<std::uint8_t>();
  const std::vector<std::uint8_t> file = in.ConsumeRemainingBytes<std::uint8_t>();

  std::vector<std::uint8_t> buffer;
  dl::data::JpegRegion region;
  const auto choose = [&](int, int) { return window; };
  // No pixel limit of the caller's: the decoder's own (OpenCV's 2^30) is what is fuzzed.
  constexpr std::int64_t kNoLimit = std::int64_t{1} << 40;
  // libjpeg's own decoder first: the reference.
  dl::data::set_jpeg_entropy_decoder(false);
  const dl::data::JpegOutcome want = dl::data::decode_jpeg_window(
      file.data(), file.size(), channels, kNoLimit, choose, buffer, &region);
  dl::data::set_jpeg_entropy_decoder(true);
  std::vector<std::uint8_t> want_pixels;
  const auto copy_block = [&](std::vector<std::uint8_t>& out) {
    for (int y = 0; y < region.rows; ++y) {
      const std::uint8_t* row = region.pixels + static_cast<std::size_t>(y) * region.row_stride;
      out.insert(out.end(), row, row + static_cast<std::size_t>(region.cols) * region.channels);
    }
  };
  if (want == dl::data::JpegOutcome::kDecoded) copy_block(want_pixels);
  // One store for the whole run: an index recorded from one input must not serve the next.
  static dl::data::EntropyIndexStore store(1, std::size_t{64} << 20);
  for (int pass = 0; pass < 2; ++pass) {
    dl::data::EntropyLease lease(&store, 0);
    const dl::data::JpegOutcome got = dl::data::decode_jpeg_window(
        file.data(), file.size(), channels, kNoLimit, choose, buffer, &region, &lease);
    if (got != want) __builtin_trap();  // the indexed decoder decides otherwise than libjpeg
    if (got != dl::data::JpegOutcome::kDecoded) continue;
    std::vector<std::uint8_t> pixels;
    copy_block(pixels);
    if (pixels != want_pixels) __builtin_trap();  // ... or makes other pixels of the same bytes
  }
  if (want != dl::data::JpegOutcome::kDecoded) return 0;
  const dl::data::Window& w = region.window;
  if (w.top < 0 || w.left < 0 || w.height < 1 || w.width < 1 ||
      w.top + w.height > region.image_height || w.left + w.width > region.image_width ||
      (region.channels != 1 && region.channels != 3) || (channels == 1 && region.channels != 1)) {
    __builtin_trap();  // the window is clamped to the image, the channels are the ones asked for
  }
  if (region.scale < 1 || region.scale > 8 || region.rows < 1 || region.cols < 1 ||
      (region.scale == 8 && (region.rows != w.height || region.cols != w.width)) ||
      region.box_top < 0 || region.box_left < 0 || region.box_bottom > region.rows ||
      region.box_right > region.cols || region.box_top >= region.box_bottom ||
      region.box_left >= region.box_right) {
    __builtin_trap();  // the decoded block holds the window's box
  }
  // The block is read whole, as the transforms read it.
  std::int64_t sum = 0;
  for (int y = 0; y < region.rows; ++y) {
    const std::uint8_t* row = region.pixels + static_cast<std::size_t>(y) * region.row_stride;
    for (int x = 0; x < region.cols * region.channels; ++x) sum += row[x];
  }
  dl::fuzz::sink = sum;
  return 0;
}
