// Small string helpers shared by the probe, the options and the report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dl {

std::vector<std::string> split(const std::string& s, char sep);
std::string trim(const std::string& s);
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Whole-string parses: nullopt on anything but an optionally signed run of digits in range.
std::optional<std::uint64_t> parse_u64(const std::string& s);
std::optional<std::int64_t> parse_i64(const std::string& s);

// "23.4 GiB", "64.0 MiB"
std::string format_bytes(std::uint64_t bytes);

// Shortest plain form of a number: "0.01", "86400".
std::string format_number(double v);

}  // namespace dl
