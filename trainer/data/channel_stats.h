// Per-channel mean and standard deviation of a data set as a transform yields it, on the 0..1
// scale: what normalisation divides by. In-memory sets (IDX, CIFAR) are cheap to measure, and
// measured statistics fit any of their variants (MNIST, Fashion-MNIST, KMNIST) without a table;
// image files use ImageNet's, as torchvision's recipe does (measuring would decode thousands of
// files before the first step).
#pragma once

#include <array>
#include <cstdint>

#include "data/sample_source.h"

namespace dl::data {

struct ChannelStats {
  std::array<float, 3> mean{};
  std::array<float, 3> std{};
};

// torchvision's ImageNet statistics (RGB).
inline constexpr ChannelStats kImageNetStats{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};

// Measured over the first `limit` samples of `source` that load, through `t` (deterministic: the
// same samples, the same stream). Channels past t.out.channels are left 0.
ChannelStats measure_channel_stats(const SampleSource& source, const Transform& t,
                                   std::int64_t limit = 5000);

}  // namespace dl::data
