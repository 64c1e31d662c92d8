// torchvision's ImageFolder layout: root/<class>/<image>, one sub-directory per class, labels given
// by the sorted class names.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/file_list_source.h"
#include "data/sample_source.h"

namespace dl::data {

// The image extensions looked for, lower case; matched case-insensitively.
const std::vector<std::string>& image_extensions();  // .jpg .jpeg .png .bmp .webp

// Whether the file name ends in one of image_extensions(), in any case.
bool has_image_extension(const std::filesystem::path& path);

// Class sub-directories sorted by name give labels 0, 1, ... (hidden ones, such as
// .ipynb_checkpoints, are not classes). Images are found recursively below each class folder,
// in torchvision's order, following links to folders but entering each folder once (a link loop
// or a second link to a folder is named through options.warn and not followed). Only regular
// files (or links to them) with an image extension are samples: a folder named x.jpg is a folder.
// Throws DataError when the root is missing, has no class folders, or a class folder has no images
// (naming that folder), and when this build has no OpenCV.
// Files that fail to decode are found only when loaded: load() returns false for them.
std::unique_ptr<SampleSource> open_image_folder(const std::string& root,
                                                const ImageFileOptions& options = {});

// The class names of an ImageFolder root, in label order (what open_image_folder uses).
std::vector<std::string> image_folder_classes(const std::string& root);

}  // namespace dl::data
