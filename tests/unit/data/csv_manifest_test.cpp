// CSV manifests: header, relative and quoted paths, CRLF, label errors with file:line.
#include "data/csv_manifest.h"

#include <gtest/gtest.h>

#include <random>

#include "data/data_error.h"
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

TEST(CsvManifest, ReadsPathsRelativeToTheCsv) {
  TempDir dir;
  std::filesystem::create_directories(dir.fs_path() / "img");
  ASSERT_TRUE(cv::imwrite(dir.file("img/one.png"), cv::Mat(10, 10, CV_8UC3, cv::Scalar(1, 2, 3))));
  ASSERT_TRUE(cv::imwrite(dir.file("img/a,b.png"), cv::Mat(12, 9, CV_8UC3, cv::Scalar(9, 9, 9))));
  write_file(dir.file("train.csv"),
             "path,label\r\n"
             "img/one.png,4\r\n"
             "\r\n"
             "\"img/a,b.png\", 1\r\n"
             "img/missing.png,0\r\n");
  const auto source = open_csv_manifest(dir.file("train.csv"));
  ASSERT_EQ(source->size(), 3);
  EXPECT_EQ(source->num_classes(), 5);
  EXPECT_EQ(source->label(0), 4);
  EXPECT_EQ(source->label(1), 1);
  EXPECT_EQ(source->label(2), 0);

  Transform t;
  t.out = ImageShape{3, 8, 8};
  std::vector<std::uint8_t> out(t.out.bytes());
  std::mt19937 rng(0);
  ASSERT_TRUE(source->load(0, t, rng, out.data()));
  EXPECT_EQ(out[0], 3);  // BGR (1, 2, 3) is RGB (3, 2, 1)
  EXPECT_EQ(out[64], 2);
  EXPECT_EQ(out[128], 1);
  EXPECT_TRUE(source->load(1, t, rng, out.data()));
  EXPECT_FALSE(source->load(2, t, rng, out.data()));  // listed but missing: skipped, not fatal
}

#endif  // DL_HAVE_OPENCV

TEST(CsvManifest, BadLabelNamesFileAndLine) {
  TempDir dir;
  write_file(dir.file("m.csv"), "path,label\na.png,1\nb.png,cat\n");
  expect_data_error([&] { open_csv_manifest(dir.file("m.csv")); },
                    {dir.file("m.csv") + ":3", "\"cat\"", "non-negative integer"});
  write_file(dir.file("neg.csv"), "a.png,-1\n");
  expect_data_error([&] { open_csv_manifest(dir.file("neg.csv")); },
                    {dir.file("neg.csv") + ":1", "\"-1\""});
  write_file(dir.file("nocomma.csv"), "a.png 1\n");
  expect_data_error([&] { open_csv_manifest(dir.file("nocomma.csv")); },
                    {dir.file("nocomma.csv") + ":1", "path,label"});
}

TEST(CsvManifest, MissingOrEmptyManifest) {
  TempDir dir;
  expect_data_error([&] { open_csv_manifest(dir.file("absent.csv")); }, {"absent.csv"});
  write_file(dir.file("empty.csv"), "path,label\n\n");
  expect_data_error([&] { open_csv_manifest(dir.file("empty.csv")); }, {"empty.csv", "no samples"});
}

}  // namespace
}  // namespace dl::test
