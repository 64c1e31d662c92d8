// train.log's sink: a line is in the file (flushed to the kernel, where a kill -9 cannot take it)
// before the next sink, the terminal, gets it.
#include "train/run/line_flushed_file_sink.h"

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Stands in for the terminal: at each line it looks at what another reader of the file (a
// process surviving this one) would find there.
class FileWatcher final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit FileWatcher(std::string path) : path_(std::move(path)) {}
  std::vector<std::string> seen;

 protected:
  void sink_it_(const spdlog::details::log_msg&) override { seen.push_back(read_all(path_)); }
  void flush_() override {}

 private:
  std::string path_;
};

TEST(LineFlushedFileSink, EachLineIsInTheFileBeforeTheTerminalGetsIt) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("dl_sink_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "train.log").string();
  auto watcher = std::make_shared<FileWatcher>(path);
  spdlog::logger log("t", {dl::train::line_flushed_file_sink(path), watcher});
  log.set_pattern("%v");
  log.info("epoch 1 step 3 loss 0.51");
  log.warn("stop requested");

  ASSERT_EQ(watcher->seen.size(), 2u);
  EXPECT_EQ(watcher->seen[0], "epoch 1 step 3 loss 0.51\n");
  EXPECT_EQ(watcher->seen[1], "epoch 1 step 3 loss 0.51\nstop requested\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
