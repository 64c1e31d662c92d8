// Checkpoints: CheckpointData <-> the nested dict that Python's torch.save writes for a training
// state, pickled with LibTorch's pickler (the format torch.load reads) and written atomically.
#include "model/checkpoint.h"

#include "core/files.h"
#include "core/text.h"
#include "model/bytes_adapter.h"
#include "model/libtorch_private.h"
#include "model/pickle_scan.h"
#include "model/zip_scan.h"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/import_read.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>
#include <variant>
#include <vector>

namespace dl::model {
namespace {

using c10::IValue;
using c10::impl::GenericDict;

constexpr const char* kExpected = "expected a file written by dl-train or torch.save";

// --- writing ---------------------------------------------------------------------------------

// Dict values are of mixed types, as in Python.
GenericDict make_dict(const c10::TypePtr& key_type) {
  return GenericDict(key_type, c10::AnyType::get());
}

// Detached (no requires_grad in the file) and on the CPU, so any machine can load it.
at::Tensor storable(const at::Tensor& tensor) {
  return tensor.detach().to(at::kCPU);
}

IValue encode_model_state(const NamedTensors& state) {
  auto dict = make_dict(c10::StringType::get());
  for (const auto& [name, tensor] : state) dict.insert(name, storable(tensor));
  return dict;
}

IValue encode_optimizer(const OptimizerState& optimizer) {
  auto state = make_dict(c10::IntType::get());
  for (const auto& [index, slot] : optimizer.state) {
    auto entry = make_dict(c10::StringType::get());
    // Python 1.13's AdamW keeps `step` as a float tensor (and converts ints when loading).
    entry.insert("step", at::scalar_tensor(static_cast<double>(slot.step), at::kFloat));
    entry.insert("exp_avg", storable(slot.exp_avg));
    entry.insert("exp_avg_sq", storable(slot.exp_avg_sq));
    if (slot.max_exp_avg_sq.defined()) {
      entry.insert("max_exp_avg_sq", storable(slot.max_exp_avg_sq));
    }
    state.insert(index, entry);
  }
  c10::impl::GenericList groups(c10::AnyType::get());
  for (const auto& group : optimizer.param_groups) {
    auto entry = make_dict(c10::StringType::get());
    entry.insert("lr", group.lr);
    entry.insert("betas", c10::ivalue::Tuple::create({group.beta1, group.beta2}));
    entry.insert("eps", group.eps);
    entry.insert("weight_decay", group.weight_decay);
    entry.insert("amsgrad", group.amsgrad);
    // The flags of Python's AdamW that LibTorch does not have, at their defaults.
    entry.insert("maximize", false);
    entry.insert("foreach", IValue());
    entry.insert("capturable", false);
    entry.insert("params", c10::List<int64_t>(group.params));
    groups.push_back(entry);
  }
  auto dict = make_dict(c10::StringType::get());
  dict.insert("state", state);
  dict.insert("param_groups", groups);
  return dict;
}

IValue encode_scaler(const ScalerState& scaler) {
  auto dict = make_dict(c10::StringType::get());
  // Python's GradScaler.state_dict() of a disabled scaler is empty.
  if (!scaler.enabled) return dict;
  dict.insert("scale", scaler.scale);
  dict.insert("growth_factor", scaler.growth_factor);
  dict.insert("backoff_factor", scaler.backoff_factor);
  dict.insert("growth_interval", scaler.growth_interval);
  dict.insert("_growth_tracker", scaler.growth_tracker);
  return dict;
}

IValue encode_model_info(const ModelInfo& info) {
  auto dict = make_dict(c10::StringType::get());
  dict.insert("name", info.name);
  dict.insert("in_channels", info.in_channels);
  dict.insert("image_size", info.image_size);
  dict.insert("num_classes", info.num_classes);
  dict.insert("data_kind", info.data_kind);
  dict.insert("mean", c10::List<double>(info.mean));
  dict.insert("std", c10::List<double>(info.std));
  return dict;
}

IValue encode(const CheckpointData& data) {
  auto extra = make_dict(c10::StringType::get());
  for (const auto& [name, value] : data.extra) {
    if (const auto* integer = std::get_if<int64_t>(&value)) {
      extra.insert(name, *integer);
    } else {
      extra.insert(name, std::get<double>(value));
    }
  }
  auto dict = make_dict(c10::StringType::get());
  dict.insert("model_state_dict", encode_model_state(data.model_state));
  dict.insert("optimizer_state_dict", encode_optimizer(data.optimizer));
  dict.insert("scaler_state_dict", encode_scaler(data.scaler));
  dict.insert("epoch", data.epoch);
  dict.insert("val_acc", data.val_acc);
  dict.insert("extra", extra);
  if (!data.classes.empty()) dict.insert("classes", c10::List<std::string>(data.classes));
  if (data.model_info) dict.insert("model_info", encode_model_info(*data.model_info));
  return dict;
}

// --- reading ---------------------------------------------------------------------------------

// Validates the unpickled value; every complaint names the file and the entry.
class Decoder {
 public:
  explicit Decoder(std::string path) : path_(std::move(path)) {}

