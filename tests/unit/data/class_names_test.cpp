// Class names of each data source: Fashion-MNIST's official names for an IDX directory that says
// fashion-mnist (digits for another), CIFAR-10's batches.meta.txt or its published names, an
// ImageFolder's folder names, a CSV manifest's numbered labels.
#include <gtest/gtest.h>

#include <filesystem>

#include "data/cifar.h"
#include "data/csv_manifest.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "support/temp_dir.h"
#include "unit/data/fixtures.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace dl::test {
namespace {

using namespace dl::data;
namespace fs = std::filesystem;

void write_mnist_dir(const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<std::uint8_t> labels;
  for (std::uint8_t i = 0; i < 10; ++i) labels.push_back(i);
  for (const char* prefix : {"train", "t10k"}) {
    write_bytes((dir / (std::string(prefix) + "-images-idx3-ubyte")).string(),
                idx_images(10, 4, 4));
    write_bytes((dir / (std::string(prefix) + "-labels-idx1-ubyte")).string(), idx_labels(labels));
  }
}

TEST(ClassNames, FashionMnistDirectoryHasTheOfficialNames) {
  TempDir dir;
  write_mnist_dir(dir.fs_path() / "Fashion-MNIST");
  const auto source = open_mnist_dir((dir.fs_path() / "Fashion-MNIST").string(), false);
  const std::vector<std::string> expected = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                             "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                             "Bag",         "Ankle boot"};
  EXPECT_EQ(source->class_names(), expected);
}

TEST(ClassNames, OtherIdxDirectoryHasDigits) {
  TempDir dir;
  write_mnist_dir(dir.fs_path() / "mnist");
  const auto source = open_mnist_dir((dir.fs_path() / "mnist").string(), true);
  EXPECT_EQ(source->class_names(),
            (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}));
}

TEST(ClassNames, IdxWithFewerClassesIsNumbered) {
  TempDir dir;
  const fs::path d = dir.fs_path() / "fashion-three";
  fs::create_directories(d);
  write_bytes((d / "train-images-idx3-ubyte").string(), idx_images(3, 4, 4));
  write_bytes((d / "train-labels-idx1-ubyte").string(), idx_labels({0, 1, 2}));
  const auto source = open_mnist_dir(d.string(), true);
  EXPECT_EQ(source->class_names(), (std::vector<std::string>{"0", "1", "2"}));
}

void write_cifar(const fs::path& dir) {
  for (int i = 1; i <= 5; ++i) {
    write_bytes((dir / ("data_batch_" + std::to_string(i) + ".bin")).string(),
                cifar_records({0, 9}));
  }
  write_bytes((dir / "test_batch.bin").string(), cifar_records({1}));
}

TEST(ClassNames, CifarReadsBatchesMeta) {
  TempDir dir;
  write_cifar(dir.fs_path());
  write_file(dir.file("batches.meta.txt"), "a0\na1\na2\na3\na4\na5\na6\na7\na8\nlast one\n\n");
  const auto names = open_cifar10(dir.path(), false)->class_names();
  ASSERT_EQ(names.size(), 10u);
  EXPECT_EQ(names[0], "a0");
  EXPECT_EQ(names[9], "last one");
}

TEST(ClassNames, CifarWithoutMetaHasThePublishedNames) {
  TempDir dir;
  write_cifar(dir.fs_path());
  const auto names = open_cifar10(dir.path(), true)->class_names();
  ASSERT_EQ(names.size(), 10u);
  EXPECT_EQ(names[0], "airplane");
  EXPECT_EQ(names[9], "truck");
}

#if DL_HAVE_OPENCV
TEST(ClassNames, ImageFolderHasItsFolderNamesAndManifestItsLabels) {
  TempDir dir;
  for (const char* cls : {"zebra", "ant", "mole"}) {
    fs::create_directories(dir.fs_path() / "tree" / cls);
    ASSERT_TRUE(cv::imwrite((dir.fs_path() / "tree" / cls / "x.png").string(),
                            cv::Mat(8, 8, CV_8UC3, cv::Scalar(1, 2, 3))));
  }
  EXPECT_EQ(open_image_folder(dir.file("tree"))->class_names(),
            (std::vector<std::string>{"ant", "mole", "zebra"}));
  write_file(dir.file("list.csv"), "path,label\ntree/ant/x.png,0\ntree/mole/x.png,2\n");
  EXPECT_EQ(open_csv_manifest(dir.file("list.csv"))->class_names(),
            (std::vector<std::string>{"0", "1", "2"}));
}
#endif

}  // namespace
}  // namespace dl::test
