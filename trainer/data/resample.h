// Shrinking 8-bit images as Pillow does (ImagingResample with its bilinear filter), which is what
// torchvision's Resize and RandomResizedCrop run on PIL images: a separable convolution whose
// triangle filter widens with the shrink factor (antialiasing), in 22-bit fixed point with
// Pillow's rounding, horizontal pass first. OpenCV's INTER_LINEAR keeps the filter one pixel wide
// and aliases when shrinking by less than 2x; this gives torchvision's pixels instead.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dl::data {

// Resizes src (src_height x src_width, `channels` interleaved channels, rows src_stride bytes
// apart) into dst (dst_height x dst_width, rows dst_stride bytes apart). Any sizes (it is exact
// for growing too, though resize_u8 grows with OpenCV's faster bilinear); an axis whose size
// does not change is not filtered.
void resample_antialias_u8(const std::uint8_t* src, int src_height, int src_width,
                           std::size_t src_stride, int channels, std::uint8_t* dst, int dst_height,
                           int dst_width, std::size_t dst_stride);

// A rectangle of a source image in pixel coordinates, fractional: rows top..bottom, columns
// left..right (Pillow's resize box).
struct Box {
  double top = 0;
  double left = 0;
  double bottom = 0;
  double right = 0;
};

// Resizes the box of src into dst as Pillow's Image.resize(size, BILINEAR, box) does: the
// filter is centred on the box's own coordinates, so a box that does not fall on pixel edges (a
// crop mapped onto an image decoded at a reduced scale) lands where it would at full size; the
// taps reach at most the source's edges. Both axes are filtered, whatever the sizes.
void resample_box_u8(const std::uint8_t* src, int src_height, int src_width, std::size_t src_stride,
                     int channels, const Box& box, std::uint8_t* dst, int dst_height, int dst_width,
                     std::size_t dst_stride);

// The AVX2 passes (resample.cpp), on where the CPU has AVX2; off gives the scalar (SSE2) ones.
// Both give the same bytes: for tests and benchmarks that compare them.
void set_resample_simd(bool allowed);
bool resample_simd_active();

}  // namespace dl::data
