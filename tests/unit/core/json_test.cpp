// JSON reading (typed getters, exact large numbers, malformed and hostile input) and writing
// (structure, separators, escaping), and the two together.
#include "core/json.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "support/build_paths.h"
#include "support/files.h"

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

TEST(JsonWriter, InvalidUtf8BecomesTheReplacementCharacter) {
  EXPECT_EQ(JsonWriter::escape("a\xff"), "\"a\xef\xbf\xbd\"");
}

TEST(JsonWriter, KeepsMembersInTheOrderWritten) {
  JsonWriter w;
  w.begin_object().key("zeta").value(1).key("alpha").value(2).end_object();
  EXPECT_LT(w.str().find("zeta"), w.str().find("alpha"));
}

TEST(JsonReader, ReadsTypedMembersWithFallbacks) {
  const auto doc = parse_json(
      R"({"b": true, "d": 2.5, "i": -7, "s": "x\ny", "n": null, "a": [1, "two"], "o": {"k": 1}})");
  ASSERT_TRUE(doc.has_value());
  ASSERT_TRUE(doc->is_object());
  EXPECT_TRUE(doc->get_bool("b", false));
  EXPECT_DOUBLE_EQ(doc->get_double("d", 0), 2.5);
  EXPECT_EQ(doc->get_i64("i", 0), -7);
  EXPECT_EQ(doc->get_string("s", ""), "x\ny");
  EXPECT_EQ(doc->find("n")->type(), JsonValue::Type::kNull);
  ASSERT_TRUE(doc->find("a")->is_array());
  EXPECT_EQ(doc->find("a")->items().size(), 2u);
  EXPECT_EQ(doc->find("a")->items()[1].as_string(), "two");
  EXPECT_EQ(doc->find("o")->get_i64("k", 0), 1);
  EXPECT_EQ(doc->find("missing"), nullptr);
  // Absent or of another type: the fallback.
  EXPECT_EQ(doc->get_i64("s", 42), 42);
  EXPECT_EQ(doc->get_string("i", "none"), "none");
  EXPECT_EQ(doc->get_u64("i", 9), 9u);           // negative: not an unsigned number
  EXPECT_EQ(doc->get_i64("d", 3), 3);            // not a whole number
  EXPECT_EQ(doc->members().front().first, "b");  // members in document order
}

TEST(JsonReader, KeepsByteCountsBeyondDoublePrecisionExact) {
  // 2^53 + 1 and the largest 64-bit counts are not representable as doubles.
  const auto doc = parse_json(R"({"a": 9007199254740993, "b": 18446744073709551615})");
  ASSERT_TRUE(doc.has_value());
  EXPECT_EQ(doc->get_u64("a", 0), 9007199254740993u);
  EXPECT_EQ(doc->get_u64("b", 0), 18446744073709551615u);
}

TEST(JsonReader, RejectsMalformedDocumentsWithAReason) {
  for (const std::string text : {"", "{", "{\"a\": }", "[1, 2", "{\"a\": 1} trailing", "tru",
                                 "{'a': 1}", "[1,]", "\"unterminated"}) {
    std::string error;
    EXPECT_FALSE(parse_json(text, &error).has_value()) << text;
    EXPECT_FALSE(error.empty()) << text;
  }
}

// Found by tests/fuzz/json_fuzz: a number beyond double's range made the parser throw an
// exception other than its parse error, which escaped parse_json.
TEST(JsonReader, RefusesNumbersBeyondDoubleRangeWithAReason) {
  const std::string found = read_file(std::string(dl::test::kSourceDir) +
                                      "/tests/fuzz/corpus/json/crash-number-overflow");
  ASSERT_FALSE(found.empty());
  for (const std::string& text :
       std::vector<std::string>{"1e400", "[-1e400]", "{\"bytes\": 184467440735e308}", found}) {
    std::string error;
    EXPECT_FALSE(parse_json(text, &error).has_value()) << text;
    EXPECT_NE(error.find("number overflow"), std::string::npos) << text << ": " << error;
  }
}

TEST(JsonReader, RefusesDocumentsNestedTooDeeply) {
  const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_TRUE(parse_json(nested(64)).has_value());
  std::string error;
  EXPECT_FALSE(parse_json(nested(100000), &error).has_value());
  EXPECT_NE(error.find("nested too deeply"), std::string::npos) << error;
}

TEST(Json, WhatTheWriterWritesTheReaderReadsBack) {
  JsonWriter w;
  w.begin_object()
      .key("name")
      .value("a \"quoted\" \\ name\t")
      .key("bytes")
      .value(std::uint64_t{18446744073709551615u})
      .key("ratio")
      .value(0.1)
      .key("list")
      .begin_array()
      .value(-3)
      .value(false)
      .end_array()
      .end_object();
  const auto doc = parse_json(w.str());
  ASSERT_TRUE(doc.has_value()) << w.str();
  EXPECT_EQ(doc->get_string("name", ""), "a \"quoted\" \\ name\t");
  EXPECT_EQ(doc->get_u64("bytes", 0), 18446744073709551615u);
  EXPECT_DOUBLE_EQ(doc->get_double("ratio", 0), 0.1);
  EXPECT_EQ(doc->find("list")->items()[0].as_i64(), -3);
  EXPECT_EQ(doc->find("list")->items()[1].as_bool(), false);
}

// Moved here from the launcher's probe tests.
TEST(JsonReader, Values) {
  std::string error;
  const auto v = parse_json(
      R"( {"a": [1, -2.5e2, true, false, null], "s": "x\"y\\z\n\u00e9\ud83d\ude00", "o": {}} )",
      &error);
  ASSERT_TRUE(v) << error;
  const JsonValue* a = v->find("a");
  ASSERT_TRUE(a && a->is_array());
  ASSERT_EQ(a->items().size(), 5u);
  EXPECT_EQ(a->items()[0].as_i64(), 1);
  EXPECT_DOUBLE_EQ(*a->items()[1].as_double(), -250.0);
  EXPECT_FALSE(a->items()[1].as_i64()) << "not a whole number";
  EXPECT_EQ(a->items()[2].as_bool(), true);
  EXPECT_EQ(a->items()[4].type(), JsonValue::Type::kNull);
  EXPECT_EQ(v->get_string("s", ""), "x\"y\\z\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_TRUE(v->find("o")->is_object());
  EXPECT_EQ(v->get_i64("missing", 7), 7);
  EXPECT_EQ(v->get_i64("s", 7), 7) << "mistyped falls back";
}

TEST(JsonReader, RejectsMalformedDocuments) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1} x", "\"\\q\"", "tru", "-",
                          "\"unterminated", "{\"a\":\"\x01\"}"}) {
    std::string error;
    EXPECT_FALSE(parse_json(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  EXPECT_FALSE(parse_json(std::string(100, '[') + std::string(100, ']'))) << "too deep";
}

}  // namespace
}  // namespace dl::test
