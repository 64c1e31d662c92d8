// A data set as the loader sees it: random access to labelled images, each decoded and
// transformed straight into the batch buffer as uint8 CHW. Normalisation to float happens on the
// device, so images travel as bytes (as timm's prefetcher does).
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "data/skip_reason.h"

namespace dl::data {

struct ImageShape {
  int channels = 0;
  int height = 0;
  int width = 0;
  std::size_t bytes() const {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) *
           static_cast<std::size_t>(width);
  }
};

// How a sample becomes a tensor of `out` shape.
using DecodeScales = std::array<std::int64_t, 8>;

struct Transform {
  ImageShape out;           // what every sample is turned into
  bool train = false;       // augment (RandomResizedCrop + flip) or evaluate (resize + center crop)
  float scale_min = 0.08f;  // RandomResizedCrop's area range and aspect-ratio range
  float scale_max = 1.0f;
  float ratio_min = 3.0f / 4.0f;
  float ratio_max = 4.0f / 3.0f;
  float flip_probability = 0.5f;
  float eval_crop_fraction = 0.875f;  // resize to out / fraction, center-crop out (224 of 256)
  // JPEGs decoded at the smallest scale M/8 that keeps the crop (or the evaluation resize) at
  // least the output's size (jpeg_region.h); false decodes at full size, as PIL does.
  bool scaled_decode = true;
};

// "0", "1", ..., "n-1": the names of classes known only by their labels.
inline std::vector<std::string> index_names(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(std::to_string(i));
  return names;
}

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual std::int64_t size() const = 0;
  virtual int num_classes() const = 0;
  // The classes' names in label order (num_classes() of them): what checkpoints record and what
  // evaluation and prediction print. Sources without names of their own number them "0", "1", ...
  virtual std::vector<std::string> class_names() const { return index_names(num_classes()); }
  // The shape samples have before any transform (0 height/width when they vary, as in a folder of
  // JPEGs).
  virtual ImageShape native_shape() const = 0;
  virtual std::int64_t label(std::int64_t index) const = 0;
  // Writes sample `index`, transformed, into `dst` (t.out.bytes() bytes, CHW). `rng` drives the
  // augmentation. Returns false when the sample cannot be decoded (a corrupt file): the loader
  // skips it and counts it. Must be safe to call from several threads at once.
  virtual bool load(std::int64_t index, const Transform& t, std::mt19937& rng,
                    std::uint8_t* dst) const = 0;
  // "Fashion-MNIST IDX /usr/share/datasets/fashion-mnist (60000 samples, 10 classes)"
  virtual std::string describe() const = 0;
  // Why load() last returned false for `index` (the loader counts skipped samples by reason).
  virtual SkipReason skip_reason(std::int64_t /*index*/) const { return SkipReason::kUndecodable; }
  // The samples load() could not load so far, each with its latest reason, in index order (file
  // paths where there are files), for the report at the end of an epoch.
  virtual std::vector<SkippedFile> failures() const { return {}; }
  // How many JPEGs load() decoded at each scale M/8 so far (element M - 1): the loader bench's
  // distribution. All zero for sources that decode none.
  virtual DecodeScales decode_scales() const { return {}; }
  // The memory its JPEGs' entropy index holds now (jpeg_entropy.h).
  virtual std::size_t entropy_index_bytes() const { return 0; }
  // The sample's encoded file as stored (a JPEG's bytes) and its lower-case extension ("jpg"),
  // for sources whose samples are files: what the shard writer copies without re-encoding. False
  // for in-memory sources and for a file that cannot be read.
  virtual bool encoded_file(std::int64_t /*index*/, std::vector<std::uint8_t>& /*bytes*/,
                            std::string* /*extension*/) const {
    return false;
  }
  // For sources stored in shards (shard_source.h): each shard's sample count, in index order, so
  // that an epoch can be read shard by shard (shard_order.h). Empty for every other source.
  virtual std::vector<std::int64_t> shard_counts() const { return {}; }
  // The loader's word, at the start of each epoch, of the samples it will load in that order: what
  // a remote source reads ahead by.
  virtual void plan_reads(const std::vector<std::int64_t>& /*order*/) const {}
  // For remote sources: "12 downloads, 3 waits, 96 MiB held at most" since the source was opened.
  virtual std::string remote_summary() const { return {}; }
};

}  // namespace dl::data
