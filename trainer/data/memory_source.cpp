// In-memory samples (see memory_source.h).
#include "data/memory_source.h"

#include <cstring>
#include <stdexcept>
#include <utility>

#include "data/transform.h"

namespace dl::data {

MemorySource::MemorySource(std::vector<std::uint8_t> pixels, std::vector<std::uint8_t> labels,
                           ImageShape shape, int num_classes, std::string description,
                           std::vector<std::string> class_names)
    : pixels_(std::move(pixels)),
      labels_(std::move(labels)),
      shape_(shape),
      num_classes_(num_classes),
      description_(std::move(description)),
      class_names_(std::move(class_names)) {
  if (pixels_.size() != labels_.size() * shape_.bytes()) {
    throw std::invalid_argument("MemorySource: pixel bytes do not match samples x shape");
  }
  if (!class_names_.empty() && class_names_.size() != static_cast<std::size_t>(num_classes_)) {
    throw std::invalid_argument("MemorySource: class names do not match the class count");
  }
}

std::int64_t MemorySource::label(std::int64_t index) const {
  return labels_[static_cast<std::size_t>(index)];
}

bool MemorySource::load(std::int64_t index, const Transform& t, std::mt19937& rng,
                        std::uint8_t* dst) const {
  const std::uint8_t* src = pixels_.data() + static_cast<std::size_t>(index) * shape_.bytes();
  const bool native_size = t.out.height == shape_.height && t.out.width == shape_.width;
  if (!t.train && native_size) {
    if (t.out.channels == shape_.channels) {
      std::memcpy(dst, src, shape_.bytes());
      return true;
    }
    // Only the channels change (grey MNIST for a 3-channel model): no zoom from the crop fraction.
    Transform whole = t;
    whole.eval_crop_fraction = 1.0f;
    transform_planar(src, shape_, whole, rng, dst);
    return true;
  }
  transform_planar(src, shape_, t, rng, dst);
  return true;
}

}  // namespace dl::data
