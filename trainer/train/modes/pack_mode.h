// `dl-train pack`: any data set dl-train reads into WebDataset shards (data/shard_pack.h), with
// a progress line and a summary.
//
//   dl-train pack --data SRC --out DIR [--split train|val] [--shard-size 256MB] [--max-side N]
//                 [--quality 90] [--prefix NAME-] [--overwrite]
#pragma once

#include <string>

namespace dl::train {

// argv[0] is "pack". Returns the exit code; throws UserError (64 options, 65 bad data, 66 data
// missing, 73 cannot write, 78 shards there already without --overwrite), one line each.
int run_pack(int argc, const char* const argv[]);
std::string pack_usage();

}  // namespace dl::train
