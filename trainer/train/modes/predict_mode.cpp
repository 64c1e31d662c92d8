// Predicting classes of image files (predict_mode.h). The files go through ImageFolder's reader
// and validation's transform (decoded as RGB, turned into the model's channels and size); each
// file's label is its own index, so the rows of a batch say which files they are.
#include "train/modes/predict_mode.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <optional>

#include "core/errors.h"
#include "core/files.h"
#include "data/file_list_source.h"
#include "data/image_folder.h"
#include "data/skip_reason.h"
#include "train/amp/train_step.h"
#include "train/modes/checkpoint_model.h"
#include "train/modes/inference_setup.h"
#include "train/monitor/confusion.h"

namespace dl::train {
namespace {

namespace fs = std::filesystem;

struct Row {
  std::vector<std::pair<int, float>> top;  // (class, probability), best first
  std::string error;
};

}  // namespace

std::vector<std::string> list_inputs(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st)) {
      throw UserError(exit_code::kMissing, "predict: " + path +
                                               ": no such file or directory; expected image files "
                                               "or folders of them");
    }
    if (!fs::is_directory(st)) {
      files.push_back(path);  // named explicitly: tried whatever its extension
      continue;
    }
    std::vector<std::string> found;
    const auto options = fs::directory_options::skip_permission_denied;
    for (fs::recursive_directory_iterator it(path, options, ec), end; !ec && it != end;
         it.increment(ec)) {
      std::error_code type_ec;
      if (it->is_regular_file(type_ec) && data::has_image_extension(it->path())) {
        found.push_back(it->path().string());
      }
    }
    if (ec)
      throw UserError(exit_code::kNoPermission, path + ": cannot list (" + ec.message() + ")");
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  if (files.empty()) {
    throw UserError(exit_code::kBadData,
                    "predict: no image files (" +
                        fmt::format("{}", fmt::join(data::image_extensions(), " ")) +
                        ") below the folders given");
  }
  return files;
}

namespace {

// Validation's transform: a photograph-trained model sees the centre crop it validated on; a model
// of an in-memory set (28x28 Fashion-MNIST, CIFAR) sees the whole image resized.
data::Transform predict_transform(const model::ModelInfo& info) {
  data::Transform transform;
  transform.out = {static_cast<int>(info.in_channels), static_cast<int>(info.image_size),
                   static_cast<int>(info.image_size)};
  transform.train = false;
  const bool photographs =
      info.data_kind == "image-folder" || info.data_kind == "csv" || info.data_kind == "shards";
  if (!photographs) transform.eval_crop_fraction = 1.0f;
  return transform;
}

// One row per file of `source` (its label is the file's index): the top `k` classes of each file
// that decoded, the reason for each that did not; nullopt where the loader gave neither.
std::vector<std::optional<Row>> predict_rows(Inference& inference, model::Model& net,
                                             data::SampleSource& source,
                                             const data::Transform& transform, int batch_size,
                                             int k, std::size_t files) {
  data::Loader loader(source, inference_loader(inference, transform, batch_size));
  torch::NoGradGuard no_grad;
  std::vector<std::optional<Row>> rows(files);
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    if (batch->n() == 0) continue;
    at::Tensor images, index;
    inference.feed->upload(std::move(*batch), &images, &index);
    const at::Tensor logits =
        forward_logits(net, images, inference.precision.precision, inference.device);
    const auto [prob, cls] = torch::softmax(logits, 1).topk(k, 1);
    const at::Tensor p = prob.cpu(), c = cls.cpu(), idx = index.cpu();
    for (std::int64_t r = 0; r < idx.size(0); ++r) {
      Row row;
      for (int j = 0; j < k; ++j) {
        row.top.emplace_back(static_cast<int>(c[r][j].item<std::int64_t>()), p[r][j].item<float>());
      }
      rows[static_cast<std::size_t>(idx[r].item<std::int64_t>())] = std::move(row);
    }
  }
  for (const data::SkippedFile& f : source.failures()) {
    Row row;
    row.error =
        std::string(data::skip_reason_name(f.reason)) + (f.detail.empty() ? "" : ": " + f.detail);
    rows[static_cast<std::size_t>(f.index)] = std::move(row);
  }
  return rows;
}

