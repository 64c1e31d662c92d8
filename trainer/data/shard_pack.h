// Packing a data set into WebDataset shards (what `dl-train pack` runs): each sample becomes
// <key>.<ext> and <key>.cls, the key its index (9 digits), in index order, into shards of about a
// target size (a shard is closed once it reaches it), named <prefix><6 digits>.tar. Image files
// are copied as they are, or, with a maximum side, decoded, shrunk to it (OpenCV's INTER_AREA)
// and stored as JPEG of the given quality, as FFCV's writer stores photos at the size training
// needs; in-memory sets (IDX, CIFAR) become PNGs. The same input gives the same bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/sample_source.h"

namespace dl::data {

struct PackOptions {
  std::string out_dir;                                   // must exist
  std::string prefix = "train-";                         // shard names: <prefix>000000.tar, ...
  std::uint64_t shard_bytes = std::uint64_t{256} << 20;  // a shard closes past this size
  int max_side = 0;                                      // 0: image files copied as they are
  int quality = 90;                                      // JPEG quality when re-encoding
  // Called after each sample: samples done, of total, bytes written so far.
  std::function<void(std::int64_t, std::int64_t, std::uint64_t)> progress;
};

struct PackSummary {
  std::int64_t samples = 0;  // packed
  std::int64_t skipped = 0;  // unreadable or undecodable, left out
  std::uint64_t bytes = 0;   // of all shards
  int classes = 0;
  std::vector<std::string> shards;  // paths, in order
};

// Throws std::runtime_error (a shard cannot be written) or std::invalid_argument (options).
PackSummary pack_shards(const SampleSource& source, const PackOptions& options);

// An image file's bytes as `pack --max-side` stores them: decoded, shrunk to `max_side` on its
// long side when larger (INTER_AREA) and encoded as JPEG of `quality`, in place. False when the
// bytes do not decode; throws std::invalid_argument in a build without OpenCV.
bool shrink_to_jpeg(std::vector<std::uint8_t>& bytes, int max_side, int quality);

}  // namespace dl::data
