// The concrete model builders behind make_model, one per family. Declared here without LibTorch's
// module headers so that the dispatcher (model.cpp) compiles quickly.
#pragma once

#include "model/model.h"

#include <memory>
#include <string>

namespace dl::model {

// The tutorial's small CNN (cnn.h).
std::unique_ptr<Model> make_cnn(const ModelSpec& spec);

// torchvision's ResNet of the given depth (18, 34 or 50) (resnet.h).
std::unique_ptr<Model> make_resnet(const ModelSpec& spec, int depth);

// A module scripted in Python and saved with torch.jit.save (torchscript_model.cpp).
std::unique_ptr<Model> load_torchscript(const std::string& path);

}  // namespace dl::model
