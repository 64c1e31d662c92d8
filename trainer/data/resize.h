// Resizing of 8-bit images: OpenCV's cv::resize where the build has OpenCV, otherwise a plain
// bilinear fallback, so the in-memory data sets (IDX, CIFAR) still augment in a build without it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dl::data {

// Resizes src (src_height x src_width, `channels` interleaved channels, rows src_stride bytes
// apart) into dst (dst_height x dst_width, rows dst_stride bytes apart). Shrinking along either
// axis: Pillow's antialiased bilinear (resample.h), torchvision's pixels; growing: bilinear
// (OpenCV's INTER_LINEAR where the build has it). Equal sizes copy the pixels unchanged.
void resize_u8(const std::uint8_t* src, int src_height, int src_width, std::size_t src_stride,
               int channels, std::uint8_t* dst, int dst_height, int dst_width,
               std::size_t dst_stride);

// The fallback itself (bilinear with half-pixel centers, as OpenCV and PyTorch align them);
// exposed so the tests can check it in a build that has OpenCV too.
void resize_bilinear_u8(const std::uint8_t* src, int src_height, int src_width,
                        std::size_t src_stride, int channels, std::uint8_t* dst, int dst_height,
                        int dst_width, std::size_t dst_stride);

// OpenCV spreads a large resize over its own thread pool. Loader workers already run in parallel,
// and both pools together would oversubscribe the cores, so a loader with workers sets 1 here
// (a process-wide OpenCV setting; does nothing without OpenCV).
void set_resize_threads(int threads);

}  // namespace dl::data
