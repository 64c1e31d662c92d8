// Small string helpers shared by both programs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dl {

std::vector<std::string> split(const std::string& s, char sep);
// `s` without leading and trailing white space (isspace in the C locale).
std::string trim(const std::string& s);
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

inline bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
// `text` up to its first newline: a multi-line message (LibTorch's carry a backtrace) reported on
// one line.
inline std::string first_line(std::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}
// What follows a path's last '/': a program's name in a line that needs no full path.
inline std::string base_name(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

// Whole-string parses: nullopt on anything but an optionally signed run of digits in range.
// Outside bytes (a name from a file) as one line of text for a message: printable ASCII as it is,
// any other byte as \xNN; at most `limit` bytes of it, then "...".
std::string printable(std::string_view bytes, std::size_t limit);

// `v` in decimal, zeros in front up to `width` digits ("007" for 7 and 3).
std::string zero_padded(std::uint64_t v, std::size_t width);

std::optional<std::uint64_t> parse_u64(const std::string& s);
std::optional<std::int64_t> parse_i64(const std::string& s);

// "23.4 GiB", "64.0 MiB"
std::string format_bytes(std::uint64_t bytes);

// Shortest plain form of a number: "0.01", "86400".
std::string format_number(double v);

// The time now in UTC, in ISO 8601 ("2026-12-02T02:48:28Z"): when a measurement ran.
std::string utc_now_iso();

// The word of `names` nearest to `given`, for "did you mean ...?": the one name that starts with
// it, else the nearest within a few edits (Levenshtein); "" when none is close.
std::string nearest_word(const std::string& given, const std::vector<std::string>& names);

}  // namespace dl
