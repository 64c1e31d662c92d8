// The data set part the Python module drives: an IDX directory's two parts, the order handed in
// each epoch (and refused when it does not fit), a part that is not there, and the statistics.
#include "loader_module/dataset_loader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "data/data_error.h"
#include "support/temp_dir.h"
#include "unit/data/fixtures.h"

namespace dl::test {
namespace {

using dl::loader_module::DatasetLoader;
using dl::loader_module::DatasetLoaderOptions;

// An IDX directory: 10 training images of 4 x 4 labelled i % 3, 4 test images.
void write_idx_dir(const std::string& dir) {
  write_bytes(dir + "/train-images-idx3-ubyte", idx_images(10, 4, 4));
  write_bytes(dir + "/train-labels-idx1-ubyte", idx_labels({0, 1, 2, 0, 1, 2, 0, 1, 2, 0}));
  write_bytes(dir + "/t10k-images-idx3-ubyte", idx_images(4, 4, 4));
  write_bytes(dir + "/t10k-labels-idx1-ubyte", idx_labels({2, 2, 1, 0}));
}

DatasetLoaderOptions options(const std::string& location, const std::string& split = "train") {
  DatasetLoaderOptions o;
  o.location = location;
  o.split = split;
  o.batch_size = 3;
  o.workers = 2;
  return o;
}

// The labels and first pixels of an epoch, in order.
std::vector<std::int64_t> epoch_labels(DatasetLoader& l, int epoch, std::vector<std::int64_t> order,
                                       std::vector<int>* first_pixels) {
  l.start_epoch(epoch, std::move(order));
  std::vector<std::int64_t> labels;
  while (auto batch = l.next()) {
    for (std::int64_t i = 0; i < batch->n(); ++i) {
      labels.push_back(batch->labels()[i]);
      first_pixels->push_back(batch->images()[static_cast<std::size_t>(i) * 16]);
    }
  }
  return labels;
}

TEST(DatasetLoader, GoesThroughTheOrderItIsGivenEachEpoch) {
  TempDir dir;
  write_idx_dir(dir.path());
  DatasetLoader l(options(dir.path()));
  EXPECT_EQ(l.kind(), "idx");
  EXPECT_EQ(l.size(), 10);
  EXPECT_EQ(l.transform().out.channels, 1);
  EXPECT_EQ(l.transform().out.height, 4);
  EXPECT_FALSE(l.transform().train);  // in-memory sets are used as they are
  l.prepare({9, 0, 4, 4});
  EXPECT_EQ(l.batches_per_epoch(), 2);
  std::vector<int> pixels;
  EXPECT_EQ(epoch_labels(l, 0, {9, 0, 4, 4}, &pixels), (std::vector<std::int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(pixels,
            (std::vector<int>{idx_pixel(9, 0), idx_pixel(0, 0), idx_pixel(4, 0), idx_pixel(4, 0)}));
  pixels.clear();
  EXPECT_EQ(epoch_labels(l, 1, {2, 5, 8, 1}, &pixels), (std::vector<std::int64_t>{2, 2, 2, 1}));
}

TEST(DatasetLoader, FloatBatchesAreNormalisedByTheWorkers) {
  TempDir dir;
  write_idx_dir(dir.path());
  DatasetLoader l(options(dir.path()));
  l.prepare({3, 7}, {true, {0.5f, 0, 0}, {0.25f, 1, 1}, false});
  l.start_epoch(0, {3, 7});
  auto batch = l.next();
  ASSERT_TRUE(batch && batch->extra() != nullptr);
  const auto* floats = static_cast<const float*>(batch->extra());
  for (std::size_t k = 0; k < 2 * 16; ++k) {
    EXPECT_NEAR(floats[k], (batch->images()[k] / 255.0 - 0.5) / 0.25, 1e-5) << k;
  }
  DatasetLoader plain(options(dir.path()));
  plain.prepare({3, 7});
  plain.start_epoch(0, {3, 7});
  EXPECT_EQ(plain.next()->extra(), nullptr);
}

TEST(DatasetLoader, AnOrderThatDoesNotFitIsRefusedInOneLine) {
  TempDir dir;
  write_idx_dir(dir.path());
  DatasetLoader l(options(dir.path()));
  EXPECT_THROW(l.start_epoch(0, {1}), std::logic_error);  // before prepare()
  try {
    l.prepare({0, 10});
    FAIL() << "an index past the end was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "index 10 is outside the data set's 10 samples");
  }
  l.prepare({0, 1, 2});
  try {
    l.start_epoch(1, {0, 1});
    FAIL() << "a shorter epoch was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "epoch 1 has 2 indices; every epoch must have 3, as the first");
  }
}

TEST(DatasetLoader, TheValidationPartAndOneThatIsNotThere) {
  TempDir dir;
  write_idx_dir(dir.path() + "/idx");
  DatasetLoader val(options(dir.path() + "/idx", "val"));
  EXPECT_EQ(val.size(), 4);
  EXPECT_THROW(DatasetLoader(options(dir.path() + "/idx", "test")), std::invalid_argument);

  write_file(dir.path() + "/manifest.csv", "path,label\n");
  try {
    DatasetLoader(options(dir.path() + "/manifest.csv", "val"));
    FAIL() << "a manifest has no validation part";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("split 'val': this csv has no validation part"),
              std::string::npos)
        << e.what();
  } catch (const dl::data::DataError&) {
    // A build without OpenCV refuses the manifest itself.
  }
  try {
    DatasetLoader(options(dir.path() + "/nothing"));
    FAIL() << "a missing location opened";
  } catch (const dl::data::MissingData& e) {
    EXPECT_EQ(std::string(e.what()), "data " + dir.path() +
                                         "/nothing: no such file or directory; expected an IDX "
                                         "or CIFAR-10 directory, an ImageFolder tree, a CSV "
                                         "manifest or WebDataset shards");
  }
}

TEST(DatasetLoader, BadOptionsAreRefused) {
  TempDir dir;
  write_idx_dir(dir.path());
  auto o = options(dir.path());
  o.batch_size = 0;
  EXPECT_THROW(DatasetLoader{o}, std::invalid_argument);
  o = options(dir.path());
  o.image_size = -1;
  EXPECT_THROW(DatasetLoader{o}, std::invalid_argument);
}

TEST(DatasetLoader, InMemorySetsGetMeasuredStatistics) {
  TempDir dir;
  write_idx_dir(dir.path());
  DatasetLoader l(options(dir.path()));
  const auto stats = l.stats();
  double sum = 0, sq = 0;
  for (std::uint32_t i = 0; i < 10; ++i) {
    for (std::uint32_t k = 0; k < 16; ++k) {
      const double v = idx_pixel(i, k) / 255.0;
      sum += v;
      sq += v * v;
    }
  }
  const double mean = sum / 160;
  EXPECT_NEAR(stats.mean[0], mean, 1e-5);
  EXPECT_NEAR(stats.std[0], std::sqrt(sq / 160 - mean * mean), 1e-5);
}

}  // namespace
}  // namespace dl::test
