// Training checkpoints in the layout of Python's torch.save({...}) of a training state, so that
// `ckpt = torch.load(path)` gives a plain dict and
// `model.load_state_dict(ckpt["model_state_dict"])`,
// `optimizer.load_state_dict(ckpt["optimizer_state_dict"])` (AdamW) and
// `scaler.load_state_dict(ckpt["scaler_state_dict"])` work:
//
//   {"model_state_dict": {name: tensor},
//    "optimizer_state_dict": {"state": {i: {"step": tensor(float), "exp_avg", "exp_avg_sq"}},
//                             "param_groups": [{"lr", "betas": (b1, b2), "eps", "weight_decay",
//                                               "amsgrad", "maximize", "foreach", "capturable",
//                                               "params": [i, ...]}]},
//    "scaler_state_dict": {"scale", "growth_factor", "backoff_factor", "growth_interval",
//                          "_growth_tracker"}   (empty when the scaler is disabled, as in Python),
//    "epoch": int, "val_acc": float, "extra": {name: int or float},
//    "classes": [str, ...],                     (the class names in label order)
//    "model_info": {"name": str, "in_channels": int, "image_size": int, "num_classes": int,
//                   "data_kind": str, "mean": [float], "std": [float]}}
//
// "classes" and "model_info" let evaluation and prediction rebuild the model and its input without
// flags; checkpoints written before they existed load without them (empty / nullopt).
//
// Tensors are stored on the CPU. LibTorch 1.13's unpickler reads what Python's torch.save writes
// only when it holds plain dicts and no one-element lists or dicts: a usual Python training
// checkpoint (an OrderedDict state_dict, a single param group) is refused with a clear error;
// torch.save({"model_state_dict": dict(model.state_dict()), "epoch": ..., "val_acc": ...}) loads.
#pragma once

#include "model/model.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dl::model {

// AdamW's per-parameter state, as in Python's optimizer.state_dict()["state"][i].
struct ParamState {
  int64_t step = 0;
  at::Tensor exp_avg;
  at::Tensor exp_avg_sq;
  at::Tensor max_exp_avg_sq;  // only with amsgrad; undefined otherwise
};

// One AdamW parameter group; `params` are indices into the model's parameter list.
struct ParamGroup {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  std::vector<int64_t> params;
};

struct OptimizerState {
  std::map<int64_t, ParamState> state;  // by parameter index; absent until its first step
  std::vector<ParamGroup> param_groups;
};

// The GradScaler's state with Python's names and defaults.
struct ScalerState {
  double scale = 65536.0;
  int64_t growth_tracker = 0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = false;
};

// Trainer bookkeeping beyond the fixed fields: best accuracy so far, global step, ...
using ExtraValue = std::variant<int64_t, double>;

// What rebuilds the model and prepares its input: the architecture, the input shape, the data
// kind the model was trained on (how images were cropped) and the normalisation statistics.
struct ModelInfo {
  std::string name;  // ModelSpec::name: cnn, resnet18, ..., or a TorchScript file
  int64_t in_channels = 0;
  int64_t image_size = 0;
  int64_t num_classes = 0;
  std::string data_kind;          // idx, cifar10, image-folder, csv
  std::vector<double> mean, std;  // per input channel, on the 0..1 scale
};

struct CheckpointData {
  NamedTensors model_state;
  OptimizerState optimizer;
  ScalerState scaler;
  int64_t epoch = 0;
  double val_acc = 0.0;
  std::map<std::string, ExtraValue> extra;
  std::vector<std::string> classes;  // empty: not recorded
  std::optional<ModelInfo> model_info;
};

// Writes atomically: "<path>.tmp.<pid>", fsync, rename over `path`, fsync the directory; a crash
// or a failure leaves any previous file at `path` intact. Throws std::runtime_error naming the
// file.
void save_checkpoint(const std::string& path, const CheckpointData& data);

// Reads and validates a checkpoint; tensors come back on the CPU. Throws std::runtime_error with
// one line naming the file when it is missing, truncated, corrupt or has the wrong layout.
CheckpointData load_checkpoint(const std::string& path);

// The same from a checkpoint file's bytes, read elsewhere (a distributed run's rank 0); `path`
// names it in messages.
CheckpointData parse_checkpoint(const std::vector<char>& bytes, const std::string& path);

}  // namespace dl::model
