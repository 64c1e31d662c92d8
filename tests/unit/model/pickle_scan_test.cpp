// The pickle walk that guards LibTorch's unpickler: whole programs pass, a length or a line that
// runs past the end is named with its offset, so is an opcode that takes more from the stack than
// is there, and every cut of a real program is walked safely.
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

using dl::model::pickle_flaw;

std::string scan(const std::vector<std::uint8_t>& program) {
  return pickle_flaw(program.data(), program.size());
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

TEST(PickleScan, TakingMoreThanTheStackHoldsIsNamed) {
  // NEWOBJ with nothing pushed (the fuzzer's SEGV in LibTorch 1.13).
  EXPECT_EQ(scan({0x80, 2, 0x81, 'q', 0, '.'}),
            "an opcode that takes 2 value(s) from a stack holding 0 (since the last MARK) at byte "
            "2 of the 6-byte pickle");
  // SETITEM over two values; STOP on nothing.
  EXPECT_NE(scan({'}', 'K', 1, 's', '.'}), "");
  EXPECT_NE(scan({'.'}), "");
  // A slice opcode without a MARK; APPENDS with no list under its MARK; OBJ without its class.
  EXPECT_EQ(scan({'K', 1, 't', '.'}),
            "an opcode that needs a MARK, with none at byte 2 of the 4-byte pickle");
  EXPECT_EQ(scan({'(', 'K', 1, 'e', '.'}),
            "an opcode that adds to a container, with none under its MARK at byte 3 of the 5-byte "
            "pickle");
  EXPECT_EQ(scan({'(', 'o', '.'}), "OBJ without its class at byte 1 of the 3-byte pickle");
  // Values under a MARK are not the frame's to take: TUPLE2 right after a MARK.
  EXPECT_NE(scan({'K', 1, 'K', 2, '(', 0x86, '.'}), "");
}

TEST(PickleScan, MemoStoresNumberedPastTheStoresBeforeThemAreNamed) {
  // LONG_BINPUT 0x3b34b431 as the first store: LibTorch 1.13 would reserve 2 * that many memo
  // slots (the fuzzer's 30 GiB allocation).
  EXPECT_EQ(scan({0x80, 2, ']', 'r', 0x31, 0xb4, 0x34, 0x3b, '.'}),
            "a memo store numbered 993309745 after 0 store(s) (picklers number them in order) at "
            "byte 3 of the 9-byte pickle");
  EXPECT_EQ(scan({']', 'q', 0, ']', 'q', 2, '.'}),
            "a memo store numbered 2 after 1 store(s) (picklers number them in order) at byte 4 "
            "of the 7-byte pickle");
  // In order, and a number stored again, pass; so does MEMOIZE's implied number.
  EXPECT_EQ(scan({']', 'q', 0, ']', 'r', 1, 0, 0, 0, 'q', 1, 0x94, ']', 'q', 3, '.'}), "");
}

TEST(PickleScan, MarksAndContainersThatBalancePass) {
  // {"a": [1, 2]} as protocol 2 writes it: EMPTY_DICT, MARK, key, EMPTY_LIST, MARK, 1, 2,
  // APPENDS, SETITEMS, STOP; and POP of an empty frame's MARK, as Python allows.
  EXPECT_EQ(
      scan({0x80, 2, '}', '(', 'X', 1, 0, 0, 0, 'a', ']', '(', 'K', 1, 'K', 2, 'e', 'u', '.'}), "");
  EXPECT_EQ(scan({'K', 1, '(', '0', '.'}), "");
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
    refused += !pickle_flaw(bytes.data(), cut).empty();
  }
  // At least every cut inside the 300-byte string is refused.
  EXPECT_GE(refused, 300);
}

}  // namespace
}  // namespace dl::test
