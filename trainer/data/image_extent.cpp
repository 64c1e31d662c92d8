// The end-of-file checks of image_extent.h, one per format, each following its specification only
// as far as where the data must end; the decoders check everything else.
#include "data/image_extent.h"

#include <cstring>

#include "data/byte_reader.h"

namespace dl::data {
namespace {

using Bytes = const std::uint8_t*;

std::string ends_at(const char* format, std::size_t size, const std::string& where) {
  return std::string(format) + " data end at byte " + std::to_string(size) + " (" + where + ")";
}

// n items of `unit` bytes each fit in `room` bytes (without overflowing the product).
bool fits(std::uint64_t n, std::uint64_t unit, std::uint64_t room) {
  return unit == 0 || n <= room / unit;
}

// Segments as libjpeg's marker reader walks them (stray bytes and 0xFF fill skipped); after each
// SOS its entropy-coded data run to the next marker that is neither a stuffed zero nor RSTn. A
// progressive file's later scans and tables are segments like the first.
std::string jpeg(Bytes data, std::size_t size) {
  const ByteReader r(data, size);
  std::size_t at = 2;  // after SOI
  for (;;) {
    while (at < size && data[at] != 0xFF) ++at;
    while (at < size && data[at] == 0xFF) ++at;
    if (at >= size) return ends_at("JPEG", size, "before the end-of-image marker");
    const std::uint32_t marker = data[at];
    if (marker == 0xD9) return {};  // EOI: whatever follows (an appended video, say) is not ours
    if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
      ++at;
      continue;
    }
    if (size - at < 3) return ends_at("JPEG", size, "inside a marker segment");
    const std::uint32_t length = r.be16(at + 1);
    if (length < 2) return {};  // malformed, not short: libjpeg refuses it itself
    if (size - at - 1 < length) return ends_at("JPEG", size, "inside a marker segment");
    at += 1 + length;
    if (marker != 0xDA) continue;
    // The scan: FF 00 is a data byte, FF D0..D7 a restart marker, FF FF.. fill before a marker.
    for (;;) {
      const void* ff = std::memchr(data + at, 0xFF, size - at);
      if (ff == nullptr) return ends_at("JPEG", size, "inside a scan");
      at = static_cast<std::size_t>(static_cast<Bytes>(ff) - data);
      std::size_t next = at + 1;
      while (next < size && data[next] == 0xFF) ++next;
      if (next >= size) return ends_at("JPEG", size, "inside a scan");
      const std::uint32_t m = data[next];
      if (m != 0x00 && !(m >= 0xD0 && m <= 0xD7)) break;  // the scan's end: a marker
      at = next + 1;
    }
  }
}

// Chunks (length, type, data, CRC) from the signature on, up to IEND.
std::string png(Bytes data, std::size_t size) {
  const ByteReader r(data, size);
  std::size_t at = 8;
  for (;;) {
    // Fewer bytes than a chunk's frame: the data end inside one (IEND's, as a rule), or before
    // the IEND chunk when none of it is there.
    if (size - at < 12) {
      return ends_at("PNG", size, size == at ? "before the IEND chunk" : "inside a chunk");
    }
    const std::uint32_t length = r.be32(at);
    if (length > 0x7FFFFFFFu) return {};  // malformed, not short: libpng refuses it
    if ((size - at - 12) < length) return ends_at("PNG", size, "inside a chunk");
    if (std::memcmp(data + at + 4, "IEND", 4) == 0) return {};
    at += 12 + length;
  }
}

// The pixel array at bfOffBits: rows of width x bits per pixel, padded to 4 bytes, for the
// uncompressed kinds; for run-length (and embedded JPEG/PNG) data, biSizeImage bytes where given.
std::string bmp(const ImageHeader& header, Bytes data, std::size_t size) {
  const ByteReader r(data, size);
  if (size < 18) return ends_at("BMP", size, "inside its header");
  const std::uint32_t info = r.le32(14);
  const bool core = info == 12;
  if (size < 14 + static_cast<std::size_t>(info) || (!core && info < 40)) {
    return ends_at("BMP", size, "inside its header");
  }
  const std::uint64_t offset = r.le32(10);
  const std::uint64_t bits = core ? r.le16(24) : r.le16(28);
  const std::uint32_t compression = core ? 0 : r.le32(30);
  std::uint64_t need = 0;  // bytes of pixel data
  std::uint64_t rows = 1;
  if (compression == 0 || compression == 3 || compression == 6) {  // RGB, BITFIELDS, ALPHABITFIELDS
    need = (static_cast<std::uint64_t>(header.width) * bits + 31) / 32 * 4;
    rows = static_cast<std::uint64_t>(header.height);
  } else if (!core) {
    need = r.le32(34);  // biSizeImage; 0 where the writer left it out
  }
  if (offset > size || !fits(rows, need, size - offset)) {
    return ends_at("BMP", size, "inside its pixel array");
  }
  return {};
}

// "RIFF", the size of what follows the first 8 bytes, "WEBP", chunks.
std::string webp(Bytes data, std::size_t size) {
  const ByteReader r(data, size);
  const std::uint64_t riff = r.le32(4);
  if (size - 8 < riff) {
    return ends_at("WebP", size, "its RIFF header says " + std::to_string(riff + 8));
  }
  return {};
}

// The first page's strips (StripOffsets 273, StripByteCounts 279) or tiles (324, 325): each offset
// plus its count within the file. The page OpenCV decodes; its header found the IFD.
std::string tiff(Bytes data, std::size_t size) {
  const ByteReader r(data, size);
  const bool little = data[0] == 'I';
  auto u16 = [&](std::size_t at) { return little ? r.le16(at) : r.be16(at); };
  auto u32 = [&](std::size_t at) { return little ? r.le32(at) : r.be32(at); };
  if (size < 8) return ends_at("TIFF", size, "inside its header");
  const std::size_t ifd = u32(4);
  if (ifd > size || size - ifd < 2) return ends_at("TIFF", size, "before its first page");
  const std::uint32_t entries = u16(ifd);
  if ((size - ifd - 2) / 12 < entries) return ends_at("TIFF", size, "inside its first page");
  // An array's count and where its values lie (inline when they fit in 4 bytes).
  struct Array {
    std::uint64_t count = 0;
    std::size_t at = 0;
    std::uint32_t type = 0;
  } offsets, counts;
  for (std::uint32_t i = 0; i < entries; ++i) {
    const std::size_t entry = ifd + 2 + 12 * static_cast<std::size_t>(i);
    const std::uint32_t tag = u16(entry);
    const std::uint32_t type = u16(entry + 2);
    if (type != 3 && type != 4) continue;
    Array a{u32(entry + 4), entry + 8, type};
    const std::uint64_t bytes = a.count * (type == 3 ? 2 : 4);
    if (bytes > 4) a.at = u32(entry + 8);
    if (a.at > size || size - a.at < bytes) return ends_at("TIFF", size, "inside its first page");
    if (tag == 273 || tag == 324) offsets = a;
    if (tag == 279 || tag == 325) counts = a;
  }
  auto value = [&](const Array& a, std::uint64_t k) -> std::uint64_t {
    return a.type == 3 ? u16(a.at + 2 * k) : u32(a.at + 4 * k);
  };
  const std::uint64_t n = offsets.count < counts.count ? offsets.count : counts.count;
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint64_t start = value(offsets, k);
    if (start > size || size - start < value(counts, k)) {
      return ends_at("TIFF", size, "inside its image data");
    }
  }
  return {};
}

