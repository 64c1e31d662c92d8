// --init-from and --freeze without Python: weights files written here (this project's checkpoints)
// read back; files that are no weights are refused with 65 or 66 and a line saying what they
// are; a classifier of another class count starts fresh; a 3-channel first convolution is summed
// for 1-channel data; another architecture is 76 and leaves the model untouched; and frozen
// modules stay bit-identical, BatchNorm statistics included, through AdamW steps with weight
// decay.
#include "model/init_from.h"
#include "core/errors.h"
#include "model/checkpoint.h"
#include "model/freeze.h"
#include "model/model.h"
#include "model/weights_file.h"

#include "support/files.h"
#include "support/temp_dir.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adamw.h>

#include <map>
#include <string>

namespace dl::test {
namespace {

using namespace dl::model;

NamedTensors clones(const NamedTensors& state) {
  NamedTensors out;
  for (const auto& [name, t] : state) out.emplace_back(name, t.detach().clone());
  return out;
}

std::map<std::string, at::Tensor> by_name(const NamedTensors& state) {
  std::map<std::string, at::Tensor> out;
  for (const auto& [name, t] : state) out.emplace(name, t);
  return out;
}

// A dl-train checkpoint holding `model`'s weights.
std::string save_weights(const TempDir& dir, Model& model, const std::string& name) {
  CheckpointData c;
  c.model_state = clones(model.state());
  save_checkpoint(dir / name, c);
  return dir / name;
}

std::pair<int, std::string> weights_refusal(const std::string& path) {
  try {
    read_weights_file(path);
  } catch (const UserError& e) {
    return {e.code(), e.what()};
  }
  return {0, ""};
}

TEST(WeightsFile, ReadsThisProjectsCheckpoints) {
  TempDir dir;
  auto model = make_model({"cnn", 1, 10, 28});
  const std::string path = save_weights(dir, *model, "w.pt");
  const WeightsFile w = read_weights_file(path);
  EXPECT_EQ(w.found_under, "model_state_dict");
  const NamedTensors state = model->state();
  ASSERT_EQ(w.tensors.size(), state.size());
  for (std::size_t i = 0; i < state.size(); ++i) {
    EXPECT_EQ(w.tensors[i].first, state[i].first);
    EXPECT_TRUE(w.tensors[i].second.equal(state[i].second)) << state[i].first;
  }
}

TEST(WeightsFile, FilesThatHoldNoWeightsAreRefusedSayingWhatTheyAre) {
  TempDir dir;
  const std::string tail =
      "; expected a torch.save file of a state dict (torch.save(model.state_dict(), f)) or a "
      "dl-train checkpoint";
  write_file(dir / "notes.txt", "conv1.weight = 3\n");
  EXPECT_EQ(weights_refusal(dir / "notes.txt"),
            std::make_pair(65, "--init-from " + dir / "notes.txt" +
                                   ": a text file, not a zip archive" + tail));
  write_file(dir / "empty.pt", "");
  EXPECT_EQ(weights_refusal(dir / "empty.pt"),
            std::make_pair(65, "--init-from " + dir / "empty.pt" + ": the file is empty" + tail));
  // Legacy torch.save begins with the pickled magic number 0x1950a86a20f9469cfc6c.
  write_file(dir / "old.pth", std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
                                          "\x2e",
                                          15));
  EXPECT_EQ(weights_refusal(dir / "old.pth").first, 65);
  EXPECT_NE(
      weights_refusal(dir / "old.pth").second.find("legacy (pre-1.6, non-zip) torch.save file"),
      std::string::npos);
  EXPECT_EQ(weights_refusal(dir / "missing.pt").first, 66);

