// Reader for CIFAR-10's binary version: data_batch_1..5.bin (train) and test_batch.bin, records
// of one label byte followed by a 3x32x32 image (CHW: the red plane, then green, then blue).
#pragma once

#include <memory>
#include <string>

#include "data/sample_source.h"

namespace dl::data {

// `dir` holds the .bin files, or is their parent with the archive's cifar-10-batches-bin/ in it.
// All records are kept in memory (150 MB for the training set). Throws DataError naming the file
// when one is missing, is not a whole number of 3073-byte records, or has a label above 9.
// Class names come from the archive's batches.meta.txt (one per line) when it holds ten, else
// they are CIFAR-10's published names.
std::unique_ptr<SampleSource> open_cifar10(const std::string& dir, bool train);

}  // namespace dl::data
