// JsonValue and JsonWriter on nlohmann/json: parsing, escaping and number formatting are the
// library's; this file converts its documents to and from the small interface of json.h.
#include "core/json.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/text.h"

namespace dl {

// ordered_json keeps members in the order written (plan.json reads top to bottom).
using Json = nlohmann::ordered_json;

namespace {

// Invalid UTF-8 in a string (a file name, say) becomes U+FFFD instead of an exception.
std::string dump(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

struct JsonConverter {
  static constexpr int kMaxDepth = 64;

  // Converts `j`; false when the document nests deeper than kMaxDepth.
  static bool convert(const Json& j, JsonValue* v, int depth) {
    if (depth > kMaxDepth) return false;
    switch (j.type()) {
      case Json::value_t::object:
        v->type_ = JsonValue::Type::kObject;
        for (const auto& [key, member] : j.items()) {
          v->members_.emplace_back(key, JsonValue());
          if (!convert(member, &v->members_.back().second, depth + 1)) return false;
        }
        return true;
      case Json::value_t::array:
        v->type_ = JsonValue::Type::kArray;
        for (const auto& item : j) {
          v->items_.emplace_back();
          if (!convert(item, &v->items_.back(), depth + 1)) return false;
        }
        return true;
      case Json::value_t::string:
        v->type_ = JsonValue::Type::kString;
        v->text_ = j.get<std::string>();
        return true;
      case Json::value_t::boolean:
        v->type_ = JsonValue::Type::kBool;
        v->bool_ = j.get<bool>();
        return true;
      case Json::value_t::number_integer:
      case Json::value_t::number_unsigned:
      case Json::value_t::number_float:
        // Integers print with every digit; a float with the fewest that read back the same.
        v->type_ = JsonValue::Type::kNumber;
        v->text_ = dump(j);
        return true;
      default:
        v->type_ = JsonValue::Type::kNull;
        return true;
    }
  }
};

std::optional<JsonValue> parse_json(const std::string& text, std::string* error) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    // Not only parse_error: a number beyond double's range ("1e400") is an out_of_range (406).
    if (error != nullptr) *error = e.what();
    return std::nullopt;
  }
  JsonValue v;
  if (!JsonConverter::convert(j, &v, 0)) {
    if (error != nullptr) *error = "nested too deeply (more than 64 levels)";
    return std::nullopt;
  }
  return v;
}

const JsonValue* JsonValue::find(const std::string& key) const {
  for (const auto& [k, v] : members_) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::optional<bool> JsonValue::as_bool() const {
  return type_ == Type::kBool ? std::optional<bool>(bool_) : std::nullopt;
}

std::optional<double> JsonValue::as_double() const {
  if (type_ != Type::kNumber) return std::nullopt;
  return std::strtod(text_.c_str(), nullptr);
}

std::optional<std::int64_t> JsonValue::as_i64() const {
  return type_ == Type::kNumber ? parse_i64(text_) : std::nullopt;
}

std::optional<std::uint64_t> JsonValue::as_u64() const {
  return type_ == Type::kNumber ? parse_u64(text_) : std::nullopt;
}

std::optional<std::string> JsonValue::as_string() const {
  return type_ == Type::kString ? std::optional<std::string>(text_) : std::nullopt;
}

bool JsonValue::get_bool(const std::string& key, bool fallback) const {
  const JsonValue* v = find(key);
  return v != nullptr ? v->as_bool().value_or(fallback) : fallback;
}

double JsonValue::get_double(const std::string& key, double fallback) const {
  const JsonValue* v = find(key);
  return v != nullptr ? v->as_double().value_or(fallback) : fallback;
}

std::int64_t JsonValue::get_i64(const std::string& key, std::int64_t fallback) const {
  const JsonValue* v = find(key);
  return v != nullptr ? v->as_i64().value_or(fallback) : fallback;
}

std::uint64_t JsonValue::get_u64(const std::string& key, std::uint64_t fallback) const {
  const JsonValue* v = find(key);
  return v != nullptr ? v->as_u64().value_or(fallback) : fallback;
}

std::string JsonValue::get_string(const std::string& key, const std::string& fallback) const {
  const JsonValue* v = find(key);
  return v != nullptr ? v->as_string().value_or(fallback) : fallback;
}

// The document being written and the chain of containers still open, innermost last. Values go
// into the innermost only, so the pointers to the open ones stay valid.
struct JsonWriter::Tree {
  Json root;
  std::vector<Json*> open;
  std::string pending_key;

  Json* add(Json value) {
    if (open.empty()) {
      root = std::move(value);
      return &root;
    }
    Json& into = *open.back();
    if (into.is_object()) {
      Json& slot = into[pending_key];
      slot = std::move(value);
      return &slot;
    }
    into.push_back(std::move(value));
    return &into.back();
  }
};

JsonWriter::JsonWriter() : tree_(std::make_unique<Tree>()) {}
JsonWriter::~JsonWriter() = default;

JsonWriter& JsonWriter::begin_object() {
  tree_->open.push_back(tree_->add(Json::object()));
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  tree_->open.pop_back();
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  tree_->open.push_back(tree_->add(Json::array()));
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  tree_->open.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(const std::string& k) {
  tree_->pending_key = k;
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& v) {
  tree_->add(v);
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t v) {
  tree_->add(v);
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t v) {
  tree_->add(v);
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  tree_->add(v);  // nlohmann/json writes NaN and infinities as null
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  tree_->add(v);
  return *this;
}

JsonWriter& JsonWriter::null() {
  tree_->add(nullptr);
  return *this;
}

std::string JsonWriter::str() const {
  return dump(tree_->root, 2) + (tree_->root.is_object() ? "\n" : "");
}

std::string JsonWriter::escape(const std::string& s) {
  return dump(Json(s));
}

std::optional<JsonValue> last_json_object_line(const std::string& text) {
  const auto lines = split(text, '\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const std::string line = trim(*it);
    if (line.empty() || line[0] != '{') continue;
    auto json = parse_json(line);
    if (json && json->is_object()) return json;
  }
  return std::nullopt;
}

}  // namespace dl