  auto model = make_model({"cnn", 1, 10, 28});
  const std::string whole = read_file(save_weights(dir, *model, "w.pt"));
  for (const std::size_t keep : {whole.size() / 2, whole.size() - 30, std::size_t{100}}) {
    write_file(dir / "cut.pt", whole.substr(0, keep));
    const auto [code, line] = weights_refusal(dir / "cut.pt");
    EXPECT_EQ(code, 65) << keep;
    EXPECT_EQ(line.rfind("--init-from " + dir / "cut.pt" + ": ", 0), 0u) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
}

TEST(InitFrom, ClassifierOfAnotherClassCountStartsFresh) {
  at::manual_seed(1);
  auto source = make_model({"resnet18", 3, 1000, 64});
  at::manual_seed(2);
  auto model = make_model({"resnet18", 3, 10, 64});
  const auto fresh = by_name(clones(model->state()));
  const InitReport r = init_from(*model, clones(source->state()), "w.pth");
  EXPECT_EQ(r.loaded, r.total - 2);
  EXPECT_EQ(r.reinitialised, (std::vector<std::string>{"fc.weight [1000, 512] -> [10, 512]",
                                                       "fc.bias [1000] -> [10]"}));
  const auto file = by_name(source->state());
  for (const auto& [name, t] : model->state()) {
    const bool fc = name.rfind("fc.", 0) == 0;
    EXPECT_TRUE(t.equal(fc ? fresh.at(name) : file.at(name))) << name;
  }
  const std::vector<std::string> lines = describe(r, "w.pth");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "init-from: loaded 120 of 122 model tensors from w.pth");
  EXPECT_EQ(lines[1],
            "init-from: re-initialised (the classifier, for another class count): fc.weight "
            "[1000, 512] -> [10, 512], fc.bias [1000] -> [10]");
}

TEST(InitFrom, ThreeChannelFirstConvIsSummedForGreyData) {
  auto source = make_model({"resnet18", 3, 10, 64});
  auto model = make_model({"resnet18", 1, 10, 64});
  const InitReport r = init_from(*model, clones(source->state()), "w.pth");
  EXPECT_EQ(r.loaded, r.total);
  EXPECT_EQ(r.adapted, (std::vector<std::string>{"conv1.weight [64, 3, 7, 7] -> [64, 1, 7, 7]"}));
  const at::Tensor expected = by_name(source->state()).at("conv1.weight").sum(1, true);
  EXPECT_TRUE(by_name(model->state()).at("conv1.weight").allclose(expected));
}

TEST(InitFrom, AnotherArchitectureIs76AndChangesNothing) {
  auto cnn = make_model({"cnn", 1, 10, 28});
  auto model = make_model({"resnet18", 1, 10, 28});
  const NamedTensors before = clones(model->state());
  try {
    init_from(*model, clones(cnn->state()), "cnn.pt");
    ADD_FAILURE() << "the CNN's weights loaded into resnet18";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kMismatch);
    EXPECT_EQ(std::string(e.what()),
              "--init-from cnn.pt: none of its 6 tensors fits the model outside its classifier "
              "(fc); weights for another "
              "architecture? The file has conv1.weight, conv1.bias, conv2.weight and 3 more; "
              "model resnet18 has conv1.weight, bn1.weight, bn1.bias and 119 more");
  }
  const auto after = by_name(model->state());
  for (const auto& [name, t] : before) EXPECT_TRUE(after.at(name).equal(t)) << name;
}

TEST(InitFrom, DataParallelPrefixIsDropped) {
  auto source = make_model({"cnn", 1, 10, 28});
  NamedTensors prefixed;
  for (const auto& [name, t] : source->state()) prefixed.emplace_back("module." + name, t);
  auto model = make_model({"cnn", 1, 10, 28});
  EXPECT_EQ(init_from(*model, prefixed, "dp.pt").loaded, 6u);
}

TEST(Freeze, ChoosesTheStemStagesOrBackbone) {
  auto resnet = make_model({"resnet18", 1, 10, 28});
  EXPECT_EQ(modules_to_freeze(*resnet, "2"),
            (std::vector<std::string>{"conv1", "bn1", "layer1", "layer2"}));
  EXPECT_EQ(modules_to_freeze(*resnet, "0"), (std::vector<std::string>{"conv1", "bn1"}));
  EXPECT_TRUE(modules_to_freeze(*resnet, "none").empty());
  auto cnn = make_model({"cnn", 1, 10, 28});
  EXPECT_EQ(modules_to_freeze(*cnn, "backbone"), (std::vector<std::string>{"conv1", "conv2"}));
  EXPECT_THROW(modules_to_freeze(*cnn, "2"), std::invalid_argument);
  EXPECT_EQ(classifier_module(*resnet), "fc");
}

// The frozen backbone's parameters and BatchNorm statistics are bit-identical after AdamW steps
// with weight decay in training mode; only fc moves, and only fc is the optimizer's.
TEST(Freeze, BackboneStaysBitIdenticalThroughTraining) {
  at::manual_seed(0);
  auto model = make_model({"resnet18", 1, 10, 28});
  model->freeze(modules_to_freeze(*model, "backbone"));
  const std::vector<at::Tensor> params = model->parameters();
  ASSERT_EQ(params.size(), 2u);  // fc.weight, fc.bias
  const NamedTensors before = clones(model->state());
  torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(0.01).weight_decay(0.5));
  model->set_training(true);
  for (int step = 0; step < 3; ++step) {
    const at::Tensor x = at::randn({8, 1, 28, 28});
    const at::Tensor y = at::randint(0, 10, {8}, at::kLong);
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    optimizer.step();
  }
  const auto after = by_name(model->state());
  for (const auto& [name, t] : before) {
    if (name.rfind("fc.", 0) == 0) {
      EXPECT_FALSE(after.at(name).equal(t)) << name << " did not train";
    } else {
      EXPECT_TRUE(after.at(name).equal(t)) << name << " moved";
    }
  }
}

}  // namespace
}  // namespace dl::test
