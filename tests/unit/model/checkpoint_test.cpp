// Checkpoints: a full round trip, AdamW resuming exactly where it stopped, atomic writes, and
// one-line errors for missing, corrupt, truncated or mis-shaped files.
#include "model/checkpoint.h"
#include "model/adamw_state.h"
#include "model/model.h"

#include "support/build_paths.h"
#include "support/files.h"
#include "support/temp_dir.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace dl::test {
namespace {

using namespace dl::model;

struct Batch {
  at::Tensor input;
  at::Tensor target;
};

Batch fixed_batch() {
  at::manual_seed(7);
  return {at::randn({8, 1, 28, 28}), at::randint(0, 10, {8})};
}

void train_steps(Model& model, torch::optim::AdamW& optimizer, const Batch& batch, int steps) {
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    const auto loss = at::nll_loss(at::log_softmax(model.forward(batch.input), 1), batch.target);
    loss.backward();
    optimizer.step();
  }
}

torch::optim::AdamWOptions adamw_options() {
  return torch::optim::AdamWOptions(1e-2).weight_decay(0.05).betas({0.8, 0.95});
}

bool same_state(const NamedTensors& a, const NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || !at::equal(a[i].second, b[i].second)) return false;
  }
  return true;
}

CheckpointData sample_checkpoint(Model& model, torch::optim::AdamW& optimizer) {
  CheckpointData data;
  data.model_state = model.state();
  data.optimizer = export_adamw(optimizer, model.parameters());
  data.scaler.enabled = true;
  data.scaler.scale = 1024.0;
  data.scaler.growth_tracker = 17;
  data.epoch = 3;
  data.val_acc = 0.875;
  data.extra["best_val_acc"] = 0.9;
  data.extra["global_step"] = int64_t{1234};
  return data;
}

