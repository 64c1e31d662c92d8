// The settings registry and the layered parse on Boost.Program_options. Values are kept as strings
// and validated on read, so an error names the source it came from ("--workers", "DL_WORKERS",
// "/ws/dl.conf: workers") and says what was expected.
#include "core/settings.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/errors.h"
#include "core/files.h"
#include "core/setting_rules.h"
#include "core/text.h"

namespace dl::settings {
namespace {

po::options_description make_launch() {
  po::options_description d("Launch settings");
  // clang-format off
  d.add_options()
    ("workspace", po::value<std::string>(), "workspace directory (the program's working directory)")
    ("name", po::value<std::string>(), "run name: runs/<name>/ in the workspace (default: a timestamp)")
    ("workers", po::value<std::string>(), "data-loading workers, or auto")
    ("threads", po::value<std::string>(), "compute threads of the trainer, or auto")
    ("batch-size", po::value<std::string>(), "batch size (default 64)")
    ("precision", po::value<std::string>(), "auto, fp32, fp16 or bf16")
    ("device", po::value<std::string>(), "auto, cpu, cuda or cuda:N")
    ("samples", po::value<std::string>(), "data set size when known, or auto (planning uses it)")
    ("input-shape", po::value<std::string>(), "one sample's shape CxHxW, or auto (planning uses it)")
    ("grace-period", po::value<std::string>(), "seconds between forwarding a stop signal and killing (default 30)")
    ("trainer", po::value<std::string>(), "the default program (default dl-train)")
    ("nvml-library", po::value<std::string>(), "NVML library to load (default libnvidia-ml.so.1)")
    ("memory-budget", po::value<std::string>(), "memory the batch-size search may plan for, e.g. 6GiB or 512MiB (default: free GPU memory minus the margin; on CPU the usable RAM)")
    ("memory-margin", po::value<std::string>(), "share of free GPU memory kept back by the batch-size search (default 0.1)")
    ("retune", po::value<std::string>()->implicit_value("true"), "search the batch size again instead of using the workspace's cached answer")
    ("run-as-owner", po::value<std::string>()->implicit_value("true"), "when run as root on a workspace that belongs to another user, run the program as that user so the files it writes are theirs (default true)")
    ("nproc-per-node", po::value<std::string>(), "processes (ranks) to start on this node: N, gpu (one per visible GPU) or auto (one per GPU on CUDA, one on CPU; the default for dl-train, 1 for a command)")
    ("nnodes", po::value<std::string>(), "nodes taking part (default 1, or the scheduler's)")
    ("node-rank", po::value<std::string>(), "this node's rank, 0 to nnodes - 1 (default 0, or the scheduler's)")
    ("master-addr", po::value<std::string>(), "host of rank 0's rendezvous store (default 127.0.0.1 on one node; needed for several)")
    ("master-port", po::value<std::string>(), "port of rank 0's rendezvous store (default: a free port on one node, 29500 on several)")
    ("cpu-bind", po::value<std::string>(), "none, or cores: pin each local rank to its own share of the usable CPUs (default none)")
    ("log-ranks", po::value<std::string>(), "ranks whose output the terminal shows: 0 (this node's first) or all, prefixed [rank N] (default 0)");
  // clang-format on
  return d;
}

po::options_description make_train() {
  po::options_description d("Training settings (dl-train)");
  // clang-format off
  d.add_options()
    ("data", po::value<std::string>(), "data: an MNIST/Fashion-MNIST IDX or CIFAR-10 directory, an ImageFolder tree, or a CSV manifest (default: Fashion-MNIST)")
    ("model", po::value<std::string>(), "cnn, resnet18, resnet34, resnet50, or a TorchScript file (.pt) (default cnn)")
    ("epochs", po::value<std::string>(), "epochs (default 10)")
    ("lr", po::value<std::string>(), "AdamW learning rate (default 0.001)")
    ("weight-decay", po::value<std::string>(), "AdamW weight decay (default 0.01)")
    ("clip-norm", po::value<std::string>(), "gradient clipping max norm, 0 for none (default 1.0)")
    ("image-size", po::value<std::string>(), "training image size, or auto (the data's own)")
    ("val-fraction", po::value<std::string>(), "held-out fraction when the data has no validation split (default 0.1)")
    ("seed", po::value<std::string>(), "random seed (default 42)")
    ("log-every", po::value<std::string>(), "batches between log lines (default 100)")
    ("monitor-every", po::value<std::string>(), "seconds between resource reports, 0 for none (default 30)")
    ("max-bad-fraction", po::value<std::string>(), "undecodable samples tolerated before failing (default 0.01)")
    ("max-image-pixels", po::value<std::string>(), "image files whose header claims more pixels are skipped as bad samples, unread (default 178956970, PIL's limit)")
    ("loss-scale", po::value<std::string>(), "fp16 GradScaler initial scale (default 65536)")
    ("loss-scale-growth", po::value<std::string>(), "GradScaler growth factor (default 2.0)")
    ("loss-scale-backoff", po::value<std::string>(), "GradScaler backoff factor (default 0.5)")
    ("loss-scale-interval", po::value<std::string>(), "clean steps before the GradScaler grows the scale (default 2000)")
    ("probe-batch", po::value<std::string>(), "probe mode: run a few training steps at this batch size on synthetic data and print peak memory as JSON")
    ("limit-batches", po::value<std::string>(), "train on at most this many batches per epoch, 0 for all (default 0)")
    ("resume", po::value<std::string>()->implicit_value("true"), "continue from the run's last.pt (--resume, or true/false)")
    ("init-from", po::value<std::string>(), "start from the weights in FILE (a torch.save state dict, e.g. torchvision's, or a dl-train checkpoint): tensors whose name and shape match are loaded, a classifier for another class count starts fresh, the rest is reported (--resume with an existing last.pt takes precedence)")
    ("freeze", po::value<std::string>(), "keep part of the model fixed while training: none, backbone (everything but the classifier) or N (a ResNet's stem and first N of its 4 stages) (default none)")
    ("dist-backend", po::value<std::string>(), "distributed: auto (nccl on CUDA, gloo on CPU), gloo or nccl (default auto; gloo or nccl form a process group even for one rank)")
    ("dist-timeout", po::value<std::string>(), "distributed: seconds a collective may wait for the other ranks (default 300)")
    ("rdzv-timeout", po::value<std::string>(), "distributed: seconds for every rank to arrive at MASTER_ADDR:MASTER_PORT (default 300)")
    ("lr-scaling", po::value<std::string>(), "distributed: none keeps --lr, linear multiplies it by the world size, sqrt by its square root (default none)")
    ("bucket-mb", po::value<std::string>(), "distributed: gradient bucket size in MiB, as DDP's bucket_cap_mb (default 25)")
    ("overlap", po::value<std::string>()->implicit_value("true"), "distributed: reduce gradient buckets during backward (default true; false waits for backward to end)");
  // clang-format on
  return d;
}

}  // namespace

const po::options_description& launch() {
  static const po::options_description d = make_launch();
  return d;
}

const po::options_description& train() {
  static const po::options_description d = make_train();
  return d;
}

const po::options_description& all() {
  static const po::options_description d = [] {
    po::options_description both;
    both.add(launch()).add(train());
    return both;
  }();
  return d;
}

std::string env_to_key(const std::string& variable) {
  if (variable.rfind("DL_", 0) != 0 || variable.size() <= 3) return {};
  std::string key;
  for (char c : variable.substr(3)) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '_') {
      key += '-';
    } else if (std::isupper(u) || std::isdigit(u)) {
      key += static_cast<char>(std::tolower(u));
    } else {
      return {};
    }
  }
  return all().find_nothrow(key, false) != nullptr ? key : std::string{};
}

