// A log file that holds each line before anyone else sees it: the run's train.log. spdlog flushes
// after every sink has written (flush_on), so a plain file sink first and the terminal second
// still leaves a window, after the terminal shows a line, in which a kill -9 loses it from the
// file. This sink flushes the line to the kernel inside its own write; placed first, the file
// is never behind what was printed.
#pragma once

#include <spdlog/sinks/sink.h>

#include <memory>
#include <string>

namespace dl::train {

// A file sink (appending, made if missing) that flushes each line as it writes it.
std::shared_ptr<spdlog::sinks::sink> line_flushed_file_sink(const std::string& path);

}  // namespace dl::train
