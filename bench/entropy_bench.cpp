// What the indexed Huffman decoder (trainer/data/jpeg_entropy.h) buys on training crops: each JPEG
// of a folder decoded for a RandomResizedCrop 224 window (planned as training plans it, at the
// scale training picks) three ways, alternated image by image and rotated so that the machine's
// drift spreads over all three:
//   libjpeg      libjpeg-turbo's own Huffman decoder (DL_JPEG_HUFFMAN=libjpeg);
//   first epoch  this decoder without recorded points (a file's first decode);
//   indexed      this decoder with the points that --warm earlier epochs' crops recorded.
// All three decode the same window and must give the same bytes (checked). Prints the median time
// per image, its ratio to libjpeg's, and the MCUs Huffman-decoded per image.
//
//   entropy_bench --data DIR [--rounds N] [--warm EPOCHS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "data/crop_plan.h"
#include "data/jpeg_entropy.h"
#include "data/jpeg_region.h"
#include "jpeg_files.h"

namespace {

using Clock = std::chrono::steady_clock;
using dl::data::EntropyIndexStore;
using dl::data::EntropyLease;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Decoded {
  bool ok = false;
  std::vector<std::uint8_t> pixels;
};

// The crop training would take with this seed: RandomResizedCrop's window, kept at 224 x 224.
Decoded decode(const std::vector<std::uint8_t>& file, std::uint32_t seed, EntropyLease* lease,
               std::vector<std::uint8_t>& buffer) {
  dl::data::Transform t;
  t.out = dl::data::ImageShape{3, 224, 224};
  t.train = true;
  std::mt19937 rng(seed);
  const auto choose = [&](int h, int w) {
    const dl::data::TrainCrop c = dl::data::plan_train_crop(h, w, t, rng);
    return dl::data::Window{c.top, c.left, c.height, c.width, 224, 224};
  };
  dl::data::JpegRegion r;
  Decoded d;
  d.ok = dl::data::decode_jpeg_window(file.data(), file.size(), 3, std::int64_t{1} << 40, choose,
                                      buffer, &r, lease) == dl::data::JpegOutcome::kDecoded;
  if (d.ok) {
    for (int y = 0; y < r.rows; ++y) {
      const std::uint8_t* row = r.pixels + static_cast<std::size_t>(y) * r.row_stride;
      d.pixels.insert(d.pixels.end(), row, row + static_cast<std::size_t>(r.cols) * r.channels);
    }
  }
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int rounds = 3;
  int warm = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--data") {
      dir = argv[i + 1];
    } else if (key == "--rounds") {
      rounds = std::atoi(argv[i + 1]);
    } else if (key == "--warm") {
      warm = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "entropy_bench: unknown option %s\n", key.c_str());
      return 64;
    }
  }
  if (dir.empty() || rounds < 1 || warm < 0) {
    std::fprintf(stderr, "usage: entropy_bench --data DIR [--rounds N] [--warm EPOCHS]\n");
    return 64;
  }
  const std::vector<std::vector<std::uint8_t>> files = dl::bench::read_jpeg_files(dir);
  if (files.empty()) {
    std::fprintf(stderr, "entropy_bench: no JPEG files under %s\n", dir.c_str());
    return 66;
  }
  const auto n = static_cast<std::int64_t>(files.size());
  EntropyIndexStore store(n, dl::data::kDefaultEntropyIndexBytes);
  std::vector<std::uint8_t> buffer;
  // Earlier epochs: each file's points as --warm random crops leave them.
  for (int e = 0; e < warm; ++e) {
    for (std::int64_t f = 0; f < n; ++f) {
      EntropyLease lease(&store, f);
      decode(files[static_cast<std::size_t>(f)],
             1000003u * static_cast<std::uint32_t>(e + 1) + static_cast<std::uint32_t>(f), &lease,
             buffer);
    }
  }
  const char* names[3] = {"libjpeg", "first epoch", "indexed"};
  std::vector<double> seconds[3];
  std::uint64_t mcus[3] = {0, 0, 0};
  for (int round = 0; round < rounds; ++round) {
    for (std::int64_t f = 0; f < n; ++f) {
      const auto& file = files[static_cast<std::size_t>(f)];
      const std::uint32_t seed =
          7919u * static_cast<std::uint32_t>(round) + static_cast<std::uint32_t>(f);
      Decoded first;
      for (int k = 0; k < 3; ++k) {
        const int mode = static_cast<int>((f + k + round) % 3);
        dl::data::set_jpeg_entropy_decoder(mode != 0);
        // The index's points stay those the warm epochs recorded: each timed decode borrows a
        // copy, so that no mode warms the next.
        EntropyIndexStore scratch(1, dl::data::kDefaultEntropyIndexBytes);
        EntropyLease borrowed(&store, f);
        EntropyLease lease(&scratch, 0);
        if (mode == 2 && borrowed.index() != nullptr) *lease.index() = *borrowed.index();
        const std::uint64_t before = dl::data::jpeg_entropy_decoded_mcus();
        const auto t0 = Clock::now();
        Decoded d = decode(file, seed, mode == 2 ? &lease : nullptr, buffer);
        seconds[mode].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        mcus[mode] += dl::data::jpeg_entropy_decoded_mcus() - before;
        if (!d.ok) {
          std::fprintf(stderr, "entropy_bench: image %lld did not decode\n",
                       static_cast<long long>(f));
          return 1;
        }
        if (k == 0) {
          first = std::move(d);
        } else if (d.pixels != first.pixels) {
          std::fprintf(stderr, "entropy_bench: image %lld: %s and another decoder differ\n",
                       static_cast<long long>(f), names[mode]);
          return 1;
        }
      }
    }
  }
  dl::data::set_jpeg_entropy_decoder(true);
  const double base = median(seconds[0]);
  const double decodes = static_cast<double>(n) * rounds;
  std::printf(
      "%lld JPEGs x %d rounds, RandomResizedCrop 224 windows, index warmed by %d epochs "
      "(%.1f KiB of points a file)\n",
      static_cast<long long>(n), rounds, warm,
      static_cast<double>(store.bytes()) / 1024.0 / static_cast<double>(n));
  std::printf("| decoder | median ms per image | vs libjpeg | MCUs Huffman-decoded per image |\n");
  std::printf("|---|---|---|---|\n");
  for (int m = 0; m < 3; ++m) {
    const double t = median(seconds[m]);
    if (m == 0) {
      std::printf("| %s | %.3f | 1.00x | (not counted) |\n", names[m], t * 1e3);
    } else {
      std::printf("| %s | %.3f | %.2fx | %.0f |\n", names[m], t * 1e3, base / t,
                  static_cast<double>(mcus[m]) / decodes);
    }
  }
  return 0;
}
