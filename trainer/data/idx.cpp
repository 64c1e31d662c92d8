// IDX (MNIST) reader (see idx.h).
#include "data/idx.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <vector>

#include "data/data_error.h"
#include "data/file_bytes.h"
#include "data/memory_source.h"

namespace dl::data {
namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension

std::uint32_t big_endian_u32(const std::vector<std::uint8_t>& bytes, std::size_t offset) {
  return (std::uint32_t{bytes[offset]} << 24) | (std::uint32_t{bytes[offset + 1]} << 16) |
         (std::uint32_t{bytes[offset + 2]} << 8) | std::uint32_t{bytes[offset + 3]};
}

std::string hex(std::uint32_t value) {
  std::ostringstream out;
  out << "0x" << std::hex;
  out.width(8);
  out.fill('0');
  out << value;
  return out.str();
}

// Checks the magic number, with a hint when the two files were passed the wrong way round.
void check_magic(const std::string& path, const std::vector<std::uint8_t>& bytes,
                 std::uint32_t expected, const char* what) {
  if (bytes.size() < 4) {
    throw DataError(path + ": " + std::to_string(bytes.size()) +
                    " bytes, too short for an IDX header: empty or truncated?");
  }
  const std::uint32_t magic = big_endian_u32(bytes, 0);
  if (magic == expected) return;
  std::string hint;
  if (magic == kImagesMagic) hint = " (that is an IDX images file: files swapped?)";
  if (magic == kLabelsMagic) hint = " (that is an IDX labels file: files swapped?)";
  throw DataError(path + ": magic number " + hex(magic) + ", expected " + hex(expected) + " for " +
                  what + hint);
}

void check_length(const std::string& path, std::size_t actual, std::uint64_t expected,
                  const std::string& declared) {
  if (actual == expected) return;
  throw DataError(path + ": header declares " + declared + " (" + std::to_string(expected) +
                  " bytes) but the file holds " + std::to_string(actual) +
                  " bytes: " + (actual < expected ? "truncated?" : "extra bytes at the end?"));
}

}  // namespace

std::unique_ptr<SampleSource> open_idx(const std::string& images_path,
                                       const std::string& labels_path,
                                       const std::vector<std::string>& class_names) {
  std::vector<std::uint8_t> images = read_data_file(images_path);
  check_magic(images_path, images, kImagesMagic, "IDX images (unsigned bytes, 3 dimensions)");
  if (images.size() < 16) {
    throw DataError(images_path + ": " + std::to_string(images.size()) +
                    " bytes, too short for the 16-byte IDX images header: truncated?");
  }
  const std::uint32_t count = big_endian_u32(images, 4);
  const std::uint32_t rows = big_endian_u32(images, 8);
  const std::uint32_t cols = big_endian_u32(images, 12);
  const std::string dims = std::to_string(rows) + "x" + std::to_string(cols);
  if (count == 0 || rows == 0 || cols == 0 || rows > 65535 || cols > 65535) {
    throw DataError(images_path + ": header declares " + std::to_string(count) + " images of " +
                    dims + ", expected at least one image of 1x1 to 65535x65535 pixels");
  }
  const std::uint64_t image_bytes = std::uint64_t{rows} * cols;
  check_length(images_path, images.size(), 16 + std::uint64_t{count} * image_bytes,
               std::to_string(count) + " images of " + dims);

  std::vector<std::uint8_t> labels = read_data_file(labels_path);
  check_magic(labels_path, labels, kLabelsMagic, "IDX labels (unsigned bytes, 1 dimension)");
  if (labels.size() < 8) {
    throw DataError(labels_path + ": " + std::to_string(labels.size()) +
                    " bytes, too short for the 8-byte IDX labels header: truncated?");
  }
  const std::uint32_t label_count = big_endian_u32(labels, 4);
  check_length(labels_path, labels.size(), 8 + std::uint64_t{label_count},
               std::to_string(label_count) + " labels");
  if (label_count != count) {
    throw DataError(labels_path + ": " + std::to_string(label_count) + " labels, but " +
                    images_path + " holds " + std::to_string(count) +
                    " images: expected one label per image (files from different sets?)");
  }

  // Drop the headers in place rather than copying tens of megabytes.
  images.erase(images.begin(), images.begin() + 16);
  labels.erase(labels.begin(), labels.begin() + 8);
  const int num_classes = *std::max_element(labels.begin(), labels.end()) + 1;
  const ImageShape shape{1, static_cast<int>(rows), static_cast<int>(cols)};
  std::string description = "IDX " + images_path + " (" + std::to_string(count) + " samples, " +
                            std::to_string(num_classes) + " classes, 1x" + dims + ")";
  std::vector<std::string> names;
  if (class_names.size() == static_cast<std::size_t>(num_classes)) names = class_names;
  return std::make_unique<MemorySource>(std::move(images), std::move(labels), shape, num_classes,
                                        std::move(description), std::move(names));
}

std::unique_ptr<SampleSource> open_mnist_dir(const std::string& dir, bool train) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw DataError(dir + ": no such directory (expected the MNIST IDX files in it)");
  }
  const std::string prefix = train ? "train" : "t10k";
  // The first existing spelling wins; raw before .gz, so an unpacked copy is preferred.
  auto find = [&](const std::string& kind, const std::string& idx) {
    for (const char* sep : {"-", "."}) {
      for (const char* ext : {"", ".gz"}) {
        const fs::path candidate =
            fs::path(dir) / (prefix + "-" + kind + sep + idx + "-ubyte" + ext);
        if (fs::is_regular_file(candidate, ec)) return candidate.string();
      }
    }
    throw DataError(dir + ": no " + prefix + "-" + kind + "-" + idx +
                    "-ubyte[.gz] (expected the MNIST IDX layout)");
  };
  const std::string images = find("images", "idx3");
  const std::string labels = find("labels", "idx1");
  return open_idx(images, labels, idx_class_names(dir));
}

std::vector<std::string> idx_class_names(const std::string& dir) {
  std::string path = std::filesystem::absolute(dir).lexically_normal().string();
  std::transform(path.begin(), path.end(), path.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (path.find("fashion") != std::string::npos) {
    return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
            "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  }
  return index_names(10);
}

}  // namespace dl::data
