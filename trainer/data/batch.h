// One batch as the loader hands it over: n samples as uint8 CHW images back to back, their int64
// labels, and how many samples of the batch's slice failed to load. The memory is a pooled block on
// loan; destroying (or moving from) the batch returns it, so keep a batch only as long as needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "data/buffer_pool.h"
#include "data/sample_source.h"

namespace dl::data {

class Batch {
 public:
  // Block layout: capacity images, then (64-byte aligned) capacity labels.
  static std::size_t block_bytes(ImageShape shape, std::int64_t capacity);

  Batch() = default;
  Batch(BufferLease lease, ImageShape shape, std::int64_t capacity);
  Batch(Batch&&) noexcept = default;
  Batch& operator=(Batch&&) noexcept = default;

  // Samples in the batch. Samples that failed to load are left out, not replaced, so n can be
  // below the batch size (even 0); n + skipped is the batch's share of the epoch.
  std::int64_t n() const { return n_; }
  std::int64_t skipped() const { return skipped_; }
  // skipped(), by reason.
  const SkipCounts& skip_counts() const { return skip_counts_; }
  // Position of the batch in its epoch: 0, 1, 2, ...
  std::int64_t index() const { return index_; }
  ImageShape shape() const { return shape_; }
  std::int64_t capacity() const { return capacity_; }

  // n * shape().bytes() bytes; sample i starts at i * shape().bytes().
  std::uint8_t* images() { return static_cast<std::uint8_t*>(lease_.get()); }
  const std::uint8_t* images() const { return static_cast<const std::uint8_t*>(lease_.get()); }
  std::size_t image_bytes() const { return static_cast<std::size_t>(n_) * shape_.bytes(); }
  std::int64_t* labels() { return reinterpret_cast<std::int64_t*>(images() + labels_offset_); }
  const std::int64_t* labels() const {
    return reinterpret_cast<const std::int64_t*>(images() + labels_offset_);
  }

  // A second block on loan with the batch, for a consumer's own form of it (the Python module's
  // normalised floats, made by the worker that assembled the batch: LoaderConfig::finish).
  void attach(BufferLease extra) { extra_ = std::move(extra); }
  void* extra() const { return extra_.get(); }

  // Set by whoever fills the batch (the loader).
  void set_counts(std::int64_t n, const SkipCounts& skipped, std::int64_t index) {
    n_ = n;
    skip_counts_ = skipped;
    skipped_ = 0;
    for (const std::int64_t k : skipped) skipped_ += k;
    index_ = index;
  }

 private:
  BufferLease lease_;
  BufferLease extra_;
  ImageShape shape_;
  std::int64_t capacity_ = 0;
  std::size_t labels_offset_ = 0;
  std::int64_t n_ = 0;
  std::int64_t skipped_ = 0;
  SkipCounts skip_counts_{};
  std::int64_t index_ = 0;
};

}  // namespace dl::data
