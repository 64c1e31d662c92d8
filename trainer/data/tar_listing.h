// The members of a POSIX tar file (ustar, with GNU long names and pax path records), read from
// its headers alone: what a WebDataset shard is. The data is never extracted anywhere; a member
// is an offset and a size in the file, which a reader then preads. Everything in the file is
// untrusted: a name with a `..` component or an absolute one, a link, a device or a FIFO is listed
// as refused (never followed), a header whose checksum fails or that the file cuts short ends the
// listing there, and so does a member whose declared size runs past the end of the file (a tar
// bomb: a few bytes claiming gigabytes): nothing past that point is trusted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dl::data {

struct TarMember {
  std::string name;          // as stored (pax path or GNU long name where given)
  std::uint64_t offset = 0;  // of the data, from the start of the file
  std::uint64_t size = 0;
};

struct TarListing {
  std::vector<TarMember> members;  // regular files, in file order
  // One line for each thing refused or that ended the listing early ("member '../x.jpg' at byte
  // 1536: a name that leaves the archive (refused)"), in file order.
  std::vector<std::string> problems;
  bool complete = false;  // the end-of-archive blocks (or the end of the file) were reached cleanly
};

struct TarLimits {
  std::uint64_t max_member_bytes = std::uint64_t{1} << 31;  // larger members are refused
  std::size_t max_members = 10'000'000;                     // a listing stops past this many
  std::size_t max_name_bytes = 4096;                        // longer names are refused
};

// Whether a member name would land outside the archive's folder if extracted: empty, absolute, or
// with a `..` component ("img..jpg" does not). The reader refuses such members; the writer too.
bool tar_name_escapes(const std::string& name);

// Lists the tar file open as `fd` (`size` bytes long; read with pread, so the descriptor's offset
// is untouched). Does not throw for bad data: what it cannot trust goes into `problems`.
TarListing list_tar(int fd, std::uint64_t size, const TarLimits& limits = {});

}  // namespace dl::data
