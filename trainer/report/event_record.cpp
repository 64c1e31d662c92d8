// Protobuf's wire format, the part these messages use: varint keys and integers, fixed64 and
// fixed32 for double and float (little-endian IEEE 754), length-delimited strings and messages.
#include "report/event_record.h"

#include <cstring>

#include "report/crc32c.h"

namespace dl::report {
namespace {

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, std::uint32_t field, WireType type) {
  put_varint(out, (static_cast<std::uint64_t>(field) << 3) | type);
}

// Little-endian whatever the host's byte order, as protobuf and the framing want.
void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void put_double(std::string& out, std::uint32_t field, double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, kFixed64);
  put_le(out, bits, 8);
}

void put_float(std::string& out, std::uint32_t field, float v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, kFixed32);
  put_le(out, bits, 4);
}

void put_bytes(std::string& out, std::uint32_t field, std::string_view bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

}  // namespace

std::string version_event(double wall_time) {
  std::string event;
  put_double(event, 1, wall_time);
  put_bytes(event, 3, "brain.Event:2");
  return event;
}

std::string scalars_event(double wall_time, std::int64_t step, const std::vector<Scalar>& scalars) {
  std::string summary;
  for (const Scalar& s : scalars) {
    std::string value;
    put_bytes(value, 1, s.tag);
    put_float(value, 2, s.value);
    put_bytes(summary, 1, value);
  }
  std::string event;
  put_double(event, 1, wall_time);
  // int64 is a plain varint: a negative step takes ten bytes, as protobuf writes it.
  put_key(event, 2, kVarint);
  put_varint(event, static_cast<std::uint64_t>(step));
  put_bytes(event, 5, summary);
  return event;
}

std::string frame_record(std::string_view data) {
  std::string length;
  put_le(length, data.size(), 8);
  std::string record = length;
  put_le(record, masked_crc32c(length), 4);
  record.append(data);
  put_le(record, masked_crc32c(data), 4);
  return record;
}

}  // namespace dl::report
