// The data sets dl-train reads, told apart by what is at a location: an MNIST/Fashion-MNIST IDX
// directory (raw or .gz files), a CIFAR-10 binary directory, an ImageFolder tree (train/ and val/
// of class folders, or class folders alone), a .csv manifest or WebDataset shards (shard_list.h;
// a folder's train/ and val/ shards are its two parts). One place decides, so that
// dl-train and the Python module over the loader (python/dl_loader) read the same locations alike,
// and a source added here serves both.
#pragma once

#include <memory>
#include <string>

#include "data/file_list_source.h"
#include "data/sample_source.h"

namespace dl::data {

struct DataSet {
  std::string kind;  // "idx", "cifar10", "image-folder", "csv", "shards"
  std::unique_ptr<SampleSource> train;
  // Null where the location has no validation part of its own (class folders without train/ and
  // val/, a manifest): the caller holds one out of `train`.
  std::unique_ptr<SampleSource> val;
  // Whether samples are image files (decoded, augmented with RandomResizedCrop) rather than an
  // in-memory set of small images.
  bool files() const { return kind == "image-folder" || kind == "csv" || kind == "shards"; }
};

// Opens what is at `location`. Throws MissingData when nothing is there and DataError when it is
// none of the above or is malformed, each one line naming the location.
DataSet open_data_set(const std::string& location, const ImageFileOptions& options = {});

}  // namespace dl::data
