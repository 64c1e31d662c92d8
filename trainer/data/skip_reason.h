// Why a sample was skipped, and the report that groups skipped samples by reason: a training run
// that drops files says how many and why ("2 unreadable: a.jpg (No such file or directory), ...").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dl::data {

enum class SkipReason : std::uint8_t {
  kUnreadable,   // missing, not a regular file, or a read error (deleted during an epoch)
  kEmpty,        // zero bytes (an interrupted copy, a file truncated during an epoch)
  kNotAnImage,   // no format the loader decodes
  kTooLarge,     // more pixels than the limit: refused from its header (a decompression bomb)
  kUndecodable,  // a known format whose data does not decode (corrupt)
  // A known format whose bytes end before the format says they do (an interrupted download or
  // copy); last, so that the numbers of the others (in checkpoints' epoch positions) stay.
  kCutShort,
};
inline constexpr std::size_t kSkipReasons = 6;

// Skipped samples per reason (indexed by SkipReason).
using SkipCounts = std::array<std::int64_t, kSkipReasons>;

inline void add(SkipCounts& to, const SkipCounts& from) {
  for (std::size_t i = 0; i < kSkipReasons; ++i) to[i] += from[i];
}

// One file that could not be loaded, the last time it was tried.
struct SkippedFile {
  std::int64_t index = 0;  // the sample's index in its source
  std::string path;
  SkipReason reason = SkipReason::kUndecodable;
  std::string detail;  // "No such file or directory", "60000x60000 pixels"
};

// "unreadable", "empty", "not an image", "too many pixels", "undecodable", "cut short".
const char* skip_reason_name(SkipReason reason);

// One line, reasons in enum order: "3 unreadable (a.jpg: No such file or directory, b.jpg: ...),
// 1 too many pixels (bomb.jpg: 60000x60000 pixels)", with at most `examples` files named per
// reason ("and 2 more"). Counts come from `counts`; names from `files` (those of each reason).
// Bytes that are not UTF-8 in a name are written as \xNN, so the line stays valid text.
std::string describe_skips(const SkipCounts& counts, const std::vector<SkippedFile>& files,
                           std::size_t examples = 3);

// The path with bytes that are not valid UTF-8 (a name from another system's encoding) written as
// \xNN, for messages and logs.
std::string printable_path(const std::string& path);

}  // namespace dl::data
