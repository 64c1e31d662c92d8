// The central-directory walk (see zip_scan.h). Offsets and signatures are the zip format's
// (PKWARE's APPNOTE 4.3.12 to 4.3.16); where the format leaves a choice, the walk takes miniz's:
// the end record is the last signature with a whole record after it, the zip64 locator is read
// only directly before it, and the entry count and directory come from the zip64 end record when
// the locator points at one. A compressed record's uncompressed size is the entry's 32-bit field:
// 0xffffffff there (a zip64 size in an extra field) means 4 GiB or more, beyond the limit anyway.
#include "model/zip_scan.h"

#include <cstdio>

#include "core/text.h"

namespace dl::model {
namespace {

constexpr std::uint32_t kEndSignature = 0x06054b50;
constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr std::uint32_t kZip64EndSignature = 0x06064b50;
constexpr std::uint32_t kEntrySignature = 0x02014b50;
constexpr std::size_t kEndSize = 22;
constexpr std::size_t kZip64LocatorSize = 20;
constexpr std::size_t kZip64EndSize = 56;
constexpr std::size_t kEntrySize = 46;
constexpr std::size_t kLongestName = 120;  // of a record's name in a message

std::uint64_t little_endian(const std::uint8_t* p, int bytes) {
  std::uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = value << 8 | p[i];
  return value;
}

ZipScan corrupt(const std::string& why) {
  return {ZipScan::Verdict::kCorrupt, "zip archive: " + why};
}

// A record's name as one line of text.
std::string printable(const std::uint8_t* name, std::size_t length) {
  return dl::printable(std::string_view(reinterpret_cast<const char*>(name), length), kLongestName);
}

std::string method_name(std::uint64_t method) {
  switch (method) {
    case 8:
      return "deflate";
    case 9:
      return "deflate64";
    case 12:
      return "bzip2";
    case 14:
      return "lzma";
    case 93:
      return "zstd";
    default:
      return "method " + std::to_string(method);
  }
}

}  // namespace

ZipScan scan_zip_records(const std::uint8_t* data, std::size_t size) {
  // The end record: the signature nearest the end with a whole record after it.
  if (size < kEndSize) return corrupt("too short for an end of central directory record");
  std::size_t end = size - kEndSize + 1;
  bool found = false;
  while (end-- > 0) {
    if (little_endian(data + end, 4) == kEndSignature) {
      found = true;
      break;
    }
  }
  if (!found) return corrupt("no end of central directory record (truncated?)");
  const std::uint8_t* record = data + end;
  std::uint64_t entries = little_endian(record + 10, 2);
  std::uint64_t directory_size = little_endian(record + 12, 4);
  std::uint64_t directory_at = little_endian(record + 16, 4);

  // The zip64 end record, where a locator directly before the end record points at one.
  if (end >= kZip64LocatorSize + kZip64EndSize) {
    const std::uint8_t* locator = data + end - kZip64LocatorSize;
    if (little_endian(locator, 4) == kZip64LocatorSignature) {
      const std::uint64_t zip64_at = little_endian(locator + 8, 8);
      if (zip64_at > size - kZip64EndSize) {
        return corrupt("the zip64 end record's offset " + std::to_string(zip64_at) +
                       " lies past the end of the " + std::to_string(size) + "-byte file");
      }
      const std::uint8_t* zip64 = data + zip64_at;
      if (little_endian(zip64, 4) == kZip64EndSignature) {
        entries = little_endian(zip64 + 32, 8);
        directory_size = little_endian(zip64 + 40, 8);
        directory_at = little_endian(zip64 + 48, 8);
      }
    }
  }
  if (directory_at > size || directory_size > size - directory_at) {
    return corrupt("the central directory (" + std::to_string(directory_size) + " bytes at " +
                   std::to_string(directory_at) + ") runs past the end of the " +
                   std::to_string(size) + "-byte file");
  }

  // Every entry: its compression method and, when compressed, the size it declares inflated.
  const std::uint8_t* entry = data + directory_at;
  std::uint64_t left = directory_size;
  std::uint64_t inflated = 0;
  for (std::uint64_t i = 0; i < entries; ++i) {
    if (left < kEntrySize || little_endian(entry, 4) != kEntrySignature) {
      return corrupt("central directory entry " + std::to_string(i) + " of " +
                     std::to_string(entries) + " is cut short or has no signature");
    }
    const std::uint64_t method = little_endian(entry + 10, 2);
    const std::uint64_t declared = little_endian(entry + 24, 4);
    const std::uint64_t name_length = little_endian(entry + 28, 2);
    const std::uint64_t header =
        kEntrySize + name_length + little_endian(entry + 30, 2) + little_endian(entry + 32, 2);
    if (header > left) {
      return corrupt("central directory entry " + std::to_string(i) + " of " +
                     std::to_string(entries) + " runs past the directory's end");
    }
    if (method != 0) {
      inflated += declared == 0xffffffff ? (std::uint64_t{1} << 32) : declared;
      if (inflated > kMaxInflatedBytes) {
        return {ZipScan::Verdict::kBomb,
                "record " + printable(entry + kEntrySize, name_length) + " is compressed (" +
                    method_name(method) + ") and the archive's compressed records would inflate " +
                    (declared == 0xffffffff ? "to 4 GiB or more"
                                            : "to " + std::to_string(inflated >> 20) + " MiB") +
                    ", more than the " + std::to_string(kMaxInflatedBytes >> 20) +
                    " MiB allowed (a zip bomb?); torch.save stores tensors uncompressed"};
      }
    }
    entry += header;
    left -= header;
  }
  return {};
}

}  // namespace dl::model
