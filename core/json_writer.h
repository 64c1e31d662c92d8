// A minimal streaming JSON writer (objects, arrays, strings, numbers, booleans) for plan.json and
// --json; enough for what the launcher emits, with correct string escaping.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dl {

class JsonWriter {
 public:
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
  const std::string& str() const { return out_; }

  static std::string escape(const std::string& s);

 private:
  void separate();
  void newline();
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace dl
