// Data sets for dl-train's end-to-end tests (see data_sets.h).
#include "support/data_sets.h"

#include "support/files.h"

#include <zlib.h>

#include <algorithm>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace dl::test {

namespace {

std::string big_endian(std::uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>(v >> (24 - 8 * i));
  return out;
}

std::string little_endian(std::uint32_t v, int bytes) {
  std::string out(static_cast<std::size_t>(bytes), '\0');
  for (int i = 0; i < bytes; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>(v >> (8 * i));
  return out;
}

}  // namespace

std::string fashion_mnist_dir() {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                           "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    if (!file_exists(dir + "/" + name)) return {};
  }
  return dir;
}

std::string gunzip_prefix(const std::string& path, std::size_t bytes) {
  struct Closer {
    void operator()(gzFile_s* f) const { gzclose(f); }
  };
  std::unique_ptr<gzFile_s, Closer> file(gzopen(path.c_str(), "rb"));
  if (!file) throw std::runtime_error(path + ": cannot open");
  std::string out(bytes, '\0');
  std::size_t filled = 0;
  while (filled < bytes) {
    const unsigned want = static_cast<unsigned>(std::min<std::size_t>(bytes - filled, 1u << 20));
    const int got = gzread(file.get(), out.data() + filled, want);
    if (got < 0) throw std::runtime_error(path + ": damaged gzip data");
    if (got == 0) break;
    filled += static_cast<std::size_t>(got);
  }
  out.resize(filled);
  return out;
}

void write_idx_images(const std::string& path, std::uint32_t count, std::uint32_t rows,
                      std::uint32_t cols, const std::string& pixels) {
  write_file(path, big_endian(0x00000803) + big_endian(count) + big_endian(rows) +
                       big_endian(cols) + pixels);
}

void write_idx_labels(const std::string& path, const std::vector<std::uint8_t>& labels) {
  write_file(path, big_endian(0x00000801) + big_endian(static_cast<std::uint32_t>(labels.size())) +
                       std::string(labels.begin(), labels.end()));
}

void write_fashion_subset(const std::string& dir, std::uint32_t train, std::uint32_t val) {
  const std::string src = fashion_mnist_dir();
  if (src.empty()) throw std::runtime_error("Fashion-MNIST is not installed");
  constexpr std::size_t kImage = 28 * 28;
  for (const auto& [prefix, count] : {std::pair<std::string, std::uint32_t>{"train", train},
                                      std::pair<std::string, std::uint32_t>{"t10k", val}}) {
    // Only the prefix is decompressed: the headers and the first `count` samples.
    const std::string images =
        gunzip_prefix(src + "/" + prefix + "-images-idx3-ubyte.gz", 16 + count * kImage);
    const std::string labels =
        gunzip_prefix(src + "/" + prefix + "-labels-idx1-ubyte.gz", 8 + std::size_t{count});
    if (images.size() != 16 + count * kImage || labels.size() != 8 + std::size_t{count}) {
      throw std::runtime_error(src + ": fewer than " + std::to_string(count) + " " + prefix +
                               " samples");
    }
    write_idx_images(dir + "/" + prefix + "-images-idx3-ubyte", count, 28, 28, images.substr(16));
    write_idx_labels(dir + "/" + prefix + "-labels-idx1-ubyte",
                     std::vector<std::uint8_t>(labels.begin() + 8, labels.end()));
  }
}

void write_synthetic_idx(const std::string& dir, std::uint32_t train, std::uint32_t val) {
  std::uint32_t state = 12345;  // a fixed LCG: the same bytes in every run
  for (const auto& [prefix, count] : {std::pair<std::string, std::uint32_t>{"train", train},
                                      std::pair<std::string, std::uint32_t>{"t10k", val}}) {
    std::string pixels(std::size_t{count} * 28 * 28, '\0');
    for (char& p : pixels) {
      state = state * 1664525u + 1013904223u;
      p = static_cast<char>(state >> 24);
    }
    std::vector<std::uint8_t> labels(count);
    for (std::uint32_t i = 0; i < count; ++i) labels[i] = static_cast<std::uint8_t>(i % 10);
    write_idx_images(dir + "/" + prefix + "-images-idx3-ubyte", count, 28, 28, pixels);
    write_idx_labels(dir + "/" + prefix + "-labels-idx1-ubyte", labels);
  }
}

void write_bmp(const std::string& path, int width, int height,
               const std::function<std::uint32_t(int x, int y)>& rgb) {
  // Rows are stored bottom-up, as BGR, each padded to a multiple of 4 bytes.
  const int row_bytes = (3 * width + 3) / 4 * 4;
  const auto image_bytes = static_cast<std::uint32_t>(row_bytes * height);
  constexpr std::uint32_t kHeaders = 14 + 40;
  std::string out = "BM" + little_endian(kHeaders + image_bytes, 4) + little_endian(0, 4) +
                    little_endian(kHeaders, 4);
  out += little_endian(40, 4) + little_endian(static_cast<std::uint32_t>(width), 4) +
         little_endian(static_cast<std::uint32_t>(height), 4) + little_endian(1, 2) +
         little_endian(24, 2) + little_endian(0, 4) /* BI_RGB */ + little_endian(image_bytes, 4) +
         little_endian(2835, 4) + little_endian(2835, 4) /* 72 dpi */ + little_endian(0, 4) +
         little_endian(0, 4);
  for (int y = height - 1; y >= 0; --y) {
    std::string row;
    for (int x = 0; x < width; ++x) {
      const std::uint32_t c = rgb(x, y);
      row += static_cast<char>(c & 0xff);
      row += static_cast<char>((c >> 8) & 0xff);
      row += static_cast<char>((c >> 16) & 0xff);
    }
    row.resize(static_cast<std::size_t>(row_bytes), '\0');
    out += row;
  }
  write_file(path, out);
}

double Csv::number(std::size_t row, const std::string& column) const {
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (header[c] == column) return std::stod(rows.at(row).at(c));
  }
  throw std::out_of_range("no column " + column);
}

Csv read_csv(const std::string& path) {
  Csv csv;
  std::istringstream in(read_file(path));
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::istringstream cells_in(line);
    std::string cell;
    while (std::getline(cells_in, cell, ',')) cells.push_back(cell);
    if (first) {
      csv.header = std::move(cells);
      first = false;
    } else {
      csv.rows.push_back(std::move(cells));
    }
  }
  return csv;
}

std::optional<long> plan_value(const std::string& plan_json, const std::string& key) {
  // plan.json writes each plan entry as "key": {"value": V, "reason": "..."}.
  const std::regex entry("\"" + key + "\"\\s*:\\s*\\{\\s*\"value\"\\s*:\\s*(-?[0-9]+)");
  std::smatch m;
  if (!std::regex_search(plan_json, m, entry)) return std::nullopt;
  return std::stol(m[1].str());
}

std::vector<std::string> log_lines(const std::string& output, const std::string& level) {
  std::vector<std::string> found;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t close = line.find("] ");
    if (!line.empty() && line[0] == '[' && close != std::string::npos &&
        line.compare(close + 2, level.size() + 1, level + " ") == 0) {
      found.push_back(line);
    }
  }
  return found;
}

}  // namespace dl::test
