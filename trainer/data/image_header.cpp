// Header parsing for the image formats the loader decodes (see image_header.h). Each reader follows
// the format's specification only as far as the size fields; the decoders check everything else.
#include "data/image_header.h"

#include "data/byte_reader.h"

namespace dl::data {
namespace {

using Reader = ByteReader;

ImageHeader sized(ImageFormat format, std::int64_t width, std::int64_t height) {
  ImageHeader h;
  h.format = format;
  if (width > 0 && height > 0) {
    h.width = width;
    h.height = height;
  }
  return h;
}

// Walks the marker segments up to the first start-of-frame as libjpeg's jpeg_read_header does
// (stray bytes between segments skipped, 0xFF fill bytes too): SOFn holds precision, height,
// width. A height of 0 (to come from a DNL marker later) is refused by libjpeg as well.
ImageHeader jpeg(const Reader& r) {
  std::size_t at = 2;  // after SOI
  for (;;) {
    while (r.has(at, 1) && r.u8(at) != 0xFF) ++at;
    while (r.has(at, 1) && r.u8(at) == 0xFF) ++at;
    if (!r.has(at, 1)) break;
    const std::uint32_t marker = r.u8(at);  // its length field follows at at + 1
    if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
      ++at;  // a stuffed zero, TEM or RSTn: no length
      continue;
    }
    const bool sof =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof) return sized(ImageFormat::kJpeg, r.be16(at + 6), r.be16(at + 4));
    if (marker == 0xD8 || marker == 0xD9 || marker == 0xDA) break;  // SOI, EOI, SOS: no frame
    const std::uint32_t length = r.be16(at + 1);
    if (length < 2) break;
    at += 1 + length;
  }
  return sized(ImageFormat::kJpeg, 0, 0);
}

// The IHDR chunk comes first: length, "IHDR", width, height (big-endian, at most 2^31 - 1).
ImageHeader png(const Reader& r) {
  if (!r.starts(12, "IHDR")) return sized(ImageFormat::kPng, 0, 0);
  return sized(ImageFormat::kPng, r.be32(16), r.be32(20));
}

// BITMAPCOREHEADER (12 bytes: 16-bit sizes) or BITMAPINFOHEADER and later (signed 32-bit; a
// negative height means rows stored top-down).
ImageHeader bmp(const Reader& r) {
  const std::uint32_t header = r.le32(14);
  if (header == 12) return sized(ImageFormat::kBmp, r.le16(18), r.le16(20));
  if (header < 40) return sized(ImageFormat::kBmp, 0, 0);
  const auto width = static_cast<std::int32_t>(r.le32(18));
  const auto height = static_cast<std::int32_t>(r.le32(22));
  return sized(ImageFormat::kBmp, width, height < 0 ? -static_cast<std::int64_t>(height) : height);
}

