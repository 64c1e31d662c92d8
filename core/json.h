// JSON for what the programs read and write: the probe's one-line report, the workspace's
// batch-size cache, plan.json and --json. A small interface over nlohmann/json (which stays out of
// this header): JsonValue, a parsed document read with typed, fallback-taking getters, and
// JsonWriter, which builds one in order. Numbers keep their text, so byte counts beyond 2^53
// survive both ways.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dl {

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Type type() const { return type_; }
  bool is_object() const { return type_ == Type::kObject; }
  bool is_array() const { return type_ == Type::kArray; }

  // The member `key` of an object; nullptr when absent or when this is not an object.
  const JsonValue* find(const std::string& key) const;
  const std::vector<JsonValue>& items() const { return items_; }  // an array's elements
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }

  // Typed reads; nullopt when the type differs (or the number is not a whole one in range).
  std::optional<bool> as_bool() const;
  std::optional<double> as_double() const;
  std::optional<std::int64_t> as_i64() const;
  std::optional<std::uint64_t> as_u64() const;
  std::optional<std::string> as_string() const;

  // Member reads with a fallback for an absent or mistyped member.
  bool get_bool(const std::string& key, bool fallback) const;
  double get_double(const std::string& key, double fallback) const;
  std::int64_t get_i64(const std::string& key, std::int64_t fallback) const;
  std::uint64_t get_u64(const std::string& key, std::uint64_t fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;

 private:
  friend struct JsonConverter;
  Type type_ = Type::kNull;
  bool bool_ = false;
  std::string text_;  // a string's value, or a number's text
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// Parses a whole document; nullopt (with `error` set when given) on malformed input, or on
// nesting deeper than 64 levels.
std::optional<JsonValue> parse_json(const std::string& text, std::string* error = nullptr);

// The last line of `text` that is a JSON object: a child program's report among whatever else it
// printed (dl-train's probe and data facts). nullopt when there is none.
std::optional<JsonValue> last_json_object_line(const std::string& text);

// Writes a document in order: objects and arrays opened and closed, keys before values. The
// text is indented by two spaces, one member or element per line; an object at the top ends
// with a newline. NaN and infinities become null (JSON has neither).
class JsonWriter {
 public:
  JsonWriter();
  ~JsonWriter();
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(const std::string& k);
  JsonWriter& value(const std::string& v);
  JsonWriter& value(const char* v) { return value(std::string(v)); }
  JsonWriter& value(std::int64_t v);
  JsonWriter& value(std::uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<std::int64_t>(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool v);
  JsonWriter& null();
  std::string str() const;

  // `s` as a JSON string literal, quotes included.
  static std::string escape(const std::string& s);

 private:
  struct Tree;
  std::unique_ptr<Tree> tree_;
};

}  // namespace dl
