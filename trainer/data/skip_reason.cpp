// Skip reasons and their report (see skip_reason.h).
#include "data/skip_reason.h"

#include <cstdio>

namespace dl::data {

const char* skip_reason_name(SkipReason reason) {
  switch (reason) {
    case SkipReason::kUnreadable:
      return "unreadable";
    case SkipReason::kEmpty:
      return "empty";
    case SkipReason::kNotAnImage:
      return "not an image";
    case SkipReason::kTooLarge:
      return "too many pixels";
    case SkipReason::kUndecodable:
      return "undecodable";
    case SkipReason::kCutShort:
      return "cut short";
  }
  return "undecodable";
}

std::string printable_path(const std::string& path) {
  std::string out;
  out.reserve(path.size());
  const auto* p = reinterpret_cast<const unsigned char*>(path.data());
  const std::size_t n = path.size();
  for (std::size_t i = 0; i < n;) {
    // The length of a well-formed UTF-8 sequence starting at i (RFC 3629: no overlong forms, no
    // surrogates, nothing above U+10FFFF), or 0.
    std::size_t len = 0;
    const unsigned char c = p[i];
    auto cont = [&](std::size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
      return i + k < n && p[i + k] >= lo && p[i + k] <= hi;
    };
    if (c >= 0x20 && c < 0x7F) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = cont(1) ? 2 : 0;
    } else if (c >= 0xE0 && c <= 0xEF) {
      const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
      const unsigned char hi = c == 0xED ? 0x9F : 0xBF;
      len = cont(1, lo, hi) && cont(2) ? 3 : 0;
    } else if (c >= 0xF0 && c <= 0xF4) {
      const unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
      const unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
      len = cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
    }
    if (len == 0) {  // control characters and stray bytes alike
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
      ++i;
    } else {
      out.append(path, i, len);
      i += len;
    }
  }
  return out;
}

std::string describe_skips(const SkipCounts& counts, const std::vector<SkippedFile>& files,
                           std::size_t examples) {
  std::string out;
  for (std::size_t r = 0; r < kSkipReasons; ++r) {
    if (counts[r] == 0) continue;
    const auto reason = static_cast<SkipReason>(r);
    if (!out.empty()) out += ", ";
    out += std::to_string(counts[r]) + " " + skip_reason_name(reason);
    std::string names;
    std::size_t named = 0;
    std::size_t more = 0;
    for (const SkippedFile& f : files) {
      if (f.reason != reason) continue;
      if (named == examples) {
        ++more;
        continue;
      }
      names += (named++ ? ", " : "") + printable_path(f.path);
      if (!f.detail.empty()) names += ": " + f.detail;
    }
    if (more > 0) names += " and " + std::to_string(more) + " more";
    if (!names.empty()) out += " (" + names + ")";
  }
  return out;
}

}  // namespace dl::data
