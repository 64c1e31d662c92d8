// Interop with Python's PyTorch (label "python"): checkpoints written here load with torch.load
// into torchvision's ResNet and into the equivalent Python modules, and a model scripted in Python
// trains here and goes back. Each Python helper is written to the test's directory, since
// TorchScript needs a source file to script a module. Skipped where Python has no torch.
#include "model/adamw_state.h"
#include "model/checkpoint.h"
#include "model/model.h"

#include "support/files.h"
#include "support/python.h"
#include "support/temp_dir.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <string>

namespace dl::test {
namespace {

using namespace dl::model;

// The tutorial's CNN as Python writes it, and the check of the probe logits stored in "extra".
constexpr const char* kPythonCommon = R"(
import sys
import torch
from torch import nn
import torch.nn.functional as F


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


class Scripted(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 14 * 14, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(torch.flatten(x, 1))


def check_layout(ckpt):
    assert type(ckpt) is dict, type(ckpt)
    expected = {"model_state_dict", "optimizer_state_dict", "scaler_state_dict", "epoch",
                "val_acc", "extra"}
    assert set(ckpt) == expected, sorted(ckpt)
    for name, tensor in ckpt["model_state_dict"].items():
        assert tensor.device.type == "cpu" and not tensor.requires_grad, name


def check_probe(model, ckpt, example):
    model.eval()
    with torch.no_grad():
        out = model(example)[0].double()
    expected = torch.tensor([ckpt["extra"]["probe.%d" % i] for i in range(out.numel())],
                            dtype=torch.float64)
    tolerance = 1e-4 * float(expected.abs().max()) + 1e-6
    assert torch.allclose(out, expected, rtol=1e-4, atol=tolerance), (out, expected)


def check_adamw(model, ckpt, steps):
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.5)
    optimizer.load_state_dict(ckpt["optimizer_state_dict"])
    group = optimizer.param_groups[0]
    assert group["lr"] == 1e-2 and tuple(group["betas"]) == (0.8, 0.95), group
    assert group["weight_decay"] == 0.05 and group["amsgrad"] is False, group
    for param in model.parameters():
        state = optimizer.state[param]
        assert float(state["step"]) == steps, state["step"]
        assert state["exp_avg"].shape == param.shape
    model.train()
    model(torch.randn(2, 1, 28, 28)).sum().backward()
    optimizer.step()
)";

constexpr const char* kCheckCheckpoints = R"(
import torchvision

cnn_path, resnet_path = sys.argv[1], sys.argv[2]
ckpt = torch.load(cnn_path)
check_layout(ckpt)
assert ckpt["epoch"] == 3 and type(ckpt["epoch"]) is int, ckpt["epoch"]
assert ckpt["val_acc"] == 0.875 and type(ckpt["val_acc"]) is float, ckpt["val_acc"]
assert ckpt["extra"]["global_step"] == 1234 and ckpt["extra"]["best_val_acc"] == 0.9, ckpt["extra"]
assert ckpt["scaler_state_dict"] == {"scale": 1024.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                     "growth_interval": 2000, "_growth_tracker": 17}, \
    ckpt["scaler_state_dict"]
cnn = Cnn()
cnn.load_state_dict(ckpt["model_state_dict"], strict=True)
check_probe(cnn, ckpt, torch.ones(1, 1, 28, 28))
check_adamw(cnn, ckpt, 2)

ckpt = torch.load(resnet_path)
check_layout(ckpt)
resnet = torchvision.models.resnet18(num_classes=10)
resnet.load_state_dict(ckpt["model_state_dict"], strict=True)
check_probe(resnet, ckpt, torch.full((1, 3, 224, 224), 0.5))
print("OK")
)";

constexpr const char* kScriptedModel = R"(
if sys.argv[1] == "export":
    torch.manual_seed(0)
    torch.jit.script(Scripted()).save(sys.argv[2])
else:
    ckpt = torch.load(sys.argv[2])
    check_layout(ckpt)
    steps = int(sys.argv[3])
    assert int(ckpt["model_state_dict"]["bn.num_batches_tracked"]) == steps
    model = Scripted()
    model.load_state_dict(ckpt["model_state_dict"], strict=True)
    check_probe(model, ckpt, torch.ones(1, 1, 28, 28))
    check_adamw(model, ckpt, steps)
print("OK")
)";

constexpr const char* kSaveFromPython = R"(
cnn = Cnn()
plain = {"model_state_dict": dict(cnn.state_dict()), "scaler_state_dict": {}, "epoch": 5,
         "val_acc": 0.5, "extra": {"global_step": 100, "best_val_acc": 0.5}}
torch.save(plain, sys.argv[1])
optimizer = torch.optim.AdamW(cnn.parameters())
torch.save({"model_state_dict": cnn.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
            "epoch": 5, "val_acc": 0.5}, sys.argv[2])
print("OK")
)";

struct InteropBatch {
  at::Tensor input;
  at::Tensor target;
};

InteropBatch interop_batch() {
  at::manual_seed(11);
  return {at::randn({16, 1, 28, 28}), at::randint(0, 10, {16})};
}

torch::optim::AdamWOptions interop_adamw_options() {
  return torch::optim::AdamWOptions(1e-2).weight_decay(0.05).betas({0.8, 0.95});
}

