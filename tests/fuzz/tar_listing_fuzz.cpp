// Fuzzes the tar listing (list_tar), which reads the headers of every WebDataset shard, local or
// fetched from a server. The input is the shard file. list_tar never throws: what it cannot trust
// goes into `problems`. Every member it lists must lie inside the file, start on a 512-byte block,
// have a name within the limits that does not leave the archive; each member's bytes are read.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "data/tar_listing.h"
#include "fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = dl::fuzz::write_input("shard.tar", data, size);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) std::abort();
  dl::data::TarLimits limits;
  limits.max_members = 4096;  // the real limit is ten million: a fuzzer's file holds far fewer
  const dl::data::TarListing listing = dl::data::list_tar(fd, size, limits);
  if (listing.members.size() > limits.max_members) __builtin_trap();
  std::int64_t sum = static_cast<std::int64_t>(listing.problems.size());
  std::vector<char> bytes;
  for (const dl::data::TarMember& m : listing.members) {
    if (m.offset % 512 != 0 || m.offset > size || m.size > size - m.offset) __builtin_trap();
    if (m.size > limits.max_member_bytes || m.name.size() > limits.max_name_bytes) __builtin_trap();
    if (dl::data::tar_name_escapes(m.name)) __builtin_trap();
    bytes.resize(m.size);
    if (m.size > 0 && pread(fd, bytes.data(), m.size, static_cast<off_t>(m.offset)) !=
                          static_cast<ssize_t>(m.size)) {
      __builtin_trap();
    }
    for (char c : bytes) sum += c;
  }
  for (const std::string& p : listing.problems) sum += static_cast<std::int64_t>(p.size());
  close(fd);
  dl::fuzz::sink = sum;
  return 0;
}
