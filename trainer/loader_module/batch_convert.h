// A batch's uint8 CHW images as the tensor a model takes: float32 normalised per channel as
// torchvision's ToTensor + Normalize compute it ((x / 255 - mean) / std), or uint8 as they are,
// in NCHW or channels-last (NHWC) order. One pass over the bytes, written straight into the
// caller's tensor memory (the Python module's torch.empty, pinned where CUDA is). Pure.
#pragma once

#include <array>
#include <cstdint>

#include "data/sample_source.h"

namespace dl::loader_module {

// `n` images of `shape` from `src` into `dst` (n * shape.bytes() floats), NCHW or NHWC.
// Channels beyond 3 use the third channel's statistics.
void normalize_batch(const std::uint8_t* src, std::int64_t n, data::ImageShape shape,
                     const std::array<float, 3>& mean, const std::array<float, 3>& std,
                     bool channels_last, float* dst);

// `n` uint8 images from CHW to HWC order.
void to_channels_last(const std::uint8_t* src, std::int64_t n, data::ImageShape shape,
                      std::uint8_t* dst);

}  // namespace dl::loader_module
