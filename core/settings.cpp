// The settings registry and the layered parse on Boost.Program_options. Values are kept as strings
// and validated on read, so an error names the source it came from ("--workers", "DL_WORKERS",
// "/ws/dl.conf: workers") and says what was expected.
#include "core/settings.h"

#include <sys/stat.h>

#include <algorithm>
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

// Every setting's value is text, validated on read (setting_rules.h). A flag given alone means
// true on the command line, for every flag of both programs: `--resume` is `--resume=true`.
po::typed_value<std::string>* value(const std::string& key) {
  auto* v = po::value<std::string>();
  if (rule(key).kind == Rule::Kind::kFlag) v->implicit_value("true");
  return v;
}

po::options_description make_launch() {
  po::options_description d("Launch settings");
  // clang-format off
  d.add_options()
    ("workspace", value("workspace"), "workspace directory (the program's working directory)")
    ("name", value("name"), "run name: runs/<name>/ in the workspace (default: a timestamp)")
    ("workers", value("workers"), "data-loading workers, or auto")
    ("threads", value("threads"), "compute threads of the trainer, or auto")
    ("batch-size", value("batch-size"), "batch size (default 64)")
    ("global-batch", value("global-batch"), "the batch of each optimizer step over all ranks that the recipe was tuned for: the plan keeps it, each rank taking its share in micro-batches of the searched or given batch size with gradient accumulation (default: the batch size times the ranks)")
    ("precision", value("precision"), "auto, fp32, fp16 or bf16")
    ("device", value("device"), "auto, cpu, cuda or cuda:N")
    ("samples", value("samples"), "data set size when known, or auto (planning uses it)")
    ("input-shape", value("input-shape"), "one sample's shape CxHxW, or auto (planning uses it)")
    ("grace-period", value("grace-period"), "seconds between forwarding a stop signal and killing (default 30)")
    ("max-restarts", value("max-restarts"), "when a rank fails (an exit other than 64-79, a signal), stop the others and start every rank again, resuming from last.pt, up to this many times (default 0)")
    ("trainer", value("trainer"), "the default program (default dl-train)")
    ("nvml-library", value("nvml-library"), "NVML library to load (default libnvidia-ml.so.1)")
    ("memory-budget", value("memory-budget"), "memory the batch-size search may plan for, e.g. 6GiB or 512MiB (default: free GPU memory minus the margin; on CPU the usable RAM)")
    ("memory-margin", value("memory-margin"), "share of free GPU memory kept back by the batch-size search (default 0.1)")
    ("batch-objective", value("batch-objective"), "what the batch-size search picks: fastest (the largest batch within 5% of the best measured samples/s) or largest (the largest that fits) (default fastest)")
    ("retune", value("retune"), "measure again instead of using the workspace's cached answers: the batch-size search, and a command's workers")
    ("probe-command", value("probe-command"), "measure a command after -- by probes (docs/python.md): auto (when the script it runs imports dl_plan), always or never (default auto)")
    ("run-as-owner", value("run-as-owner"), "when run as root on a workspace that belongs to another user, run the program as that user so the files it writes are theirs (default true)")
    ("nproc-per-node", value("nproc-per-node"), "processes (ranks) to start on this node: N, gpu (one per visible GPU) or auto (one per GPU on CUDA, one on CPU; the default for dl-train, 1 for a command)")
    ("nnodes", value("nnodes"), "nodes taking part (default 1, or the scheduler's)")
    ("node-rank", value("node-rank"), "this node's rank, 0 to nnodes - 1 (default 0, or the scheduler's)")
    ("master-addr", value("master-addr"), "host of rank 0's rendezvous store (default 127.0.0.1 on one node; needed for several)")
    ("master-port", value("master-port"), "port of rank 0's rendezvous store (default: a free port on one node, 29500 on several)")
    ("cpu-bind", value("cpu-bind"), "none, or cores: pin each local rank to its own share of the usable CPUs (default none)")
    ("log-ranks", value("log-ranks"), "ranks whose output the terminal shows: 0 (this node's first) or all, prefixed [rank N] (default 0)");
  // clang-format on
  return d;
}

