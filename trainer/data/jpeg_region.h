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
#include <string>
#include <vector>

#include "data/jpeg_entropy.h"

namespace dl::data {

// True when this build decodes JPEGs itself (and jpeg_* below do anything).
bool jpeg_region_available();

// Whether the bytes start like a JPEG file (the SOI marker).
bool looks_like_jpeg(const std::uint8_t* data, std::size_t size);

// A window of an image: rows top..top+height, columns left..left+width. Where min_height and
// min_width are set, the window need only keep that many pixels, so it is decoded at the smallest
// of libjpeg's scales M/8 (M = 1, 2 or 4) at which it still spans them (the DCT-domain downscale
// that FFCV and DALI decode with: the inverse transform, upsampling and colour conversion of 1/8,
// 1/4 or 1/2 as many pixels per side); 0 decodes at full size.
struct Window {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
  int min_height = 0;
  int min_width = 0;
  // A scale numerator 1..8 to decode at whatever the minimum (what decode_scale_bench measures
  // every scale with); 0 lets the minimum decide.
  int force_scale = 0;
};

// The scale numerator (M of M/8) at which a window of height x width still spans min_height x
// min_width: the smallest of 1, 2 and 4 that does, else 8 (full size), and 8 where either minimum
// is 0.
int jpeg_scale_for(int height, int width, int min_height, int min_width);

// Picks the window to decode once the image's size is known (from its header): a crop planned on
// the full image, or the whole image. Must not throw.
using ChooseWindow = std::function<Window(int height, int width)>;

// The decoded window: `pixels` points at the top-left pixel of a rows x cols block, interleaved
// RGB (or grey: `channels` is 1 for greyscale JPEGs and when 1 was asked for), rows `row_stride`
// bytes apart. `window` is the chosen one clamped to the image, and `image_height` x
// `image_width` the full size, both in full-size pixels. The block was decoded at scale/8: at 8 it
// is the window itself (rows = window.height, cols = window.width); below, it is the smallest
// block of scaled pixels that covers the window, and `box` is where the window lies in it
// (fractional: the window's edges times scale/8, less the block's corner).
// What libjpeg warned of while decoding: the window came out, but part of it may be grey (the data
// ended) or garbage (corrupt entropy-coded data: a bad Huffman code, a marker where data should
// be, a lost restart marker). Only the part decoded is seen: rows below a window are never read.
enum class JpegDamage { kNone, kCutShort, kCorrupt };

struct JpegRegion {
  const std::uint8_t* pixels = nullptr;
  std::size_t row_stride = 0;
  int channels = 0;
  Window window;
  int image_height = 0;
  int image_width = 0;
  int scale = 8;
  int rows = 0;
  int cols = 0;
  double box_top = 0;
  double box_left = 0;
  double box_bottom = 0;
  double box_right = 0;
  JpegDamage damage = JpegDamage::kNone;
  std::string damage_text;  // libjpeg's first such warning: "Corrupt JPEG data: bad Huffman code"
  // With kTooMuchMemory: the bytes the decode would have needed.
  std::uint64_t memory_needed = 0;
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
  // The decode would need more than kMaxDecodeBytes: a progressive (multi-scan) file keeps the
  // whole image's coefficients, and the window's pixels come on top. Seen before either is
  // allocated; no other decoder should try (OpenCV would allocate the same).
  kTooMuchMemory,
};

inline constexpr int kMaxProgressiveScans = 1000;

// What one decode may allocate: the coefficients of a progressive 4:2:0 photo of 100 megapixels
// (300 MB) and its pixels at full size (300 MB) fit; a 300-byte progressive file claiming
// 65303x11560 pixels (2.2 GB of coefficients, found by tests/fuzz/jpeg_region_fuzz) does not.
inline constexpr std::uint64_t kMaxDecodeBytes = std::uint64_t{1} << 30;

// Decodes the window `choose` picks (from the header's size, before anything is decoded) as
// `channels` (1 or 3) channels into `buffer` (grown as needed, so a worker reuses one), at the
// scale its minimum size allows, unless the header says the image has more than `max_pixels`
// pixels.
// Any decoding error is kNotHandled. Warnings do not stop the decode (the pixels are what libjpeg
// makes of the data, as OpenCV's are); the ones that mean missing or corrupt data are reported in
// region->damage, for the caller to refuse the picture. With a `lease`, the file's Huffman decoding
// starts near the window from points earlier decodes recorded, and records more (jpeg_entropy.h).
JpegOutcome decode_jpeg_window(const std::uint8_t* data, std::size_t size, int channels,
                               std::int64_t max_pixels, const ChooseWindow& choose,
                               std::vector<std::uint8_t>& buffer, JpegRegion* region,
                               EntropyLease* lease = nullptr);

}  // namespace dl::data