// The CSV: path, k (class, probability) pairs, error; `failed` counts the files not predicted.
std::string predictions_csv(const std::vector<std::string>& files,
                            const std::vector<std::optional<Row>>& rows,
                            const std::vector<std::string>& names, int k, std::size_t* failed) {
  std::string csv = "path";
  for (int j = 1; j <= k; ++j) csv += fmt::format(",class_{},prob_{}", j, j);
  csv += ",error\n";
  *failed = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    csv += csv_cell(files[i]);
    const std::optional<Row>& row = rows[i];
    if (!row || !row->error.empty()) {
      ++*failed;
      csv += std::string(static_cast<std::size_t>(2 * k), ',') + "," +
             csv_cell(row ? row->error : "undecodable");
    } else {
      for (const auto& [cls, prob] : row->top) {
        csv += "," + csv_cell(names[static_cast<std::size_t>(cls)]) + fmt::format(",{:.6f}", prob);
      }
      csv += ",";
    }
    csv += "\n";
  }
  return csv;
}

}  // namespace

int run_predict(const EvalConfig& config) {
  const model::CheckpointData checkpoint = read_checkpoint_file(config.checkpoint);
  if (!checkpoint.model_info) {
    throw UserError(exit_code::kBadData,
                    "--checkpoint " + config.checkpoint +
                        ": no model_info entry (written by an older dl-train); predict needs the "
                        "model and input it records: retrain, or use evaluate with --data");
  }
  const model::ModelInfo& info = *checkpoint.model_info;
  check_architecture(config.checkpoint, info, config.model_given ? config.train.model : "");
  const std::vector<std::string> names =
      checkpoint.classes.size() == static_cast<std::size_t>(info.num_classes)
          ? checkpoint.classes
          : data::index_names(static_cast<int>(info.num_classes));
  const std::vector<std::string> files = list_inputs(config.inputs);
  std::vector<data::LabelledFile> listed;
  for (std::size_t i = 0; i < files.size(); ++i) {
    listed.push_back({files[i], static_cast<std::int64_t>(i)});
  }
  data::ImageFileOptions image_options;
  image_options.max_pixels = config.train.max_image_pixels;
  std::unique_ptr<data::SampleSource> source;
  try {
    source =
        data::make_file_list_source(std::move(listed), "predict", "image files", image_options);
  } catch (const std::exception& e) {
    throw UserError(exit_code::kBadData, e.what());
  }
  Inference inference = start_inference(config.train, info);
  const std::unique_ptr<model::Model> net =
      restore_model(config.checkpoint, checkpoint, info, inference.device);
  const int k = std::min(config.top_k, static_cast<int>(info.num_classes));
  const std::vector<std::optional<Row>> rows = predict_rows(
      inference, *net, *source, predict_transform(info), config.train.batch_size, k, files.size());

  std::size_t failed = 0;
  const std::string csv = predictions_csv(files, rows, names, k, &failed);
  if (config.out.empty()) {
    std::cout << csv;
    std::cout.flush();
  } else {
    write_file_atomic(config.out, csv);
  }
  if (failed > 0) {
    spdlog::error(
        "predict: {} of {} file(s) could not be decoded (their rows name the reason); "
        "the other {} were predicted{}",
        failed, files.size(), files.size() - failed,
        config.out.empty() ? "" : " into " + config.out);
    return exit_code::kSomeUnreadable;
  }
  spdlog::info("predict: {} file(s) predicted with {}{}", files.size(), config.checkpoint,
               config.out.empty() ? "" : " into " + config.out);
  return exit_code::kOk;
}

}  // namespace dl::train