po::options_description make_train() {
  po::options_description d("Training settings (dl-train)");
  // clang-format off
  d.add_options()
    ("data", value("data"), "data: an MNIST/Fashion-MNIST IDX or CIFAR-10 directory, an ImageFolder tree, a CSV manifest, or WebDataset shards (train-{000000..000146}.tar, a folder of .tar files, a .shards list) (default: Fashion-MNIST)")
    ("model", value("model"), "cnn, resnet18, resnet34, resnet50, or a TorchScript file (.pt) (default cnn)")
    ("epochs", value("epochs"), "epochs (default 10)")
    ("lr", value("lr"), "AdamW learning rate (default 0.001)")
    ("micro-batch", value("micro-batch"), "split each batch into pieces of at most N samples, run one after the other with their gradients accumulated, so a step sees the whole batch; 0 for whole batches (default 0; dl-launch sets it for --global-batch)")
    ("weight-decay", value("weight-decay"), "AdamW weight decay (default 0.01)")
    ("clip-norm", value("clip-norm"), "gradient clipping max norm, 0 for none (default 1.0)")
    ("image-size", value("image-size"), "training image size, or auto (the data's own)")
    ("val-fraction", value("val-fraction"), "held-out fraction when the data has no validation split (default 0.1)")
    ("seed", value("seed"), "random seed (default 42)")
    ("log-every", value("log-every"), "batches between log lines (default 100)")
    ("monitor-every", value("monitor-every"), "seconds between resource reports, 0 for none (default 30)")
    ("time-breakdown", value("time-breakdown"), "time each step's parts (the copy, the optimizer) for the breakdown of where the time goes: per epoch in metrics.csv and the log, a table and a verdict at the end (default true; false leaves the copy and the optimizer inside compute)")
    ("max-bad-fraction", value("max-bad-fraction"), "undecodable samples tolerated before failing (default 0.01)")
    ("max-image-pixels", value("max-image-pixels"), "image files whose header claims more pixels are skipped as bad samples, unread (default 178956970, PIL's limit)")
    ("shuffle-buffer", value("shuffle-buffer"), "shards: training reads the shards in an order shuffled per epoch and mixes their samples in a buffer of this many, 0 for none (default 2000)")
    ("read-ahead-mb", value("read-ahead-mb"), "remote shards (http(s)://, s3://): MiB of whole shards downloaded ahead and kept in memory (default 1024)")
    ("jpeg-index-mb", value("jpeg-index-mb"), "JPEGs: MiB kept for where each file's Huffman decoding can resume, so later epochs' crops skip the rows and columns before them; 0 for none (default 512)")
    ("loss-scale", value("loss-scale"), "fp16 GradScaler initial scale (default 65536)")
    ("loss-scale-growth", value("loss-scale-growth"), "GradScaler growth factor (default 2.0)")
    ("loss-scale-backoff", value("loss-scale-backoff"), "GradScaler backoff factor (default 0.5)")
    ("loss-scale-interval", value("loss-scale-interval"), "clean steps before the GradScaler grows the scale (default 2000)")
    ("probe-batch", value("probe-batch"), "probe mode: run a few training steps at this batch size on synthetic data and print peak memory as JSON")
    ("limit-batches", value("limit-batches"), "train on at most this many batches per epoch, 0 for all (default 0)")
    ("checkpoint-every", value("checkpoint-every"), "also write last.pt between epoch ends, every N steps (500) or every so long (30s, 10m, 2h), 0 for epoch ends only; --resume continues at the next sample (default 10m)")
    ("resume", value("resume"), "continue from the run's last.pt (--resume, or true/false)")
    ("overwrite", value("overwrite"), "start afresh under a --name whose run directory already holds checkpoints, replacing them (without it such a start is refused, exit 78)")
    ("init-from", value("init-from"), "start from the weights in FILE (a torch.save state dict, e.g. torchvision's, or a dl-train checkpoint): tensors whose name and shape match are loaded, a classifier for another class count starts fresh, the rest is reported (--resume with an existing last.pt takes precedence)")
    ("freeze", value("freeze"), "keep part of the model fixed while training: none, backbone (everything but the classifier) or N (a ResNet's stem and first N of its 4 stages) (default none)")
    ("dist-backend", value("dist-backend"), "distributed: auto (nccl on CUDA, gloo on CPU), gloo or nccl (default auto; gloo or nccl form a process group even for one rank)")
    ("dist-timeout", value("dist-timeout"), "distributed: seconds a collective may wait for the other ranks (default 300)")
    ("rdzv-timeout", value("rdzv-timeout"), "distributed: seconds for every rank to arrive at MASTER_ADDR:MASTER_PORT (default 300)")
    ("lr-scaling", value("lr-scaling"), "none keeps --lr; linear multiplies it by the global batch over --reference-batch, sqrt by that ratio's square root (without --reference-batch: by the world size, or its square root) (default none)")
    ("reference-batch", value("reference-batch"), "the global batch --lr was tuned for: --lr-scaling linear or sqrt scales --lr from it to the batch each optimizer step averages over (the batch size times the ranks, or --global-batch) (default: one rank's batch)")
    ("bucket-mb", value("bucket-mb"), "distributed: gradient bucket size in MiB, as DDP's bucket_cap_mb (default 25)")
    ("overlap", value("overlap"), "distributed: reduce gradient buckets during backward (default true; false waits for backward to end)");
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

void Layers::remember(const po::parsed_options& parsed, Origin origin, const std::string& file,
                      const std::map<std::string, int>& lines) {
  for (const auto& opt : parsed.options) {
    const std::string& key = opt.string_key;
    if (origin == Origin::kFile) file_keys_.insert(key);
    if (where_.count(key)) continue;
    origin_[key] = origin;
    switch (origin) {
      case Origin::kCommandLine:
        where_[key] = "--" + key;
        break;
      case Origin::kEnvironment:
        where_[key] = key_to_env(key);
        break;
      case Origin::kFile: {
        const auto line = lines.find(key);
        where_[key] =
            file + (line == lines.end() ? "" : ":" + std::to_string(line->second)) + ": " + key;
        break;
      }
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
    remember(parsed, Origin::kCommandLine, "", {});
  } catch (const po::unknown_option& e) {
    std::string name = e.get_option_name();
    while (!name.empty() && name.front() == '-') name.erase(0, 1);
    name = name.substr(0, name.find('='));  // `--epoch=3` names the option epoch
    const std::string near = nearest_name(name, desc);
    throw UserError(
        exit_code::kUsage,
        std::string(e.what()) +
            (near.empty() ? "; see --help" : ": did you mean --" + near + "? (see --help)"));
  } catch (const po::error& e) {
    throw UserError(exit_code::kUsage, std::string(e.what()) + "; see --help");
  }
}

void Layers::add_environment() {
  try {
    const auto parsed =
        po::parse_environment(all(), [](const std::string& v) { return env_to_key(v); });
    po::store(parsed, vm_);
    remember(parsed, Origin::kEnvironment, "", {});
  } catch (const po::error& e) {
    throw UserError(exit_code::kUsage, std::string("DL_* environment: ") + e.what());
  }
}

namespace {

// The line of each key of a config file, checking on the way what Boost's parser would report
// without a line: a line that is no `key = value`, an unknown key, a key set twice.
std::map<std::string, int> key_lines(const std::string& text, const std::string& path) {
  std::map<std::string, int> lines;
  std::istringstream in(text);
  std::string raw;
  for (int n = 1; std::getline(in, raw); ++n) {
    // As Boost reads it: '#' starts a comment anywhere; [section] lines prefix the keys after
    // them, which no setting has (Boost names the prefixed key).
    const std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    const std::string at = "config file " + path + ":" + std::to_string(n) + ": ";
    if (line.front() == '[') {
      // Refused here rather than by Boost: its message for a bad line substitutes the line into
      // placeholders and loops forever on one that holds "%invalid_line%" (found by
      // tests/fuzz/settings_fuzz).
      if (line.back() != ']') {
        throw UserError(exit_code::kBadConfig,
                        at + "expected a key = value line or a [section], got '" + line + "'");
      }
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos) {
      throw UserError(exit_code::kBadConfig,
                      at + "expected a key = value line, got '" + line + "'");
    }
    const std::string key = trim(line.substr(0, eq));
    if (key.empty()) {
      throw UserError(exit_code::kBadConfig, at + "expected a key before '=', got '" + line + "'");
    }
    // Boost matches names by prefix even when asked for exact ones, and an ambiguous prefix
    // throws: only an exact name is a key here.
    const bool known = std::any_of(all().options().begin(), all().options().end(),
                                   [&](const auto& o) { return o->long_name() == key; });
    if (!known) {
      const std::string near = nearest_name(key, all());
      throw UserError(
          exit_code::kBadConfig,
          at + "unknown key '" + key + "'" +
              (near.empty() ? "; see --help for the keys"
                            : ": did you mean '" + near + "'? (see --help for the keys)"));
    }
    const auto [first, inserted] = lines.emplace(key, n);
    if (!inserted) {
      throw UserError(exit_code::kBadConfig, at + "'" + key + "' is set again (first on line " +
                                                 std::to_string(first->second) +
                                                 "); expected each key once");
    }
  }
  return lines;
}

}  // namespace

std::string nearest_name(const std::string& given, const po::options_description& desc) {
  std::vector<std::string> names;
  for (const auto& option : desc.options()) names.push_back(option->long_name());
  return nearest_word(given, names);
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
  std::string text;
  try {
    const std::vector<char> bytes = read_whole_file(path);
    text.assign(bytes.begin(), bytes.end());
  } catch (const std::runtime_error& e) {
    throw UserError(exit_code::kNoPermission,
                    "config file " + path + ": cannot be read (" + e.what() + ")");
  }
  const std::map<std::string, int> lines = key_lines(text, path);
  try {
    std::istringstream in(text);
    const auto parsed = po::parse_config_file(in, all(), /*allow_unregistered=*/false);
    po::store(parsed, vm_);
    remember(parsed, Origin::kFile, path, lines);
  } catch (const po::unknown_option& e) {
    throw UserError(exit_code::kBadConfig, "config file " + path + ": unknown key '" +
                                               e.get_option_name() + "'; see --help for the keys");
  } catch (const po::error_with_option_name& e) {
    // Not e.what(): Boost substitutes the file's text into its placeholders, and a value that
    // holds a placeholder's name ("%canonical_option%") makes it loop forever.
    const std::string name = e.get_option_name();
    throw UserError(exit_code::kBadConfig,
                    "config file " + path + ": " +
                        (name.empty() ? "a line" : "the line of '" + name + "'") +
                        " cannot be read; expected key = value lines");
  } catch (const po::error& e) {
    throw UserError(exit_code::kBadConfig,
                    "config file " + path + ": " + e.what() + "; expected key = value lines");
  }
  return true;
}

void Layers::resolve_paths(const std::string& cwd) {
  for (auto& [key, value] : vm_) {
    const auto from = origin(key);
    if (!from || *from == Origin::kFile || value.empty()) continue;
    std::string text = trim(value.as<std::string>());
    if (!names_path(key, text)) continue;
    value.value() = absolute_path(text, cwd);
  }
}

std::optional<Layers::Origin> Layers::origin(const std::string& key) const {
  const auto it = origin_.find(key);
  return it == origin_.end() ? std::nullopt : std::optional<Origin>(it->second);
}

std::map<std::string, std::string> Layers::command_line_values() const {
  std::map<std::string, std::string> values;
  for (const auto& [key, from] : origin_) {
    if (from == Origin::kCommandLine && vm_.count(key) && !vm_[key].empty()) {
      // The stored value: an implicit one (`--resume` alone) is there, not in the parsed tokens.
      values[key] = vm_[key].as<std::string>();
    }
  }
  return values;
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
