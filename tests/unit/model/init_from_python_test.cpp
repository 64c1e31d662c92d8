// --init-from against files Python writes (labels "integration;python;slow": PythonInterop.*):
// torchvision's ResNet-18 saved as its published weights are (torch.save(model.state_dict()), an
// OrderedDict with _metadata) gives, loaded here, the logits torchvision computes in eval mode;
// a 10-class save into a 7-class model re-initialises fc only; a legacy torch.save file, another
// architecture, a pickle naming os.system (never run) and a truncated file are refused with their
// exit codes and one line naming the file.
#include "core/errors.h"
#include "model/init_from.h"
#include "model/model.h"
#include "model/weights_file.h"

#include "support/files.h"
#include "support/python.h"
#include "support/temp_dir.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <string>

namespace dl::test {
namespace {

using namespace dl::model;

constexpr const char* kMakeFiles = R"(
import os
import sys
import torch
import torchvision

out = sys.argv[1]
torch.manual_seed(0)
model = torchvision.models.resnet18()
# Fresh BatchNorm is the identity in eval mode: give every statistic and affine a value, so the
# golden logits test that each one is loaded where it belongs.
with torch.no_grad():
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.1, 0.1)
            m.num_batches_tracked.fill_(7)
torch.save(model.state_dict(), os.path.join(out, "resnet18.pth"))
model.eval()
x = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    logits = model(x)
torch.save({"x": x, "logits": logits}, os.path.join(out, "golden.pt"))
torch.save(model.state_dict(), os.path.join(out, "legacy.pth"), _use_new_zipfile_serialization=False)

torch.manual_seed(1)
torch.save(torchvision.models.resnet18(num_classes=10).state_dict(),
           os.path.join(out, "resnet18-10.pth"))
torch.save(torchvision.models.squeezenet1_0().state_dict(), os.path.join(out, "squeezenet.pth"))


class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + os.path.join(out, "ran"),))


torch.save({"state_dict": {"fc.weight": torch.zeros(2)}, "hook": Evil()},
           os.path.join(out, "evil.pth"))
print("OK")
)";

// The files are made once for the three tests: Python with torchvision takes seconds to start.
class PythonInteropInitFrom : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!kPythonHasTorchvision) return;
    files = new TempDir();
    write_file(*files / "make.py", kMakeFiles);
    made = run_python(*files / "make.py", {files->path()});
  }
  static void TearDownTestSuite() {
    delete files;
    files = nullptr;
  }
  void SetUp() override {
    if (!kPythonHasTorchvision) GTEST_SKIP() << kNoTorchvision;
    ASSERT_EQ(made.code, 0) << made.out << made.err;
  }

  // The UserError's code and line when reading `name` (0 and "" when it reads).
  static std::pair<int, std::string> refusal(const std::string& path) {
    try {
      read_weights_file(path);
    } catch (const UserError& e) {
      return {e.code(), e.what()};
    }
    return {0, ""};
  }

  static TempDir* files;
  static Result made;
};

TempDir* PythonInteropInitFrom::files = nullptr;
Result PythonInteropInitFrom::made;

TEST_F(PythonInteropInitFrom, TorchvisionResnet18GivesTorchvisionsLogits) {
  const WeightsFile golden = read_weights_file(*files / "golden.pt");
  ASSERT_EQ(golden.tensors.size(), 2u);
  const at::Tensor x = golden.tensors[0].second;
  const at::Tensor expected = golden.tensors[1].second;

  auto model = make_model({"resnet18", 3, 1000, 64});  // 64 pixels: torchvision's 7x7 stem
  const WeightsFile weights = read_weights_file(*files / "resnet18.pth");
  EXPECT_EQ(weights.found_under, "");
  const InitReport report = init_from(*model, weights.tensors, *files / "resnet18.pth");
  EXPECT_EQ(report.loaded, report.total);
  EXPECT_EQ(report.total, weights.tensors.size());
  EXPECT_TRUE(report.skipped.empty() && report.reinitialised.empty() && report.missing.empty());

  model->set_training(false);
  at::NoGradGuard no_grad;
  const at::Tensor logits = model->forward(x);
  ASSERT_EQ(logits.sizes(), expected.sizes());
  const double diff = (logits - expected).abs().max().item<double>();
  std::cout << "golden: max |logits - torchvision's| = " << diff << " over " << expected.numel()
            << " logits (max |logit| " << expected.abs().max().item<double>() << ")\n";
  RecordProperty("max_abs_diff", std::to_string(diff));
  EXPECT_LT(diff, 1e-4);
}

