// Writing a ustar file (see tar_writer.h).
#include "data/tar_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "core/fd_io.h"
#include "data/tar_listing.h"

namespace dl::data {
namespace {

constexpr std::size_t kBlock = 512;

std::runtime_error failure(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

TarWriter::TarWriter(std::string path) : path_(std::move(path)), partial_(path_ + ".partial") {
  fd_ = open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) throw failure("cannot create", partial_);
}

TarWriter::~TarWriter() {
  if (fd_ >= 0) {
    close(fd_);
    unlink(partial_.c_str());
  }
}

void TarWriter::write(const void* data, std::size_t size) {
  if (!write_fully(fd_, data, size)) throw failure("cannot write", partial_);
  bytes_ += size;
}

void TarWriter::add(const std::string& name, const std::uint8_t* data, std::size_t size) {
  if (name.size() > 100 || tar_name_escapes(name)) {
    throw std::invalid_argument("tar member name '" + name +
                                "': expected 1 to 100 bytes, relative, without a '..' component");
  }
  if (size >= (std::uint64_t{1} << 33)) {
    throw std::invalid_argument("tar member '" + name + "': 8 GiB or more");
  }
  char h[kBlock] = {};
  std::memcpy(h, name.data(), name.size());
  std::memcpy(h + 100, "0000644", 7);
  std::memcpy(h + 108, "0000000", 7);
  std::memcpy(h + 116, "0000000", 7);
  std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(size));
  std::memcpy(h + 136, "00000000000", 11);
  h[156] = '0';
  std::memcpy(h + 257, "ustar", 6);  // "ustar\0", then version "00"
  std::memcpy(h + 263, "00", 2);
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) sum += static_cast<unsigned char>(h[i]);
  std::snprintf(h + 148, 8, "%06o", sum);  // six digits, NUL, and the space left from above
  write(h, kBlock);
  write(data, size);
  const std::size_t pad = (kBlock - size % kBlock) % kBlock;
  static const char zeros[kBlock] = {};
  write(zeros, pad);
}

void TarWriter::finish() {
  static const char zeros[2 * kBlock] = {};
  write(zeros, sizeof zeros);
  if (fsync(fd_) != 0) throw failure("cannot sync", partial_);
  if (close(fd_) != 0) {
    fd_ = -1;
    throw failure("cannot close", partial_);
  }
  fd_ = -1;
  if (rename(partial_.c_str(), path_.c_str()) != 0) {
    const std::runtime_error error = failure("cannot rename", partial_);
    unlink(partial_.c_str());  // no shard, and no half of one left beside it
    throw error;
  }
  // Makes the rename itself durable (a crash could otherwise lose the new name). Best effort: the
  // shard is in place, and some file systems refuse fsync on a directory.
  const std::size_t slash = path_.rfind('/');
  const std::string folder = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : path_.substr(0, slash);
  const int dir = open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
}

}  // namespace dl::data
