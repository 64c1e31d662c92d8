// Data sets for dl-train's end-to-end tests, written from scratch (IDX files, a subset of
// Fashion-MNIST, 24-bit BMP images), and readers of what a run leaves behind (metrics.csv,
// plan.json, log lines).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/process.h"

namespace dl::test {

// Why a test that needs Debian's Fashion-MNIST is skipped.
inline const char* const kNoFashion =
    "Fashion-MNIST is not installed in /usr/share/datasets/fashion-mnist "
    "(apt-get install dataset-fashion-mnist)";

// Debian's Fashion-MNIST (dataset-fashion-mnist); "" when its four files are not all there.
std::string fashion_mnist_dir();

// The first `bytes` bytes of the gzip file's uncompressed contents (all of them when it is
// shorter). Throws std::runtime_error naming the file when it cannot be read.
std::string gunzip_prefix(const std::string& path, std::size_t bytes);

// Raw (uncompressed) IDX files: an images file declaring `count` images of rows x cols, followed
// by `pixels` as given (which may be shorter than declared, to make a truncated file), and a
// labels file.
void write_idx_images(const std::string& path, std::uint32_t count, std::uint32_t rows,
                      std::uint32_t cols, const std::string& pixels);
void write_idx_labels(const std::string& path, const std::vector<std::uint8_t>& labels);

// An MNIST-layout directory of raw IDX files holding the first `train` training and `val` test
// samples of Fashion-MNIST (which must exist). Small sets keep the runs short; raw files are
// what dl-train prefers when both spellings exist.
void write_fashion_subset(const std::string& dir, std::uint32_t train, std::uint32_t val);

// An MNIST-layout directory of synthetic 28x28 images (deterministic bytes, labels i % 10): data
// that loads instantly, for tests where what is learnt does not matter.
void write_synthetic_idx(const std::string& dir, std::uint32_t train, std::uint32_t val);

// A 24-bit uncompressed BMP of width x height whose pixel (x, y) has colour rgb(x, y) = 0xRRGGBB.
void write_bmp(const std::string& path, int width, int height,
               const std::function<std::uint32_t(int x, int y)>& rgb);

// A CSV file with a header row; cells are not quoted (metrics.csv never quotes).
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // The cell of `row` in the named column as a number; throws when either does not exist.
  double number(std::size_t row, const std::string& column) const;
};
Csv read_csv(const std::string& path);

// The "value" of plan.json's plan entry `key` ("threads", "workers", ...), when it is a whole
// number.
std::optional<long> plan_value(const std::string& plan_json, const std::string& key);

// Lines of dl-train's log (pattern "[HH:MM:SS] level message") at `level`: "error", "warning", ...
std::vector<std::string> log_lines(const std::string& output, const std::string& level);

}  // namespace dl::test
