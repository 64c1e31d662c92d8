// Batch memory layout (see batch.h).
#include "data/batch.h"

#include <utility>

namespace dl::data {
namespace {

std::size_t labels_offset(ImageShape shape, std::int64_t capacity) {
  const std::size_t images = static_cast<std::size_t>(capacity) * shape.bytes();
  return (images + 63) / 64 * 64;  // labels start on their own cache line, aligned for int64
}

}  // namespace

std::size_t Batch::block_bytes(ImageShape shape, std::int64_t capacity) {
  return labels_offset(shape, capacity) + static_cast<std::size_t>(capacity) * sizeof(std::int64_t);
}

Batch::Batch(BufferLease lease, ImageShape shape, std::int64_t capacity)
    : lease_(std::move(lease)),
      shape_(shape),
      capacity_(capacity),
      labels_offset_(labels_offset(shape, capacity)) {}

}  // namespace dl::data
