// Where a baseline JPEG's Huffman-coded data stands at points of the image, kept per sample across
// epochs, so that a later crop of the same file starts decoding near its own top-left corner
// instead of at the file's first row.
//
// A sequential JPEG is one bit stream: libjpeg must Huffman-decode every row above a crop and, in
// the crop's rows, every column left and right of it, and that decoding is most of what loading a
// photo costs (bench/NOTES.md). The stream carries no way to jump in, so the first decode of a
// file records, every few blocks, the bit position and the DC predictors; later decodes resume
// from the recorded point nearest above and left of their crop, and skip what lies right of it.
// The pixels are the ones a full decode gives (the same coefficients reach the same inverse
// transform); only the work shrinks, by about 40% for RandomResizedCrop on photo-sized images.
//
// The decoder that does this stands in for libjpeg's own Huffman decoder (jpeg_entropy.cpp), for
// the files it handles: baseline or extended sequential, Huffman-coded, 8-bit, one interleaved
// scan, no restart markers. Everything else is decoded by libjpeg alone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace dl::data {

// The decoder's state at the start of one MCU: the bit position in the unstuffed entropy-coded
// data and each component's DC predictor.
struct EntropyPoint {
  static constexpr std::uint32_t kUnknown = 0xFFFFFFFFu;
  std::uint32_t bit = kUnknown;
  std::int16_t dc[3] = {0, 0, 0};
};

// One file's points: every `step`-th MCU of each MCU row (the row's first among them), as far as
// decodes have gone. `fingerprint` and the layout tie them to the bytes they were recorded from.
struct EntropyIndex {
  std::uint64_t fingerprint = 0;
  std::uint32_t mcus_per_row = 0;
  std::uint32_t mcu_rows = 0;
  std::uint32_t step = 0;
  std::uint32_t points_per_row = 0;
  std::vector<EntropyPoint> points;

  std::size_t bytes() const { return sizeof(*this) + points.capacity() * sizeof(EntropyPoint); }
};

// The points of every sample of a source, bounded by a memory budget: a decode borrows its
// sample's index (EntropyLease) and gives it back when done, so two threads never share one (the
// second decodes without). Samples met after the budget is spent go unindexed.
class EntropyIndexStore {
 public:
  EntropyIndexStore(std::int64_t samples, std::size_t budget_bytes);
  ~EntropyIndexStore();
  EntropyIndexStore(const EntropyIndexStore&) = delete;
  EntropyIndexStore& operator=(const EntropyIndexStore&) = delete;

  // Bytes the indexes hold now.
  std::size_t bytes() const { return used_.load(std::memory_order_relaxed); }
  std::size_t budget() const { return budget_; }

  // Takes `bytes` from the budget; false (and nothing taken) where they do not fit.
  bool reserve(std::size_t bytes);
  void release(std::size_t bytes);

 private:
  friend class EntropyLease;
  std::int64_t samples_;
  std::size_t budget_;
  std::atomic<std::size_t> used_{0};
  std::unique_ptr<std::atomic<EntropyIndex*>[]> slots_;
};

// Sample `index`'s points for one decode (null `store` or an index out of range: none).
class EntropyLease {
 public:
  EntropyLease() = default;
  EntropyLease(EntropyIndexStore* store, std::int64_t index);
  ~EntropyLease();
  EntropyLease(const EntropyLease&) = delete;
  EntropyLease& operator=(const EntropyLease&) = delete;

  // The borrowed index, or null (no store, or another decode has it).
  EntropyIndex* index() const { return index_; }
  EntropyIndexStore* store() const { return store_; }

 private:
  EntropyIndexStore* store_ = nullptr;
  std::int64_t slot_ = -1;
  EntropyIndex* index_ = nullptr;
};

// The default budget of a source's store: 512 MiB, about 2 KiB per ImageNet-sized photo.
inline constexpr std::size_t kDefaultEntropyIndexBytes = std::size_t{512} << 20;

// Whether JPEGs go through this decoder (with an index where one is lent) or libjpeg's own; on by
// default. For the tests that compare the two.
void set_jpeg_entropy_decoder(bool on);
bool jpeg_entropy_decoder_enabled();

// MCUs this thread's decodes have Huffman-decoded through this decoder so far: what the index
// saves, counted rather than timed.
std::uint64_t jpeg_entropy_decoded_mcus();

}  // namespace dl::data
