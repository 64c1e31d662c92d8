// Reading a tar file's headers (see tar_listing.h). The layout is POSIX.1-1988 ustar
// (512-byte blocks: a header, then the data padded to a whole block), with the two extensions
// that writers use for long names: GNU's 'L' member (the next member's name as its data) and
// pax's 'x' member ("<length> path=<name>\n" records). Python's tarfile, GNU tar and
// webdataset's TarWriter write these.
#include "data/tar_listing.h"

#include <array>
#include <cstring>

#include "data/file_bytes.h"

namespace dl::data {
namespace {

constexpr std::uint64_t kBlock = 512;
constexpr std::size_t kMaxPaxBytes = std::size_t{1} << 20;

using Block = std::array<unsigned char, kBlock>;

std::string field(const Block& b, std::size_t at, std::size_t len) {
  std::size_t n = 0;
  while (n < len && b[at + n] != 0) ++n;
  return std::string(reinterpret_cast<const char*>(b.data() + at), n);
}

// An octal number (spaces and NULs around it), or GNU's base-256 form (the first byte's high bit
// set) for sizes of 8 GiB and more. False for anything else.
bool number(const Block& b, std::size_t at, std::size_t len, std::uint64_t* out) {
  if (b[at] & 0x80) {
    std::uint64_t v = b[at] & 0x7f;
    for (std::size_t i = 1; i < len; ++i) {
      if (v >> 56) return false;  // would overflow
      v = (v << 8) | b[at + i];
    }
    *out = v;
    return true;
  }
  std::size_t i = 0;
  while (i < len && b[at + i] == ' ') ++i;
  std::uint64_t v = 0;
  bool any = false;
  for (; i < len && b[at + i] >= '0' && b[at + i] <= '7'; ++i) {
    if (v >> 60) return false;
    v = v * 8 + static_cast<std::uint64_t>(b[at + i] - '0');
    any = true;
  }
  for (; i < len; ++i) {
    if (b[at + i] != ' ' && b[at + i] != 0) return false;
  }
  *out = v;
  return any;
}

bool all_zero(const Block& b) {
  for (unsigned char c : b) {
    if (c != 0) return false;
  }
  return true;
}

// The header's checksum: the sum of its bytes with the checksum field read as spaces (unsigned,
// as POSIX says; some old writers summed signed chars, which is accepted too).
bool checksum_ok(const Block& b) {
  std::uint64_t stored = 0;
  if (!number(b, 148, 8, &stored)) return false;
  std::uint64_t sum_unsigned = 0;
  std::int64_t sum_signed = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const unsigned char c = (i >= 148 && i < 156) ? ' ' : b[i];
    sum_unsigned += c;
    sum_signed += static_cast<signed char>(c);
  }
  return stored == sum_unsigned || static_cast<std::int64_t>(stored) == sum_signed;
}

// A name that would land outside the archive's folder if extracted: absolute, or with a `..`
// component. Such members are refused, as tar and Python's tarfile "data" filter refuse them.
}  // namespace

