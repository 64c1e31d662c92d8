// Whole-file reads (see file_bytes.h).
#include "data/file_bytes.h"

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

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
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

bool read_file_into(const std::string& path, std::vector<std::uint8_t>& out) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) return false;
  if (std::fseek(file.get(), 0, SEEK_END) != 0) return false;
  const long size = std::ftell(file.get());
  if (size < 0 || std::fseek(file.get(), 0, SEEK_SET) != 0) return false;
  out.resize(static_cast<std::size_t>(size));
  return std::fread(out.data(), 1, out.size(), file.get()) == out.size();
}

}  // namespace dl::data
