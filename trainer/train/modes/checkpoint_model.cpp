// Restoring a model from a checkpoint (checkpoint_model.h).
#include "train/modes/checkpoint_model.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/errors.h"
#include "train/run/model_setup.h"

namespace dl::train {

model::CheckpointData read_checkpoint_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    throw UserError(exit_code::kMissing, "--checkpoint " + path + ": " + std::strerror(errno) +
                                             "; expected a checkpoint written by dl-train");
  }
  if (S_ISDIR(st.st_mode)) {
    throw UserError(exit_code::kMissing,
                    "--checkpoint " + path + ": is a directory; expected a checkpoint file");
  }
  try {
    return model::load_checkpoint(path);
  } catch (const std::runtime_error& e) {
    throw UserError(exit_code::kBadData, e.what());
  }
}

void check_architecture(const std::string& path, const model::ModelInfo& info,
                        const std::string& asked_model) {
  if (asked_model.empty() || asked_model == info.name) return;
  throw UserError(exit_code::kMismatch, "--checkpoint " + path + " holds a " + info.name +
                                            " model, not the --model " + asked_model +
                                            " asked for (leave --model out to use the "
                                            "checkpoint's)");
}

std::unique_ptr<model::Model> restore_model(const std::string& path,
                                            const model::CheckpointData& checkpoint,
                                            const model::ModelInfo& info, c10::Device device) {
  model::ModelSpec spec;
  spec.name = info.name;
  spec.in_channels = static_cast<int>(info.in_channels);
  spec.input_size = static_cast<int>(info.image_size);
  spec.num_classes = static_cast<int>(info.num_classes);
  std::unique_ptr<model::Model> net = build_model(spec, device);
  try {
    net->load_state(checkpoint.model_state);
  } catch (const std::exception& e) {
    throw UserError(exit_code::kMismatch,
                    "--checkpoint " + path + ": its weights do not fit a " + info.name + " of " +
                        std::to_string(info.num_classes) + " classes for " +
                        std::to_string(info.in_channels) + "x" + std::to_string(info.image_size) +
                        "x" + std::to_string(info.image_size) + " input (" + e.what() + ")");
  }
  net->set_training(false);
  return net;
}

std::string name_list(const std::vector<std::string>& names, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < limit; ++i) {
    out += (i > 0 ? ", " : "") + names[i];
  }
  if (names.size() > limit) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

}  // namespace dl::train
