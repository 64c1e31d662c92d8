// What the data holds, asked of dl-train (`dl-train --data-facts`: the data opened as training
// opens it, printed as one JSON line), so that the plan knows the size of any data set dl-train
// reads (image folders, CSV manifests, shards local or remote) without the launcher reading data
// itself: the workers' small-data rule and the batch's bound and memory use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "launcher/batch_probe.h"

namespace dl {

// Opening a data set may scan a large folder or index every shard's headers (remote ones over
// the network): bounded, so that a slow store delays the start by this much at most.
constexpr double kDataFactsTimeoutSeconds = 120;

struct DataFacts {
  std::string kind;      // idx, cifar10, image-folder, csv, shards
  std::string location;  // the data's path or URL as dl-train resolved it
  std::int64_t train_samples = 0;
  std::int64_t val_samples = 0;
  int classes = 0;
  std::int64_t shards = 0;  // 0 where the data is not shards
  // Remote shards: the first shard's count times the shards (listing them all would download
  // the set), the classes unknown.
  bool estimated = false;
  int channels = 0, height = 0, width = 0;
  std::uint64_t sample_bytes = 0;  // one float32 input
};

// The facts in dl-train's output (its last line that is a JSON object with train_samples and
// sample_bytes); nullopt when there is none. Exposed for tests.
std::optional<DataFacts> parse_data_facts(const std::string& out);

struct DataFactsResult {
  std::optional<DataFacts> facts;
  std::string error;  // why there are none (a timeout, a crash, unreadable output)
};

// Runs `dl-train --data-facts` as the batch probe runs (the workspace, the environment training
// gets, the workspace's owner), within kDataFactsTimeoutSeconds. dl-train refusing the data
// (exit 64-78) throws UserError with its code and its line, as training would refuse it.
DataFactsResult read_data_facts(const ProbeSetup& setup);

}  // namespace dl
