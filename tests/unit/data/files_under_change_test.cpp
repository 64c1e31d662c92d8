// Files that change after the listing, while an epoch runs: deleted, truncated to nothing or to
// half, swapped for a FIFO (which must not block a worker) or a folder. Each is a skipped sample
// counted under its reason, never a crash or a hang; a file put back loads again.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "data/image_folder.h"
#include "data/loader.h"
#include "data/skip_reason.h"
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

#if DL_HAVE_OPENCV

std::int64_t count(const SkipCounts& counts, SkipReason reason) {
  return counts[static_cast<std::size_t>(reason)];
}

TEST(FilesUnderChange, SkippedByReasonNeverFatal) {
  TempDir dir;
  cv::Mat noise(48, 48, CV_8UC3);
  cv::randu(noise, cv::Scalar::all(0), cv::Scalar::all(255));
  std::vector<std::uint8_t> png;
  ASSERT_TRUE(cv::imencode(".png", noise, png));
  std::vector<std::uint8_t> jpeg;
  ASSERT_TRUE(cv::imencode(".jpg", noise, jpeg));
  for (int i = 0; i < 12; ++i) {
    write_bytes(dir.file("c/" + std::to_string(10 + i) + (i % 2 ? ".png" : ".jpg")),
                i % 2 ? png : jpeg);
  }
  const auto source = open_image_folder(dir.path());
  ASSERT_EQ(source->size(), 12);

  // After the listing: 10.jpg deleted, 11.png truncated to nothing, 13.png cut in half (cut
  // short), 14.jpg a FIFO, 16.jpg a folder.
  fs::remove(dir.file("c/10.jpg"));
  fs::resize_file(dir.file("c/11.png"), 0);
  fs::resize_file(dir.file("c/13.png"), png.size() / 2);
  fs::remove(dir.file("c/14.jpg"));
  ASSERT_EQ(mkfifo(dir.file("c/14.jpg").c_str(), 0600), 0);
  fs::remove(dir.file("c/16.jpg"));
  fs::create_directory(dir.file("c/16.jpg"));

  LoaderConfig config;
  config.batch_size = 5;
  config.workers = 2;
  config.transform.out = ImageShape{3, 16, 16};
  config.transform.train = true;
  Loader loader(*source, config);
  loader.start_epoch(0);
  std::int64_t good = 0;
  while (auto batch = loader.next()) good += batch->n();
  EXPECT_EQ(good, 7);
  EXPECT_EQ(loader.skipped_in_epoch(), 5);
  const SkipCounts& counts = loader.skip_counts_in_epoch();
  EXPECT_EQ(count(counts, SkipReason::kUnreadable), 3);  // deleted, FIFO, folder
  EXPECT_EQ(count(counts, SkipReason::kEmpty), 1);
  EXPECT_EQ(count(counts, SkipReason::kCutShort), 1);

  const std::vector<SkippedFile> failures = source->failures();
  ASSERT_EQ(failures.size(), 5u);
  EXPECT_EQ(failures[0].path, dir.file("c/10.jpg"));
  EXPECT_EQ(failures[0].detail, "No such file or directory");
  EXPECT_EQ(failures[2].path, dir.file("c/13.png"));
  EXPECT_EQ(failures[2].reason, SkipReason::kCutShort);
  EXPECT_EQ(failures[3].detail, "not a regular file");  // the FIFO, not waited on
  EXPECT_EQ(failures[4].detail, "not a regular file");  // the folder

  // Put back: the next epoch loads it, and it is no longer reported.
  write_bytes(dir.file("c/10.jpg"), jpeg);
  loader.start_epoch(1);
  good = 0;
  while (auto batch = loader.next()) good += batch->n();
  EXPECT_EQ(good, 8);
  EXPECT_EQ(source->failures().size(), 4u);
}

#endif  // DL_HAVE_OPENCV

}  // namespace
}  // namespace dl::test
