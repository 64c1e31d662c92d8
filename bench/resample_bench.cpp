// The resampler's two horizontal passes side by side (data/resample.h): an RGB crop shrunk to
// 224 x 224 as RandomResizedCrop does (a fractional box, both passes), and the horizontal pass
// alone, with the AVX2 pass and with the scalar one (set_resample_simd), alternated call by call
// so that the machine's drift spreads over both. Prints the median milliseconds a call and the
// ratio; the bytes of the two are checked to be the same first.
//
//   resample_bench [--rounds N] [--height H] [--width W]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "data/resample.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int usage(const std::string& why) {
  std::fprintf(stderr,
               "resample_bench: %s (usage: resample_bench [--rounds N] [--height H] [--width W])\n",
               why.c_str());
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 200, height = 480, width = 520;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage(a + " needs a number");
    const int v = std::atoi(argv[++i]);
    if (v < 1 || v > 20000) return usage(a + " " + argv[i] + ": expected 1 to 20000");
    if (a == "--rounds") {
      rounds = v;
    } else if (a == "--height") {
      height = v;
    } else if (a == "--width") {
      width = v;
    } else {
      return usage("unknown argument '" + a + "'");
    }
  }
  if (!dl::data::resample_simd_active()) {
    std::printf("this CPU has no AVX2: only the scalar pass exists here\n");
    return 0;
  }
  std::mt19937 rng(1);
  const std::size_t stride = static_cast<std::size_t>(width) * 3;
  std::vector<std::uint8_t> src(static_cast<std::size_t>(height) * stride);
  for (auto& b : src) b = static_cast<std::uint8_t>(rng() & 255);
  const dl::data::Box box{0.7, 1.3, height - 2.1, width - 0.4};
  std::vector<std::uint8_t> crop_out(224 * 224 * 3),
      rows_out(static_cast<std::size_t>(height) * 224 * 3);
  const auto crop = [&](std::uint8_t* dst) {
    dl::data::resample_box_u8(src.data(), height, width, stride, 3, box, dst, 224, 224, 224 * 3);
  };
  const auto rows = [&](std::uint8_t* dst) {
    dl::data::resample_antialias_u8(src.data(), height, width, stride, 3, dst, height, 224,
                                    224 * 3);
  };
  struct Case {
    const char* name;
    std::function<void(std::uint8_t*)> run;
    std::vector<std::uint8_t>* out;
  };
  std::printf("| %d x %d RGB -> | AVX2 (ms) | scalar (ms) | ratio |\n|---|---|---|---|\n", height,
              width);
  for (const Case& c : {Case{"224 x 224, crop box (both passes)", crop, &crop_out},
                        Case{"224 wide (horizontal pass only)", rows, &rows_out}}) {
    std::vector<std::uint8_t> fast(c.out->size()), plain(c.out->size());
    dl::data::set_resample_simd(true);
    c.run(fast.data());
    dl::data::set_resample_simd(false);
    c.run(plain.data());
    if (fast != plain) {
      std::fprintf(stderr, "resample_bench: the two passes differ on %s\n", c.name);
      return 1;
    }
    std::vector<double> t_fast, t_plain;
    for (int r = 0; r < rounds; ++r) {
      for (const bool simd : {r % 2 == 0, r % 2 != 0}) {
        dl::data::set_resample_simd(simd);
        const auto t0 = Clock::now();
        c.run(c.out->data());
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        (simd ? t_fast : t_plain).push_back(ms);
      }
    }
    dl::data::set_resample_simd(true);
    std::printf("| %s | %.3f | %.3f | %.2fx |\n", c.name, median(t_fast), median(t_plain),
                median(t_plain) / median(t_fast));
  }
  return 0;
}
