// Writing a whole buffer to a descriptor: the loop every writer of files and pipes needs
// (short writes, EINTR), in one place.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dl {

// Writes all `size` bytes of `data` to `fd`, going on after short writes and EINTR. False with
// errno set where a write fails (a write that accepts nothing counts as EIO).
bool write_fully(int fd, const void* data, std::size_t size);

// The same at `offset` with pwrite (the descriptor's own offset untouched).
bool pwrite_fully(int fd, const void* data, std::size_t size, std::uint64_t offset);

}  // namespace dl
