// TensorBoard's event records, encoded by hand: the Event and Summary protobuf messages that
// scalars need (no protobuf library), and the record framing of an events file.
//
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
//
//   record  = uint64 length (little-endian), uint32 masked_crc32c(length bytes),
//             data, uint32 masked_crc32c(data)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dl::report {

struct Scalar {
  std::string tag;
  float value = 0;
};

// The first event of every file: {wall_time, file_version: "brain.Event:2"}.
std::string version_event(double wall_time);

// One event carrying `scalars` (one Summary.Value each) at `step`.
std::string scalars_event(double wall_time, std::int64_t step, const std::vector<Scalar>& scalars);

// `data` framed as one record.
std::string frame_record(std::string_view data);

}  // namespace dl::report
