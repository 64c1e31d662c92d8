// Whole-file reads for the readers: data set files (raw or gzip-compressed, decided by content,
// not by name) and image files read by the loader's workers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dl::data {

// The file's bytes, gunzipped when it is gzip data (zlib reads other files unchanged). Throws
// DataError naming the file when it is missing, unreadable, or a damaged gzip stream.
std::vector<std::uint8_t> read_data_file(const std::string& path);

// Reads `path` into `out` (resized, its capacity reused between calls). False when the file cannot
// be opened or read: a sample that is simply skipped, not a reason to stop training.
bool read_file_into(const std::string& path, std::vector<std::uint8_t>& out);

}  // namespace dl::data
