// Reader for the IDX format of MNIST and Fashion-MNIST (an images file of magic 0x00000803 and a
// labels file of magic 0x00000801, raw or .gz). Every header field and the exact file length are
// checked, so a truncated download fails at open with the file named, not mid-epoch.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/sample_source.h"

namespace dl::data {

// Both files read into memory; 1 x rows x cols uint8 samples, num_classes = max label + 1.
// class_names: used when there are exactly that many classes (else they are numbered).
// Throws DataError naming the file on any mismatch.
std::unique_ptr<SampleSource> open_idx(const std::string& images_path,
                                       const std::string& labels_path,
                                       const std::vector<std::string>& class_names = {});

// The names of an MNIST-layout directory's classes: Fashion-MNIST's ten official names when the
// directory's path says fashion-mnist (the files themselves cannot tell the two sets apart),
// else MNIST's digits "0".."9".
std::vector<std::string> idx_class_names(const std::string& dir);

// The MNIST layout of a directory: {train,t10k}-images-idx3-ubyte and -labels-idx1-ubyte, each
// raw or .gz (also the ".idx3-ubyte" spelling some mirrors use). Throws DataError naming the
// directory and the file it looked for when they are missing.
std::unique_ptr<SampleSource> open_mnist_dir(const std::string& dir, bool train);

}  // namespace dl::data
