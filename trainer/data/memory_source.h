// A data set held entirely in memory as uint8 CHW samples with uint8 labels: what the IDX
// (MNIST, Fashion-MNIST) and CIFAR-10 readers produce. Loading is a copy, or a transform of the
// bytes, never a file access, so these sources scale to any number of workers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/sample_source.h"

namespace dl::data {

class MemorySource : public SampleSource {
 public:
  // pixels: size * shape.bytes() bytes, sample after sample, each CHW. labels: one per sample.
  // class_names: num_classes names, or none (the classes are then numbered).
  MemorySource(std::vector<std::uint8_t> pixels, std::vector<std::uint8_t> labels, ImageShape shape,
               int num_classes, std::string description, std::vector<std::string> class_names = {});

  std::int64_t size() const override { return static_cast<std::int64_t>(labels_.size()); }
  int num_classes() const override { return num_classes_; }
  std::vector<std::string> class_names() const override {
    return class_names_.empty() ? index_names(num_classes_) : class_names_;
  }
  ImageShape native_shape() const override { return shape_; }
  std::int64_t label(std::int64_t index) const override;
  // Evaluation at the native size is a plain copy (no resize, no crop: what ToTensor() gives the
  // Python reference), with at most a channel conversion; anything else goes through
  // transform_planar.
  bool load(std::int64_t index, const Transform& t, std::mt19937& rng,
            std::uint8_t* dst) const override;
  std::string describe() const override { return description_; }

 private:
  std::vector<std::uint8_t> pixels_;
  std::vector<std::uint8_t> labels_;
  ImageShape shape_;
  int num_classes_;
  std::string description_;
  std::vector<std::string> class_names_;
};

}  // namespace dl::data
