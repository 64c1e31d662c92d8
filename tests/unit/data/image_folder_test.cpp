// ImageFolder: class discovery and order, decoding (RGB order, grey and alpha), corrupt files
// skipped by the loader, and the layout errors.
#include "data/image_folder.h"

#include <gtest/gtest.h>

#include <random>

#include "data/data_error.h"
#include "data/loader.h"
#include "support/temp_dir.h"
#include "unit/data/fixtures.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace dl::test {
namespace {

using namespace dl::data;

#if DL_HAVE_OPENCV

// A solid image in OpenCV's BGR(A) order.
void write_image(const std::string& path, int rows, int cols, const cv::Scalar& bgr, int type) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  ASSERT_TRUE(cv::imwrite(path, cv::Mat(rows, cols, type, bgr))) << path;
}

// cat: a red PNG, a blue JPEG, a corrupt .jpg; dog: a grey PNG, a green RGBA PNG (upper-case
// extension), in a nested folder. Plus things that are not classes or not images.
void make_folder(const std::filesystem::path& root) {
  write_image((root / "cat" / "a_red.png").string(), 20, 30, {0, 0, 255}, CV_8UC3);
  write_image((root / "cat" / "b_blue.jpg").string(), 40, 20, {255, 0, 0}, CV_8UC3);
  std::mt19937 rng(7);
  Bytes junk(500);
  for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
  write_bytes((root / "cat" / "c_corrupt.jpg").string(), junk);
  write_file((root / "cat" / "notes.txt").string(), "not an image");
  write_image((root / "dog" / "grey.png").string(), 16, 16, {128}, CV_8UC1);
  write_image((root / "dog" / "sub" / "green.PNG").string(), 16, 16, {0, 255, 0, 10}, CV_8UC4);
  std::filesystem::create_directories(root / ".ipynb_checkpoints");
  write_file((root / "README").string(), "a file, not a class");
}

Transform eval_transform(int side) {
  Transform t;
  t.out = ImageShape{3, side, side};
  t.eval_crop_fraction = 1.0f;
  return t;
}

TEST(ImageFolder, FindsClassesAndImagesInOrder) {
  TempDir dir;
  make_folder(dir.path());
  EXPECT_EQ(image_folder_classes(dir.path()), (std::vector<std::string>{"cat", "dog"}));
  const auto source = open_image_folder(dir.path());
  ASSERT_EQ(source->size(), 5);
  EXPECT_EQ(source->num_classes(), 2);
  EXPECT_EQ(source->native_shape().channels, 3);
  const std::vector<std::int64_t> labels{0, 0, 0, 1, 1};
  for (std::int64_t i = 0; i < 5; ++i) EXPECT_EQ(source->label(i), labels[i]) << i;
  EXPECT_NE(source->describe().find("5 samples, 2 classes"), std::string::npos);
}

TEST(ImageFolder, DecodesToRgbChw) {
  TempDir dir;
  make_folder(dir.path());
  const auto source = open_image_folder(dir.path());
  const Transform t = eval_transform(8);
  const std::size_t plane = 64;
  std::vector<std::uint8_t> out(t.out.bytes());
  std::mt19937 rng(1);

  ASSERT_TRUE(source->load(0, t, rng, out.data()));  // red PNG
  EXPECT_EQ(out[0], 255);
  EXPECT_EQ(out[plane], 0);
  EXPECT_EQ(out[2 * plane], 0);

  ASSERT_TRUE(source->load(1, t, rng, out.data()));  // blue JPEG (lossy: allow a little)
  EXPECT_LT(out[0], 10);
  EXPECT_GT(out[2 * plane + 27], 245);

  ASSERT_TRUE(source->load(3, t, rng, out.data()));  // grey, expanded to 3 channels
  for (std::size_t c = 0; c < 3; ++c) EXPECT_EQ(out[c * plane + 5], 128);

  ASSERT_TRUE(source->load(4, t, rng, out.data()));  // RGBA green, alpha dropped
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[plane + 63], 255);
  EXPECT_EQ(out[2 * plane], 0);
}

TEST(ImageFolder, CorruptFileFailsToLoadAndIsSkipped) {
  TempDir dir;
  make_folder(dir.path());
  const auto source = open_image_folder(dir.path());
  const Transform t = eval_transform(8);
  std::vector<std::uint8_t> out(t.out.bytes());
  std::mt19937 rng(1);
  EXPECT_FALSE(source->load(2, t, rng, out.data()));

  LoaderConfig config;
  config.batch_size = 2;
  config.workers = 2;
  config.transform = t;
  Loader loader(*source, config);
  loader.start_epoch(0);
  std::int64_t seen = 0;
  std::int64_t skipped = 0;
  while (auto batch = loader.next()) {
    seen += batch->n();
    skipped += batch->skipped();
    if (batch->index() == 1) {
      EXPECT_EQ(batch->n(), 1);  // samples 2 (corrupt) and 3: the batch is one short
      EXPECT_EQ(batch->labels()[0], 1);
    }
  }
  EXPECT_EQ(seen, 4);
  EXPECT_EQ(skipped, 1);
  EXPECT_EQ(loader.skipped_in_epoch(), 1);
}

TEST(ImageFolder, MissingFileAfterOpenFailsToLoad) {
  TempDir dir;
  make_folder(dir.path());
  const auto source = open_image_folder(dir.path());
  std::filesystem::remove(dir.fs_path() / "cat" / "a_red.png");
  const Transform t = eval_transform(8);
  std::vector<std::uint8_t> out(t.out.bytes());
  std::mt19937 rng(1);
  EXPECT_FALSE(source->load(0, t, rng, out.data()));
}

TEST(ImageFolder, EmptyClassFolderIsNamed) {
  TempDir dir;
  make_folder(dir.path());
  std::filesystem::create_directories(dir.fs_path() / "empty_class");
  write_file((dir.fs_path() / "empty_class" / "x.txt").string(), "no images here");
  expect_data_error([&] { open_image_folder(dir.path()); },
                    {(dir.fs_path() / "empty_class").string(), "without images"});
}

#else

TEST(ImageFolder, WithoutOpenCvOpeningSaysSo) {
  TempDir dir;
  write_file((dir.fs_path() / "cat" / "a.jpg").string(), "x");
  expect_data_error([&] { open_image_folder(dir.path()); }, {dir.path(), "needs OpenCV"});
}

#endif  // DL_HAVE_OPENCV

TEST(ImageFolder, MissingRoot) {
  TempDir dir;
  expect_data_error([&] { open_image_folder(dir.file("nope")); },
                    {dir.file("nope"), "no such directory"});
}

TEST(ImageFolder, RootWithoutClassFolders) {
  TempDir dir;
  write_file(dir.file("a.jpg"), "x");
  expect_data_error([&] { open_image_folder(dir.path()); }, {dir.path(), "no class folders"});
}

}  // namespace
}  // namespace dl::test
