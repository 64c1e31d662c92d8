// Against the real thing: Debian's dataset-fashion-mnist, when installed (skipped otherwise).
#include <gtest/gtest.h>

#include <filesystem>

#include "data/idx.h"
#include "data/loader.h"

namespace dl::test {
namespace {

using namespace dl::data;

const char* const kDir = "/usr/share/datasets/fashion-mnist";

TEST(FashionMnist, DebianPackageReadsAndLoads) {
  if (!std::filesystem::exists(std::string(kDir) + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  const auto train = open_mnist_dir(kDir, true);
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(train->num_classes(), 10);
  EXPECT_EQ(train->native_shape().channels, 1);
  EXPECT_EQ(train->native_shape().height, 28);
  EXPECT_EQ(train->native_shape().width, 28);
  EXPECT_EQ(open_mnist_dir(kDir, false)->size(), 10000);

  LoaderConfig c;
  c.batch_size = 64;
  c.workers = 2;
  c.shuffle = true;
  c.transform.out = train->native_shape();
  Loader loader(*train, c);
  loader.start_epoch(0);
  std::int64_t samples = 0;
  std::vector<std::int64_t> per_class(10, 0);
  while (auto batch = loader.next()) {
    samples += batch->n();
    for (std::int64_t i = 0; i < batch->n(); ++i)
      ++per_class[static_cast<std::size_t>(batch->labels()[i])];
  }
  EXPECT_EQ(samples, 60000);
  for (std::int64_t count : per_class) EXPECT_EQ(count, 6000);  // Fashion-MNIST is balanced
  EXPECT_EQ(loader.skipped_in_epoch(), 0);
}

}  // namespace
}  // namespace dl::test
