// A data set of image files with known labels, decoded on demand by the loader's workers: what
// ImageFolder and CSV manifests become once their layout has been read. Needs OpenCV to decode.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/sample_source.h"

namespace dl::data {

struct LabelledFile {
  std::string path;
  std::int64_t label = 0;
};

// Takes the listing (at least one file) with num_classes = max label + 1. Throws DataError naming
// `origin` (the folder or manifest the listing came from) when this build has no OpenCV.
std::unique_ptr<SampleSource> make_file_list_source(std::vector<LabelledFile> files,
                                                    const std::string& origin,
                                                    const std::string& kind);

}  // namespace dl::data
