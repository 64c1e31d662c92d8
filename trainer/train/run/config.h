// dl-train's configuration: the shared settings registry read in layers (defaults < dl.conf <
// DL_* environment < command line), where dl-launch's plan arrives as DL_* variables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/checkpoint_every.h"
#include "data/file_list_source.h"

namespace dl::train {

struct TrainConfig {
  std::string data;  // "" = the workspace's data/ or the default data set
  std::string model = "cnn";
  int epochs = 10;
  int batch_size = 64;
  // Pieces of each batch with accumulated gradients (0: whole batches): --global-batch's share of
  // a rank in micro-batches that fit (amp/micro_batch.h, the out-of-memory back-off's mechanism).
  std::int64_t micro_batch = 0;
  // dl-launch --global-batch: the batch per optimizer step the plan keeps over the ranks (0:
  // unset);
  // --lr-scaling then has no growth of the batch to follow.
  std::int64_t global_batch = 0;
  double lr = 1e-3;
  double weight_decay = 0.01;
  double clip_norm = 1.0;                    // 0: no clipping
  int workers = -1;                          // -1: auto (measured at start, pipeline_plan.h)
  int threads = -1;                          // -1: auto (measured at start)
  std::string device = "auto";               // auto | cpu | cuda | cuda:N
  std::string precision = "auto";            // auto | fp32 | fp16 | bf16
  std::string precision_source = "default";  // where precision came from, for messages
  // fp16's GradScaler (PyTorch's defaults).
  double loss_scale = 65536.0;
  double loss_scale_growth = 2.0;
  double loss_scale_backoff = 0.5;
  std::int64_t loss_scale_interval = 2000;
  int image_size = 0;  // 0: the data's own
  double val_fraction = 0.1;
  std::uint64_t seed = 42;
  int log_every = 100;
  double monitor_every = 30.0;
  bool time_breakdown = true;  // time the copy and the optimizer apart from compute
  double max_bad_fraction = 0.01;
  std::int64_t max_image_pixels = data::kDefaultMaxImagePixels;
  std::int64_t shuffle_buffer = 2000;  // shards: samples mixed after the shard order's shuffle
  std::int64_t read_ahead_mb = 1024;   // remote shards: memory for whole shards read ahead
  std::int64_t jpeg_index_mb = 512;    // JPEGs: memory for where decoding can resume (0: none)
  std::int64_t limit_batches = 0;      // 0: every batch of the epoch
  CheckpointEvery checkpoint_every{0, 600.0};  // last.pt between epoch ends (default 10 min)
  bool resume = false;
  bool overwrite = false;       // a fresh start may replace an earlier run's checkpoints
  std::string init_from;        // "" = no weights file
  std::string freeze = "none";  // none | backbone | 0..4 (freeze.h)
  // Distributed training (the torchrun contract in the environment says how many ranks).
  std::string dist_backend = "auto";  // auto | gloo | nccl
  double dist_timeout = 300.0;        // seconds
  double rdzv_timeout = 300.0;        // seconds
  std::string lr_scaling = "none";    // none | linear | sqrt
  std::int64_t reference_batch = 0;   // --reference-batch: the global batch --lr was tuned for
  double bucket_mb = 25.0;
  bool overlap = true;
  std::string run_dir;      // DL_RUN_DIR, else runs/<timestamp> in the working directory
  std::string config_file;  // the file read, if any
};

struct ParsedArgs {
  bool help = false;
  bool version = false;
  bool data_facts = false;  // --data-facts: describe the data (modes/data_facts_mode.h) and exit
  std::string doctor;       // --doctor short|full: measure for dl-launch doctor (doctor_mode.h)
  bool doctor_exchange = false;  // --doctor-exchange: one rank of the allreduce measurement
  TrainConfig config;
};

// Throws UserError naming the option, variable or file and what was expected.
ParsedArgs parse_train_args(int argc, const char* const argv[]);
std::string train_usage();

}  // namespace dl::train
