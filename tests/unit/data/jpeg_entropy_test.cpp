// The indexed Huffman decoder (jpeg_entropy.h) against libjpeg's own, byte for byte: every
// sampling, scale, window and channel count, with and without recorded points, and on corrupt
// data (cut short, bits flipped, markers and stuffing inserted), where both must make the same
// picture of what is left. The index must save work (MCUs counted, not timed), stay within its
// budget and never serve a file other than the one it was recorded from.
#include "data/jpeg_entropy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "data/jpeg_region.h"

#if DL_HAVE_LIBJPEG
#include "unit/data/jpeg_writer.h"
#endif

namespace dl::test {
namespace {

using namespace dl::data;

#if DL_HAVE_LIBJPEG

constexpr std::int64_t kNoLimit = std::int64_t{1} << 40;

// Smooth picture with noise on top, so that blocks have both DC steps and AC detail.
JpegPixel picture(std::uint32_t seed) {
  return [seed](int x, int y, int c) {
    std::uint32_t h = static_cast<std::uint32_t>(x) * 73856093u ^
                      static_cast<std::uint32_t>(y) * 19349663u ^
                      static_cast<std::uint32_t>(c) * 83492791u ^ seed * 2654435761u;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    const int smooth = (x * (3 + c) + y * (5 - c) + static_cast<int>(seed % 97)) % 256;
    return static_cast<std::uint8_t>((smooth * 3 + static_cast<int>(h % 64)) / 4 + 16);
  };
}

struct Decoded {
  JpegOutcome outcome = JpegOutcome::kNotHandled;
  std::vector<std::uint8_t> pixels;  // the region, row by row
  int rows = 0, cols = 0, channels = 0, scale = 0;
  bool operator==(const Decoded& o) const {
    return outcome == o.outcome && pixels == o.pixels && rows == o.rows && cols == o.cols &&
           channels == o.channels && scale == o.scale;
  }
};

Decoded decode(const Bytes& bytes, const Window& w, int channels, bool ours,
               EntropyLease* lease = nullptr) {
  set_jpeg_entropy_decoder(ours);
  std::vector<std::uint8_t> buffer;
  JpegRegion r;
  Decoded d;
  d.outcome = decode_jpeg_window(
      bytes.data(), bytes.size(), channels, kNoLimit, [&](int, int) { return w; }, buffer, &r,
      lease);
  set_jpeg_entropy_decoder(true);
  if (d.outcome != JpegOutcome::kDecoded) return d;
  d.rows = r.rows;
  d.cols = r.cols;
  d.channels = r.channels;
  d.scale = r.scale;
  const std::size_t row_bytes = static_cast<std::size_t>(r.cols) * r.channels;
  for (int y = 0; y < r.rows; ++y) {
    const std::uint8_t* row = r.pixels + static_cast<std::size_t>(y) * r.row_stride;
    d.pixels.insert(d.pixels.end(), row, row + row_bytes);
  }
  return d;
}

Window random_window(std::mt19937& rng, int height, int width) {
  std::uniform_int_distribution<int> top(0, height - 1), left(0, width - 1);
  Window w;
  w.top = top(rng);
  w.left = left(rng);
  w.height = std::uniform_int_distribution<int>(1, height - w.top)(rng);
  w.width = std::uniform_int_distribution<int>(1, width - w.left)(rng);
  w.force_scale = std::array<int, 4>{1, 2, 4, 8}[rng() % 4];
  return w;
}

std::string describe(const JpegSpec& s, const Window& w, int channels) {
  return std::to_string(s.width) + "x" + std::to_string(s.height) + " c" +
         std::to_string(s.components) + " " + std::to_string(s.luma_h) + "x" +
         std::to_string(s.luma_v) + " q" + std::to_string(s.quality) +
         (s.optimize ? " optimized" : "") + ", window (" + std::to_string(w.top) + "," +
         std::to_string(w.left) + ") " + std::to_string(w.height) + "x" + std::to_string(w.width) +
         " at " + std::to_string(w.force_scale) + "/8 as " + std::to_string(channels) + " channels";
}

// Sizes, samplings, qualities, table kinds: the specs the equality tests run over.
std::vector<JpegSpec> specs() {
  std::vector<JpegSpec> out;
  std::mt19937 rng(7);
  const int samplings[][2] = {{2, 2}, {2, 1}, {1, 2}, {1, 1}};
  for (int i = 0; i < 24; ++i) {
    JpegSpec s;
    s.width = std::uniform_int_distribution<int>(9, 330)(rng);
    s.height = std::uniform_int_distribution<int>(9, 330)(rng);
    s.components = i % 6 == 5 ? 1 : 3;
    s.luma_h = samplings[i % 4][0];
    s.luma_v = samplings[i % 4][1];
    s.quality = std::array<int, 3>{35, 85, 100}[i % 3];
    s.optimize = i % 2 == 1;
    out.push_back(s);
  }
  return out;
}

TEST(JpegEntropy, SameBytesAsLibjpegWithAndWithoutAnIndex) {
  std::mt19937 rng(11);
  std::uint32_t seed = 0;
  std::size_t indexed_files = 0;
  for (const JpegSpec& spec : specs()) {
    const Bytes bytes = write_jpeg(spec, picture(++seed));
    EntropyIndexStore store(1, std::size_t{1} << 20);
    // Rounds of random windows: the first ones record points, the later ones jump to them.
    for (int round = 0; round < 12; ++round) {
      const Window w = random_window(rng, spec.height, spec.width);
      for (int channels : {3, 1}) {
        const Decoded want = decode(bytes, w, channels, false);
        ASSERT_EQ(want.outcome, JpegOutcome::kDecoded) << describe(spec, w, channels);
        EXPECT_EQ(decode(bytes, w, channels, true), want)
            << "no index: " << describe(spec, w, channels);
        EntropyLease lease(&store, 0);
        ASSERT_NE(lease.index(), nullptr);
        EXPECT_EQ(decode(bytes, w, channels, true, &lease), want)
            << "indexed, round " << round << ": " << describe(spec, w, channels);
      }
    }
    if (store.bytes() > sizeof(EntropyIndex)) ++indexed_files;
  }
  EXPECT_EQ(indexed_files, specs().size()) << "every file these specs make is one it handles";
}

TEST(JpegEntropy, ALaterCropDecodesOnlyFromNearItsCorner) {
  JpegSpec spec;
  spec.width = 640;
  spec.height = 480;
  const Bytes bytes = write_jpeg(spec, picture(5));
  EntropyIndexStore store(1, std::size_t{1} << 20);
  // 40 x 30 MCUs of 16 x 16; the crop is the bottom-right quarter.
  const Window crop{240, 320, 240, 320};
  const Decoded want = decode(bytes, crop, 3, false);
  std::uint64_t cost[3];
  for (int i = 0; i < 3; ++i) {
    EntropyLease lease(&store, 0);
    const std::uint64_t before = jpeg_entropy_decoded_mcus();
    ASSERT_EQ(decode(bytes, crop, 3, true, &lease), want) << "decode " << i;
    cost[i] = jpeg_entropy_decoded_mcus() - before;
  }
  // The first decode reads every MCU down to the crop's last row (and the margin's); the later
  // ones start one MCU row and at most one step of columns above and left of it, and stop at its
  // right edge: about a quarter of the image, plus the margins.
  EXPECT_GE(cost[0], 40u * 29u);
  EXPECT_LT(cost[1], cost[0] * 2 / 5) << cost[0] << " then " << cost[1];
  EXPECT_EQ(cost[2], cost[1]);
  // With the decoder off, nothing is counted: the count is this decoder's work alone.
  const std::uint64_t before = jpeg_entropy_decoded_mcus();
  decode(bytes, crop, 3, false);
  EXPECT_EQ(jpeg_entropy_decoded_mcus(), before);
}

// Where the picture is cut, flipped or given markers, libjpeg decodes what it can and fills the
// rest with grey (or gives up); this decoder must make exactly the same of it.
TEST(JpegEntropy, CorruptDataDecodesAsLibjpegDecodesIt) {
  std::mt19937 rng(23);
  std::uint32_t seed = 100;
  int cases = 0;
  for (const int components : {3, 1}) {
    JpegSpec spec;
    spec.width = components == 3 ? 160 : 97;
    spec.height = components == 3 ? 120 : 131;
    spec.components = components;
    spec.quality = 90;
    const Bytes good = write_jpeg(spec, picture(++seed));
    // The scan data start after the SOS segment.
    std::size_t sos = 0;
    for (std::size_t i = 2; i + 3 < good.size(); ++i) {
      if (good[i] == 0xFF && good[i + 1] == 0xDA) {
        sos = i + 2 + (static_cast<std::size_t>(good[i + 2]) << 8 | good[i + 3]);
        break;
      }
    }
    ASSERT_GT(sos, 0u);
    for (int variant = 0; variant < 150; ++variant) {
      Bytes bad = good;
      std::uniform_int_distribution<std::size_t> at(sos, good.size() - 3);
      switch (variant % 5) {
        case 0:  // cut short
          bad.resize(at(rng));
          break;
        case 1:  // bits flipped
          for (int k = 0; k < 1 + variant % 7; ++k) {
            // Spelled out: GCC 9's -Wconversion takes `byte ^= byte` for an int narrowed.
            std::uint8_t& byte = bad[at(rng)];
            byte = static_cast<std::uint8_t>(byte ^ (1u << (rng() % 8)));
          }
          break;
        case 2:  // a marker in the middle of the data (a restart marker the header never announced)
          bad.insert(bad.begin() + static_cast<std::ptrdiff_t>(at(rng)),
                     {0xFF, static_cast<std::uint8_t>(0xD0 + rng() % 8)});
          break;
        case 3:  // stuffing: FF FF 00 (one FF byte to libjpeg) and a stray FF 00
          bad.insert(bad.begin() + static_cast<std::ptrdiff_t>(at(rng)), {0xFF, 0xFF, 0x00});
          bad.insert(bad.begin() + static_cast<std::ptrdiff_t>(at(rng)), {0xFF, 0x00});
          break;
        default:  // random bytes over a stretch
          for (std::size_t i = at(rng), n = 0; n < 40 && i < bad.size() - 2; ++i, ++n) {
            bad[i] = static_cast<std::uint8_t>(rng());
          }
      }
      for (int channels : {3, 1}) {
        const Window w = random_window(rng, spec.height, spec.width);
        const Decoded want = decode(bad, w, channels, false);
        EXPECT_EQ(decode(bad, w, channels, true), want)
            << "variant " << variant << ": " << describe(spec, w, channels);
        // Twice with one index: recorded on the corrupt file, then used on it.
        EntropyIndexStore store(1, std::size_t{1} << 20);
        for (int pass = 0; pass < 2; ++pass) {
          EntropyLease lease(&store, 0);
          EXPECT_EQ(decode(bad, w, channels, true, &lease), want)
              << "indexed pass " << pass << ", variant " << variant << ": "
              << describe(spec, w, channels);
        }
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 600);
}

TEST(JpegEntropy, PointsRecordedFromOtherBytesAreNotUsed) {
  JpegSpec spec;
  spec.width = 200;
  spec.height = 150;
  const Bytes a = write_jpeg(spec, picture(1));
  Bytes b = a;
  // The same size and headers; one bit of the data differs.
  b[b.size() / 2] ^= 0x10;
  EntropyIndexStore store(1, std::size_t{1} << 20);
  const Window w{100, 120, 50, 80};
  {
    EntropyLease lease(&store, 0);
    decode(a, Window{0, 0, 150, 200}, 3, true, &lease);  // points over the whole of a
  }
  EntropyLease lease(&store, 0);
  EXPECT_EQ(decode(b, w, 3, true, &lease), decode(b, w, 3, false));
}

// An index is tied to a file by a 64-bit fingerprint; a point that lies beyond the file's data
// (another file of the same fingerprint) is skipped rather than sought to.
TEST(JpegEntropy, APointBeyondTheDataIsNotSoughtTo) {
  JpegSpec spec;
  spec.width = 320;
  spec.height = 240;
  const Bytes bytes = write_jpeg(spec, picture(3));
  EntropyIndexStore store(1, std::size_t{1} << 20);
  {
    EntropyLease lease(&store, 0);
    decode(bytes, Window{0, 0, 240, 320}, 3, true, &lease);  // points over the whole file
  }
  std::size_t moved = 0;
  {
    EntropyLease lease(&store, 0);
    ASSERT_NE(lease.index(), nullptr);
    for (auto& point : lease.index()->points) {
      if (point.bit == EntropyPoint::kUnknown) continue;
      point.bit = EntropyPoint::kUnknown - 8 * 1024;  // far past a 320 x 240 file's bits
      ++moved;
    }
  }
  ASSERT_GT(moved, 0u) << "the first decode recorded points";
  const Window crop{160, 200, 60, 100};
  EntropyLease lease(&store, 0);
  EXPECT_EQ(decode(bytes, crop, 3, true, &lease), decode(bytes, crop, 3, false));
}

TEST(JpegEntropy, RestartMarkersAndProgressiveFilesAreLibjpegsAlone) {
  for (const bool progressive : {false, true}) {
    JpegSpec spec;
    spec.width = 120;
    spec.height = 90;
    spec.progressive = progressive;
    spec.restart_interval = progressive ? 0 : 3;
    const Bytes bytes = write_jpeg(spec, picture(9));
    EntropyIndexStore store(1, std::size_t{1} << 20);
    EntropyLease lease(&store, 0);
    const std::uint64_t before = jpeg_entropy_decoded_mcus();
    const Window w{30, 40, 50, 60};
    EXPECT_EQ(decode(bytes, w, 3, true, &lease), decode(bytes, w, 3, false));
    EXPECT_EQ(jpeg_entropy_decoded_mcus(), before) << "progressive " << progressive;
    EXPECT_EQ(store.bytes(), sizeof(EntropyIndex)) << "an empty index, no points";
  }
}

TEST(JpegEntropy, TheStoreKeepsToItsBudgetAndLendsEachIndexOnce) {
  JpegSpec spec;
  spec.width = 320;
  spec.height = 240;
  const Bytes bytes = write_jpeg(spec, picture(3));
  const Window whole{0, 0, 240, 320};
  // Room for two index objects but not for their points: nothing is recorded, all still decodes.
  EntropyIndexStore tight(4, 2 * sizeof(EntropyIndex) + 16);
  for (std::int64_t i = 0; i < 4; ++i) {
    EntropyLease lease(&tight, i);
    EXPECT_EQ(lease.index() != nullptr, i < 2) << "sample " << i;
    EXPECT_EQ(decode(bytes, whole, 3, true, &lease), decode(bytes, whole, 3, false));
  }
  EXPECT_LE(tight.bytes(), tight.budget());
  for (std::int64_t i = 0; i < 2; ++i) {
    EntropyLease lease(&tight, i);
    ASSERT_NE(lease.index(), nullptr);
    EXPECT_TRUE(lease.index()->points.empty());
  }

  EntropyIndexStore roomy(2, std::size_t{1} << 20);
  {
    EntropyLease first(&roomy, 1);
    EntropyLease second(&roomy, 1);
    EXPECT_NE(first.index(), nullptr);
    EXPECT_EQ(second.index(), nullptr) << "one index, one decode at a time";
    EntropyLease other(&roomy, 0);
    EXPECT_NE(other.index(), nullptr);
    EXPECT_EQ(EntropyLease(&roomy, 2).index(), nullptr) << "out of range";
    EXPECT_EQ(EntropyLease(&roomy, -1).index(), nullptr);
  }
  EntropyLease again(&roomy, 1);
  EXPECT_NE(again.index(), nullptr) << "given back when the first lease ended";
}

#endif

}  // namespace
}  // namespace dl::test
