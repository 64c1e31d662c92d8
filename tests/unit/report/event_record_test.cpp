// The Event protobuf and the record framing, byte for byte as protobuf's wire format and
// TensorBoard's record format lay them out.
#include "report/event_record.h"

#include <gtest/gtest.h>

#include <string>

#include "report/crc32c.h"

namespace dl::report {
namespace {

std::string bytes(std::initializer_list<int> list) {
  std::string s;
  for (int b : list) s.push_back(static_cast<char>(b));
  return s;
}

TEST(EventRecord, VersionEvent) {
  // wall_time 1.5 (fixed64, key 0x09), file_version "brain.Event:2" (key 0x1a, length 13).
  const std::string expected =
      bytes({0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F, 0x1A, 13}) + "brain.Event:2";
  EXPECT_EQ(version_event(1.5), expected);
}

TEST(EventRecord, ScalarEvent) {
  // wall_time 1.5, step 3 (key 0x10), summary (key 0x2a, 10 bytes) holding one value (key 0x0a,
  // 8 bytes): tag "a" (key 0x0a), simple_value 1.0f (key 0x15, fixed32 0x3f800000).
  const std::string expected =
      bytes({0x09, 0,    0, 0,    0, 0,   0,    0xF8, 0x3F, 0x10, 0x03, 0x2A,
             10,   0x0A, 8, 0x0A, 1, 'a', 0x15, 0,    0,    0x80, 0x3F});
  EXPECT_EQ(scalars_event(1.5, 3, {{"a", 1.0f}}), expected);
}

TEST(EventRecord, LargeStepIsAVarint) {
  // 300 = 0b1_0010_1100: low seven bits with the continuation bit, then 2.
  const std::string event = scalars_event(0, 300, {{"a", 0}});
  EXPECT_EQ(event.substr(9, 3), bytes({0x10, 0xAC, 0x02}));
}

TEST(EventRecord, SeveralValuesInOneSummary) {
  const std::string event = scalars_event(0, 1, {{"val/loss", 0.5f}, {"val/acc", 0.25f}});
  // Each value: 2 + tag + 5 bytes, itself wrapped with 2 bytes.
  const std::size_t summary = (2 + 2 + 8 + 5) + (2 + 2 + 7 + 5);
  EXPECT_EQ(event.size(), 9 + 2 + 2 + summary);
  EXPECT_NE(event.find("val/loss"), std::string::npos);
  EXPECT_NE(event.find("val/acc"), std::string::npos);
}

TEST(EventRecord, FrameLayout) {
  const std::string data = "123456789";
  const std::string record = frame_record(data);
  ASSERT_EQ(record.size(), 8 + 4 + data.size() + 4);
  EXPECT_EQ(record.substr(0, 8), bytes({9, 0, 0, 0, 0, 0, 0, 0}));
  // The length's masked CRC-32C, 0x3971F937 (worked out with python3-crcmod's crc-32c).
  EXPECT_EQ(record.substr(8, 4), bytes({0x37, 0xF9, 0x71, 0x39}));
  EXPECT_EQ(record.substr(12, data.size()), data);
  // masked_crc32c("123456789") == 0xC78AB0E5, stored little-endian.
  EXPECT_EQ(record.substr(12 + data.size()), bytes({0xE5, 0xB0, 0x8A, 0xC7}));
}

}  // namespace
}  // namespace dl::report