  CheckpointData decode(const IValue& root) const {
    const auto top = dict(root, "the file");
    CheckpointData data;
    data.model_state = decode_model_state(required(top, "model_state_dict", ""));
    if (const auto optimizer = optional(top, "optimizer_state_dict")) {
      data.optimizer = decode_optimizer(*optimizer);
    }
    if (const auto scaler = optional(top, "scaler_state_dict")) {
      data.scaler = decode_scaler(*scaler);
    }
    data.epoch = integer(required(top, "epoch", ""), "epoch");
    data.val_acc = real(required(top, "val_acc", ""), "val_acc");
    if (const auto extra = optional(top, "extra")) {
      for (const auto& item : dict(*extra, "extra")) {
        const std::string name = key_string(item.key(), "extra");
        const IValue value = item.value();
        if (value.isInt() || value.isBool()) {
          data.extra.emplace(name, integer(value, "extra." + name));
        } else {
          data.extra.emplace(name, real(value, "extra." + name));
        }
      }
    }
    if (const auto classes = optional(top, "classes")) {
      data.classes = strings(*classes, "classes");
    }
    if (const auto info = optional(top, "model_info")) data.model_info = decode_model_info(*info);
    return data;
  }

 private:
  std::vector<std::string> strings(const IValue& value, const std::string& where) const {
    if (!value.isList()) wrong_type(value, where, "a list");
    std::vector<std::string> out;
    for (const IValue& item : value.toListRef()) {
      if (!item.isString()) wrong_type(item, where + "[]", "a str");
      out.push_back(item.toStringRef());
    }
    return out;
  }

  std::vector<double> reals(const IValue& value, const std::string& where) const {
    if (!value.isList()) wrong_type(value, where, "a list");
    std::vector<double> out;
    for (const IValue& item : value.toListRef()) out.push_back(real(item, where + "[]"));
    return out;
  }

  std::string text(const IValue& value, const std::string& where) const {
    if (!value.isString()) wrong_type(value, where, "a str");
    return value.toStringRef();
  }

  ModelInfo decode_model_info(const IValue& value) const {
    const auto entry = dict(value, "model_info");
    const std::string where = "model_info";
    ModelInfo info;
    info.name = text(required(entry, "name", where), where + ".name");
    info.in_channels = integer(required(entry, "in_channels", where), where + ".in_channels");
    info.image_size = integer(required(entry, "image_size", where), where + ".image_size");
    info.num_classes = integer(required(entry, "num_classes", where), where + ".num_classes");
    if (const auto kind = optional(entry, "data_kind")) {
      info.data_kind = text(*kind, where + ".data_kind");
    }
    if (const auto mean = optional(entry, "mean")) info.mean = reals(*mean, where + ".mean");
    if (const auto sd = optional(entry, "std")) info.std = reals(*sd, where + ".std");
    if (info.in_channels < 1 || info.image_size < 1 || info.num_classes < 1) {
      fail("'model_info' has a channel count, image size or class count below 1");
    }
    return info;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("checkpoint " + path_ + ": " + what + "; " + kExpected);
  }

  [[noreturn]] void wrong_type(const IValue& value, const std::string& where,
                               const char* expected) const {
    fail("'" + where + "' is " +
         (value.isNone() ? std::string("None") : "a " + std::string(value.tagKind())) + ", not " +
         expected);
  }

  GenericDict dict(const IValue& value, const std::string& where) const {
    if (!value.isGenericDict()) wrong_type(value, where, "a dict");
    return value.toGenericDict();
  }

  // Dict entries come out by value (IValues are reference-counted handles: cheap to copy).
  std::optional<IValue> optional(const GenericDict& dict, const std::string& key) const {
    const auto found = dict.find(key);
    if (found == dict.end()) return std::nullopt;
    return found->value();
  }

  IValue required(const GenericDict& dict, const std::string& key,
                  const std::string& parent) const {
    auto value = optional(dict, key);
    if (!value) fail("no '" + (parent.empty() ? key : parent + "." + key) + "' entry");
    return *value;
  }

  std::string key_string(const IValue& key, const std::string& where) const {
    if (!key.isString()) wrong_type(key, where + " key", "a str");
    return key.toStringRef();
  }

  int64_t integer(const IValue& value, const std::string& where) const {
    if (value.isInt()) return value.toInt();
    if (value.isBool()) return value.toBool() ? 1 : 0;
    wrong_type(value, where, "an int");
  }

