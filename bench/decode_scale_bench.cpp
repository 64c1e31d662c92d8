// What libjpeg's DCT scaling buys: each JPEG of a folder decoded whole at every scale M/8
// (M = 1..8) by decode_jpeg_window, the scales alternated image by image so that the machine's
// drift spreads over all of them. Prints, for each M, the median time per image and its ratio to
// the full-size decode: which scales pay (the reduced IDCTs of 1/8, 2/8 and 4/8 have SIMD code in
// libjpeg-turbo, the others are plain C) decides what jpeg_scale_for may pick.
//
//   decode_scale_bench --data DIR [--rounds N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/jpeg_region.h"
#include "jpeg_files.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--data") {
      dir = argv[i + 1];
    } else if (key == "--rounds") {
      rounds = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "decode_scale_bench: unknown option %s\n", key.c_str());
      return 64;
    }
  }
  if (dir.empty() || rounds < 1) {
    std::fprintf(stderr, "usage: decode_scale_bench --data DIR [--rounds N]\n");
    return 64;
  }
  const std::vector<std::vector<std::uint8_t>> files = dl::bench::read_jpeg_files(dir);
  if (files.empty()) {
    std::fprintf(stderr, "decode_scale_bench: no JPEG files under %s\n", dir.c_str());
    return 66;
  }
  // seconds[m - 1]: each image's decode time at m/8, every round
  std::vector<std::vector<double>> seconds(8);
  std::vector<std::uint8_t> buffer;
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t f = 0; f < files.size(); ++f) {
      for (int k = 0; k < 8; ++k) {
        const int m = 1 + static_cast<int>((f + static_cast<std::size_t>(k)) % 8);  // rotated
        const auto choose = [m](int h, int w) {
          dl::data::Window whole{0, 0, h, w};
          whole.force_scale = m;
          return whole;
        };
        dl::data::JpegRegion region;
        const auto t0 = Clock::now();
        const auto outcome = dl::data::decode_jpeg_window(
            files[f].data(), files[f].size(), 3, std::int64_t{1} << 40, choose, buffer, &region);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (outcome != dl::data::JpegOutcome::kDecoded || region.scale != m) {
          std::fprintf(stderr, "decode_scale_bench: image %zu did not decode at %d/8\n", f, m);
          return 1;
        }
        seconds[static_cast<std::size_t>(m - 1)].push_back(s);
      }
    }
  }
  const double full = median(seconds[7]);
  std::printf("%zu JPEGs x %d rounds, whole-image decode by scale\n", files.size(), rounds);
  std::printf("scale  median ms  vs 8/8\n");
  for (int m = 8; m >= 1; --m) {
    const double t = median(seconds[static_cast<std::size_t>(m - 1)]);
    std::printf("%d/8    %9.3f  %6.2fx\n", m, t * 1e3, full / t);
  }
  return 0;
}
