// The pickle walk that guards LibTorch's unpickler: whole programs pass, a length or a line that
// runs past the end is named with its offset, and every cut of a real program is walked safely.
#include "model/pickle_scan.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dl::test {
namespace {

using dl::model::pickle_overrun;

std::string scan(const std::vector<std::uint8_t>& program) {
  return pickle_overrun(program.data(), program.size());
}

TEST(PickleScan, WholeProgramsPass) {
  EXPECT_EQ(scan({0x80, 2, 'X', 1, 0, 0, 0, 'a', '.'}), "");
  EXPECT_EQ(scan({0x80, 2, 'c', 'm', '\n', 'n', '\n', 'K', 7, 'G', 0, 0, 0, 0, 0, 0, 0, 0, '.'}),
            "");
  EXPECT_EQ(scan({}), "");
}

TEST(PickleScan, LengthsPastTheEndAreNamed) {
  EXPECT_EQ(scan({0x80, 2, 'X', 0xff, 0xff, 0xff, 0x7f, '.'}),
            "a string of 2147483647 bytes at byte 2 runs past the end of the 8-byte pickle");
  EXPECT_EQ(scan({0x8d, 0, 0, 0, 0, 0, 0, 0, 0x80}),
            "a string of 9223372036854775808 bytes at byte 0 runs past the end of the 9-byte "
            "pickle");
  EXPECT_EQ(scan({'X', 1, 0}),
            "a string's length at byte 0 runs past the end of the 3-byte pickle");
  EXPECT_EQ(scan({'J', 1, 2}),
            "a 4-byte argument at byte 0 runs past the end of the 3-byte pickle");
  EXPECT_EQ(scan({'c', 'm', '\n', 'n'}),
            "a line without its newline at byte 0 runs past the end of the 4-byte pickle");
}

TEST(PickleScan, UnknownOpcodesAreLeftToTheUnpickler) {
  EXPECT_EQ(scan({0x80, 2, 0xff, 'X', 0xff, 0xff, 0xff, 0xff}), "");
}

TEST(PickleScan, EveryCutOfARealProgramIsWalkedSafely) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("name", std::string(300, 'x'));
  dict.insert("epoch", int64_t{3});
  dict.insert("val_acc", 0.5);
  const std::vector<char> program = torch::jit::pickle(dict);
  const std::vector<std::uint8_t> bytes(program.begin(), program.end());
  EXPECT_EQ(scan(bytes), "");
  int refused = 0;
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    refused += !pickle_overrun(bytes.data(), cut).empty();
  }
  // At least every cut inside the 300-byte string is refused.
  EXPECT_GE(refused, 300);
}

}  // namespace
}  // namespace dl::test
