// Writes checkpoints on a thread of their own, so that a checkpoint between epoch ends stalls
// training only for the copy of the state (the snapshot), not for pickling, compressing, writing
// and fsync-ing it. One write at a time: a write asked for while the last is still going waits
// for it, which bounds the memory to one extra copy of the state. Every write is atomic
// (model::save_checkpoint), so a kill -9 at any moment leaves the previous file or the new one.
#pragma once

#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace dl::train {

class CheckpointWriter {
 public:
  CheckpointWriter() = default;
  // Waits for a write in progress (its error, if any, is dropped: the run is ending anyway).
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Runs `write` on the writer's thread after the previous write has finished. `write` owns
  // everything it needs (the snapshot). Rethrows the previous write's exception first, if any.
  void start(std::function<void()> write);
  // Waits for the write in progress; rethrows its exception, if any.
  void wait();
  // Seconds the last wait() or start() spent waiting for a write in progress.
  double last_wait_seconds() const { return last_wait_seconds_; }

 private:
  std::thread thread_;
  std::exception_ptr error_;
  std::mutex mutex_;  // error_, between the writer's thread and the caller
  double last_wait_seconds_ = 0;
};

}  // namespace dl::train
