// One image file's bytes (JPEG, PNG, BMP, WebP, TIFF, PNM) turned into a sample through a
// Transform, shared by the sources whose samples are encoded files: image folders and manifests
// (file_list_source) and shards. The header is read first and nothing is decoded beyond the pixel
// limit; JPEGs go through libjpeg's partial, scaled decoding (jpeg_region.h), the rest (and the
// JPEGs it does not handle: CMYK, corrupt data) through OpenCV.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

#include "data/jpeg_entropy.h"
#include "data/sample_source.h"
#include "data/skip_reason.h"

namespace dl::data {

// JPEG decodes by scale M/8 (element M - 1), counted by a source's workers together.
using ScaleCounters = std::array<std::atomic<std::int64_t>, 8>;
DecodeScales read_scale_counters(const ScaleCounters& counters);

// Why a file's bytes did not become a sample.
struct DecodeFailure {
  SkipReason reason = SkipReason::kUndecodable;
  std::string detail;  // "not a JPEG, PNG, BMP, WebP, TIFF or PNM file"
};

// Writes the sample the bytes hold, transformed (t.out.bytes() bytes, CHW), into dst; `rng` as
// SampleSource::load. False, with *failure filled (when given), for bytes that are empty, not an
// image, larger than max_pixels (seen in the header), or do not decode. Counts JPEG decodes by
// scale into *scales when given. Safe on several threads at once.
// A `lease` lends the sample's JPEG entropy index (jpeg_entropy.h).
bool decode_image(const std::uint8_t* data, std::size_t size, const Transform& t, std::mt19937& rng,
                  std::int64_t max_pixels, std::uint8_t* dst, DecodeFailure* failure = nullptr,
                  ScaleCounters* scales = nullptr, EntropyLease* lease = nullptr);

}  // namespace dl::data
