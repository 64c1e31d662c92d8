// The data facts: the data set opened by setup_data, as training opens it, and nothing else (no
// model, no device, no loader threads). Remote shards are the exception: listing every one of
// them means downloading the whole set (which dl-train's own start then does again), so their
// facts are the first shard's, multiplied by the shard count and said to be an estimate.
#include "train/modes/data_facts_mode.h"

#include <cstdint>
#include <iostream>
#include <sstream>

#include "core/errors.h"
#include "core/json.h"
#include "data/data_error.h"
#include "data/remote_store.h"
#include "data/sample_source.h"
#include "data/shard_list.h"
#include "data/shard_source.h"
#include "train/run/config.h"
#include "train/run/data_setup.h"

namespace dl::train {
namespace {

struct Facts {
  std::string kind, location;
  std::int64_t train = 0, val = 0;
  int classes = -1;  // -1: not known (an estimate from one shard cannot know them)
  std::size_t shards = 0;
  data::ImageShape input;
  bool estimated = false;
};

std::string facts_json(const Facts& f) {
  // One line, as the probe's report: a reader takes the last line that is a JSON object.
  std::ostringstream out;
  out << "{\"kind\":" << JsonWriter::escape(f.kind)
      << ",\"location\":" << JsonWriter::escape(f.location) << ",\"train_samples\":" << f.train
      << ",\"val_samples\":" << f.val << ",\"classes\":";
  if (f.classes < 0) {
    out << "null";
  } else {
    out << f.classes;
  }
  out << ",\"shards\":" << f.shards << ",\"estimated\":" << (f.estimated ? "true" : "false")
      << ",\"channels\":" << f.input.channels << ",\"height\":" << f.input.height << ",\"width\":"
      << f.input.width
      // One input as the model takes it (float32): the unit of the launcher's batch memory.
      << ",\"sample_bytes\":" << static_cast<std::uint64_t>(f.input.bytes()) * sizeof(float) << "}";
  return out.str();
}

// Remote shards: the first one listed, its count times the shards; the held-out part as
// hold_out (data_setup.h) would take it from shards of that count.
Facts estimate_remote_shards(const TrainConfig& config) {
  Facts f;
  f.kind = "shards";
  f.location = config.data;
  f.estimated = true;
  data::ImageFileOptions options;
  options.max_pixels = config.max_image_pixels;
  options.warn = [](const std::string& line) { std::cerr << line << "\n"; };
  try {
    const std::vector<std::string> paths = data::shard_paths(config.data);
    f.shards = paths.size();
    const auto first = data::open_shards(paths.front(), options);
    const std::int64_t each = first->size();
    const auto n = static_cast<std::int64_t>(paths.size());
    std::int64_t held = 0;
    if (n >= 2 && config.val_fraction > 0) {
      const std::vector<std::int64_t> counts(paths.size(), each);
      held = n - static_cast<std::int64_t>(first_held_out_shard(counts, config.val_fraction));
    }
    f.train = (n - held) * each;
    f.val = held * each;
  } catch (const data::MissingData& e) {
    throw UserError(exit_code::kMissing, e.what());
  } catch (const data::DataError& e) {
    throw UserError(exit_code::kBadData, e.what());
  }
  const int size = config.image_size > 0 ? config.image_size : 224;
  f.input = {3, size, size};
  return f;
}

}  // namespace

std::string data_facts_json(const DataSetup& d) {
  Facts f;
  f.kind = d.kind;
  f.location = d.location;
  f.train = d.train->size();
  f.val = d.val->size();
  f.classes = d.train->num_classes();
  f.shards = d.train->shard_counts().size() + d.val->shard_counts().size();
  f.input = d.train_transform.out;
  return facts_json(f);
}

int run_data_facts(const TrainConfig& config) {
  if (data::is_remote(config.data) && data::names_shards(config.data)) {
    std::cout << facts_json(estimate_remote_shards(config)) << std::endl;
    return 0;
  }
  const DataSetup d = setup_data(config);
  std::cout << data_facts_json(d) << std::endl;
  return 0;
}

}  // namespace dl::train
