// Whole-file reads (see file_bytes.h).
#include "data/file_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "data/data_error.h"

namespace dl::data {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// zlib's messages start with the path ("x.gz: unexpected end of file"); ours already does.
std::string gz_message(gzFile_s* file, const std::string& path, int* code) {
  std::string message = gzerror(file, code);
  if (message.rfind(path + ": ", 0) == 0) message.erase(0, path.size() + 2);
  return message;
}

struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

std::vector<std::uint8_t> read_data_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw DataError(path + ": no such file");
  }
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) {
    throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
  }
  gzbuffer(file.get(), 1 << 20);  // fewer, larger reads: these files are tens of megabytes
  std::vector<std::uint8_t> bytes;
  // Start from the on-disk size: exact for raw files, and a fair first guess for gzip.
  const auto disk_size = std::filesystem::file_size(path, ec);
  std::size_t capacity = ec ? std::size_t{1} << 20 : static_cast<std::size_t>(disk_size) + 1;
  bytes.resize(capacity);
  std::size_t filled = 0;
  for (;;) {
    if (filled == bytes.size()) bytes.resize(bytes.size() * 2);
    const std::size_t want = std::min<std::size_t>(bytes.size() - filled, 1u << 30);
    const int got = gzread(file.get(), bytes.data() + filled, static_cast<unsigned>(want));
    if (got < 0) {
      int code = 0;
      throw DataError(path + ": damaged gzip data (" + gz_message(file.get(), path, &code) + ")");
    }
    if (got == 0) break;
    filled += static_cast<std::size_t>(got);
  }
  int code = 0;
  const std::string message = gz_message(file.get(), path, &code);
  if (code != Z_OK) {
    // A gzip stream cut short reads as end-of-file with Z_BUF_ERROR set.
    throw DataError(path + ": damaged gzip data (" + message + "): truncated download?");
  }
  bytes.resize(filled);
  return bytes;
}

bool read_file_into(const std::string& path, std::vector<std::uint8_t>& out, FileReadError* error,
                    std::uint64_t max_bytes) {
  auto fail = [&](const std::string& why, bool too_large = false) {
    if (error != nullptr) *error = FileReadError{too_large, why};
    return false;
  };
  // O_NONBLOCK: opening a FIFO that replaced an image after the listing must not wait for a
  // writer; fstat then turns it (or a device) away before any read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return fail(std::strerror(errno));
  const FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return fail(
        std::to_string(st.st_size) + " bytes, above the limit of " + std::to_string(max_bytes),
        true);
  }
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t filled = 0;
  while (filled < out.size()) {
    const ssize_t got = ::read(fd, out.data() + filled, out.size() - filled);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return fail(std::string("read error (") + std::strerror(errno) + ")");
    if (got == 0) break;  // truncated since fstat: what is there is all there is
    filled += static_cast<std::size_t>(got);
  }
  out.resize(filled);
  return true;
}

bool read_fully_at(int fd, std::uint64_t offset, void* out, std::size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    const ssize_t got = pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
  return true;
}

}  // namespace dl::data
