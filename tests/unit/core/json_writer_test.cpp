// The JSON writer: structure, separators and escaping.
#include "core/json_writer.h"

#include <gtest/gtest.h>

#include <limits>

namespace dl::test {
namespace {

TEST(JsonWriter, NestedObjectsAndArrays) {
  JsonWriter w;
  w.begin_object()
      .key("a")
      .value(1)
      .key("b")
      .begin_array()
      .value("x")
      .value(true)
      .null()
      .end_array();
  w.key("c").begin_object().end_object().end_object();
  EXPECT_EQ(w.str(),
            "{\n  \"a\": 1,\n  \"b\": [\n    \"x\",\n    true,\n    null\n  ],\n  \"c\": {}\n}\n");
}

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonWriter::escape("a\"b\\c\nd\te\x01"), "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
}

TEST(JsonWriter, NonFiniteNumbersBecomeNull) {
  JsonWriter w;
  w.begin_array().value(std::numeric_limits<double>::quiet_NaN()).value(1.5).end_array();
  EXPECT_EQ(w.str(), "[\n  null,\n  1.5\n]");
}

TEST(JsonWriter, LargeUnsignedValuesKeepEveryDigit) {
  JsonWriter w;
  w.begin_array().value(std::uint64_t{18446744073709551615u}).end_array();
  EXPECT_NE(w.str().find("18446744073709551615"), std::string::npos);
}

}  // namespace
}  // namespace dl::test
