// Events file: created relative to the run directory's descriptor, appended one record per write.
#include "report/event_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/errors.h"
#include "core/fd_io.h"

namespace dl::report {
namespace {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

std::string events_file_name(double wall_time, const std::string& host) {
  std::string safe = host;
  for (char& c : safe) {
    if (c == '/') c = '_';
  }
  return "events.out.tfevents." + std::to_string(static_cast<long long>(std::floor(wall_time))) +
         "." + safe;
}

double EventFile::now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

EventFile::EventFile(const DirFd& dir, double wall_time) {
  const std::string base = events_file_name(wall_time, host_name());
  // A resumed run started within the same second would want the same name: the next free one.
  for (int attempt = 0; fd_ < 0; ++attempt) {
    const std::string name = attempt == 0 ? base : base + "." + std::to_string(attempt);
    path_ = dir.path() + "/" + name;
    fd_ = openat(dir.fd(), name.c_str(),
                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0664);
    if (fd_ < 0 && (errno != EEXIST || attempt >= 100)) {
      throw UserError(exit_code::kCantWrite,
                      "cannot create " + path_ + ": " + std::strerror(errno));
    }
  }
  write_record(version_event(wall_time));
}

EventFile::~EventFile() {
  if (fd_ >= 0) close(fd_);
}

void EventFile::add(const std::vector<Scalar>& scalars, std::int64_t step, double wall_time) {
  if (scalars.empty()) return;
  const std::string event = scalars_event(wall_time < 0 ? now() : wall_time, step, scalars);
  std::lock_guard<std::mutex> lock(mutex_);
  write_record(event);
}

void EventFile::write_record(const std::string& event) {
  const std::string record = frame_record(event);
  if (!write_fully(fd_, record.data(), record.size())) {
    throw UserError(exit_code::kCantWrite, "cannot write " + path_ + ": " + std::strerror(errno));
  }
}

}  // namespace dl::report
