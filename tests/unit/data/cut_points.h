// Where the truncation tests cut a valid image file: just after its header (a JPEG's first scan
// begins there; for the other formats, where its size becomes known), in the middle of its data,
// and in its last bytes. Shared by the data layer's test and dl-train's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/image_header.h"

namespace dl::test {

inline std::size_t header_end(const std::vector<std::uint8_t>& b) {
  if (b.size() > 2 && b[0] == 0xFF && b[1] == 0xD8) {
    for (std::size_t i = 2; i + 3 < b.size(); ++i) {
      if (b[i] == 0xFF && b[i + 1] == 0xDA) return i + 2 + (std::size_t{b[i + 2]} << 8 | b[i + 3]);
    }
  }
  for (std::size_t n = 1; n <= b.size(); ++n) {
    if (data::read_image_header(b.data(), n).sized()) return n;
  }
  return b.size();
}

struct CutPoint {
  std::string where;  // "header", "middle", "end-4", "end-1"
  std::size_t at = 0;
};

// The file's last byte only where it is data (`last_byte_is_data`): OpenCV ends an ASCII PNM with
// spaces and a newline after its last sample, so without the newline the file is whole.
inline std::vector<CutPoint> cut_points(const std::vector<std::uint8_t>& b,
                                        bool last_byte_is_data = true) {
  std::vector<CutPoint> out = {
      {"header", header_end(b) + 2}, {"middle", b.size() / 2}, {"end-4", b.size() - 4}};
  if (last_byte_is_data) out.push_back({"end-1", b.size() - 1});
  return out;
}

// The file cut after `at` bytes.
inline std::vector<std::uint8_t> cut(const std::vector<std::uint8_t>& b, std::size_t at) {
  return {b.begin(), b.begin() + static_cast<std::ptrdiff_t>(at)};
}

// Garbage in the scan: 0xFF bytes (stuffed, so data to libjpeg) make codes longer than any
// Huffman table's, 15% into the scan: above the bottom of any training crop (whose rows above
// are entropy-decoded too), so every way of decoding reaches it.
inline std::vector<std::uint8_t> with_garbage(const std::vector<std::uint8_t>& whole) {
  const std::size_t scan = header_end(whole);
  std::vector<std::uint8_t> bad = whole;
  const auto at = static_cast<std::ptrdiff_t>(scan + (whole.size() - scan) * 15 / 100);
  const std::vector<std::uint8_t> garbage = {0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00,
                                             0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00};
  bad.insert(bad.begin() + at, garbage.begin(), garbage.end());
  return bad;
}

}  // namespace dl::test
