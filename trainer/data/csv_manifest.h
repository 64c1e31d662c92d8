// A CSV manifest: image files listed with their labels, for data not laid out as an ImageFolder.
#pragma once

#include <memory>
#include <string>

#include "data/file_list_source.h"
#include "data/sample_source.h"

namespace dl::data {

// Lines "path,label" (an optional first line "path,label" is a header; blank lines are skipped,
// CRLF is fine). Paths are relative to the CSV's directory unless absolute; a path holding a comma
// may be double-quoted. Labels are non-negative integers; num_classes = max label + 1.
// Throws DataError naming file:line for a malformed line, and when the manifest is missing or empty
// or this build has no OpenCV. Listed files are not checked here: a missing one makes load() return
// false, and the loader skips it.
std::unique_ptr<SampleSource> open_csv_manifest(const std::string& csv_path,
                                                const ImageFileOptions& options = {});

}  // namespace dl::data
