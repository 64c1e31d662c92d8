// Two sources read as one (the first's samples, then the second's): `evaluate --split all` over a
// data set that comes in a training and a test part.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/sample_source.h"

namespace dl::train {

class JoinedSource : public data::SampleSource {
 public:
  JoinedSource(std::shared_ptr<const data::SampleSource> first,
               std::shared_ptr<const data::SampleSource> second)
      : first_(std::move(first)), second_(std::move(second)) {}
  std::int64_t size() const override { return first_->size() + second_->size(); }
  int num_classes() const override {
    return std::max(first_->num_classes(), second_->num_classes());
  }
  std::vector<std::string> class_names() const override {
    return first_->num_classes() >= second_->num_classes() ? first_->class_names()
                                                           : second_->class_names();
  }
  data::ImageShape native_shape() const override { return first_->native_shape(); }
  std::int64_t label(std::int64_t i) const override {
    return i < first_->size() ? first_->label(i) : second_->label(i - first_->size());
  }
  bool load(std::int64_t i, const data::Transform& t, std::mt19937& rng,
            std::uint8_t* dst) const override {
    return i < first_->size() ? first_->load(i, t, rng, dst)
                              : second_->load(i - first_->size(), t, rng, dst);
  }
  bool encoded_file(std::int64_t i, std::vector<std::uint8_t>& bytes,
                    std::string* extension) const override {
    return i < first_->size() ? first_->encoded_file(i, bytes, extension)
                              : second_->encoded_file(i - first_->size(), bytes, extension);
  }
  data::SkipReason skip_reason(std::int64_t i) const override {
    return i < first_->size() ? first_->skip_reason(i) : second_->skip_reason(i - first_->size());
  }
  std::vector<data::SkippedFile> failures() const override {
    std::vector<data::SkippedFile> all = first_->failures();
    for (data::SkippedFile f : second_->failures()) {
      f.index += first_->size();
      all.push_back(std::move(f));
    }
    return all;
  }
  std::string describe() const override {
    return first_->describe() + " and " + second_->describe();
  }

 private:
  std::shared_ptr<const data::SampleSource> first_;
  std::shared_ptr<const data::SampleSource> second_;
};

}  // namespace dl::train
