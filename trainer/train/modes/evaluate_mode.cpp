// Evaluating a checkpoint (evaluate_mode.h). Everything that can be refused (the checkpoint, the
// model, the data and its classes, the split) is checked before the output directory is made.
#include "train/modes/evaluate_mode.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "core/errors.h"
#include "core/files.h"
#include "core/json.h"
#include "data/skip_reason.h"
#include "train/amp/train_step.h"
#include "train/modes/checkpoint_model.h"
#include "train/modes/inference_setup.h"
#include "train/monitor/confusion.h"
#include "train/monitor/prediction_counter.h"
#include "train/run/data_setup.h"
#include "train/run/joined_source.h"
#include "train/run/model_setup.h"

namespace dl::train {
namespace {

// The data's classes against the checkpoint's: the same names in the same order (or, for a
// checkpoint without names, the same count).
std::vector<std::string> agree_on_classes(const EvalConfig& config, const DataSetup& data,
                                          const model::CheckpointData& checkpoint,
                                          const model::ModelInfo& info) {
  const std::vector<std::string> data_names = data.train->class_names();
  if (!checkpoint.classes.empty()) {
    if (data_names != checkpoint.classes) {
      throw UserError(exit_code::kMismatch, "data " + data.location + " has " +
                                                std::to_string(data_names.size()) + " classes (" +
                                                name_list(data_names) + ") but --checkpoint " +
                                                config.checkpoint + " was trained on " +
                                                std::to_string(checkpoint.classes.size()) + " (" +
                                                name_list(checkpoint.classes) + ")");
    }
    return checkpoint.classes;
  }
  if (static_cast<std::int64_t>(data_names.size()) != info.num_classes) {
    throw UserError(exit_code::kMismatch, "data " + data.location + " has " +
                                              std::to_string(data_names.size()) +
                                              " classes but --checkpoint " + config.checkpoint +
                                              " predicts " + std::to_string(info.num_classes));
  }
  return data_names;
}

struct Split {
  std::string name;
  std::shared_ptr<const data::SampleSource> source;
};

// IDX and CIFAR-10 come with a test split (t10k, test_batch), which training validates on;
// folders and manifests have none: their validation part is held out of the whole.
Split choose_split(const EvalConfig& config, DataSetup& data) {
  const bool has_test = data.kind == "idx" || data.kind == "cifar10";
  const std::string name = config.split.empty() ? (has_test ? "test" : "all") : config.split;
  std::shared_ptr<const data::SampleSource> train(std::move(data.train));
  std::shared_ptr<const data::SampleSource> val(std::move(data.val));
  if (name == "test" && !has_test) {
    throw UserError(exit_code::kUsage, "--split test: data " + data.location +
                                           " has no test split (an IDX or CIFAR-10 set has "
                                           "one); use --split val or --split all");
  }
  if (name == "all") return {name, std::make_shared<JoinedSource>(train, val)};
  return {name, val};
}

void write_summary(const std::string& path, const EvalConfig& config, const std::string& data,
                   const Split& split, const Confusion& m, double loss, std::int64_t top5,
                   const std::vector<std::string>& names, std::int64_t skipped) {
  JsonWriter w;
  w.begin_object();
  w.key("checkpoint").value(config.checkpoint);
  w.key("data").value(data);
  w.key("split").value(split.name);
  w.key("samples").value(m.total());
  w.key("skipped").value(skipped);
  w.key("correct").value(m.correct());
  w.key("top1").value(m.top1());
  w.key("top5");
  if (m.classes() >= 5 && m.total() > 0) {
    w.value(static_cast<double>(top5) / static_cast<double>(m.total()));
  } else {
    w.null();
  }
  w.key("loss").value(loss);
  w.key("per_class").begin_array();
  const std::vector<double> accuracy = m.per_class_accuracy();
  for (int k = 0; k < m.classes(); ++k) {
    w.begin_object();
    w.key("class").value(names[static_cast<std::size_t>(k)]);
    w.key("samples").value(m.row_total(k));
    w.key("accuracy").value(accuracy[static_cast<std::size_t>(k)]);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  write_file_atomic(path, w.str());
}

}  // namespace

int run_evaluate(const EvalConfig& config) {
  const model::CheckpointData checkpoint = read_checkpoint_file(config.checkpoint);
  if (checkpoint.model_info) {
    check_architecture(config.checkpoint, *checkpoint.model_info,
                       config.model_given ? config.train.model : "");
  }
  TrainConfig data_config = config.train;
  if (checkpoint.model_info) {
    data_config.image_size = static_cast<int>(checkpoint.model_info->image_size);
  }
  DataSetup data = setup_data(data_config);
  // A checkpoint from before model_info: --model and the data say what the model is.
  const model::ModelInfo info = checkpoint.model_info
                                    ? *checkpoint.model_info
                                    : describe_model(model_spec(config.train, data), data);
  const std::vector<std::string> names = agree_on_classes(config, data, checkpoint, info);
  data::Transform transform = data.eval_transform;
  transform.out = {static_cast<int>(info.in_channels), static_cast<int>(info.image_size),
                   static_cast<int>(info.image_size)};
  const std::string location = data.location;
  const Split split = choose_split(config, data);

  Inference inference = start_inference(config.train, info);
  const std::unique_ptr<model::Model> net =
      restore_model(config.checkpoint, checkpoint, info, inference.device);
  const std::string out =
      !config.out.empty()
          ? config.out
          : (std::filesystem::path(config.checkpoint).parent_path() / ("eval-" + split.name))
                .string();
  spdlog::info("evaluate: {} ({} after epoch {}) on the {} split of {}: {} samples, {} on {}, {}",
               config.checkpoint, info.name, checkpoint.epoch, split.name, location,
               split.source->size(), precision_name(inference.precision.precision),
               inference.device.str(),
               names.size() == 1 ? "1 class" : fmt::format("{} classes", names.size()));

  data::Loader loader(*split.source,
                      inference_loader(inference, transform, config.train.batch_size));
  torch::NoGradGuard no_grad;
  const int classes = static_cast<int>(names.size());
  PredictionCounter counter(classes, inference.device, classes >= 5 ? 5 : 0);
  at::Tensor loss_sum =
      torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(inference.device));
  data::SkipCounts skipped{};
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    data::add(skipped, batch->skip_counts());
    if (batch->n() == 0) continue;
    at::Tensor images, labels;
    inference.feed->upload(std::move(*batch), &images, &labels);
    const at::Tensor logits =
        forward_logits(*net, images, inference.precision.precision, inference.device);
    loss_sum +=
        torch::nn::functional::cross_entropy(
            logits, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
            .to(torch::kDouble);
    counter.add(logits, labels);
  }
  const Confusion m = counter.read(nullptr);
  std::int64_t skipped_total = 0;
  for (const std::int64_t k : skipped) skipped_total += k;
  if (skipped_total > 0) {
    spdlog::warn("{} sample(s) could not be decoded and were left out: {}", skipped_total,
                 data::describe_skips(skipped, split.source->failures()));
  }
  const double loss =
      m.total() > 0 ? loss_sum.item<double>() / static_cast<double>(m.total()) : 0.0;

