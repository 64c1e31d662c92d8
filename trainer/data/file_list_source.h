// A data set of image files with known labels, decoded on demand by the loader's workers: what
// ImageFolder and CSV manifests become once their layout has been read. Needs OpenCV to decode.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/jpeg_entropy.h"
#include "data/sample_source.h"

namespace dl::data {

struct LabelledFile {
  std::string path;
  std::int64_t label = 0;
};

// PIL's limit (Image.MAX_IMAGE_PIXELS * 2, where it raises DecompressionBombError), so that what
// torchvision's ImageFolder reads, this one reads too. At 3 bytes a pixel an image this size takes
// 512 MiB decoded, per worker.
inline constexpr std::int64_t kDefaultMaxImagePixels = 178956970;

struct ImageFileOptions {
  // Images whose header claims more pixels are skipped (SkipReason::kTooLarge) before anything is
  // allocated for them; so are files over 8 bytes a pixel of it (plus 64 MiB of metadata), the
  // most an uncompressed 16-bit RGBA image takes.
  std::int64_t max_pixels = kDefaultMaxImagePixels;
  // Receives one line per thing worth a warning while listing (a folder link not followed), and
  // per retry of a remote download.
  std::function<void(const std::string&)> warn;
  // Remote shards (shard_cache.h): the memory their read-ahead may hold, and its downloads at once.
  std::uint64_t read_ahead_bytes = std::uint64_t{1} << 30;
  int downloads = 2;
  // JPEGs: the memory for where each file's Huffman decoding can resume (jpeg_entropy.h), 0 for
  // none.
  std::size_t entropy_index_bytes = kDefaultEntropyIndexBytes;
};

// Takes the listing (at least one file) with num_classes = max label + 1 (or the number of
// class_names, when given: an ImageFolder's class folders). Throws DataError naming `origin` (the
// folder or manifest the listing came from) when this build has no OpenCV.
std::unique_ptr<SampleSource> make_file_list_source(std::vector<LabelledFile> files,
                                                    const std::string& origin,
                                                    const std::string& kind,
                                                    const ImageFileOptions& options = {},
                                                    std::vector<std::string> class_names = {});

}  // namespace dl::data
