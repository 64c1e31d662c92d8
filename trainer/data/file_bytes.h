// Whole-file reads for the readers: data set files (raw or gzip-compressed, decided by content,
// not by name) and image files read by the loader's workers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace dl::data {

// Reads exactly n bytes at `offset` of the open file `fd` with pread (retrying on EINTR, the
// descriptor's own offset untouched). False on an error or when the file ends first.
bool read_fully_at(int fd, std::uint64_t offset, void* out, std::size_t n);

// The file's bytes, gunzipped when it is gzip data (zlib reads other files unchanged). Throws
// DataError naming the file when it is missing, unreadable, or a damaged gzip stream.
std::vector<std::uint8_t> read_data_file(const std::string& path);

// Why read_file_into failed: `too_large` when the file is over the size limit, else a message
// such as "No such file or directory" or "not a regular file".
struct FileReadError {
  bool too_large = false;
  std::string message;
};

// Reads `path` into `out` (resized, its capacity reused between calls). False when the file cannot
// be opened or read, is not a regular file or has more than `max_bytes`, with the reason in
// `*error` when given: a sample that is simply skipped, not a reason to stop training. Never blocks
// on a FIFO or reads a device put in a file's place, and never allocates for a sparse file's
// claimed size beyond `max_bytes`. A file that shrinks while being read gives the bytes that were
// there.
bool read_file_into(const std::string& path, std::vector<std::uint8_t>& out,
                    FileReadError* error = nullptr,
                    std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

}  // namespace dl::data
