// Measuring a data set's channel statistics (see channel_stats.h).
#include "data/channel_stats.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace dl::data {

ChannelStats measure_channel_stats(const SampleSource& source, const Transform& t,
                                   std::int64_t limit) {
  const std::int64_t n = std::min<std::int64_t>(source.size(), limit);
  const std::size_t plane = static_cast<std::size_t>(t.out.height) * t.out.width;
  const std::size_t channels = static_cast<std::size_t>(std::min(t.out.channels, 3));
  std::vector<std::uint8_t> buf(t.out.bytes());
  std::array<double, 3> sum{}, sq{};
  std::mt19937 rng(0);
  std::int64_t used = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!source.load(i, t, rng, buf.data())) continue;
    ++used;
    for (std::size_t c = 0; c < channels; ++c) {
      for (std::size_t p = 0; p < plane; ++p) {
        const double v = buf[c * plane + p] / 255.0;
        sum[c] += v;
        sq[c] += v * v;
      }
    }
  }
  const double count =
      static_cast<double>(std::max<std::int64_t>(1, used)) * static_cast<double>(plane);
  ChannelStats stats;
  for (std::size_t c = 0; c < 3; ++c) {
    const double m = sum[c] / count;
    stats.mean[c] = static_cast<float>(m);
    stats.std[c] = static_cast<float>(std::sqrt(std::max(1e-12, sq[c] / count - m * m)));
  }
  return stats;
}

}  // namespace dl::data
