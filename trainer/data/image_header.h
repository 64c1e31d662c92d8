// An image file's format and size read from its first bytes, before any decoder runs: the size a
// decoder would allocate for, so that a small file claiming a huge image (a decompression bomb)
// can be refused without allocating anything.
//
// Only the formats read here are handed to a decoder (ImageFolder's .jpg .png .bmp .webp, and TIFF
// and PNM, which OpenCV also decodes). Anything else is not an image to the loader: its size cannot
// be known before decoding, so its cost could not be bounded.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dl::data {

enum class ImageFormat { kUnknown, kJpeg, kPng, kBmp, kWebp, kTiff, kPnm };

struct ImageHeader {
  ImageFormat format = ImageFormat::kUnknown;
  // Both positive when the header was read; 0 when the format was recognised but its header is
  // cut short or malformed (the file is then corrupt, whatever a decoder would make of it).
  std::int64_t width = 0;
  std::int64_t height = 0;
  // Saturates: TIFF's LONG and PNM's 10-digit sizes multiply past 2^63 (a wrapped product would
  // slip under the decoder's pixel limit).
  std::int64_t pixels() const {
    std::int64_t p = 0;
    return __builtin_mul_overflow(width, height, &p) ? INT64_MAX : p;
  }
  bool sized() const { return width > 0 && height > 0; }
};

// Never reads past data + size.
ImageHeader read_image_header(const std::uint8_t* data, std::size_t size);

// "JPEG", "PNG", ...
const char* format_name(ImageFormat format);

}  // namespace dl::data