  double real(const IValue& value, const std::string& where) const {
    if (value.isDouble()) return value.toDouble();
    if (value.isInt()) return static_cast<double>(value.toInt());
    wrong_type(value, where, "a float");
  }

  bool boolean(const IValue& value, const std::string& where) const {
    if (!value.isBool()) wrong_type(value, where, "a bool");
    return value.toBool();
  }

  // A dense tensor of real numbers: what dl-train's models and AdamW hold. A quantized, complex
  // or sparse one (a pickle may name any storage type) would reach LibTorch calls that assert.
  at::Tensor tensor(const IValue& value, const std::string& where) const {
    if (!value.isTensor()) wrong_type(value, where, "a tensor");
    const at::Tensor t = value.toTensor();
    if (t.is_quantized() || t.is_complex() || t.layout() != at::kStrided) {
      fail("'" + where + "' is a " + std::string(c10::toString(t.scalar_type())) + " " +
           (t.layout() != at::kStrided ? "sparse " : "") +
           "tensor, not a dense tensor of real numbers");
    }
    return t;
  }

  NamedTensors decode_model_state(const IValue& value) const {
    NamedTensors state;
    for (const auto& item : dict(value, "model_state_dict")) {
      const std::string name = key_string(item.key(), "model_state_dict");
      state.emplace_back(name, tensor(item.value(), "model_state_dict." + name));
    }
    return state;
  }

  // Python saves `step` as a float tensor (1.13) or an int (older); LibTorch counts in int64.
  int64_t step(const IValue& value, const std::string& where) const {
    if (value.isTensor() && value.toTensor().numel() == 1) {
      return static_cast<int64_t>(std::llround(tensor(value, where).item<double>()));
    }
    if (value.isDouble()) return static_cast<int64_t>(std::llround(value.toDouble()));
    return integer(value, where);
  }

  OptimizerState decode_optimizer(const IValue& value) const {
    const auto top = dict(value, "optimizer_state_dict");
    OptimizerState optimizer;
    for (const auto& item :
         dict(required(top, "state", "optimizer_state_dict"), "optimizer_state_dict.state")) {
      if (!item.key().isInt()) wrong_type(item.key(), "optimizer_state_dict.state key", "an int");
      const int64_t index = item.key().toInt();
      const std::string where = "optimizer_state_dict.state." + std::to_string(index);
      const auto entry = dict(item.value(), where);
      ParamState slot;
      slot.step = step(required(entry, "step", where), where + ".step");
      slot.exp_avg = tensor(required(entry, "exp_avg", where), where + ".exp_avg");
      slot.exp_avg_sq = tensor(required(entry, "exp_avg_sq", where), where + ".exp_avg_sq");
      if (const auto max = optional(entry, "max_exp_avg_sq")) {
        slot.max_exp_avg_sq = tensor(*max, where + ".max_exp_avg_sq");
      }
      optimizer.state.emplace(index, std::move(slot));
    }
    const IValue groups = required(top, "param_groups", "optimizer_state_dict");
    if (!groups.isList()) wrong_type(groups, "optimizer_state_dict.param_groups", "a list");
    for (const IValue& item : groups.toListRef()) {
      const std::string where = "optimizer_state_dict.param_groups[" +
                                std::to_string(optimizer.param_groups.size()) + "]";
      const auto entry = dict(item, where);
      ParamGroup group;
      group.lr = real(required(entry, "lr", where), where + ".lr");
      const IValue betas = required(entry, "betas", where);
      std::vector<IValue> pair;
      if (betas.isTuple()) pair = betas.toTupleRef().elements().vec();
      if (betas.isList()) pair = betas.toListRef().vec();
      if (pair.size() != 2) wrong_type(betas, where + ".betas", "a pair (beta1, beta2)");
      group.beta1 = real(pair[0], where + ".betas[0]");
      group.beta2 = real(pair[1], where + ".betas[1]");
      group.eps = real(required(entry, "eps", where), where + ".eps");
      group.weight_decay = real(required(entry, "weight_decay", where), where + ".weight_decay");
      if (const auto amsgrad = optional(entry, "amsgrad")) {
        group.amsgrad = boolean(*amsgrad, where + ".amsgrad");
      }
      const IValue params = required(entry, "params", where);
      if (!params.isList()) wrong_type(params, where + ".params", "a list");
      for (const IValue& index : params.toListRef()) {
        group.params.push_back(integer(index, where + ".params[]"));
      }
      optimizer.param_groups.push_back(std::move(group));
    }
    return optimizer;
  }

