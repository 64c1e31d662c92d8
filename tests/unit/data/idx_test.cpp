// IDX (MNIST) reader: raw and gzip files, every header check, the directory helper.
#include "data/idx.h"

#include <gtest/gtest.h>

#include <random>

#include "data/data_error.h"
#include "support/temp_dir.h"
#include "unit/data/fixtures.h"

namespace dl::test {
namespace {

using namespace dl::data;

// Loads sample i as evaluation at native size: a plain copy of the stored bytes.
Bytes load_native(const SampleSource& source, std::int64_t i) {
  Transform t;
  t.out = source.native_shape();
  Bytes out(t.out.bytes());
  std::mt19937 rng(0);
  EXPECT_TRUE(source.load(i, t, rng, out.data()));
  return out;
}

TEST(Idx, ReadsRawFiles) {
  TempDir dir;
  write_bytes(dir.file("img"), idx_images(3, 4, 5));
  write_bytes(dir.file("lbl"), idx_labels({2, 0, 6}));
  const auto source = open_idx(dir.file("img"), dir.file("lbl"));
  EXPECT_EQ(source->size(), 3);
  EXPECT_EQ(source->num_classes(), 7);  // max label + 1
  EXPECT_EQ(source->native_shape().channels, 1);
  EXPECT_EQ(source->native_shape().height, 4);
  EXPECT_EQ(source->native_shape().width, 5);
  EXPECT_EQ(source->label(0), 2);
  EXPECT_EQ(source->label(2), 6);
  const Bytes sample = load_native(*source, 2);
  ASSERT_EQ(sample.size(), 20u);
  for (std::uint32_t k = 0; k < 20; ++k) EXPECT_EQ(sample[k], idx_pixel(2, k));
  EXPECT_NE(source->describe().find("3 samples"), std::string::npos) << source->describe();
}

TEST(Idx, ReadsGzipFiles) {
  TempDir dir;
  write_gz(dir.file("img.gz"), idx_images(4, 3, 3));
  write_gz(dir.file("lbl.gz"), idx_labels({1, 1, 0, 1}));
  const auto source = open_idx(dir.file("img.gz"), dir.file("lbl.gz"));
  EXPECT_EQ(source->size(), 4);
  EXPECT_EQ(source->num_classes(), 2);
  EXPECT_EQ(load_native(*source, 3)[8], idx_pixel(3, 8));
}

TEST(Idx, TruncatedImagesFileIsNamed) {
  TempDir dir;
  Bytes images = idx_images(10, 28, 28);
  images.resize(16 + 784 * 4);
  write_gz(dir.file("train-images-idx3-ubyte.gz"), images);
  write_bytes(dir.file("lbl"), idx_labels(std::vector<std::uint8_t>(10, 1)));
  expect_data_error(
      [&] { open_idx(dir.file("train-images-idx3-ubyte.gz"), dir.file("lbl")); },
      {"train-images-idx3-ubyte.gz", "header declares 10 images of 28x28 (7856 bytes)",
       "holds 3152 bytes", "truncated?"});
}

TEST(Idx, OverlongFileIsAnError) {
  TempDir dir;
  Bytes images = idx_images(2, 2, 2);
  images.push_back(0);
  write_bytes(dir.file("img"), images);
  write_bytes(dir.file("lbl"), idx_labels({0, 1}));
  expect_data_error([&] { open_idx(dir.file("img"), dir.file("lbl")); }, {"img", "extra bytes"});
}

TEST(Idx, TruncatedLabelsFile) {
  TempDir dir;
  write_bytes(dir.file("img"), idx_images(3, 2, 2));
  Bytes labels = idx_labels({0, 1, 2});
  labels.pop_back();
  write_bytes(dir.file("lbl"), labels);
  expect_data_error([&] { open_idx(dir.file("img"), dir.file("lbl")); },
                    {"lbl", "3 labels", "truncated?"});
}

TEST(Idx, WrongMagic) {
  TempDir dir;
  write_bytes(dir.file("img"), idx_images(1, 2, 2, 0x00000903));
  write_bytes(dir.file("lbl"), idx_labels({0}));
  expect_data_error([&] { open_idx(dir.file("img"), dir.file("lbl")); },
                    {"img", "magic number 0x00000903", "expected 0x00000803"});
}

TEST(Idx, SwappedFilesGetAHint) {
  TempDir dir;
  write_bytes(dir.file("img"), idx_images(1, 2, 2));
  write_bytes(dir.file("lbl"), idx_labels({0}));
  expect_data_error([&] { open_idx(dir.file("lbl"), dir.file("img")); }, {"lbl", "files swapped?"});
}

TEST(Idx, CountMismatchBetweenImagesAndLabels) {
  TempDir dir;
  write_bytes(dir.file("img"), idx_images(3, 2, 2));
  write_bytes(dir.file("lbl"), idx_labels({0, 1}));
  expect_data_error([&] { open_idx(dir.file("img"), dir.file("lbl")); },
                    {"lbl", "2 labels", "3 images"});
}

TEST(Idx, EmptyAndMissingFiles) {
  TempDir dir;
  write_bytes(dir.file("empty"), {});
  write_bytes(dir.file("lbl"), idx_labels({0}));
  expect_data_error([&] { open_idx(dir.file("empty"), dir.file("lbl")); }, {"empty", "too short"});
  expect_data_error([&] { open_idx(dir.file("absent"), dir.file("lbl")); },
                    {"absent", "no such file"});
}

TEST(Idx, DamagedGzipStream) {
  TempDir dir;
  write_gz(dir.file("img.gz"), idx_images(50, 8, 8));
  std::filesystem::resize_file(dir.file("img.gz"),
                               std::filesystem::file_size(dir.file("img.gz")) / 2);
  write_bytes(dir.file("lbl"), idx_labels(std::vector<std::uint8_t>(50, 0)));
  expect_data_error([&] { open_idx(dir.file("img.gz"), dir.file("lbl")); }, {"img.gz"});
}

TEST(Idx, MnistDirectoryLayout) {
  TempDir dir;
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_images(5, 2, 2));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), idx_labels({0, 1, 2, 3, 4}));
  write_bytes(dir.file("t10k-images-idx3-ubyte"), idx_images(2, 2, 2));
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_labels({4, 4}));
  EXPECT_EQ(open_mnist_dir(dir.path(), true)->size(), 5);
  const auto test_set = open_mnist_dir(dir.path(), false);
  EXPECT_EQ(test_set->size(), 2);
  EXPECT_EQ(test_set->num_classes(), 5);
}

TEST(Idx, MnistDirectoryMissingFiles) {
  TempDir dir;
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_images(5, 2, 2));
  expect_data_error([&] { open_mnist_dir(dir.path(), true); },
                    {dir.path(), "train-labels-idx1-ubyte[.gz]"});
  expect_data_error([&] { open_mnist_dir(dir.file("nope"), true); }, {"nope", "no such directory"});
}

}  // namespace
}  // namespace dl::test
