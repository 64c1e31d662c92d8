// A SampleSource for loader tests: sample i carries its index in its first bytes (so a test can
// tell which samples a batch holds), then bytes from the augmentation stream (so the per-sample
// random streams are checked too). Some indices can be made to fail, and loads can be slow.
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>

#include "data/sample_source.h"

namespace dl::test {

class FakeSource : public data::SampleSource {
 public:
  explicit FakeSource(std::int64_t size, std::set<std::int64_t> bad = {},
                      std::chrono::microseconds delay = std::chrono::microseconds(0))
      : size_(size), bad_(std::move(bad)), delay_(delay) {}

  static data::ImageShape shape() { return data::ImageShape{1, 4, 4}; }
  std::int64_t size() const override { return size_; }
  int num_classes() const override { return 10; }
  data::ImageShape native_shape() const override { return shape(); }
  std::int64_t label(std::int64_t index) const override { return index % 10; }
  std::string describe() const override { return "fake"; }

  bool load(std::int64_t index, const data::Transform& t, std::mt19937& rng,
            std::uint8_t* dst) const override {
    ++loads;
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    if (index == throw_at) throw std::runtime_error("load failed on purpose");
    if (bad_.count(index) != 0) return false;
    std::memcpy(dst, &index, sizeof(index));
    for (std::size_t k = sizeof(index); k < t.out.bytes(); ++k) {
      dst[k] = static_cast<std::uint8_t>(rng());
    }
    return true;
  }

  // The index that load() wrote into a sample.
  static std::int64_t index_of(const std::uint8_t* sample) {
    std::int64_t index = 0;
    std::memcpy(&index, sample, sizeof(index));
    return index;
  }

  mutable std::atomic<std::int64_t> loads{0};
  std::int64_t throw_at = -1;

 private:
  std::int64_t size_;
  std::set<std::int64_t> bad_;
  std::chrono::microseconds delay_;
};

}  // namespace dl::test