std::string key_to_env(const std::string& key) {
  std::string var = "DL_";
  for (char c : key) {
    var += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return var;
}

void bad_value(const std::string& source, const std::string& value, const std::string& expected) {
  throw UserError(exit_code::kUsage, source + ": expected " + expected + ", got '" + value + "'");
}

void Layers::remember(const po::parsed_options& parsed, const std::string& origin) {
  for (const auto& opt : parsed.options) {
    if (origin != "cli" && origin != "env") file_keys_.insert(opt.string_key);
    if (where_.count(opt.string_key)) continue;
    if (origin == "cli") {
      where_[opt.string_key] = "--" + opt.string_key;
      if (!opt.value.empty()) cli_values_[opt.string_key] = opt.value.front();
    } else if (origin == "env") {
      where_[opt.string_key] = key_to_env(opt.string_key);
    } else {
      where_[opt.string_key] = origin + ": " + opt.string_key;
    }
  }
}

void Layers::add_command_line(const std::vector<std::string>& args,
                              const po::options_description& desc) {
  try {
    // No guessing of abbreviations: `--work` must not silently mean --workers.
    const int style =
        po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    const auto parsed = po::command_line_parser(args).options(desc).style(style).run();
    po::store(parsed, vm_);
    remember(parsed, "cli");
  } catch (const po::error& e) {
    throw UserError(exit_code::kUsage, std::string(e.what()) + "; see --help");
  }
}

void Layers::add_environment() {
  try {
    const auto parsed =
        po::parse_environment(all(), [](const std::string& v) { return env_to_key(v); });
    po::store(parsed, vm_);
    remember(parsed, "env");
  } catch (const po::error& e) {
    throw UserError(exit_code::kUsage, std::string("DL_* environment: ") + e.what());
  }
}

bool Layers::add_config_file(const std::string& path, bool required) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    // Only a file that is not there is absent (ENOTDIR: a path through a file, which the
    // workspace's own check names): one that cannot be looked at is an error.
    if (!required && (errno == ENOENT || errno == ENOTDIR)) return false;
    throw UserError(errno == EACCES ? exit_code::kNoPermission : exit_code::kMissing,
                    "config file " + path + ": " + std::strerror(errno) +
                        "; expected a readable file of key = value lines");
  }
  if (!S_ISREG(st.st_mode)) {
    throw UserError(exit_code::kMissing, "config file " + path + ": " +
                                             not_regular_file(st.st_mode) +
                                             "; expected a file of key = value lines");
  }
  // Read whole, without waiting: a FIFO put under the name after the stat is refused too.
  std::istringstream in;
  try {
    const std::vector<char> bytes = read_whole_file(path);
    in.str(std::string(bytes.begin(), bytes.end()));
  } catch (const std::runtime_error& e) {
    throw UserError(exit_code::kNoPermission,
                    "config file " + path + ": cannot be read (" + e.what() + ")");
  }
  try {
    const auto parsed = po::parse_config_file(in, all(), /*allow_unregistered=*/false);
    po::store(parsed, vm_);
    remember(parsed, path);
  } catch (const po::unknown_option& e) {
    throw UserError(exit_code::kBadConfig, "config file " + path + ": unknown key '" +
                                               e.get_option_name() + "'; see --help for the keys");
  } catch (const po::error& e) {
    throw UserError(exit_code::kBadConfig,
                    "config file " + path + ": " + e.what() + "; expected key = value lines");
  }
  return true;
}

