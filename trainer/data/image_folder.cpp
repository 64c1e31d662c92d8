// ImageFolder scanning (see image_folder.h).
#include "data/image_folder.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <utility>

#include "data/data_error.h"
#include "data/file_list_source.h"
#include "data/skip_reason.h"

namespace dl::data {
namespace {

namespace fs = std::filesystem;

// A directory's identity, whichever path or link leads to it.
struct DirId {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator<(const DirId& o) const {
    return device != o.device ? device < o.device : inode < o.inode;
  }
};

// stat(2), following links; false for a dangling link or a vanished entry.
bool stat_path(const fs::path& path, struct stat* st) {
  return ::stat(path.c_str(), st) == 0;
}

// Lists the images below class folders, following links to folders (as torchvision's
// os.walk(followlinks=True) does) but entering each folder once, known by (device, inode): a link
// back up the tree (class/loop -> ..) would otherwise be walked forever, and a second link to a
// folder would count its images twice. Such a link is named in one warning line and not followed.
// Links to files are samples of their own, as in torchvision (a way to repeat an image).
class Walker {
 public:
  explicit Walker(const ImageFileOptions& options) : options_(options) {}

  // The root and every class folder count as entered before any walk, so that no link leads into
  // them from elsewhere (cat/x -> ../dog would give dog's images the label cat as well).
  void enter(const fs::path& dir) {
    struct stat st {};
    if (stat_path(dir, &st)) visited_.insert(DirId{st.st_dev, st.st_ino});
  }

  // torchvision walks sorted(os.walk(class_dir)) and sorts the names within each directory, so
  // files order by (directory, name): a folder's own files come before those of its sub-folders.
  std::vector<fs::path> images_below(const fs::path& class_dir) {
    std::vector<std::pair<std::string, std::string>> found;
    // Depth first in name order, so which of two ways into a folder wins does not depend on the
    // order the file system lists them in.
    std::vector<fs::path> pending{class_dir};
    while (!pending.empty()) {
      const fs::path dir = std::move(pending.back());
      pending.pop_back();
      std::vector<fs::path> subdirs;
      std::error_code ec;
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path& path = it->path();
        struct stat st {};
        if (!stat_path(path, &st)) continue;  // a dangling link, or gone since listed
        if (S_ISDIR(st.st_mode)) {
          if (visited_.insert(DirId{st.st_dev, st.st_ino}).second) {
            subdirs.push_back(path);
          } else {
            warn(printable_path(path.string()) +
                 ": leads to a folder already listed (a link loop, or a second link to it); not "
                 "followed, so that each image counts once");
          }
        } else if (S_ISREG(st.st_mode) && has_image_extension(path)) {
          found.emplace_back(path.parent_path().string(), path.filename().string());
        }
      }
      if (ec) {
        if (dir == class_dir) {
          throw DataError(printable_path(dir.string()) + ": cannot list (" + ec.message() + ")");
        }
        warn(printable_path(dir.string()) + ": cannot list (" + ec.message() + "); skipped");
      }
      std::sort(subdirs.rbegin(), subdirs.rend());  // the stack pops the first name first
      for (fs::path& sub : subdirs) pending.push_back(std::move(sub));
    }
    std::sort(found.begin(), found.end());
    std::vector<fs::path> paths;
    paths.reserve(found.size());
    for (const auto& [dir, name] : found) paths.push_back(fs::path(dir) / name);
    return paths;
  }

 private:
  void warn(const std::string& line) const {
    if (options_.warn) options_.warn("ImageFolder: " + line);
  }

  const ImageFileOptions& options_;
  std::set<DirId> visited_;
};

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

std::unique_ptr<SampleSource> open_image_folder(const std::string& root,
                                                const ImageFileOptions& options) {
  const std::vector<std::string> classes = image_folder_classes(root);
  Walker walker(options);
  walker.enter(root);
  for (const std::string& name : classes) walker.enter(fs::path(root) / name);
  std::vector<LabelledFile> files;
  for (std::size_t label = 0; label < classes.size(); ++label) {
    const fs::path class_dir = fs::path(root) / classes[label];
    const std::vector<fs::path> images = walker.images_below(class_dir);
    if (images.empty()) {
      throw DataError(printable_path(class_dir.string()) +
                      ": class folder without images (expected .jpg, .jpeg, .png, .bmp or .webp "
                      "files; remove the folder or add images)");
    }
    for (const fs::path& image : images) {
      files.push_back(LabelledFile{image.string(), static_cast<std::int64_t>(label)});
    }
  }
  return make_file_list_source(std::move(files), root, "ImageFolder", options, classes);
}

bool has_image_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto& known = image_extensions();
  return std::find(known.begin(), known.end(), ext) != known.end();
}

}  // namespace dl::data