bool pnm_space(std::uint32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// "P1".."P6", width, height and (but for bitmaps) the largest value, as ASCII decimals between
// whitespace and '#' comments; one whitespace byte; then the samples: bytes (P4: 8 pixels a byte;
// P5, P6: one or, above 255, two bytes each) or ASCII decimals, each followed by whitespace (P1:
// single digits, which need no space between them).
std::string pnm(const ImageHeader& header, Bytes data, std::size_t size) {
  const int kind = data[1] - '0';
  const bool bitmap = kind == 1 || kind == 4;
  std::size_t at = 2;
  std::uint64_t values[3] = {0, 0, 0};  // width, height, the largest value
  for (int v = 0; v < (bitmap ? 2 : 3); ++v) {
    for (;;) {
      if (at >= size) return ends_at("PNM", size, "inside its header");
      if (data[at] == '#') {
        while (at < size && data[at] != '\n') ++at;
      } else if (pnm_space(data[at])) {
        ++at;
      } else {
        break;
      }
    }
    for (int digits = 0; at < size && data[at] >= '0' && data[at] <= '9'; ++at) {
      if (++digits > 10) return {};  // beyond any decoder's range: malformed, not short
      values[v] = values[v] * 10 + (data[at] - '0');
    }
    if (at >= size) return ends_at("PNM", size, "inside its header");
  }
  ++at;  // the one whitespace byte before the samples
  const std::uint64_t per_pixel = kind == 3 || kind == 6 ? 3 : 1;
  const std::uint64_t room = at <= size ? size - at : 0;
  if (kind >= 4) {
    const std::uint64_t row = kind == 4 ? (static_cast<std::uint64_t>(header.width) + 7) / 8
                                        : static_cast<std::uint64_t>(header.width) * per_pixel *
                                              (values[2] > 255 ? 2 : 1);
    if (!fits(static_cast<std::uint64_t>(header.height), row, room)) {
      return ends_at("PNM", size, "inside its samples");
    }
    return {};
  }
  // ASCII: count the samples there are, up to the number needed (each takes a byte at least).
  if (!fits(static_cast<std::uint64_t>(header.height),
            static_cast<std::uint64_t>(header.width) * per_pixel, room)) {
    return ends_at("PNM", size, "inside its samples");
  }
  const std::uint64_t need = static_cast<std::uint64_t>(header.width) *
                             static_cast<std::uint64_t>(header.height) * per_pixel;
  std::uint64_t got = 0;
  for (std::size_t i = at < size ? at : size; i < size && got < need;) {
    if (kind == 1) {
      got += data[i] == '0' || data[i] == '1';
      ++i;
      continue;
    }
    while (i < size && pnm_space(data[i])) ++i;
    if (i == size) break;
    while (i < size && !pnm_space(data[i])) ++i;
    // A number the data end in may be cut (OpenCV's reader wants the space after it, too).
    if (i == size) break;
    ++got;
  }
  return got < need ? ends_at("PNM", size, "inside its samples") : std::string();
}

}  // namespace

std::string cut_short(const ImageHeader& header, const std::uint8_t* data, std::size_t size) {
  // A TIFF's first page may lie at its end (libtiff writes it last): cut there, its header has no
  // size, and is still cut short. The other formats' headers come first: without a size they are
  // malformed, whatever their length.
  if (!header.sized() && header.format != ImageFormat::kTiff) return {};
  switch (header.format) {
    case ImageFormat::kJpeg:
      return jpeg(data, size);
    case ImageFormat::kPng:
      return png(data, size);
    case ImageFormat::kBmp:
      return bmp(header, data, size);
    case ImageFormat::kWebp:
      return webp(data, size);
    case ImageFormat::kTiff:
      return tiff(data, size);
    case ImageFormat::kPnm:
      return pnm(header, data, size);
    case ImageFormat::kUnknown:
      break;
  }
  return {};
}

}  // namespace dl::data
