// A view of some samples of another source: the held-out validation split of a data set that has
// none of its own, and the training remainder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/sample_source.h"

namespace dl::train {

class Subset : public data::SampleSource {
 public:
  Subset(std::shared_ptr<const data::SampleSource> base, std::vector<std::int64_t> indices,
         std::string what)
      : base_(std::move(base)), indices_(std::move(indices)), what_(std::move(what)) {}
  std::int64_t size() const override { return static_cast<std::int64_t>(indices_.size()); }
  int num_classes() const override { return base_->num_classes(); }
  data::ImageShape native_shape() const override { return base_->native_shape(); }
  std::int64_t label(std::int64_t i) const override {
    return base_->label(indices_[static_cast<std::size_t>(i)]);
  }
  bool load(std::int64_t i, const data::Transform& t, std::mt19937& rng,
            std::uint8_t* dst) const override {
    return base_->load(indices_[static_cast<std::size_t>(i)], t, rng, dst);
  }
  std::vector<std::string> failures() const override { return base_->failures(); }
  std::string describe() const override {
    return what_ + " of " + base_->describe() + ": " + std::to_string(indices_.size()) + " samples";
  }

 private:
  std::shared_ptr<const data::SampleSource> base_;
  std::vector<std::int64_t> indices_;
  std::string what_;
};

// Splits `base` into (train, validation) with a seeded permutation, `fraction` of it held out.
std::pair<std::unique_ptr<data::SampleSource>, std::unique_ptr<data::SampleSource>> hold_out(
    std::shared_ptr<const data::SampleSource> base, double fraction, std::uint64_t seed);

}  // namespace dl::train
