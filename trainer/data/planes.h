// Interleaved to planar: the last pixel step of every transform, turning a decoder's HWC window
// into the batch's CHW planes, mirrored left-right when asked. With OpenCV this is its SIMD
// split and flip; without, a plain loop.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dl::data {

// Copies the h x w window at (top, left) of an interleaved image of `channels` channels (rows
// `stride` bytes apart) into `channels` planes of h x w at dst, mirroring each row when `flip`.
void to_planes(const std::uint8_t* src, std::size_t stride, int channels, int top, int left, int h,
               int w, bool flip, std::uint8_t* dst);

// The plain loop itself, exposed so the tests can hold the fast path to it.
void to_planes_plain(const std::uint8_t* src, std::size_t stride, int channels, int top, int left,
                     int h, int w, bool flip, std::uint8_t* dst);

}  // namespace dl::data
