// Writing one POSIX ustar file, member by member, the way a shard writer needs it: every header
// the same but for name and size (mode 0644, owner 0, time 0), so the same members give the same
// bytes; the file is written as <path>.partial and renamed into place by finish(), after an
// fsync, so a crash leaves no half shard under the shard's name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dl::data {

class TarWriter {
 public:
  // Throws std::runtime_error naming the file when it cannot be created.
  explicit TarWriter(std::string path);
  ~TarWriter();  // without finish(): the partial file is removed
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;

  // A regular member; `name` relative, at most 100 bytes, without a `..` component
  // (std::invalid_argument otherwise).
  // Throws std::runtime_error on a write error.
  void add(const std::string& name, const std::uint8_t* data, std::size_t size);
  // Bytes written so far (headers and padding included).
  std::uint64_t bytes() const { return bytes_; }
  // The end-of-archive blocks, fsync, rename to the final path, fsync of its folder. Where the
  // rename fails the partial file is removed before the error is thrown.
  void finish();
  const std::string& path() const { return path_; }

 private:
  void write(const void* data, std::size_t size);

  std::string path_;
  std::string partial_;
  int fd_ = -1;
  std::uint64_t bytes_ = 0;
};

}  // namespace dl::data
