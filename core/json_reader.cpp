// Recursive-descent JSON parsing (RFC 8259), with a depth limit so a hostile file cannot exhaust
// the stack.
#include "core/json_reader.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace dl {

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}

  std::optional<JsonValue> document(std::string* error) {
    JsonValue v;
    if (value(&v, 0)) {
      skip_space();
      if (pos_ == s_.size()) return v;
      fail("unexpected text after the document");
    }
    if (error != nullptr) *error = error_ + " at offset " + std::to_string(pos_);
    return std::nullopt;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool fail(const std::string& what) {
    if (error_.empty()) error_ = what;
    return false;
  }

  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool literal(const char* word) {
    const std::string w = word;
    if (s_.compare(pos_, w.size(), w) != 0) return fail("unknown literal");
    pos_ += w.size();
    return true;
  }

  bool value(JsonValue* v, int depth) {
    if (depth > kMaxDepth) return fail("nested too deeply");
    skip_space();
    if (pos_ >= s_.size()) return fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v->type_ = JsonValue::Type::kString;
      return string(&v->text_);
    }
    if (c == 't' || c == 'f') {
      v->type_ = JsonValue::Type::kBool;
      v->bool_ = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      v->type_ = JsonValue::Type::kNull;
      return literal("null");
    }
    return number(v);
  }

  bool number(JsonValue* v) {
    const std::size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    const std::size_t digits = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == digits) return fail("expected a value");
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    v->type_ = JsonValue::Type::kNumber;
    v->text_ = s_.substr(start, pos_ - start);
    return true;
  }

  static void append_utf8(std::string* out, unsigned cp) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xC0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xE0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool hex4(unsigned* cp) {
    if (pos_ + 4 > s_.size()) return fail("short \\u escape");
    *cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      *cp <<= 4;
      if (h >= '0' && h <= '9') {
        *cp |= static_cast<unsigned>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        *cp |= static_cast<unsigned>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        *cp |= static_cast<unsigned>(h - 'A' + 10);
      } else {
        return fail("bad \\u escape");
      }
    }
    return true;
  }

  bool string(std::string* out) {
    ++pos_;  // the opening quote
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          *out += '"';
          break;
        case '\\':
          *out += '\\';
          break;
        case '/':
          *out += '/';
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u': {
          unsigned cp = 0;
          if (!hex4(&cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(pos_, 2, "\\u") == 0) {
            pos_ += 2;
            unsigned low = 0;
            if (!hex4(&low)) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          return fail("bad escape");
      }
    }
    return fail("unterminated string");
  }

  bool array(JsonValue* v, int depth) {
    v->type_ = JsonValue::Type::kArray;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      v->items_.emplace_back();
      if (!value(&v->items_.back(), depth + 1)) return false;
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool object(JsonValue* v, int depth) {
    v->type_ = JsonValue::Type::kObject;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected a key");
      std::string key;
      if (!string(&key)) return false;
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ':') return fail("expected ':'");
      ++pos_;
      v->members_.emplace_back(std::move(key), JsonValue{});
      if (!value(&v->members_.back().second, depth + 1)) return false;
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  const std::string& s_;
  std::size_t pos_ = 0;
  std::string error_;
};

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
  if (type_ != Type::kNumber) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text_.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return static_cast<std::int64_t>(v);
}

std::optional<std::uint64_t> JsonValue::as_u64() const {
  if (type_ != Type::kNumber || text_.empty() || text_[0] == '-') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text_.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return static_cast<std::uint64_t>(v);
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

std::optional<JsonValue> parse_json(const std::string& text, std::string* error) {
  return JsonParser(text).document(error);
}

}  // namespace dl