bool tar_name_escapes(const std::string& name) {
  if (name.empty() || name.front() == '/') return true;
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = name.find('/', start);
    const std::size_t stop = end == std::string::npos ? name.size() : end;
    if (name.compare(start, stop - start, "..") == 0 && stop - start == 2) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

namespace {

// The path record of a pax extended header's data, or "" when it has none.
std::string pax_path(const std::string& data) {
  std::size_t at = 0;
  std::string path;
  while (at < data.size()) {
    std::size_t space = data.find(' ', at);
    if (space == std::string::npos) break;
    std::uint64_t len = 0;
    for (std::size_t i = at; i < space; ++i) {
      if (data[i] < '0' || data[i] > '9' || len > data.size()) return path;
      len = len * 10 + static_cast<std::uint64_t>(data[i] - '0');
    }
    if (len == 0 || at + len > data.size()) break;
    const std::string record = data.substr(space + 1, at + len - space - 1);  // "key=value\n"
    if (record.compare(0, 5, "path=") == 0) {
      path = record.substr(
          5, record.size() > 5 && record.back() == '\n' ? record.size() - 6 : std::string::npos);
    }
    at += len;
  }
  return path;
}

// Why a regular member is refused, or "" when it is listed.
std::string refusal(const std::string& name, std::uint64_t size, const TarLimits& limits) {
  if (tar_name_escapes(name)) return "a name that leaves the archive (refused)";
  if (name.size() > limits.max_name_bytes) {
    return "a name of " + std::to_string(name.size()) + " bytes (refused)";
  }
  if (size > limits.max_member_bytes) {
    return std::to_string(size) + " bytes, more than " + std::to_string(limits.max_member_bytes) +
           " (refused)";
  }
  return "";
}

std::string at_byte(std::uint64_t offset) {
  return " at byte " + std::to_string(offset);
}

}  // namespace

TarListing list_tar(int fd, std::uint64_t size, const TarLimits& limits) {
  TarListing out;
  std::uint64_t pos = 0;
  std::string long_name;     // from a GNU 'L' or pax 'x' member, for the next one
  bool refuse_next = false;  // the next member's long name was refused, so is the member
  Block b{};
  while (true) {
    if (pos == size) {  // ended without the end-of-archive blocks: tar accepts that too
      out.complete = true;
      return out;
    }
    if (pos + kBlock > size || !read_fully_at(fd, pos, b.data(), kBlock)) {
      out.problems.push_back("a header cut short" + at_byte(pos) + " (truncated file)");
      return out;
    }
    if (all_zero(b)) {
      out.complete = true;
      return out;
    }
    if (!checksum_ok(b)) {
      out.problems.push_back("a header whose checksum does not match" + at_byte(pos) +
                             " (not a tar file, or corrupt)");
      return out;
    }
    std::uint64_t member_size = 0;
    if (!number(b, 124, 12, &member_size)) {
      out.problems.push_back("a header with an unreadable size" + at_byte(pos));
      return out;
    }
    const std::uint64_t data_at = pos + kBlock;
    if (member_size > size - data_at) {
      out.problems.push_back("a member declaring " + std::to_string(member_size) + " bytes" +
                             at_byte(pos) + " where the file has " +
                             std::to_string(size - data_at) +
                             " left (truncated, or a tar bomb): the rest is not read");
      return out;
    }
    const std::uint64_t padded = (member_size + kBlock - 1) / kBlock * kBlock;
    const char type = static_cast<char>(b[156]);
    std::string name = field(b, 0, 100);
    const std::string magic = field(b, 257, 6);
    if (magic.compare(0, 5, "ustar") == 0) {
      const std::string prefix = field(b, 345, 155);
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    if (!long_name.empty()) {
      name = long_name;
      long_name.clear();
    }
    const bool refused_name = refuse_next && type != 'L' && type != 'x';
    if (refused_name) refuse_next = false;
    if (refused_name) {
      // its name was refused above: the member is passed over
    } else if (type == 'L' || type == 'x') {  // the next member's name
      const std::size_t cap = type == 'L' ? limits.max_name_bytes : kMaxPaxBytes;
      if (member_size > cap) {
        out.problems.push_back(std::string(type == 'L' ? "a long name" : "a pax header") + " of " +
                               std::to_string(member_size) + " bytes" + at_byte(pos) +
                               " (refused, with the member it names)");
        refuse_next = true;
      } else {
        std::string data(static_cast<std::size_t>(member_size), '\0');
        if (!read_fully_at(fd, data_at, data.data(), data.size())) {
          out.problems.push_back("a header cut short" + at_byte(data_at) + " (truncated file)");
          return out;
        }
        if (type == 'L') {
          long_name = data.substr(0, data.find('\0'));
        } else {
          long_name = pax_path(data);
        }
      }
    } else if (type == '0' || type == '\0' || type == '7') {  // a regular file
      if (const std::string why = refusal(name, member_size, limits); !why.empty()) {
        out.problems.push_back("member '" + name.substr(0, 200) + "'" + at_byte(pos) + ": " + why);
      } else if (out.members.size() >= limits.max_members) {
        out.problems.push_back("more than " + std::to_string(limits.max_members) +
                               " members: the rest is not read");
        return out;
      } else {
        out.members.push_back(TarMember{name, data_at, member_size});
      }
    } else if (type == '1' || type == '2' || type == '3' || type == '4' || type == '6') {
      static const char* const kinds[] = {
          "a hard link", "a symbolic link", "a character device", "a block device", "", "a FIFO"};
      out.problems.push_back("member '" + name + "'" + at_byte(pos) + ": " + kinds[type - '1'] +
                             " (not followed)");
    }
    // Directories ('5'), pax globals ('g') and other kinds hold no sample: passed over.
    pos = data_at + padded;
    if (pos > size) pos = size;  // the last member's padding may be missing
  }
}

}  // namespace dl::data