std::string error_of(const std::string& path) {
  try {
    load_checkpoint(path);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "no error";
}

TEST(Checkpoint, RoundTripKeepsEverything) {
  TempDir dir;
  auto model = make_model({"cnn", 1, 10, 28});
  torch::optim::AdamW optimizer(model->parameters(), adamw_options());
  train_steps(*model, optimizer, fixed_batch(), 2);
  const auto saved = sample_checkpoint(*model, optimizer);
  save_checkpoint(dir.file("last.pt"), saved);

  const auto loaded = load_checkpoint(dir.file("last.pt"));
  EXPECT_TRUE(same_state(loaded.model_state, saved.model_state));
  EXPECT_EQ(loaded.epoch, 3);
  EXPECT_DOUBLE_EQ(loaded.val_acc, 0.875);
  EXPECT_TRUE(loaded.scaler.enabled);
  EXPECT_DOUBLE_EQ(loaded.scaler.scale, 1024.0);
  EXPECT_EQ(loaded.scaler.growth_tracker, 17);
  EXPECT_EQ(loaded.scaler.growth_interval, 2000);
  EXPECT_EQ(std::get<double>(loaded.extra.at("best_val_acc")), 0.9);
  EXPECT_EQ(std::get<int64_t>(loaded.extra.at("global_step")), 1234);

  ASSERT_EQ(loaded.optimizer.param_groups.size(), 1u);
  const auto& group = loaded.optimizer.param_groups[0];
  EXPECT_DOUBLE_EQ(group.lr, 1e-2);
  EXPECT_DOUBLE_EQ(group.beta1, 0.8);
  EXPECT_DOUBLE_EQ(group.beta2, 0.95);
  EXPECT_DOUBLE_EQ(group.weight_decay, 0.05);
  EXPECT_EQ(group.params, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(loaded.optimizer.state.size(), 6u);
  for (const auto& [index, slot] : loaded.optimizer.state) {
    const auto& original = saved.optimizer.state.at(index);
    EXPECT_EQ(slot.step, 2);
    EXPECT_TRUE(at::equal(slot.exp_avg, original.exp_avg));
    EXPECT_TRUE(at::equal(slot.exp_avg_sq, original.exp_avg_sq));
  }
}

TEST(Checkpoint, DisabledScalerIsSavedEmptyAsInPython) {
  TempDir dir;
  CheckpointData data;
  data.model_state = make_model({"cnn", 1, 10, 28})->state();
  save_checkpoint(dir.file("a.pt"), data);
  EXPECT_FALSE(load_checkpoint(dir.file("a.pt")).scaler.enabled);
}

// The class names and model_info come back as written (a one-element list too: a grey model's
// statistics); a checkpoint without them loads with none.
TEST(Checkpoint, ClassesAndModelInfoRoundTripAndAreOptional) {
  TempDir dir;
  CheckpointData data;
  data.model_state = make_model({"cnn", 1, 3, 28})->state();
  save_checkpoint(dir.file("old.pt"), data);
  const CheckpointData old = load_checkpoint(dir.file("old.pt"));
  EXPECT_TRUE(old.classes.empty());
  EXPECT_FALSE(old.model_info.has_value());

  data.classes = {"T-shirt/top", "a,b", "Ankle boot"};
  ModelInfo info;
  info.name = "cnn";
  info.in_channels = 1;
  info.image_size = 28;
  info.num_classes = 3;
  info.data_kind = "idx";
  info.mean = {0.286};
  info.std = {0.353};
  data.model_info = info;
  save_checkpoint(dir.file("new.pt"), data);
  const CheckpointData loaded = load_checkpoint(dir.file("new.pt"));
  EXPECT_EQ(loaded.classes, data.classes);
  ASSERT_TRUE(loaded.model_info.has_value());
  EXPECT_EQ(loaded.model_info->name, "cnn");
  EXPECT_EQ(loaded.model_info->in_channels, 1);
  EXPECT_EQ(loaded.model_info->image_size, 28);
  EXPECT_EQ(loaded.model_info->num_classes, 3);
  EXPECT_EQ(loaded.model_info->data_kind, "idx");
  EXPECT_EQ(loaded.model_info->mean, (std::vector<double>{0.286}));
  EXPECT_EQ(loaded.model_info->std, (std::vector<double>{0.353}));
}

// Stopping after two steps, saving, and resuming in a fresh process-like setting (new model, new
// optimizer with other settings) must give the third step of an uninterrupted run, bit for bit.
TEST(Checkpoint, AdamWResumesExactly) {
  TempDir dir;
  const auto batch = fixed_batch();
  auto reference = make_model({"cnn", 1, 10, 28});
  const auto initial = make_model({"cnn", 1, 10, 28});
  initial->load_state(reference->state());

  torch::optim::AdamW uninterrupted(reference->parameters(), adamw_options());
  train_steps(*reference, uninterrupted, batch, 3);

  auto first = make_model({"cnn", 1, 10, 28});
  first->load_state(initial->state());
  torch::optim::AdamW first_optimizer(first->parameters(), adamw_options());
  train_steps(*first, first_optimizer, batch, 2);
  save_checkpoint(dir.file("last.pt"), sample_checkpoint(*first, first_optimizer));

  const auto loaded = load_checkpoint(dir.file("last.pt"));
  auto resumed = make_model({"cnn", 1, 10, 28});
  resumed->load_state(loaded.model_state);
  torch::optim::AdamW resumed_optimizer(resumed->parameters(), torch::optim::AdamWOptions(0.5));
  import_adamw(resumed_optimizer, resumed->parameters(), loaded.optimizer);
  train_steps(*resumed, resumed_optimizer, batch, 1);
  EXPECT_TRUE(same_state(resumed->state(), reference->state()));

  // Without the optimizer state the third step lands elsewhere: the check above has teeth.
  auto restarted = make_model({"cnn", 1, 10, 28});
  restarted->load_state(loaded.model_state);
  torch::optim::AdamW fresh(restarted->parameters(), adamw_options());
  train_steps(*restarted, fresh, batch, 1);
  EXPECT_FALSE(same_state(restarted->state(), reference->state()));
}

TEST(Checkpoint, ImportRefusesStateOfAnotherModel) {
  auto cnn = make_model({"cnn", 1, 10, 28});
  torch::optim::AdamW optimizer(cnn->parameters(), adamw_options());
  train_steps(*cnn, optimizer, fixed_batch(), 1);
  const auto state = export_adamw(optimizer, cnn->parameters());

  auto other = make_model({"cnn", 1, 10, 32});
  torch::optim::AdamW other_optimizer(other->parameters(), adamw_options());
  EXPECT_THROW(import_adamw(other_optimizer, other->parameters(), state), std::runtime_error);
}

TEST(Checkpoint, WritesAtomicallyWithoutLeftovers) {
  TempDir dir;
  CheckpointData data;
  data.model_state = make_model({"cnn", 1, 10, 28})->state();
  save_checkpoint(dir.file("last.pt"), data);
  data.epoch = 2;
  save_checkpoint(dir.file("last.pt"), data);  // replaces the first

  std::vector<std::string> files;
  for (const auto& item : std::filesystem::directory_iterator(dir.path())) {
    files.push_back(item.path().filename().string());
  }
  EXPECT_EQ(files, (std::vector<std::string>{"last.pt"}));
  EXPECT_EQ(load_checkpoint(dir.file("last.pt")).epoch, 2);
}

TEST(Checkpoint, ExistingCheckpointSurvivesAFailedWrite) {
  TempDir dir;
  CheckpointData data;
  data.model_state = make_model({"cnn", 1, 10, 28})->state();
  data.epoch = 1;
  const std::string path = dir.file("last.pt");
  save_checkpoint(path, data);

  // An unwritable directory; root writes anywhere, so there a directory squats on the
  // temporary file's name instead, which fails the write all the same.
  const bool root = ::geteuid() == 0;
  const std::string squatter = path + ".tmp." + std::to_string(::getpid());
  if (root) {
    std::filesystem::create_directory(squatter);
  } else {
    ::chmod(dir.path().c_str(), 0555);
  }
  data.epoch = 2;
  try {
    save_checkpoint(path, data);
    FAIL() << "expected the write to fail";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()).rfind("checkpoint " + path + ": cannot create ", 0), 0u)
        << error.what();
  }
  if (root) {
    std::filesystem::remove(squatter);
  } else {
    ::chmod(dir.path().c_str(), 0755);
  }
  EXPECT_EQ(load_checkpoint(path).epoch, 1);
}