// RIFF....WEBP then one of: VP8X (extended: 24-bit canvas size minus one), VP8L (lossless: 14-bit
// sizes minus one after the 0x2F signature), VP8 (lossy: a key frame's start code 9D 01 2A, then
// 14-bit sizes; the top two bits are scaling).
ImageHeader webp(const Reader& r) {
  if (r.starts(12, "VP8X")) {
    const std::int64_t w = (r.u8(24) | (r.u8(25) << 8) | (r.u8(26) << 16)) + 1;
    const std::int64_t h = (r.u8(27) | (r.u8(28) << 8) | (r.u8(29) << 16)) + 1;
    return r.has(27, 3) ? sized(ImageFormat::kWebp, w, h) : sized(ImageFormat::kWebp, 0, 0);
  }
  if (r.starts(12, "VP8L")) {
    if (r.u8(20) != 0x2F || !r.has(21, 4)) return sized(ImageFormat::kWebp, 0, 0);
    const std::uint32_t bits = r.le32(21);
    return sized(ImageFormat::kWebp, (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1);
  }
  if (r.starts(12, "VP8 ")) {
    if (r.u8(23) != 0x9D || r.u8(24) != 0x01 || r.u8(25) != 0x2A) {
      return sized(ImageFormat::kWebp, 0, 0);
    }
    return sized(ImageFormat::kWebp, r.le16(26) & 0x3FFF, r.le16(28) & 0x3FFF);
  }
  return sized(ImageFormat::kWebp, 0, 0);
}

// "II*\0" or "MM\0*", the first IFD's offset, then its entries: tag 256 is ImageWidth and 257
// ImageLength, each a SHORT (type 3) or LONG (type 4). OpenCV decodes the first page.
ImageHeader tiff(const Reader& r) {
  const bool little = r.u8(0) == 'I';
  auto u16 = [&](std::size_t at) { return little ? r.le16(at) : r.be16(at); };
  auto u32 = [&](std::size_t at) { return little ? r.le32(at) : r.be32(at); };
  const std::size_t ifd = u32(4);
  if (!r.has(ifd, 2)) return sized(ImageFormat::kTiff, 0, 0);
  const std::uint32_t entries = u16(ifd);
  std::int64_t width = 0;
  std::int64_t height = 0;
  for (std::uint32_t i = 0; i < entries; ++i) {
    const std::size_t entry = ifd + 2 + 12 * static_cast<std::size_t>(i);
    // An IFD that runs past the data is cut short: no size, rather than one read from the
    // entries that happen to be there (more bytes could change it; found by image_header_fuzz).
    if (!r.has(entry, 12)) return sized(ImageFormat::kTiff, 0, 0);
    const std::uint32_t tag = u16(entry);
    const std::uint32_t type = u16(entry + 2);
    const std::int64_t value = type == 3 ? u16(entry + 8) : type == 4 ? u32(entry + 8) : 0;
    if (tag == 256) width = value;
    if (tag == 257) height = value;
  }
  return sized(ImageFormat::kTiff, width, height);
}

// Netpbm: "P1".."P6", then width and height as ASCII decimals separated by whitespace, with
// '#' comments running to the end of a line.
ImageHeader pnm(const Reader& r) {
  std::size_t at = 2;
  std::int64_t values[2] = {0, 0};
  for (std::int64_t& value : values) {
    for (;;) {
      const std::uint32_t c = r.u8(at);
      if (!r.has(at, 1)) return sized(ImageFormat::kPnm, 0, 0);
      if (c == '#') {
        while (r.has(at, 1) && r.u8(at) != '\n') ++at;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
        ++at;
      } else {
        break;
      }
    }
    int digits = 0;
    for (; r.has(at, 1) && r.u8(at) >= '0' && r.u8(at) <= '9'; ++at) {
      if (++digits > 10) return sized(ImageFormat::kPnm, 0, 0);  // beyond any decoder's range
      value = value * 10 + (r.u8(at) - '0');
    }
    // A number ends at whitespace; at the end of the data it may have been cut short.
    if (digits == 0 || !r.has(at, 1)) return sized(ImageFormat::kPnm, 0, 0);
  }
  return sized(ImageFormat::kPnm, values[0], values[1]);
}

}  // namespace

ImageHeader read_image_header(const std::uint8_t* data, std::size_t size) {
  const Reader r(data, size);
  if (r.has(0, 3) && r.u8(0) == 0xFF && r.u8(1) == 0xD8 && r.u8(2) == 0xFF) return jpeg(r);
  if (r.starts(0, "\x89PNG\r\n\x1a\n")) return png(r);
  if (r.starts(0, "BM")) return bmp(r);
  if (r.starts(0, "RIFF") && r.starts(8, "WEBP")) return webp(r);
  if (r.starts(0, "II*") || r.starts(0, "MM")) {
    const bool tiff_magic =
        r.u8(0) == 'I' ? (r.u8(2) == 42 && r.u8(3) == 0) : (r.u8(2) == 0 && r.u8(3) == 42);
    if (tiff_magic) return tiff(r);
  }
  if (r.u8(0) == 'P' && r.u8(1) >= '1' && r.u8(1) <= '6') return pnm(r);
  return ImageHeader{};
}

const char* format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kBmp:
      return "BMP";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kTiff:
      return "TIFF";
    case ImageFormat::kPnm:
      return "PNM";
    case ImageFormat::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace dl::data
