// The Python the interop and template tests run (DL_TEST_PYTHON) and what it can import, as found
// when the build was configured: a test that needs torch skips, with this reason, where it cannot.
#pragma once

#include <string>
#include <vector>

#include "support/process.h"

namespace dl::test {

inline const std::string kPython = DL_TEST_PYTHON;
inline constexpr bool kPythonHasTorch = DL_TEST_PYTHON_TORCH;
inline constexpr bool kPythonHasTorchvision = DL_TEST_PYTHON_TORCHVISION;

// Why a test that needs torch (and torchvision) is skipped where the build found none.
inline const std::string kNoTorch =
    kPython + " could not import torch when the build was configured (python3-torch)";
inline const std::string kNoTorchvision =
    kPython + " could not import torch and torchvision when the build was configured";

// Runs kPython on `script` (a file: TorchScript needs the source to script a module) with `args`.
Result run_python(const std::string& script, const std::vector<std::string>& args);

}  // namespace dl::test
