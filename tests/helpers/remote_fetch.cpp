// Reads one http(s):// or s3:// URL through the real remote store (dl::data::fetch_object: the
// retries, and s3:// addressed and signed from the AWS variables as dl-train does it) and writes
// the object's bytes to stdout, so that a shell can compare them (cmp, sha256sum) with the file
// that was uploaded. No LibTorch; C++17, for old compilers too (a Debian 11 chroot's g++-9).
//
//   remote_fetch URL > object
//
// Exit codes (dl-train's for the same failures): 0 read; 64 usage; 65 a refused or failed read
// (403, bad credentials, a bad URL, the tries run out); 66 no such object (404); 74 stdout could
// not be written. Each failure is one line on stderr; retries are warning lines there too.
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/fd_io.h"
#include "data/data_error.h"
#include "data/remote_store.h"

namespace {

// The object's bytes from its memory file to stdout.
bool copy_out(const dl::data::RemoteObject& object) {
  std::vector<char> buffer(std::size_t{1} << 20);
  std::uint64_t done = 0;
  while (done < object.size) {
    const ssize_t r = pread(object.fd, buffer.data(), buffer.size(), static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    if (!dl::write_fully(STDOUT_FILENO, buffer.data(), static_cast<std::size_t>(r))) return false;
    done += static_cast<std::uint64_t>(r);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || !dl::data::is_remote(argv[1])) {
    std::fprintf(stderr,
                 "remote_fetch: expected one http://, https:// or s3:// URL (remote_fetch URL > "
                 "file)\n");
    return 64;
  }
  const std::string url = argv[1];
  try {
    dl::data::RemoteOptions options = dl::data::remote_options_from_environment();
    options.warn = [](const std::string& line) {
      std::fprintf(stderr, "remote_fetch: %s\n", line.c_str());
    };
    const dl::data::RemoteObject object = dl::data::fetch_object(url, options);
    const bool copied = copy_out(object);
    const int copy_errno = errno;
    close(object.fd);
    if (!copied) {
      std::fprintf(stderr, "remote_fetch: %s: cannot write the object to stdout: %s\n", url.c_str(),
                   std::strerror(copy_errno));
      return 74;
    }
    return 0;
  } catch (const dl::data::MissingData& e) {
    std::fprintf(stderr, "remote_fetch: %s\n", e.what());
    return 66;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "remote_fetch: %s\n", e.what());
    return 65;
  }
}
