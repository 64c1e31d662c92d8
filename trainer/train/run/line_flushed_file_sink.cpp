// The line-flushed log file: spdlog's basic_file_sink (final, so held rather than derived from)
// with a flush after every line.
#include "train/run/line_flushed_file_sink.h"

#include <spdlog/sinks/basic_file_sink.h>

#include <utility>

namespace dl::train {
namespace {

class LineFlushedFileSink final : public spdlog::sinks::sink {
 public:
  explicit LineFlushedFileSink(const std::string& path)
      : file_(std::make_shared<spdlog::sinks::basic_file_sink_mt>(path)) {}

  void log(const spdlog::details::log_msg& msg) override {
    file_->log(msg);
    file_->flush();  // to the kernel: a kill -9 of this process no longer loses it
  }
  void flush() override { file_->flush(); }
  void set_pattern(const std::string& pattern) override { file_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    file_->set_formatter(std::move(formatter));
  }

 private:
  std::shared_ptr<spdlog::sinks::basic_file_sink_mt> file_;
};

}  // namespace

std::shared_ptr<spdlog::sinks::sink> line_flushed_file_sink(const std::string& path) {
  return std::make_shared<LineFlushedFileSink>(path);
}

}  // namespace dl::train
