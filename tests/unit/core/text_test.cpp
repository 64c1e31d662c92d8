// String helpers: whole-string number parses that refuse partial or signed input.
#include "core/text.h"

#include <gtest/gtest.h>

namespace dl::test {
namespace {

TEST(Text, SplitKeepsEmptyFieldsButNoTrailingOne) {
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split("a\nb\n", '\n'), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(split("", ',').empty());
}

TEST(Text, Trim) {
  EXPECT_EQ(trim("  x y \n"), "x y");
  EXPECT_EQ(trim(" \t\n"), "");
  // Every byte isspace takes in the C locale (a CSV manifest's and an AWS config's lines too).
  EXPECT_EQ(trim("\v\f\r a=b \r"), "a=b");
}

TEST(Text, PrintableEscapesOtherBytesAndCuts) {
  EXPECT_EQ(printable("os.system", 60), "os.system");
  EXPECT_EQ(printable(std::string("a\0b\n\xff", 5), 60), "a\\x00b\\x0a\\xff");
  EXPECT_EQ(printable("abcdef", 3), "abc...");
  EXPECT_EQ(printable("abc", 3), "abc");
}

TEST(Text, ZeroPadded) {
  EXPECT_EQ(zero_padded(7, 3), "007");
  EXPECT_EQ(zero_padded(1234, 2), "1234");
  EXPECT_EQ(zero_padded(0, 0), "0");
}

TEST(Text, ParseU64IsStrict) {
  EXPECT_EQ(parse_u64("42").value_or(0), 42u);
  EXPECT_FALSE(parse_u64("-1"));
  EXPECT_FALSE(parse_u64("4x"));
  EXPECT_FALSE(parse_u64(""));
  EXPECT_FALSE(parse_u64("99999999999999999999999"));
}

TEST(Text, ParseI64AcceptsSign) {
  EXPECT_EQ(parse_i64("-1").value_or(0), -1);
  EXPECT_EQ(parse_i64("+7").value_or(0), 7);
  EXPECT_FALSE(parse_i64("-"));
  EXPECT_FALSE(parse_i64("1.5"));
}

TEST(Text, FormatBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(64ull << 20), "64.0 MiB");
  EXPECT_EQ(format_bytes(3ull << 29), "1.5 GiB");
}

}  // namespace
}  // namespace dl::test
