// Fuzzes the JSON reader (parse_json), which reads the probe's report, the batch-size cache and
// plan.json. It refuses bad input by returning nullopt: any exception, crash or sanitizer report is
// a finding. An accepted document is walked whole through every typed getter, and every string in
// it (and the raw input, which need not be UTF-8) goes through JsonWriter::escape.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json.h"

namespace {

volatile double sink = 0;

void walk(const dl::JsonValue& v) {
  sink = static_cast<double>(v.as_bool().value_or(false)) + v.as_double().value_or(0.0) +
         static_cast<double>(v.as_i64().value_or(0)) + static_cast<double>(v.as_u64().value_or(0));
  if (const auto s = v.as_string()) sink = static_cast<double>(dl::JsonWriter::escape(*s).size());
  for (const auto& item : v.items()) walk(item);
  for (const auto& [key, member] : v.members()) {
    walk(member);
    if (v.find(key) == nullptr) __builtin_trap();  // a member it has just listed
    sink = static_cast<double>(dl::JsonWriter::escape(key).size() + v.get_string(key, "").size() +
                               v.get_bool(key, false)) +
           v.get_double(key, 0) + static_cast<double>(v.get_i64(key, 0)) +
           static_cast<double>(v.get_u64(key, 0));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;
  const auto doc = dl::parse_json(text, &error);
  sink = static_cast<double>(dl::JsonWriter::escape(text).size());
  if (doc) {
    walk(*doc);
  } else if (error.empty()) {
    __builtin_trap();  // a refusal always says why
  }
  return 0;
}
