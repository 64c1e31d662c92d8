// The checkpoint writer's thread (checkpoint_writer.h).
#include "train/resume/checkpoint_writer.h"

#include <chrono>
#include <utility>

namespace dl::train {

CheckpointWriter::~CheckpointWriter() {
  if (thread_.joinable()) thread_.join();
}

void CheckpointWriter::wait() {
  const auto start = std::chrono::steady_clock::now();
  if (thread_.joinable()) thread_.join();
  last_wait_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

void CheckpointWriter::start(std::function<void()> write) {
  wait();
  thread_ = std::thread([this, write = std::move(write)] {
    try {
      write();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
    }
  });
}

}  // namespace dl::train
