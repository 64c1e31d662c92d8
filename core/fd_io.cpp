// Writing a whole buffer to a descriptor (see fd_io.h).
#include "core/fd_io.h"

#include <unistd.h>

#include <cerrno>

namespace dl {
namespace {

// `write_some(pointer, count, done)` is one write or pwrite call.
template <typename WriteSome>
bool write_loop(const void* data, std::size_t size, WriteSome write_some) {
  const auto* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = write_some(p + done, size - done, done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

bool write_fully(int fd, const void* data, std::size_t size) {
  return write_loop(data, size,
                    [fd](const char* p, std::size_t n, std::size_t) { return ::write(fd, p, n); });
}

bool pwrite_fully(int fd, const void* data, std::size_t size, std::uint64_t offset) {
  return write_loop(data, size, [fd, offset](const char* p, std::size_t n, std::size_t done) {
    return ::pwrite(fd, p, n, static_cast<off_t>(offset + done));
  });
}

}  // namespace dl
