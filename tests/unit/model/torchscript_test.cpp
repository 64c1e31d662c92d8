// TorchScript models: a module scripted and saved (here from C++, so that no Python is needed)
// loads through make_model, trains, exposes PyTorch names; bad files give one clear line.
#include "model/checkpoint.h"
#include "model/model.h"

#include "support/files.h"
#include "support/temp_dir.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/optim/adamw.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace dl::test {
namespace {

using namespace dl::model;

// A linear layer in a wrapper with a buffer: names "scale", "fc.weight", "fc.bias".
std::string save_scripted_model(const TempDir& dir) {
  torch::jit::Module fc("Linear");
  // As nn.Parameter does in Python; a frozen parameter (requires_grad false) is not trained.
  fc.register_parameter("weight", (at::randn({3, 4}) * 0.1).requires_grad_(), /*is_buffer=*/false);
  fc.register_parameter("bias", at::zeros({3}).requires_grad_(), /*is_buffer=*/false);
  fc.define(R"(
def forward(self, x):
    return torch.matmul(x, self.weight.t()) + self.bias
)");
  torch::jit::Module net("Net");
  net.register_buffer("scale", at::ones({1}));
  net.register_module("fc", fc);
  net.define(R"(
def forward(self, x):
    return self.fc.forward(x) * self.scale
)");
  const auto path = dir.file("net.pt");
  net.save(path);
  return path;
}

std::string invalid_argument_of(const std::string& name) {
  try {
    make_model({name, 1, 10, 28});
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "no error";
}

TEST(TorchScript, LoadsTrainsAndNamesLikePyTorch) {
  TempDir dir;
  const auto path = save_scripted_model(dir);
  auto model = make_model({path, 1, 10, 28});
  EXPECT_EQ(model->name(), path);

  std::vector<std::string> names;
  for (const auto& entry : model->state()) names.push_back(entry.first);
  EXPECT_EQ(names, (std::vector<std::string>{"scale", "fc.weight", "fc.bias"}));
  ASSERT_EQ(model->parameters().size(), 2u);

  const auto input = at::randn({16, 4});
  const auto target = at::randint(0, 3, {16});
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(0.05));
  const auto loss_of = [&] {
    return at::nll_loss(at::log_softmax(model->forward(input), 1), target);
  };
  const double first = loss_of().item<double>();
  for (int step = 0; step < 20; ++step) {
    optimizer.zero_grad();
    loss_of().backward();
    optimizer.step();
  }
  EXPECT_LT(loss_of().item<double>(), first);

  // The state goes into a fresh copy of the module.
  auto copy = make_model({path, 1, 10, 28});
  copy->load_state(model->state());
  copy->set_training(false);
  model->set_training(false);
  EXPECT_TRUE(at::equal(copy->forward(input), model->forward(input)));
}

TEST(TorchScript, MissingFileIsOneClearLine) {
  EXPECT_EQ(invalid_argument_of("/nonexistent/net.pt"),
            "model '/nonexistent/net.pt': cannot read the file (No such file or directory); "
            "expected a TorchScript file saved with torch.jit.save");
}

TEST(TorchScript, CheckpointIsNotAModel) {
  TempDir dir;
  CheckpointData data;
  data.model_state = make_model({"cnn", 1, 10, 28})->state();
  save_checkpoint(dir.file("last.pt"), data);
  const auto message = invalid_argument_of(dir.file("last.pt"));
  EXPECT_EQ(message.rfind("model '" + dir.file("last.pt") + "': not a TorchScript archive (", 0),
            0u)
      << message;
  EXPECT_NE(message.find("expected a file saved with torch.jit.script(model).save(path)"),
            std::string::npos);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(TorchScript, GarbageIsNotAModel) {
  TempDir dir;
  write_file(dir.file("junk.pt"), "junk");
  const auto message = invalid_argument_of(dir.file("junk.pt"));
  EXPECT_EQ(message.rfind("model '" + dir.file("junk.pt") + "': not a TorchScript archive (", 0),
            0u)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

}  // namespace
}  // namespace dl::test
