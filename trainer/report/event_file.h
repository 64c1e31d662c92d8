// A TensorBoard events file in a run directory: `tensorboard --logdir runs` finds
// runs/<name>/events.out.tfevents.<unix seconds>.<hostname> and plots its scalars. Each event is
// written with one write(2) as soon as it is added, so a crash or a kill loses nothing already
// added. Safe to use from several threads (the training loop and the resource monitor).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/dir_fd.h"
#include "report/event_record.h"

namespace dl::report {

class EventFile {
 public:
  // Creates a new events file in `dir` (O_EXCL|O_NOFOLLOW: never written through a link or into
  // another run's file; ".1", ".2", ... is appended when the name is taken) and writes the
  // version event. `wall_time`: seconds since the epoch, for the name and the first event.
  // Throws UserError 73 naming the file when it cannot be created or written.
  EventFile(const DirFd& dir, double wall_time);
  ~EventFile();
  EventFile(const EventFile&) = delete;
  EventFile& operator=(const EventFile&) = delete;

  // One event holding `scalars` at `step`; `wall_time` < 0 takes the current time. Throws
  // UserError 73 when the write fails.
  void add(const std::vector<Scalar>& scalars, std::int64_t step, double wall_time = -1);

  const std::string& path() const { return path_; }

  // Seconds since the epoch, with the fraction TensorBoard's wall times carry.
  static double now();

 private:
  void write_record(const std::string& event);
  std::mutex mutex_;
  int fd_ = -1;
  std::string path_;
};

// "events.out.tfevents.<seconds>.<host>": the host name with '/' replaced (it is one path part).
std::string events_file_name(double wall_time, const std::string& host);

}  // namespace dl::report
