// A data set in WebDataset's format: POSIX tar shards in which a sample is the members that share
// a key (the member's path up to the first dot of its file name), its fields named by the rest:
// the image (jpg, jpeg, png or webp) and the integer class (cls). Shards written by Python's
// webdataset or tarfile, by `tar` or by `dl-train pack` read alike. The shards' headers are read
// at open (tar_listing.h: nothing is extracted, no link followed), so every sample has an index
// and an exact epoch length, and any sampler (DistributedSampler's shares, a seeded shuffle) and
// an exact resume work as on a folder; a sample's image is then read with one pread and decoded
// like an image file (image_decode.h).
//
// What cannot be trusted is counted, and said in one line a shard (ImageFileOptions::warn): a
// member refused by the listing, a truncated or corrupt shard (its samples before the damage are
// kept), a sample without an image or without a class, a class that is not a whole number in
// [0, 1000000).
#pragma once

#include <memory>
#include <string>

#include "data/file_list_source.h"
#include "data/sample_source.h"

namespace dl::data {

// The shards `location` names (shard_list.h). Throws MissingData for a shard that is not there,
// DataError when no shard holds a usable sample, each one line naming it.
std::unique_ptr<SampleSource> open_shards(const std::string& location,
                                          const ImageFileOptions& options = {});

}  // namespace dl::data
