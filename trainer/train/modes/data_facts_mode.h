// `dl-train --data-facts`: the data a training run would read, opened as training opens it
// (--data, DL_DATA or dl.conf; folders scanned, shard headers indexed, the split made) and
// described as one JSON object on stdout: its kind, the training and validation sample counts, the
// classes and the shape of one input (remote shards: estimated from the first shard). dl-launch
// plans with it (the workers a data set's size calls for, the batch's memory) whatever the data
// is, without linking the data layer itself.
#pragma once

#include <string>

namespace dl::train {

struct TrainConfig;
struct DataSetup;

// The JSON object (one line) for an opened data set.
std::string data_facts_json(const DataSetup& d);

// Opens the data and prints data_facts_json; returns 0, or throws UserError as training would
// (66 data missing, 65 malformed).
int run_data_facts(const TrainConfig& config);

}  // namespace dl::train
