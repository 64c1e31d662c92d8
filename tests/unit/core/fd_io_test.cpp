// Whole writes (core/fd_io.h): everything reaches the file or the pipe, at the offset asked,
// and a failure says so through errno.
#include "core/fd_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

#include "support/temp_dir.h"

namespace dl::test {
namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

TEST(FdIo, APipeGetsMoreThanItsBufferInShortWrites) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // Four times a pipe's default 64 KiB: the writes come back short while the reader drains.
  const std::string data(256 * 1024, 'x');
  std::string got;
  std::thread reader([&] { got = read_all(fds[0]); });
  EXPECT_TRUE(write_fully(fds[1], data.data(), data.size()));
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  EXPECT_EQ(got, data);
}

TEST(FdIo, PwriteLandsAtTheOffsetAndLeavesTheFileOffset) {
  TempDir dir;
  const std::string path = dir.file("f");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_fully(fd, "0123456789", 10));
  ASSERT_TRUE(pwrite_fully(fd, "ab", 2, 3));
  EXPECT_EQ(::lseek(fd, 0, SEEK_CUR), 10);
  ASSERT_EQ(::lseek(fd, 0, SEEK_SET), 0);
  EXPECT_EQ(read_all(fd), "012ab56789");
  ::close(fd);
}

TEST(FdIo, AFailedWriteReturnsFalseWithErrno) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  errno = 0;
  EXPECT_FALSE(write_fully(fds[0], "x", 1));  // the read end
  EXPECT_EQ(errno, EBADF);
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace dl::test
