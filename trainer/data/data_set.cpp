// Which data set a location holds (see data_set.h).
#include "data/data_set.h"

#include <sys/stat.h>

#include "core/text.h"
#include "data/cifar.h"
#include "data/csv_manifest.h"
#include "data/data_error.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/shard_list.h"
#include "data/shard_source.h"

namespace dl::data {
namespace {

constexpr const char* kExpected =
    "expected an IDX or CIFAR-10 directory, an ImageFolder tree, a CSV manifest or WebDataset "
    "shards";

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool has_idx(const std::string& dir) {
  return exists(dir + "/train-images-idx3-ubyte") || exists(dir + "/train-images-idx3-ubyte.gz");
}

}  // namespace

DataSet open_data_set(const std::string& location, const ImageFileOptions& options) {
  // Shards first: a brace pattern or a URL names files that are not at `location` itself.
  if (names_shards(location) && !(is_dir(location) && has_idx(location))) {
    DataSet d;
    d.kind = "shards";
    if (is_dir(location) && is_dir(location + "/train") && names_shards(location + "/train")) {
      d.train = open_shards(location + "/train", options);
      if (is_dir(location + "/val") && names_shards(location + "/val")) {
        d.val = open_shards(location + "/val", options);
      }
    } else {
      d.train = open_shards(location, options);
    }
    return d;
  }
  if (!exists(location)) {
    throw MissingData("data " + printable_path(location) + ": no such file or directory; " +
                      kExpected);
  }
  DataSet d;
  if (is_dir(location) && has_idx(location)) {
    d.kind = "idx";
    d.train = open_mnist_dir(location, true);
    d.val = open_mnist_dir(location, false);
  } else if (is_dir(location) && (exists(location + "/data_batch_1.bin") ||
                                  exists(location + "/cifar-10-batches-bin"))) {
    const std::string dir =
        exists(location + "/data_batch_1.bin") ? location : location + "/cifar-10-batches-bin";
    d.kind = "cifar10";
    d.train = open_cifar10(dir, true);
    d.val = open_cifar10(dir, false);
  } else if (is_dir(location)) {
    d.kind = "image-folder";
    if (is_dir(location + "/train")) {
      d.train = open_image_folder(location + "/train", options);
      if (is_dir(location + "/val")) d.val = open_image_folder(location + "/val", options);
    } else {
      d.train = open_image_folder(location, options);
    }
  } else if (ends_with(location, ".csv")) {
    d.kind = "csv";
    d.train = open_csv_manifest(location, options);
  } else {
    throw DataError("data " + printable_path(location) + ": not a data set; " + kExpected);
  }
  return d;
}

}  // namespace dl::data
