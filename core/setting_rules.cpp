// The rule table (setting_rules.h) and the check over it.
#include "core/setting_rules.h"

#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>

#include "core/checkpoint_every.h"
#include "core/settings.h"
#include "core/text.h"

namespace dl::settings {
namespace {

using Kind = Rule::Kind;

constexpr double kLongMax = static_cast<double>(std::numeric_limits<long long>::max());
constexpr double kInt32Max = std::numeric_limits<std::int32_t>::max();
// The largest batch either program accepts (a batch index is an int in the loaders).
constexpr double kMaxBatch = 1 << 24;

Rule integer(double min, double max, bool allow_auto = false) {
  Rule r;
  r.kind = Kind::kInteger;
  r.min = min;
  r.max = max;
  r.allow_auto = allow_auto;
  return r;
}

Rule real(double min, double max) {
  Rule r;
  r.kind = Kind::kReal;
  r.min = min;
  r.max = max;
  return r;
}

Rule flag() {
  Rule r;
  r.kind = Kind::kFlag;
  return r;
}

Rule choice(std::vector<std::string> choices, bool (*also)(const std::string&) = nullptr,
            std::string also_text = {}) {
  Rule r;
  r.kind = Kind::kChoice;
  r.choices = std::move(choices);
  r.also = also;
  r.also_text = std::move(also_text);
  return r;
}

Rule text() {
  return Rule{};
}

bool always(const std::string&) {
  return true;
}

// A program or library named with a directory (else it is looked up: PATH, the loader's search).
bool has_directory(const std::string& v) {
  return v.find('/') != std::string::npos;
}

Rule path(bool (*when)(const std::string&) = always) {
  Rule r;
  r.names_path = when;
  return r;
}

Rule with_path(Rule r, bool (*when)(const std::string&)) {
  r.names_path = when;
  return r;
}

bool cuda_index(const std::string& v) {
  return v.rfind("cuda:", 0) == 0 && parse_u64(v.substr(5)).has_value();
}

// --freeze N: a ResNet's stem and its first N stages.
bool stage_count(const std::string& v) {
  const auto n = parse_u64(v);
  return n && *n <= 4;
}

// --checkpoint-every: steps or a time (0 is in the choices, for its words).
bool checkpoint_interval(const std::string& v) {
  return parse_checkpoint_every(v).has_value();
}

bool torchscript_file(const std::string& v) {
  return v.size() > 3 && ends_with(v, ".pt");
}

bool model_file(const std::string& v) {
  return torchscript_file(v) || has_directory(v);
}

const std::map<std::string, Rule>& table() {
  static const std::map<std::string, Rule> t = {
      // Launch settings.
      {"workspace", path()},
      {"name", text()},  // a directory name: checked by the launcher's options
      {"workers", integer(0, 1024, true)},
      {"threads", integer(1, 4096, true)},
      {"batch-size", integer(1, kMaxBatch, true)},
      {"global-batch", integer(1, kMaxBatch)},
      {"precision", choice({"auto", "fp32", "fp16", "bf16"})},
      {"device", choice({"auto", "cpu", "cuda"}, cuda_index, "cuda:N")},
      {"samples", integer(0, kLongMax, true)},
      {"input-shape", text()},  // CxHxW: checked by the launcher's options
      {"grace-period", real(0, 86400)},
      {"max-restarts", integer(0, 1000)},
      {"trainer", path(has_directory)},
      {"nvml-library", path(has_directory)},
      {"memory-budget", text()},  // a memory size: checked by the launcher's options
      {"memory-margin", real(0, 0.9)},
      {"batch-objective", choice({"fastest", "largest"})},
      {"retune", flag()},
      {"probe-command", choice({"auto", "always", "never"})},
      {"run-as-owner", flag()},
      {"nproc-per-node", text()},  // N, gpu or auto: checked by the launcher's options
      {"nnodes", integer(1, 65536)},
      {"node-rank", integer(0, 65535)},
      {"master-addr", text()},  // a host: checked by the launcher's options
      {"master-port", integer(1, 65535)},
      {"cpu-bind", choice({"none", "cores"})},
      {"log-ranks", choice({"0", "all"})},
      // Training settings.
      {"data", path()},
      {"model", with_path(choice({"cnn", "resnet18", "resnet34", "resnet50"}, torchscript_file,
                                 "a TorchScript file (.pt)"),
                          model_file)},
      {"epochs", integer(1, 100000)},
      {"lr", real(0, 1e6)},
      {"micro-batch", integer(0, kMaxBatch)},
      {"weight-decay", real(0, 10)},
      {"clip-norm", real(0, 1e6)},
      {"image-size", integer(8, 4096, true)},
      {"val-fraction", real(0, 0.9)},
      {"seed", integer(0, kLongMax)},
      {"log-every", integer(1, 1 << 30)},
      {"monitor-every", real(0, 86400)},
      {"time-breakdown", flag()},
      {"max-bad-fraction", real(0, 1)},
      // Up to 2^40: beyond any image a machine could decode, and 8 bytes a pixel stay in range.
      {"max-image-pixels", integer(1, 1ll << 40)},
      {"shuffle-buffer", integer(0, 1 << 30)},
      {"read-ahead-mb", integer(1, 1 << 24)},
      {"jpeg-index-mb", integer(0, 1 << 24)},
      // The scale is a float32 tensor; growth 1 with backoff 1 is a fixed loss scale.
      {"loss-scale", real(1, 1e38)},
      {"loss-scale-growth", real(1, 1e6)},
      {"loss-scale-backoff", real(1e-6, 1)},
      // The growth tracker is an int32 tensor, as in PyTorch.
      {"loss-scale-interval", integer(1, kInt32Max)},
      {"probe-batch", integer(1, kMaxBatch)},
      {"limit-batches", integer(0, kLongMax)},
      {"checkpoint-every",
       choice({"0"}, checkpoint_interval, "a number of steps (500) or a time (30s, 10m, 2h)")},
      {"resume", flag()},
      {"overwrite", flag()},
      {"init-from", path()},  // a file: checked by dl-train before its run directory exists
      {"freeze", choice({"none", "backbone"}, stage_count, "a number of ResNet stages 0 to 4")},
      {"dist-backend", choice({"auto", "gloo", "nccl"})},
      {"dist-timeout", real(1, 86400)},
      {"rdzv-timeout", real(1, 86400)},
      {"lr-scaling", choice({"none", "linear", "sqrt"})},
      {"reference-batch", integer(1, kMaxBatch)},
      {"bucket-mb", real(0.001, 4096)},
      {"overlap", flag()},
  };
  return t;
}

}  // namespace

const Rule& rule(const std::string& key) {
  const auto it = table().find(key);
  if (it == table().end()) throw std::logic_error("setting '" + key + "' has no rule");
  return it->second;
}

bool names_path(const std::string& key, const std::string& value) {
  if (key == "config") return true;
  const auto it = table().find(key);
  return it != table().end() && it->second.names_path != nullptr && it->second.names_path(value);
}

void check(const Layers& s, const boost::program_options::options_description& which) {
  for (const auto& option : which.options()) {
    const std::string& key = option->long_name();
    if (!s.has(key)) continue;
    switch (rule(key).kind) {
      case Rule::Kind::kInteger:
        s.integer(key);
        break;
      case Rule::Kind::kReal:
        s.real(key);
        break;
      case Rule::Kind::kFlag:
        s.flag(key);
        break;
      case Rule::Kind::kChoice:
        s.one_of(key, "");
        break;
      case Rule::Kind::kText:
        break;
    }
  }
}

}  // namespace dl::settings
