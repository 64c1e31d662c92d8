// JPEG decoding of only the part of an image a crop needs, with libjpeg-turbo's partial decoding
// (jpeg_skip_scanlines and jpeg_crop_scanline): rows above the crop are entropy-decoded but not
// transformed, columns outside it are neither transformed nor colour-converted, and decoding stops
// at the crop's last row. RandomResizedCrop keeps about half of an image on average, so the most
// expensive step of loading shrinks by about as much; the pixels are the ones a full decode gives.
//
// Optional at build time (DL_HAVE_LIBJPEG); file_list_source.cpp falls back to OpenCV's decoder for
// everything this does not handle (other formats, CMYK JPEGs, builds without libjpeg).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace dl::data {

// True when this build decodes JPEGs itself (and jpeg_* below do anything).
bool jpeg_region_available();

// Whether the bytes start like a JPEG file (the SOI marker).
bool looks_like_jpeg(const std::uint8_t* data, std::size_t size);

// A window of an image: rows top..top+height, columns left..left+width.
struct Window {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
};

// Picks the window to decode once the image's size is known (from its header): a crop planned on
// the full image, or the whole image. Must not throw.
using ChooseWindow = std::function<Window(int height, int width)>;

// The decoded window: `pixels` points at its top-left pixel, interleaved RGB (or grey: `channels`
// is 1 for greyscale JPEGs and when 1 was asked for), rows `row_stride` bytes apart. `window` is
// the chosen one clamped to the image, and `image_height` x `image_width` the full size.
struct JpegRegion {
  const std::uint8_t* pixels = nullptr;
  std::size_t row_stride = 0;
  int channels = 0;
  Window window;
  int image_height = 0;
  int image_width = 0;
};

// What decode_jpeg_window made of the data.
enum class JpegOutcome {
  kDecoded,
  // Not a JPEG this decoder handles (corrupt, CMYK, not a JPEG): another decoder may try.
  kNotHandled,
  // More pixels than allowed, seen in the header before anything was allocated; no other decoder
  // should try either.
  kTooLarge,
  // A progressive JPEG with more scans than any real encoder writes (kMaxProgressiveScans): each
  // scan costs a pass over the whole image, so a few kilobytes of them cost minutes.
  kTooManyScans,
};

inline constexpr int kMaxProgressiveScans = 1000;

// Decodes the window `choose` picks as `channels` (1 or 3) channels into `buffer` (grown as needed,
// so a worker reuses one), unless the header says the image has more than `max_pixels` pixels.
// Any decoding error is kNotHandled; warnings (a truncated file's grey tail) are tolerated, as
// OpenCV and PIL tolerate them.
JpegOutcome decode_jpeg_window(const std::uint8_t* data, std::size_t size, int channels,
                               std::int64_t max_pixels, const ChooseWindow& choose,
                               std::vector<std::uint8_t>& buffer, JpegRegion* region);

}  // namespace dl::data
