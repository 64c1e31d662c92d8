// Bounds-checked big- and little-endian reads from a file's bytes, for the readers that follow an
// image format's structure (image_header.cpp, image_extent.cpp): 0 past the end, which every
// caller treats as "not there".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dl::data {

class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool has(std::size_t offset, std::size_t n) const {
    return offset <= size_ && n <= size_ - offset;
  }
  std::uint32_t u8(std::size_t at) const { return has(at, 1) ? data_[at] : 0; }
  std::uint32_t be16(std::size_t at) const { return has(at, 2) ? (u8(at) << 8) | u8(at + 1) : 0; }
  std::uint32_t le16(std::size_t at) const { return has(at, 2) ? u8(at) | (u8(at + 1) << 8) : 0; }
  std::uint32_t be32(std::size_t at) const {
    return has(at, 4) ? (be16(at) << 16) | be16(at + 2) : 0;
  }
  std::uint32_t le32(std::size_t at) const {
    return has(at, 4) ? le16(at) | (le16(at + 2) << 16) : 0;
  }
  bool starts(std::size_t at, const char* magic) const {
    const std::size_t n = std::strlen(magic);
    return has(at, n) && std::memcmp(data_ + at, magic, n) == 0;
  }
  std::size_t size() const { return size_; }
  const std::uint8_t* data() const { return data_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
};

}  // namespace dl::data
