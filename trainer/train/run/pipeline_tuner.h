// The measurement behind the worker/thread choice (pipeline_plan.h): at start, dl-train loads a
// few batches on one thread and runs a few complete training steps at each candidate thread count
// on a scratch copy of the model, so the real model, optimizer and random streams are untouched.
// Takes about a second for a small CNN on a CPU; a step that takes longer is timed fewer times.
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <vector>

#include "data/sample_source.h"
#include "model/model.h"
#include "train/amp/grad_scaler.h"
#include "train/amp/precision.h"
#include "train/run/config.h"
#include "train/run/device_feed.h"
#include "train/run/pipeline_plan.h"

namespace dl::train {

// Cores the process may use: $DL_CORES when dl-launch passed its probe's answer (cgroup quotas
// included), else the CPU affinity mask.
int usable_cores();

struct TuneSetup {
  const data::SampleSource* source = nullptr;
  data::Transform transform;
  model::ModelSpec spec;
  c10::Device device = c10::Device(c10::kCPU);
  Precision precision = Precision::kFp32;
  ScalerOptions scaler;
  const TrainConfig* config = nullptr;
  DeviceFeed* feed = nullptr;
};

// Times loading and the training step for each of `thread_counts`, returning the costs for
// choose_pipeline. Leaves LibTorch's thread count at the last one measured; the caller sets the
// chosen one (and reseeds, since the scratch model consumed random numbers).
PipelineCosts measure_pipeline(const TuneSetup& setup, int cores,
                               const std::vector<int>& thread_counts);

}  // namespace dl::train