std::string Layers::get(const std::string& key) const {
  return has(key) ? trim(vm_[key].as<std::string>()) : std::string{};
}

std::string Layers::source(const std::string& key) const {
  const auto it = where_.find(key);
  return it == where_.end() ? "default" : it->second;
}

std::optional<long long> Layers::integer(const std::string& key, long long min, long long max,
                                         bool allow_auto) const {
  if (!has(key)) return std::nullopt;
  const std::string v = get(key);
  if (allow_auto && v == "auto") return std::nullopt;
  const auto n = parse_i64(v);
  if (!n || *n < min || *n > max) {
    // A limit nobody reaches is not worth naming; one a value can hit is.
    const std::string range =
        max == std::numeric_limits<long long>::max()
            ? "a whole number >= " + std::to_string(min)
            : "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
    bad_value(source(key), v, range + (allow_auto ? " or 'auto'" : ""));
  }
  return *n;
}

std::optional<long long> Layers::integer(const std::string& key) const {
  const Rule& r = rule(key);
  // Limits are kept as doubles; the largest long long does not survive the round trip.
  const auto limit = [](double d) {
    return d >= 9.2e18 ? std::numeric_limits<long long>::max() : static_cast<long long>(d);
  };
  return integer(key, limit(r.min), limit(r.max), r.allow_auto);
}

std::optional<double> Layers::real(const std::string& key) const {
  const Rule& r = rule(key);
  return real(key, r.min, r.max);
}

std::string Layers::one_of(const std::string& key, const std::string& fallback) const {
  const Rule& r = rule(key);
  if (!has(key)) return fallback;
  const std::string v = get(key);
  if (r.also != nullptr && r.also(v)) return v;
  for (const auto& a : r.choices) {
    if (v == a) return v;
  }
  std::string list;
  for (std::size_t i = 0; i < r.choices.size(); ++i) {
    list += (i == 0                                             ? ""
             : i + 1 == r.choices.size() && r.also_text.empty() ? " or "
                                                                : ", ") +
            r.choices[i];
  }
  if (!r.also_text.empty()) list += " or " + r.also_text;
  bad_value(source(key), v, list);
}

std::optional<double> Layers::real(const std::string& key, double min, double max) const {
  if (!has(key)) return std::nullopt;
  const std::string v = get(key);
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(d >= min) || d > max) {
    bad_value(source(key), v,
              "a number between " + format_number(min) + " and " + format_number(max));
  }
  return d;
}

std::optional<bool> Layers::flag(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const std::string v = get(key);
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  bad_value(source(key), v, "true or false");
}

std::string Layers::one_of(const std::string& key, const std::vector<std::string>& allowed,
                           const std::string& fallback) const {
  if (!has(key)) return fallback;
  const std::string v = get(key);
  for (const auto& a : allowed) {
    if (v == a) return v;
  }
  std::string list;
  for (size_t i = 0; i < allowed.size(); ++i) list += (i ? ", " : "") + allowed[i];
  bad_value(source(key), v, "one of " + list);
}

}  // namespace dl::settings
