// A trained model back from its checkpoint, for evaluate and predict: the file checked (66
// missing, 65 not a checkpoint), the architecture and input rebuilt from the checkpoint's
// model_info (or, for a checkpoint written before it was recorded, from --model and the data),
// and the weights loaded (76 when they do not fit the architecture).
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/model.h"

namespace dl::train {

// Reads `path`. Throws UserError 66 when it does not exist, 65 when it is not a checkpoint.
model::CheckpointData read_checkpoint_file(const std::string& path);

// Throws UserError 76 when --model was given (`asked_model` not empty) and names another
// architecture than the checkpoint's.
void check_architecture(const std::string& path, const model::ModelInfo& info,
                        const std::string& asked_model);

// The model of `info` on `device` in evaluation mode, with the checkpoint's weights. Throws
// UserError 76 when the weights do not fit it (another architecture or class count).
std::unique_ptr<model::Model> restore_model(const std::string& path,
                                            const model::CheckpointData& checkpoint,
                                            const model::ModelInfo& info, c10::Device device);

// "T-shirt/top, Trouser, ..." (at most `limit` names, then "...").
std::string name_list(const std::vector<std::string>& names, std::size_t limit = 12);

}  // namespace dl::train
