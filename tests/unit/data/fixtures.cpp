// Test fixtures for the data layer (see fixtures.h).
#include "unit/data/fixtures.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "data/data_error.h"

namespace dl::test {
namespace {

void put_u32(Bytes& out, std::uint32_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 24));
  out.push_back(static_cast<std::uint8_t>(v >> 16));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v));
}

}  // namespace

void write_gz(const std::string& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("cannot gzopen " + path);
  const int written = gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  if (gzclose(f) != Z_OK || written != static_cast<int>(bytes.size())) {
    throw std::runtime_error("cannot gzwrite " + path);
  }
}

std::uint8_t idx_pixel(std::uint32_t image, std::uint32_t k) {
  return static_cast<std::uint8_t>(image * 37u + k * 11u + 3u);
}

Bytes idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols, std::uint32_t magic) {
  Bytes out;
  put_u32(out, magic);
  put_u32(out, count);
  put_u32(out, rows);
  put_u32(out, cols);
  for (std::uint32_t i = 0; i < count; ++i) {
    for (std::uint32_t k = 0; k < rows * cols; ++k) out.push_back(idx_pixel(i, k));
  }
  return out;
}

Bytes idx_labels(const std::vector<std::uint8_t>& labels, std::uint32_t magic) {
  Bytes out;
  put_u32(out, magic);
  put_u32(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

std::uint8_t cifar_pixel(std::uint32_t record, std::uint32_t k) {
  return static_cast<std::uint8_t>(record * 13u + k * 7u + 1u);
}

Bytes cifar_records(const std::vector<std::uint8_t>& labels, std::uint32_t first_index) {
  Bytes out;
  for (std::uint32_t i = 0; i < labels.size(); ++i) {
    out.push_back(labels[i]);
    for (std::uint32_t k = 0; k < 3072; ++k) out.push_back(cifar_pixel(first_index + i, k));
  }
  return out;
}

std::string expect_data_error(const std::function<void()>& f,
                              const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const data::DataError& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "message \"" << message << "\" lacks \"" << part << "\"";
    }
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
    return message;
  }
  ADD_FAILURE() << "no DataError thrown";
  return {};
}

}  // namespace dl::test