TEST(Checkpoint, MissingFileIsOneClearLine) {
  EXPECT_EQ(error_of("/nonexistent/runs/x/last.pt"),
            "checkpoint /nonexistent/runs/x/last.pt: cannot read the file (No such file or "
            "directory); expected a file written by dl-train or torch.save");
}

TEST(Checkpoint, CorruptFileIsOneClearLine) {
  TempDir dir;
  write_file(dir.file("last.pt"), "this is not a checkpoint\n");
  const auto message = error_of(dir.file("last.pt"));
  EXPECT_EQ(message.rfind("checkpoint " + dir.file("last.pt") + ": not a readable checkpoint (", 0),
            0u)
      << message;
  EXPECT_NE(message.find("expected a file written by dl-train or torch.save"), std::string::npos);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(Checkpoint, TruncatedFileIsOneClearLine) {
  TempDir dir;
  CheckpointData data;
  data.model_state = make_model({"cnn", 1, 10, 28})->state();
  save_checkpoint(dir.file("last.pt"), data);
  std::filesystem::resize_file(dir.file("last.pt"),
                               std::filesystem::file_size(dir.file("last.pt")) / 2);
  const auto message = error_of(dir.file("last.pt"));
  EXPECT_EQ(message.rfind("checkpoint " + dir.file("last.pt") + ": not a readable checkpoint (", 0),
            0u)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(Checkpoint, WrongLayoutNamesTheEntry) {
  TempDir dir;
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("epoch", std::string("three"));
  auto write = [&](const std::string& name) {
    const auto bytes = torch::jit::pickle_save(dict);
    std::ofstream(dir.file(name), std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return dir.file(name);
  };
  const auto no_model = write("a.pt");
  EXPECT_EQ(error_of(no_model), "checkpoint " + no_model +
                                    ": no 'model_state_dict' entry; expected a file written by "
                                    "dl-train or torch.save");

  c10::impl::GenericDict state(c10::StringType::get(), c10::AnyType::get());
  dict.insert("model_state_dict", state);
  dict.insert("val_acc", 0.5);
  const auto bad_epoch = write("b.pt");
  EXPECT_EQ(error_of(bad_epoch), "checkpoint " + bad_epoch +
                                     ": 'epoch' is a String, not an int; expected a file written "
                                     "by dl-train or torch.save");
}

// The refusal of tests/fuzz/corpus/checkpoint/<name> read as last.pt ("parsed" when it reads).
std::string refusal_of_corpus_input(const std::string& name) {
  const std::string file =
      read_file(std::string(dl::test::kSourceDir) + "/tests/fuzz/corpus/checkpoint/" + name);
  EXPECT_FALSE(file.empty()) << name;
  try {
    parse_checkpoint(std::vector<char>(file.begin(), file.end()), "last.pt");
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "parsed";
}

// Found by tests/fuzz/checkpoint_fuzz: a 3 KB file whose pickle gives a string a length of 1.9 GB
// made LibTorch's unpickler allocate and zero that much before noticing the end of the data.
TEST(Checkpoint, DamagedStringLengthIsRefusedBeforeUnpickling) {
  const std::string message = refusal_of_corpus_input("oom-string-length");
  EXPECT_EQ(message.rfind("checkpoint last.pt: not a readable checkpoint (truncated or corrupt: "
                          "a string of 1896493686 bytes at byte ",
                          0),
            0u)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// Found by tests/fuzz/checkpoint_fuzz: a pickle whose NEWOBJ comes before anything is on the stack
// made LibTorch 1.13's unpickler read below the stack's start (a SEGV, not an exception).
TEST(Checkpoint, AnOpcodeOnAnEmptyStackIsRefusedBeforeUnpickling) {
  const std::string message = refusal_of_corpus_input("crash-newobj-empty-stack");
  EXPECT_EQ(message,
            "checkpoint last.pt: not a readable checkpoint (truncated or corrupt: an opcode that "
            "takes 2 value(s) from a stack holding 0 (since the last MARK) at byte 2 of the "
            "77-byte pickle); expected a file written by dl-train or torch.save");
}

// Found by tests/fuzz/checkpoint_fuzz: a pickle whose first memo store (LONG_BINPUT) was numbered
// 993309745 made LibTorch 1.13's unpickler reserve twice that many memo slots, 30 GiB, first.
TEST(Checkpoint, AMemoStoreNumberedOutOfOrderIsRefusedBeforeUnpickling) {
  const std::string message = refusal_of_corpus_input("oom-memo-number");
  EXPECT_EQ(message.rfind("checkpoint last.pt: not a readable checkpoint (truncated or corrupt: a "
                          "memo store numbered 993309745 after 0 store(s) (picklers number them "
                          "in order) at byte 3 of the ",
                          0),
            0u)
      << message;
}

// Found by tests/fuzz/checkpoint_fuzz: a checkpoint whose optimizer step is a QInt8 tensor made
// LibTorch assert inside item() ("cannot call dequantize on UnknownQuantizer"), and the c10::Error
// escaped the reader instead of its one-line refusal.
TEST(Checkpoint, QuantizedStepTensorIsRefusedInOneLine) {
  const std::string message = refusal_of_corpus_input("crash-quantized-step");
  EXPECT_EQ(message.rfind("checkpoint last.pt: ", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(Checkpoint, TensorsThatAreNotDenseRealNumbersAreRefused) {
  TempDir dir;
  c10::impl::GenericDict state(c10::StringType::get(), c10::AnyType::get());
  state.insert("w", at::zeros({2}, at::kComplexFloat));
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("model_state_dict", state);
  dict.insert("epoch", int64_t{1});
  dict.insert("val_acc", 0.5);
  const auto bytes = torch::jit::pickle_save(dict);
  try {
    parse_checkpoint(bytes, "c.pt");
    FAIL() << "parsed";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "checkpoint c.pt: 'model_state_dict.w' is a ComplexFloat tensor, not a dense tensor "
              "of real numbers; expected a file written by dl-train or torch.save");
  }
}

}  // namespace
}  // namespace dl::test
