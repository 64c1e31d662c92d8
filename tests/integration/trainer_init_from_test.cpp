// dl-train's --init-from and --freeze from the command line: files that hold no weights end the
// run with 65 or 66 and one error line before anything is written; weights of another
// architecture end it with 76 naming the file's and the model's tensors, before any checkpoint;
// --freeze N on a model without stages is a usage error; and a fine-tuning run on Fashion-MNIST
// from ResNet-18 weights for 3 channels and 1000 classes adapts conv1, re-initialises fc, trains
// only fc, and leaves every frozen tensor (BatchNorm statistics included) bit-identical in last.pt.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/model.h"
#include "support/build_paths.h"
#include "support/data_sets.h"
#include "support/files.h"
#include "support/matchers.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

const std::string kTrain = dl::test::kTrainBin;
constexpr std::chrono::seconds kRunTimeout{300};

Result train(const std::string& workspace, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kTrain, "--threads",       "1", "--workers",
                                   "1",    "--monitor-every", "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  Process process(in_directory(workspace, argv));
  return process.wait(kRunTimeout);
}

// The refusal a user should see: the code and exactly one error line naming what was wrong.
void expect_refused(const Result& r, int code, const std::vector<std::string>& mentions) {
  EXPECT_EQ(r.code, code) << show(r);
  EXPECT_EQ(r.signal, 0) << show(r);
  EXPECT_FALSE(contains(r.out + r.err, "terminate called")) << show(r);
  const std::vector<std::string> errors = log_lines(r.out, "error");
  ASSERT_EQ(errors.size(), 1u) << show(r);
  for (const std::string& m : mentions) {
    EXPECT_TRUE(contains(errors[0], m)) << "'" << m << "' not in: " << errors[0];
  }
}

// A dl-train checkpoint of `model`'s fresh weights.
std::string save_weights(const std::string& path, model::Model& net) {
  model::CheckpointData c;
  for (const auto& [name, t] : net.state()) c.model_state.emplace_back(name, t.detach().clone());
  model::save_checkpoint(path, c);
  return path;
}

class TrainerInitFrom : public ::testing::Test {
 protected:
  void SetUp() override { write_synthetic_idx(ws / "data", 64, 16); }
  std::vector<std::string> args(const std::string& weights) const {
    return {"--data", ws / "data", "--epochs", "1",           "--limit-batches",
            "1",      "--name",    "x",        "--init-from", weights};
  }
  TempDir ws;
};

TEST_F(TrainerInitFrom, MissingFileExits66WritingNothing) {
  const Result r = train(ws.path(), args(ws / "none.pth"));
  expect_refused(r, 66, {"--init-from", ws / "none.pth"});
  EXPECT_FALSE(file_exists(ws / "runs"));
}

TEST_F(TrainerInitFrom, TextAndLegacyFilesExit65WritingNothing) {
  write_file(ws / "weights.txt", "fc.weight: 0.5\n");
  expect_refused(train(ws.path(), args(ws / "weights.txt")), 65,
                 {ws / "weights.txt", "a text file"});
  write_file(ws / "old.pth",
             std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e", 15));
  expect_refused(train(ws.path(), args(ws / "old.pth")), 65,
                 {ws / "old.pth", "legacy", "torch.save(torch.load(f), f2)"});
  EXPECT_FALSE(file_exists(ws / "runs"));
}

TEST_F(TrainerInitFrom, AnotherArchitectureExits76NamingTheTensors) {
  auto cnn = model::make_model({"cnn", 1, 10, 28});
  const std::string weights = save_weights(ws / "cnn.pt", *cnn);
  std::vector<std::string> a = args(weights);
  a.insert(a.end(), {"--model", "resnet18"});
  expect_refused(train(ws.path(), a), 76,
                 {weights, "another architecture", "conv1.weight, conv1.bias", "bn1.weight"});
  EXPECT_FALSE(file_exists(ws / "runs/x/last.pt"));
}

TEST_F(TrainerInitFrom, FreezeStagesOfACnnExit64WritingNothing) {
  const Result r = train(ws.path(), {"--data", ws / "data", "--freeze", "2", "--name", "x"});
  expect_refused(r, 64, {"--freeze", "resnet"});
  const Result bad = train(ws.path(), {"--data", ws / "data", "--freeze", "5", "--name", "x"});
  expect_refused(bad, 64, {"--freeze", "'5'"});
  EXPECT_FALSE(file_exists(ws / "runs"));
}

TEST(TrainerFineTune, FrozenBackboneIsBitIdenticalInLastPt) {
  if (fashion_mnist_dir().empty()) GTEST_SKIP() << kNoFashion;
  TempDir ws;
  write_fashion_subset(ws / "data", 256, 64);
  at::manual_seed(5);
  auto source = model::make_model({"resnet18", 3, 1000, 64});  // as torchvision's weights are
  const std::string weights = save_weights(ws / "resnet18.pt", *source);
  const Result r =
      train(ws.path(), {"--data", ws / "data", "--model", "resnet18", "--image-size", "64",
                        "--batch-size", "16", "--epochs", "1", "--limit-batches", "3", "--name",
                        "ft", "--init-from", weights, "--freeze", "backbone"});
  ASSERT_EQ(r.code, 0) << show(r);
  EXPECT_TRUE(contains(r.out, "init-from: loaded 120 of 122 model tensors from " + weights))
      << show(r);
  EXPECT_TRUE(contains(r.out, "fc.weight [1000, 512] -> [10, 512], fc.bias [1000] -> [10]"))
      << show(r);
  EXPECT_TRUE(contains(r.out, "conv1.weight [64, 3, 7, 7] -> [64, 1, 7, 7]")) << show(r);
  EXPECT_TRUE(contains(r.out, "freeze backbone: ")) << show(r);

  const model::CheckpointData last = model::load_checkpoint(ws / "runs/ft/last.pt");
  std::map<std::string, at::Tensor> file;
  for (const auto& [name, t] : source->state()) file.emplace(name, t);
  int frozen = 0;
  for (const auto& [name, t] : last.model_state) {
    if (name.rfind("fc.", 0) == 0) continue;
    ++frozen;
    if (name == "conv1.weight") {
      // Adapted in the trainer (a sum whose rounding may differ here); one training step of lr
      // 1e-3 would move it by about 1e-3.
      EXPECT_TRUE(t.allclose(file.at(name).sum(1, /*keepdim=*/true), 0, 1e-6)) << name;
      continue;
    }
    EXPECT_TRUE(t.equal(file.at(name))) << name << " moved";
  }
  EXPECT_EQ(frozen, 120);
  // Only fc's weight and bias were the optimizer's: 3 steps each.
  ASSERT_EQ(last.optimizer.param_groups.size(), 1u);
  EXPECT_EQ(last.optimizer.param_groups[0].params.size(), 2u);
  ASSERT_EQ(last.optimizer.state.size(), 2u);
  EXPECT_EQ(last.optimizer.state.begin()->second.step, 3);
}

}  // namespace
}  // namespace dl::test
