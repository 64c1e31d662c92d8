// The loading time of the user's files as stored against packed at a maximum side
// (packed_decode.h).
#include "data/packed_decode.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <vector>

#include "data/image_decode.h"
#include "data/shard_pack.h"

namespace dl::data {
namespace {

// The faster of two loads of `bytes` through `t`, in milliseconds; nullopt if it does not load.
std::optional<double> load_ms(const std::vector<std::uint8_t>& bytes, const Transform& t,
                              std::int64_t max_pixels, std::vector<std::uint8_t>& dst) {
  double best = -1;
  for (int round = 0; round < 2; ++round) {
    std::mt19937 rng(7);
    const auto start = std::chrono::steady_clock::now();
    if (!decode_image(bytes.data(), bytes.size(), t, rng, max_pixels, dst.data())) {
      return std::nullopt;
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    best = best < 0 ? ms : std::min(best, ms);
  }
  return best;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::optional<PackedDecode> time_packed_decode(const SampleSource& source, const Transform& t,
                                               std::int64_t max_pixels, int max_side, int files) {
  const std::int64_t n = source.size();
  if (n <= 0 || files <= 0) return std::nullopt;
  std::vector<std::uint8_t> dst(t.out.bytes());
  std::vector<double> stored, packed;
  double stored_bytes = 0, packed_bytes = 0;
  const std::int64_t count = std::min<std::int64_t>(files, n);
  for (std::int64_t k = 0; k < count; ++k) {
    const std::int64_t index = k * n / count;  // spread over the classes and the folders
    std::vector<std::uint8_t> bytes;
    std::string ext;
    if (!source.encoded_file(index, bytes, &ext)) {
      if (k == 0) return std::nullopt;  // an in-memory set: nothing to pack differently
      continue;
    }
    const auto as_stored = load_ms(bytes, t, max_pixels, dst);
    const double size = static_cast<double>(bytes.size());
    try {
      if (!as_stored || !shrink_to_jpeg(bytes, max_side, 90)) continue;
    } catch (const std::invalid_argument&) {
      return std::nullopt;  // no OpenCV: pack cannot re-encode either
    }
    const auto as_packed = load_ms(bytes, t, max_pixels, dst);
    if (!as_packed) continue;
    stored.push_back(*as_stored);
    packed.push_back(*as_packed);
    stored_bytes += size;
    packed_bytes += static_cast<double>(bytes.size());
  }
  if (stored.empty()) return std::nullopt;
  PackedDecode d;
  d.files = static_cast<int>(stored.size());
  d.max_side = max_side;
  d.stored_ms = median(stored);
  d.packed_ms = median(packed);
  d.stored_kib = stored_bytes / d.files / 1024.0;
  d.packed_kib = packed_bytes / d.files / 1024.0;
  return d;
}

int pack_side_for(const ImageShape& out) {
  const int side = std::max(out.height, out.width);
  const int wanted = (side * 8 + 6) / 7;
  return std::max(64, (wanted + 31) / 32 * 32);
}

}  // namespace dl::data
