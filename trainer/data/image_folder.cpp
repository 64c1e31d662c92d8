// ImageFolder scanning (see image_folder.h).
#include "data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

#include "data/data_error.h"
#include "data/file_list_source.h"

namespace dl::data {
namespace {

namespace fs = std::filesystem;

bool has_image_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto& known = image_extensions();
  return std::find(known.begin(), known.end(), ext) != known.end();
}

// torchvision walks sorted(os.walk(class_dir)) and sorts the names within each directory, so
// files order by (directory, name): a folder's own files come before those of its sub-folders.
std::vector<fs::path> images_below(const fs::path& class_dir) {
  std::vector<std::pair<std::string, std::string>> found;
  std::error_code ec;
  const auto options = fs::directory_options::follow_directory_symlink |
                       fs::directory_options::skip_permission_denied;
  for (fs::recursive_directory_iterator it(class_dir, options, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) && has_image_extension(it->path())) {
      found.emplace_back(it->path().parent_path().string(), it->path().filename().string());
    }
  }
  if (ec) throw DataError(class_dir.string() + ": cannot list (" + ec.message() + ")");
  std::sort(found.begin(), found.end());
  std::vector<fs::path> paths;
  paths.reserve(found.size());
  for (const auto& [dir, name] : found) paths.push_back(fs::path(dir) / name);
  return paths;
}

}  // namespace

const std::vector<std::string>& image_extensions() {
  static const std::vector<std::string> extensions{".jpg", ".jpeg", ".png", ".bmp", ".webp"};
  return extensions;
}

std::vector<std::string> image_folder_classes(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw DataError(root +
                    ": no such directory (expected an ImageFolder: one sub-directory per "
                    "class)");
  }
  std::vector<std::string> classes;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (!name.empty() && name[0] != '.' && it->is_directory(type_ec)) classes.push_back(name);
  }
  if (ec) throw DataError(root + ": cannot list (" + ec.message() + ")");
  if (classes.empty()) {
    throw DataError(root +
                    ": no class folders (expected an ImageFolder: one sub-directory per "
                    "class, holding that class's images)");
  }
  // Byte order of UTF-8 names is code-point order, which is what Python's sorted() uses.
  std::sort(classes.begin(), classes.end());
  return classes;
}

std::unique_ptr<SampleSource> open_image_folder(const std::string& root) {
  const std::vector<std::string> classes = image_folder_classes(root);
  std::vector<LabelledFile> files;
  for (std::size_t label = 0; label < classes.size(); ++label) {
    const fs::path class_dir = fs::path(root) / classes[label];
    const std::vector<fs::path> images = images_below(class_dir);
    if (images.empty()) {
      throw DataError(class_dir.string() +
                      ": class folder without images (expected .jpg, .jpeg, .png, .bmp or .webp "
                      "files; remove the folder or add images)");
    }
    for (const fs::path& image : images) {
      files.push_back(LabelledFile{image.string(), static_cast<std::int64_t>(label)});
    }
  }
  return make_file_list_source(std::move(files), root, "ImageFolder");
}

}  // namespace dl::data
