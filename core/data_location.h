// Where the training data is, agreed between dl-launch (which plans for it) and dl-train (which
// reads it): the `data` setting when given, else the workspace's data/ folder when it holds a data
// set, else the embedded default, Fashion-MNIST.
#pragma once

#include <string>

namespace dl {

// True when `dir` exists and holds anything besides READMEs and hidden files.
bool holds_data_set(const std::string& dir);

// The default data set's directory: $DL_DEFAULT_DATA, the image's copy, or Debian's
// dataset-fashion-mnist package; "" when none exists.
std::string default_data_dir();

}  // namespace dl
