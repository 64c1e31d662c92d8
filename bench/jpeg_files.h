// The JPEG files under a folder, read whole into memory, for the benches that time decoding alone
// (decode_scale_bench, entropy_bench): files that are not JPEGs are passed over.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/file_bytes.h"
#include "data/jpeg_region.h"

namespace dl::bench {

inline std::vector<std::vector<std::uint8_t>> read_jpeg_files(const std::string& dir) {
  std::vector<std::vector<std::uint8_t>> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::vector<std::uint8_t> bytes;
    dl::data::FileReadError error;
    if (dl::data::read_file_into(entry.path().string(), bytes, &error) &&
        dl::data::looks_like_jpeg(bytes.data(), bytes.size())) {
      files.push_back(std::move(bytes));
    }
  }
  return files;
}

}  // namespace dl::bench
