// Where the build put the programs the tests run, and the checkout's folders the tests read,
// written by tests/support/CMakeLists.txt into the build's build_paths.cpp. They are not compile
// definitions: a definition that holds an absolute path is part of every compile command of its
// target, so ccache could not share those objects between checkouts in other folders (CI's fresh
// clones) or with the image's build stage (/src). An empty string is a program this build does
// not make (dl-train without LibTorch, make_jpeg_set without OpenCV).
#pragma once

namespace dl::test {

extern const char kSourceDir[];       // the checkout
extern const char kTemplateSource[];  // its workspace_template
extern const char kPythonSource[];    // its python/ (dl_plan, dl_loader's Python files)
extern const char kTfeventsDecode[];  // tests/helpers/tfevents_decode.py
extern const char kLaunchBin[];       // dl-launch
extern const char kTrainBin[];        // dl-train
extern const char kTestChild[];       // tests/integration's dl_test_child
extern const char kFakeNvml[];        // tests/integration's fake libnvidia-ml
extern const char kMakeJpegSet[];     // bench/'s make_jpeg_set

}  // namespace dl::test
