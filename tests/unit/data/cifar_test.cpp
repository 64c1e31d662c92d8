// CIFAR-10 binary reader: the train and test layouts, truncated files and bad labels.
#include "data/cifar.h"

#include <gtest/gtest.h>

#include <random>

#include "data/data_error.h"
#include "support/temp_dir.h"
#include "unit/data/fixtures.h"

namespace dl::test {
namespace {

using namespace dl::data;

void write_train_set(const std::filesystem::path& dir) {
  std::uint32_t index = 0;
  for (int i = 1; i <= 5; ++i) {
    const std::vector<std::uint8_t> labels{static_cast<std::uint8_t>(i), 9};
    write_bytes((dir / ("data_batch_" + std::to_string(i) + ".bin")).string(),
                cifar_records(labels, index));
    index += 2;
  }
}

TEST(Cifar10, ReadsTrainAndTestSets) {
  TempDir dir;
  write_train_set(dir.path());
  write_bytes(dir.file("test_batch.bin"), cifar_records({3, 4, 5}, 100));
  const auto train = open_cifar10(dir.path(), true);
  EXPECT_EQ(train->size(), 10);
  EXPECT_EQ(train->num_classes(), 10);
  EXPECT_EQ(train->native_shape().channels, 3);
  EXPECT_EQ(train->native_shape().height, 32);
  EXPECT_EQ(train->native_shape().width, 32);
  EXPECT_EQ(train->label(0), 1);
  EXPECT_EQ(train->label(9), 9);

  const auto test_set = open_cifar10(dir.path(), false);
  ASSERT_EQ(test_set->size(), 3);
  EXPECT_EQ(test_set->label(2), 5);
  Transform t;
  t.out = test_set->native_shape();
  std::vector<std::uint8_t> sample(t.out.bytes());
  std::mt19937 rng(0);
  ASSERT_TRUE(test_set->load(1, t, rng, sample.data()));
  // CHW as stored: byte 1024 is the first pixel of the green plane.
  EXPECT_EQ(sample[0], cifar_pixel(101, 0));
  EXPECT_EQ(sample[1024], cifar_pixel(101, 1024));
  EXPECT_EQ(sample[3071], cifar_pixel(101, 3071));
}

TEST(Cifar10, AcceptsTheArchiveFolderItsParent) {
  TempDir dir;
  write_train_set(dir.fs_path() / "cifar-10-batches-bin");
  EXPECT_EQ(open_cifar10(dir.path(), true)->size(), 10);
}

TEST(Cifar10, TruncatedFileIsNamed) {
  TempDir dir;
  write_train_set(dir.path());
  auto records = cifar_records({1, 2});
  records.resize(records.size() - 100);
  write_bytes(dir.file("data_batch_3.bin"), records);
  expect_data_error([&] { open_cifar10(dir.path(), true); },
                    {"data_batch_3.bin", "truncated CIFAR file"});
}

TEST(Cifar10, LabelAboveNineIsAnError) {
  TempDir dir;
  write_bytes(dir.file("test_batch.bin"), cifar_records({3, 10}));
  expect_data_error([&] { open_cifar10(dir.path(), false); },
                    {"test_batch.bin", "label 10", "0..9"});
}

TEST(Cifar10, MissingFile) {
  TempDir dir;
  expect_data_error([&] { open_cifar10(dir.path(), false); }, {"test_batch.bin", "no such file"});
}

}  // namespace
}  // namespace dl::test
