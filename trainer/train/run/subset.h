// A view of some samples of another source: the held-out validation split of a data set that has
// none of its own, and the training remainder.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/sample_source.h"

namespace dl::train {

class Subset : public data::SampleSource {
 public:
  // `shard_counts`: where the part is whole shards of a sharded base, in order, their counts.
  Subset(std::shared_ptr<const data::SampleSource> base, std::vector<std::int64_t> indices,
         std::string what, std::vector<std::int64_t> shard_counts = {})
      : base_(std::move(base)),
        indices_(std::move(indices)),
        what_(std::move(what)),
        shard_counts_(std::move(shard_counts)) {
    sorted_.reserve(indices_.size());
    for (std::size_t i = 0; i < indices_.size(); ++i) {
      sorted_.emplace_back(indices_[i], static_cast<std::int64_t>(i));
    }
    std::sort(sorted_.begin(), sorted_.end());
  }
  std::int64_t size() const override { return static_cast<std::int64_t>(indices_.size()); }
  int num_classes() const override { return base_->num_classes(); }
  std::vector<std::string> class_names() const override { return base_->class_names(); }
  data::ImageShape native_shape() const override { return base_->native_shape(); }
  std::int64_t label(std::int64_t i) const override {
    return base_->label(indices_[static_cast<std::size_t>(i)]);
  }
  bool load(std::int64_t i, const data::Transform& t, std::mt19937& rng,
            std::uint8_t* dst) const override {
    return base_->load(indices_[static_cast<std::size_t>(i)], t, rng, dst);
  }
  data::SkipReason skip_reason(std::int64_t i) const override {
    return base_->skip_reason(indices_[static_cast<std::size_t>(i)]);
  }
  bool encoded_file(std::int64_t i, std::vector<std::uint8_t>& bytes,
                    std::string* extension) const override {
    return base_->encoded_file(indices_[static_cast<std::size_t>(i)], bytes, extension);
  }
  // Only this part's failures (the other part shares the base), with this part's indices.
  std::vector<data::SkippedFile> failures() const override {
    std::vector<data::SkippedFile> mine;
    for (data::SkippedFile& f : base_->failures()) {
      const auto it = std::lower_bound(sorted_.begin(), sorted_.end(),
                                       std::pair<std::int64_t, std::int64_t>{f.index, 0});
      if (it != sorted_.end() && it->first == f.index) {
        f.index = it->second;
        mine.push_back(std::move(f));
      }
    }
    return mine;
  }
  std::vector<std::int64_t> shard_counts() const override { return shard_counts_; }
  void plan_reads(const std::vector<std::int64_t>& order) const override {
    std::vector<std::int64_t> mapped;
    mapped.reserve(order.size());
    for (const std::int64_t i : order) mapped.push_back(indices_[static_cast<std::size_t>(i)]);
    base_->plan_reads(mapped);
  }
  std::string remote_summary() const override { return base_->remote_summary(); }
  std::string describe() const override {
    return what_ + " of " + base_->describe() + ": " + std::to_string(indices_.size()) + " samples";
  }

 private:
  std::shared_ptr<const data::SampleSource> base_;
  std::vector<std::int64_t> indices_;
  // (base index, own index), sorted: which base failures are this part's.
  std::vector<std::pair<std::int64_t, std::int64_t>> sorted_;
  std::string what_;
  std::vector<std::int64_t> shard_counts_;
};

// Splits `base` into (train, validation) with a seeded permutation, `fraction` of it held out;
// shards (base->shard_counts()) by whole shards instead, the last ones held out, so both parts
// are still read shard by shard.
std::pair<std::unique_ptr<data::SampleSource>, std::unique_ptr<data::SampleSource>> hold_out(
    std::shared_ptr<const data::SampleSource> base, double fraction, std::uint64_t seed);

}  // namespace dl::train