TEST_F(PythonInteropInitFrom, TenClassWeightsIntoSevenClassesReinitialiseFcOnly) {
  at::manual_seed(3);
  auto model = make_model({"resnet18", 3, 7, 64});
  at::Tensor fresh_fc;
  for (const auto& [name, t] : model->state()) {
    if (name == "fc.weight") fresh_fc = t.clone();
  }
  const WeightsFile weights = read_weights_file(*files / "resnet18-10.pth");
  const InitReport report = init_from(*model, weights.tensors, "w");
  EXPECT_EQ(report.loaded, report.total - 2);
  ASSERT_EQ(report.reinitialised.size(), 2u);
  EXPECT_EQ(report.reinitialised[0], "fc.weight [10, 512] -> [7, 512]");
  EXPECT_EQ(report.reinitialised[1], "fc.bias [10] -> [7]");
  EXPECT_TRUE(report.skipped.empty() && report.missing.empty() && report.unused.empty());
  for (const auto& [name, t] : model->state()) {
    if (name == "fc.weight") {
      EXPECT_TRUE(t.equal(fresh_fc));
      continue;
    }
    if (name == "fc.bias") continue;
    for (const auto& [file_name, file_tensor] : weights.tensors) {
      if (file_name == name) {
        EXPECT_TRUE(t.equal(file_tensor)) << name;
      }
    }
  }
}

TEST_F(PythonInteropInitFrom, BadFilesAreRefusedWithTheirCodes) {
  const auto [legacy_code, legacy] = refusal(*files / "legacy.pth");
  EXPECT_EQ(legacy_code, 65);
  EXPECT_EQ(legacy, "--init-from " + *files / "legacy.pth" +
                        ": a legacy (pre-1.6, non-zip) torch.save file; re-save it in torch.save's "
                        "default zip format: torch.save(torch.load(f), f2); expected a torch.save "
                        "file of a state dict (torch.save(model.state_dict(), f)) or a dl-train "
                        "checkpoint");

  const auto [evil_code, evil] = refusal(*files / "evil.pth");
  EXPECT_EQ(evil_code, 65);
  EXPECT_NE(evil.find("names the global posix.system"), std::string::npos) << evil;
  EXPECT_FALSE(std::filesystem::exists(*files / "ran"));

  const std::string whole = read_file(*files / "resnet18.pth");
  write_file(*files / "cut.pth", whole.substr(0, whole.size() / 2));
  const auto [cut_code, cut] = refusal(*files / "cut.pth");
  EXPECT_EQ(cut_code, 65);
  EXPECT_EQ(
      cut.rfind("--init-from " + *files / "cut.pth" + ": not a readable torch.save archive", 0), 0u)
      << cut;

  // Another architecture: the file reads, but none of its names is the model's.
  auto model = make_model({"resnet18", 3, 10, 64});
  const WeightsFile squeeze = read_weights_file(*files / "squeezenet.pth");
  try {
    init_from(*model, squeeze.tensors, "squeezenet.pth");
    ADD_FAILURE() << "squeezenet's weights loaded into resnet18";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), 76);
    EXPECT_EQ(std::string(e.what()),
              "--init-from squeezenet.pth: none of its 52 tensors fits the model outside its "
              "classifier (fc); weights for "
              "another architecture? The file has features.0.weight, features.0.bias, "
              "features.3.squeeze.weight and 49 more; model resnet18 has conv1.weight, "
              "bn1.weight, bn1.bias and 119 more");
  }
}

}  // namespace
}  // namespace dl::test