  ScalerState decode_scaler(const IValue& value) const {
    const auto entry = dict(value, "scaler_state_dict");
    ScalerState scaler;
    if (entry.empty()) return scaler;  // saved from a disabled scaler
    const std::string where = "scaler_state_dict";
    scaler.enabled = true;
    scaler.scale = real(required(entry, "scale", where), where + ".scale");
    scaler.growth_factor = real(required(entry, "growth_factor", where), where + ".growth_factor");
    scaler.backoff_factor =
        real(required(entry, "backoff_factor", where), where + ".backoff_factor");
    scaler.growth_interval =
        integer(required(entry, "growth_interval", where), where + ".growth_interval");
    scaler.growth_tracker =
        integer(required(entry, "_growth_tracker", where), where + "._growth_tracker");
    return scaler;
  }

  std::string path_;
};

// LibTorch 1.13's unpickler lacks the APPEND and SETITEM opcodes (Python's pickle of a one-element
// list or dict, such as param_groups with one group), and every version reads an OrderedDict (a
// Python state_dict()) as None. It throws a plain c10::Error for both: its words tell them apart
// (libtorch_private.h, point 2).
bool python_only_pickle(const std::string& reason) {
  return reason.find(libtorch_private::kUnknownOpcode) != std::string::npos ||
         reason.find(libtorch_private::kOrderedDictAsNone) != std::string::npos;
}

std::string unreadable(const std::string& path, const std::string& reason) {
  if (python_only_pickle(reason)) {
    return "checkpoint " + path + ": written by Python in a form LibTorch cannot read (" + reason +
           "; it needs plain dicts and no one-element lists or dicts); " + kExpected;
  }
  return "checkpoint " + path + ": not a readable checkpoint (truncated or corrupt: " + reason +
         "); " + kExpected;
}

// The archive's root value, its zip directory read once: data.pkl is walked for what must not reach
// the unpickler (pickle_scan.h; `flaw` says why, and nothing is unpickled), then unpickled with its
// tensors as torch::jit::pickle_load does, on this reader (libtorch_private.h, point 3).
IValue unpickle_archive(const std::vector<char>& bytes, std::string& flaw) {
  caffe2::serialize::PyTorchStreamReader archive(std::make_shared<BytesAdapter>(bytes));
  {
    const auto [data, size] = archive.getRecord("data.pkl");
    flaw = pickle_flaw(static_cast<const std::uint8_t*>(data.get()), size);
  }
  if (!flaw.empty()) return IValue();
  return torch::jit::readArchiveAndTensors("data", /*pickle_prefix=*/"", /*tensor_prefix=*/"",
                                           /*type_resolver=*/c10::nullopt,
                                           /*obj_loader=*/c10::nullopt, /*device=*/c10::nullopt,
                                           archive);
}

}  // namespace

void save_checkpoint(const std::string& path, const CheckpointData& data) {
  try {
    const std::vector<char> bytes = torch::jit::pickle_save(encode(data));
    write_file_atomic(path, std::string_view(bytes.data(), bytes.size()));
  } catch (const c10::Error& error) {
    throw std::runtime_error("checkpoint " + path + ": cannot serialise (" +
                             first_line(error.what_without_backtrace()) + ")");
  } catch (const std::runtime_error& error) {
    throw std::runtime_error("checkpoint " + path + ": " + error.what());
  }
}

CheckpointData load_checkpoint(const std::string& path) {
  std::vector<char> bytes;
  try {
    bytes = read_whole_file(path);
  } catch (const std::runtime_error& error) {
    throw std::runtime_error("checkpoint " + path + ": cannot read the file (" + error.what() +
                             "); " + kExpected);
  }
  return parse_checkpoint(bytes, path);
}

CheckpointData parse_checkpoint(const std::vector<char>& bytes, const std::string& path) {
  const ZipScan zip = scan_zip_records(bytes);
  if (zip.verdict == ZipScan::Verdict::kBomb) {
    throw std::runtime_error("checkpoint " + path + ": " + zip.why + "; " + kExpected);
  }
  if (zip.verdict == ZipScan::Verdict::kCorrupt)
    throw std::runtime_error(unreadable(path, zip.why));
  IValue root;
  std::string flaw;
  try {
    root = unpickle_archive(bytes, flaw);
  } catch (const c10::Error& error) {
    throw std::runtime_error(unreadable(path, first_line(error.what_without_backtrace())));
  } catch (const std::exception& error) {
    throw std::runtime_error(unreadable(path, first_line(error.what())));
  }
  if (!flaw.empty()) throw std::runtime_error(unreadable(path, flaw));
  // The decoder checks what it reads; a LibTorch assertion it did not foresee on a value of the
  // file is still the file's fault, and a refusal of it (found by tests/fuzz/checkpoint_fuzz).
  try {
    return Decoder(path).decode(root);
  } catch (const c10::Error& error) {
    throw std::runtime_error(unreadable(path, first_line(error.what_without_backtrace())));
  }
}

}  // namespace dl::model