  std::cout << fmt::format("top-1 {:.2f}% ({}/{})", 100.0 * m.top1(), m.correct(), m.total());
  if (classes >= 5 && m.total() > 0) {
    std::cout << fmt::format(", top-5 {:.2f}%", 100.0 * static_cast<double>(counter.top_k_hits()) /
                                                    static_cast<double>(m.total()));
  }
  std::cout << fmt::format(", loss {:.4f}\nper class:\n", loss);
  const std::vector<double> accuracy = m.per_class_accuracy();
  for (int k = 0; k < classes; ++k) {
    const double a = accuracy[static_cast<std::size_t>(k)];
    std::cout << fmt::format("  {:<16} {:>7} ({}/{})\n", names[static_cast<std::size_t>(k)],
                             std::isnan(a) ? "-" : fmt::format("{:.2f}%", 100.0 * a), m.at(k, k),
                             m.row_total(k));
  }
  std::cout.flush();

  make_dirs(out);
  write_file_atomic(out + "/confusion.csv", confusion_csv(m, names));
  write_file_atomic(out + "/per_class.csv", per_class_csv(m, names));
  write_summary(out + "/summary.json", config, location, split, m, loss, counter.top_k_hits(),
                names, skipped_total);
  spdlog::info("wrote {}/confusion.csv, per_class.csv and summary.json", out);
  return exit_code::kOk;
}

}  // namespace dl::train