// Returns the loss before each step, plus the loss after the last.
std::vector<double> train(Model& model, torch::optim::AdamW& optimizer, const InteropBatch& batch,
                          int steps) {
  std::vector<double> losses;
  model.set_training(true);
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    const auto loss = at::nll_loss(at::log_softmax(model.forward(batch.input), 1), batch.target);
    losses.push_back(loss.item<double>());
    loss.backward();
    optimizer.step();
  }
  return losses;
}

// Stores the evaluation-mode logits for `example` as extra "probe.<i>" for Python to compare.
void add_probe(Model& model, const at::Tensor& example, CheckpointData& data) {
  model.set_training(false);
  at::NoGradGuard no_grad;
  const auto logits = model.forward(example)[0];
  for (int64_t i = 0; i < logits.numel(); ++i) {
    data.extra["probe." + std::to_string(i)] = logits[i].item<double>();
  }
}

std::string script_file(const TempDir& dir, const std::string& name, const char* body) {
  const auto path = dir.file(name);
  write_file(path, std::string(kPythonCommon) + body);
  return path;
}

TEST(PythonInterop, CheckpointLoadsIntoTorchvisionAndPythonModules) {
  if (!kPythonHasTorchvision) GTEST_SKIP() << kNoTorchvision;
  TempDir dir;
  auto cnn = make_model({"cnn", 1, 10, 28});
  torch::optim::AdamW optimizer(cnn->parameters(), interop_adamw_options());
  train(*cnn, optimizer, interop_batch(), 2);
  CheckpointData cnn_data;
  cnn_data.model_state = cnn->state();
  cnn_data.optimizer = export_adamw(optimizer, cnn->parameters());
  cnn_data.scaler.enabled = true;
  cnn_data.scaler.scale = 1024.0;
  cnn_data.scaler.growth_tracker = 17;
  cnn_data.epoch = 3;
  cnn_data.val_acc = 0.875;
  cnn_data.extra["best_val_acc"] = 0.9;
  cnn_data.extra["global_step"] = int64_t{1234};
  add_probe(*cnn, at::ones({1, 1, 28, 28}), cnn_data);
  save_checkpoint(dir.file("cnn.pt"), cnn_data);

  auto resnet = make_model({"resnet18", 3, 10, 224});
  CheckpointData resnet_data;
  resnet_data.model_state = resnet->state();
  add_probe(*resnet, at::full({1, 3, 224, 224}, 0.5), resnet_data);
  save_checkpoint(dir.file("resnet18.pt"), resnet_data);

  const Result check = run_python(script_file(dir, "check.py", kCheckCheckpoints),
                                  {dir.file("cnn.pt"), dir.file("resnet18.pt")});
  EXPECT_EQ(check.code, 0) << show(check);
  EXPECT_NE(check.out.find("OK"), std::string::npos) << show(check);
}

TEST(PythonInterop, ScriptedModelTrainsHereAndGoesBack) {
  if (!kPythonHasTorch) GTEST_SKIP() << kNoTorch;
  TempDir dir;
  const auto script = script_file(dir, "scripted.py", kScriptedModel);
  const Result exported = run_python(script, {"export", dir.file("scripted.pt")});
  ASSERT_EQ(exported.code, 0) << show(exported);

  auto model = make_model({dir.file("scripted.pt"), 1, 10, 28});
  torch::optim::AdamW optimizer(model->parameters(), interop_adamw_options());
  const int steps = 12;
  const auto losses = train(*model, optimizer, interop_batch(), steps);
  EXPECT_LT(losses.back(), losses.front() * 0.5) << "loss did not fall";

  CheckpointData data;
  data.model_state = model->state();
  data.optimizer = export_adamw(optimizer, model->parameters());
  data.epoch = 1;
  data.val_acc = 0.25;
  add_probe(*model, at::ones({1, 1, 28, 28}), data);
  save_checkpoint(dir.file("last.pt"), data);

  const Result checked = run_python(script, {"check", dir.file("last.pt"), std::to_string(steps)});
  EXPECT_EQ(checked.code, 0) << show(checked);
  EXPECT_NE(checked.out.find("OK"), std::string::npos) << show(checked);
}

// Python's torch.save is readable here when it holds plain dicts; a usual Python training
// checkpoint (an OrderedDict state_dict, a one-group param_groups list) is refused clearly.
TEST(PythonInterop, PythonCheckpointsReadHereWhenPlain) {
  if (!kPythonHasTorch) GTEST_SKIP() << kNoTorch;
  TempDir dir;
  const Result saved = run_python(script_file(dir, "save.py", kSaveFromPython),
                                  {dir.file("plain.pt"), dir.file("usual.pt")});
  ASSERT_EQ(saved.code, 0) << show(saved);

  const auto plain = load_checkpoint(dir.file("plain.pt"));
  EXPECT_EQ(plain.epoch, 5);
  EXPECT_EQ(std::get<int64_t>(plain.extra.at("global_step")), 100);
  auto cnn = make_model({"cnn", 1, 10, 28});
  EXPECT_NO_THROW(cnn->load_state(plain.model_state));

  try {
    load_checkpoint(dir.file("usual.pt"));
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(
        std::string(error.what()).find(": written by Python in a form LibTorch cannot read ("),
        std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace dl::test
