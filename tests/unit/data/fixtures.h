// Helpers shared by the data-layer tests: writers for the binary formats (IDX raw and gzip, CIFAR
// records) and a check for DataError messages. Directories and files: support/.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "support/files.h"

namespace dl::test {

// gzip-compressed with zlib's gzwrite, as the MNIST mirrors ship the files.
void write_gz(const std::string& path, const Bytes& bytes);

// An IDX images file: magic 0x00000803, count, rows, cols, then pixel(i, k) for each byte k of
// image i. The defaults give every image distinct bytes.
Bytes idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                 std::uint32_t magic = 0x00000803);
// The pixel idx_images writes at byte k of image i.
std::uint8_t idx_pixel(std::uint32_t image, std::uint32_t k);
Bytes idx_labels(const std::vector<std::uint8_t>& labels, std::uint32_t magic = 0x00000801);

// CIFAR records: label byte + 3072 image bytes (byte k of record i is cifar_pixel(i, k)).
Bytes cifar_records(const std::vector<std::uint8_t>& labels, std::uint32_t first_index = 0);
std::uint8_t cifar_pixel(std::uint32_t record, std::uint32_t k);

// Runs `f`, expecting a DataError whose message contains every one of `parts`; returns the message.
std::string expect_data_error(const std::function<void()>& f,
                              const std::vector<std::string>& parts);

}  // namespace dl::test
