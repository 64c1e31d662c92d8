// What `dl-train pack --max-side` would do for the loader, measured on the user's own files: a
// sample of them loaded through the training transform as they are stored, and again after the
// re-encoding pack does (shard_pack.h), timed on this core. dl-train's time breakdown prescribes
// packing from it when a run is data-bound (train/monitor/prescription.h).
#pragma once

#include <cstdint>
#include <optional>

#include "data/sample_source.h"

namespace dl::data {

struct PackedDecode {
  int files = 0;          // sampled files that loaded both ways
  int max_side = 0;       // the re-encoding's long side
  double stored_ms = 0;   // median per file as stored (libjpeg's scaled decoding included)
  double packed_ms = 0;   // median per file re-encoded at max_side
  double stored_kib = 0;  // mean file size as stored
  double packed_kib = 0;  // mean file size re-encoded
};

// `files` samples spread over `source`, each loaded twice per form (the faster counts: the first
// warms the caches). nullopt where the source holds no encoded files (IDX, CIFAR, shards of
// PNGs alike are still files: only in-memory sets have none) or no sampled file loads both ways.
std::optional<PackedDecode> time_packed_decode(const SampleSource& source, const Transform& t,
                                               std::int64_t max_pixels, int max_side, int files);

// The long side to pack at for training at `out`: 8/7 of its long side (torchvision's
// Resize(256) before CenterCrop(224)), rounded up to a multiple of 32, at least 64.
int pack_side_for(const ImageShape& out);

}  // namespace dl::data
