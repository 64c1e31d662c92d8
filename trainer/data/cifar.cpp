// CIFAR-10 binary reader (see cifar.h).
#include "data/cifar.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <vector>

#include "data/data_error.h"
#include "data/file_bytes.h"
#include "data/memory_source.h"

namespace dl::data {
namespace {

constexpr int kSide = 32;
constexpr int kChannels = 3;
constexpr std::size_t kImageBytes = std::size_t{kChannels} * kSide * kSide;  // 3072
constexpr std::size_t kRecordBytes = 1 + kImageBytes;                        // 3073
constexpr int kClasses = 10;

std::vector<std::string> batch_files(bool train) {
  if (!train) return {"test_batch.bin"};
  std::vector<std::string> names;
  for (int i = 1; i <= 5; ++i) names.push_back("data_batch_" + std::to_string(i) + ".bin");
  return names;
}

// Appends the records of one file to pixels/labels.
void read_batch(const std::string& path, std::vector<std::uint8_t>& pixels,
                std::vector<std::uint8_t>& labels) {
  const std::vector<std::uint8_t> bytes = read_data_file(path);
  if (bytes.empty() || bytes.size() % kRecordBytes != 0) {
    throw DataError(path + ": truncated CIFAR file: " + std::to_string(bytes.size()) +
                    " bytes, expected a whole number of 3073-byte records (label + 3x32x32)");
  }
  const std::size_t records = bytes.size() / kRecordBytes;
  for (std::size_t r = 0; r < records; ++r) {
    const std::uint8_t* record = bytes.data() + r * kRecordBytes;
    if (record[0] >= kClasses) {
      throw DataError(path + ": record " + std::to_string(r) + " has label " +
                      std::to_string(record[0]) + ", expected 0..9 (a CIFAR-100 file?)");
    }
    labels.push_back(record[0]);
    pixels.insert(pixels.end(), record + 1, record + kRecordBytes);
  }
}

// batches.meta.txt's names, or the published ones when it is absent or does not hold ten.
std::vector<std::string> cifar_class_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::ifstream in(dir / "batches.meta.txt");
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  if (names.size() == kClasses) return names;
  return {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
}

}  // namespace

std::unique_ptr<SampleSource> open_cifar10(const std::string& dir, bool train) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw DataError(dir + ": no such directory (expected the CIFAR-10 binary files in it)");
  }
  const std::vector<std::string> names = batch_files(train);
  fs::path base(dir);
  // Accept the parent of the unpacked archive too, as torchvision's root= does.
  if (!fs::exists(base / names.front(), ec) &&
      fs::is_directory(base / "cifar-10-batches-bin", ec)) {
    base /= "cifar-10-batches-bin";
  }
  std::uintmax_t total_bytes = 0;
  for (const std::string& name : names) {
    const fs::path path = base / name;
    if (!fs::is_regular_file(path, ec)) {
      throw DataError(path.string() + ": no such file (expected the CIFAR-10 binary version)");
    }
    total_bytes += fs::file_size(path, ec);
  }
  std::vector<std::uint8_t> pixels;
  std::vector<std::uint8_t> labels;
  // One allocation for all files, instead of regrowing 150 MB file after file.
  pixels.reserve(static_cast<std::size_t>(total_bytes / kRecordBytes) * kImageBytes);
  for (const std::string& name : names) read_batch((base / name).string(), pixels, labels);
  std::string description = "CIFAR-10 " + base.string() + " (" + std::to_string(labels.size()) +
                            " samples, 10 classes, 3x32x32)";
  return std::make_unique<MemorySource>(std::move(pixels), std::move(labels),
                                        ImageShape{kChannels, kSide, kSide}, kClasses,
                                        std::move(description), cifar_class_names(base));
}

}  // namespace dl::data
