// dl-launch's command line: its own options plus every setting of the shared registry, read in
// layers (settings.h) and validated into a Request.
#include "launcher/options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "core/act_as.h"
#include "core/errors.h"
#include "core/files.h"
#include "core/run_as.h"
#include "core/setting_rules.h"
#include "core/settings.h"
#include "core/text.h"

namespace po = boost::program_options;

namespace dl {
namespace {

po::options_description command_line_options() {
  po::options_description d("Options");
  // clang-format off
  d.add_options()
    ("help,h", "print this help and exit")
    ("version,V", "print the version and exit")
    ("dry-run,n", "probe and plan, print the plan with reasons; start nothing but the probes (of dl-train, or of a command that opted in: docs/python.md) and create no run directory (the probes' answers are kept in the workspace's caches)")
    ("json", "print the plan as JSON on stdout and exit (a dry run)")
    ("config,c", po::value<std::string>(), "config file (default: <workspace>/dl.conf when present)");
  // clang-format on
  d.add(settings::launch()).add(settings::train());
  return d;
}

std::string device_value(const settings::Layers& s) {
  if (!s.has("device")) return "auto";
  const std::string v = s.get("device");
  if (v == "auto" || v == "cpu" || v == "cuda") return v;
  if (v.rfind("cuda:", 0) == 0) {
    const auto n = parse_u64(v.substr(5));
    if (n && *n < 1024) return "cuda:" + std::to_string(*n);
  }
  settings::bad_value(s.source("device"), v, "auto, cpu, cuda or cuda:N");
}

// "3x224x224" -> bytes of one float sample.
std::optional<std::uint64_t> shape_bytes(const std::string& shape) {
  const auto dims = split(shape, 'x');
  if (dims.empty() || dims.size() > 4) return std::nullopt;
  std::uint64_t elements = 1;
  for (const auto& d : dims) {
    const auto n = parse_u64(d);
    if (!n || *n == 0 || *n > 65536) return std::nullopt;
    elements *= *n;
  }
  return elements * 4;
}

bool is_safe_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.size() > 128) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  return true;
}

std::string default_workspace() {
  struct stat st {};
  if (stat("/root/workspace", &st) == 0 && S_ISDIR(st.st_mode)) return "/root/workspace";
  return current_directory();
}

Sourced<int> as_int(const settings::Layers& s, const std::string& key, long long value) {
  return {static_cast<int>(value), s.source(key)};
}

// The launcher's own arguments; those after "--" are the command, in `command`.
std::vector<std::string> split_at_double_dash(int argc, const char* const argv[],
                                              std::vector<std::string>* command) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      command->assign(argv + i + 1, argv + argc);
      break;
    }
    args.emplace_back(argv[i]);
  }
  return args;
}

// Settings the workspace's own dl.conf may not make: the file is its owner's, and these decide what
// dl-launch, root in the image, does on its own account. Each with why, for the error line.
struct HostSetting {
  const char* key;
  const char* why;
};
constexpr HostSetting kHostSettings[] = {
    {"workspace", "the file is read from the workspace"},
    {"run-as-owner", "it would let the workspace's owner run the program as root"},
    {"nvml-library", "dl-launch loads the library into its own process, as root in the image"},
};

// The workspace must be known before its config file can be read. The workspace's own dl.conf is
// read with its owner's credentials (act_as.h), as everything dl-launch does in the workspace: a
// dl.conf linked to a file only root may read is refused by the kernel instead of being read and
// quoted in an error line. A config file given with --config or DL_CONFIG is the caller's own.
void read_workspace_and_config(settings::Layers& s, LaunchOptions* opts) {
  opts->workspace.value = s.has("workspace") ? s.get("workspace") : default_workspace();
  opts->workspace.source = s.has("workspace") ? s.source("workspace") : "the workspace";

  const bool explicit_config = s.has("config");
  const std::string config_path =
      explicit_config ? s.get("config") : opts->workspace.value + "/" + kConfigFileName;
  std::optional<Identity> owner;
  if (!explicit_config) {
    owner = workspace_owner(opts->workspace.value, s.flag("run-as-owner").value_or(true));
  }
  bool read = false;
  {
    const ActAs as_owner(owner);
    read = s.add_config_file(config_path, explicit_config);
  }
  if (!read) return;
  opts->config_file = config_path;
  if (explicit_config) return;
  for (const HostSetting& host : kHostSettings) {
    if (!s.config_file_sets(host.key)) continue;
    const std::string key = host.key;
    throw UserError(exit_code::kBadConfig,
                    "config file " + config_path + ": '" + key +
                        "' cannot be set inside the workspace's own dl.conf (" + host.why +
                        "); give it as --" + key + " or " + settings::key_to_env(key));
  }
}

// What the plan starts from: the sizes and the memory budget given.
void read_sizes(const settings::Layers& s, Request* r) {
  if (auto w = s.integer("workers")) r->workers = as_int(s, "workers", *w);
  if (auto t = s.integer("threads")) r->threads = as_int(s, "threads", *t);
  if (auto b = s.integer("batch-size")) {
    r->batch_size = as_int(s, "batch-size", *b);
  }
  if (auto g = s.integer("global-batch")) {
    r->global_batch =
        Sourced<std::int64_t>{static_cast<std::int64_t>(*g), s.source("global-batch")};
    // One source for the pieces: the plan's, from the batch size (searched or given).
    const auto micro = s.integer("micro-batch");
    if (micro && *micro > 0) {
      throw UserError(exit_code::kUsage,
                      s.source("micro-batch") + " " + std::to_string(*micro) + " and " +
                          s.source("global-batch") +
                          " both set the pieces a batch runs in: --global-batch takes them from "
                          "the batch size; expected --batch-size " +
                          std::to_string(*micro) + " instead, for pieces of at most " +
                          std::to_string(*micro));
    }
  }
  if (s.has("memory-budget")) {
    const auto bytes = parse_memory_size(s.get("memory-budget"));
    if (!bytes) {
      settings::bad_value(s.source("memory-budget"), s.get("memory-budget"),
                          "a memory size such as 6GiB, 512MiB, 2G or a number of bytes");
    }
    r->memory_budget = Sourced<std::uint64_t>{*bytes, s.source("memory-budget")};
  }
  if (auto m = s.real("memory-margin")) {
    r->memory_margin = {*m, s.source("memory-margin")};
  }
  r->batch_objective = {s.one_of("batch-objective", "fastest"), s.source("batch-objective")};
}

// The rest of the plan's inputs and the run's own settings, validated in the order given.
void read_run_settings(const settings::Layers& s, LaunchOptions* opts) {
  Request& r = opts->request;
  if (auto retune = s.flag("retune")) opts->retune = *retune;
  opts->probe_command = s.one_of("probe-command", "auto");
  if (auto owner = s.flag("run-as-owner")) opts->run_as_owner = *owner;
  r.precision = {s.one_of("precision", "auto"), s.source("precision")};
  r.device = {device_value(s), s.source("device")};
  if (auto n = s.integer("samples")) {
    r.samples = Sourced<std::int64_t>{*n, s.source("samples")};
  }
  if (s.has("input-shape") && s.get("input-shape") != "auto") {
    const auto bytes = shape_bytes(s.get("input-shape"));
    if (!bytes) {
      settings::bad_value(s.source("input-shape"), s.get("input-shape"),
                          "CxHxW with positive sizes, e.g. 3x224x224");
    }
    r.sample_bytes = {*bytes, s.source("input-shape")};
  }
  if (auto g = s.real("grace-period")) opts->grace_seconds = *g;
  if (auto m = s.integer("max-restarts")) opts->max_restarts = static_cast<int>(*m);
  if (s.has("name")) {
    opts->run_name = s.get("name");
    if (!is_safe_name(opts->run_name)) {
      settings::bad_value(s.source("name"), opts->run_name,
                          "letters, digits, '.', '-' or '_' (a directory name)");
    }
  }
}

// Several processes: torchrun's options and this launcher's pinning and terminal output; the
// distributed training settings the plan shows (dl-train reads them itself).
void read_rank_settings(const settings::Layers& s, Request* r) {
  RankRequest& q = r->ranks;
  if (s.has("nproc-per-node")) {
    const std::string v = s.get("nproc-per-node");
    const auto n = parse_u64(v);
    if (v != "auto" && v != "gpu" && (!n || *n < 1 || *n > 65536)) {
      settings::bad_value(s.source("nproc-per-node"), v,
                          "a number of processes (1 or more), gpu or auto");
    }
    q.nproc_per_node = {v, s.source("nproc-per-node")};
  }
  if (auto n = s.integer("nnodes")) q.nnodes = as_int(s, "nnodes", *n);
  if (auto k = s.integer("node-rank")) q.node_rank = as_int(s, "node-rank", *k);
  if (q.node_rank && q.nnodes && q.node_rank->value >= q.nnodes->value) {
    settings::bad_value(
        q.node_rank->source, std::to_string(q.node_rank->value),
        "a node rank below " + q.nnodes->source + " " + std::to_string(q.nnodes->value));
  }
  if (s.has("master-addr")) {
    const std::string v = s.get("master-addr");
    if (v.empty() || v.find_first_of(" \t/,") != std::string::npos || v.size() > 255) {
      settings::bad_value(s.source("master-addr"), v, "a host name or IP address");
    }
    q.master_addr = Sourced<std::string>{v, s.source("master-addr")};
  }
  if (auto p = s.integer("master-port")) {
    q.master_port = as_int(s, "master-port", *p);
  }
  q.cpu_bind = {s.one_of("cpu-bind", "none"), s.source("cpu-bind")};
  q.log_ranks = {s.one_of("log-ranks", "0"), s.source("log-ranks")};
  r->lr_scaling = {s.one_of("lr-scaling", "none"), s.source("lr-scaling")};
  if (auto lr = s.real("lr")) r->lr = {*lr, s.source("lr")};
  if (auto b = s.integer("reference-batch")) {
    r->reference_batch =
        Sourced<std::int64_t>{static_cast<std::int64_t>(*b), s.source("reference-batch")};
  }
}

// The training settings the batch-size cache is keyed by, and the program and library to use.
void read_program_settings(const settings::Layers& s, LaunchOptions* opts) {
  opts->data_given = s.has("data");
  opts->data = s.get("data");
  // A config file's relative path is the workspace's, where the program runs; the command
  // line's and the environment's were made absolute already.
  opts->data_path = absolute_path(opts->data, opts->workspace.value);
  opts->data_source = s.source("data");
  if (auto resume = s.flag("resume")) opts->resume = *resume;
  if (auto overwrite = s.flag("overwrite")) opts->overwrite = *overwrite;
  opts->init_from_given = !s.get("init-from").empty();
  if (s.has("model")) opts->model = s.get("model");
  if (s.has("image-size") && s.get("image-size") != "auto") opts->image_size = s.get("image-size");
  if (s.has("input-shape") && s.get("input-shape") != "auto") {
    opts->input_shape = s.get("input-shape");
  }
  if (s.has("trainer")) opts->trainer = s.get("trainer");
  if (s.has("nvml-library")) opts->nvml_library = s.get("nvml-library");
}

// Training settings given to the launcher on its command line travel on as DL_* variables, and
// so do paths from DL_* variables, made absolute: the program runs in the workspace. The rest of
// the environment and the config file reach the trainer by themselves.
std::vector<std::pair<std::string, std::string>> trainer_env(const settings::Layers& s) {
  std::vector<std::pair<std::string, std::string>> env;
  for (const auto& option : settings::train().options()) {
    const std::string& key = option->long_name();
    const auto from = s.origin(key);
    const bool forwarded =
        from == settings::Layers::Origin::kCommandLine ||
        (from == settings::Layers::Origin::kEnvironment && settings::names_path(key, s.get(key)));
    if (forwarded) env.emplace_back(settings::key_to_env(key), s.get(key));
  }
  return env;
}

}  // namespace

std::optional<std::uint64_t> parse_memory_size(const std::string& text) {
  const std::string t = trim(text);
  std::size_t i = 0;
  while (i < t.size() && (is_digit(t[i]) || t[i] == '.')) ++i;
  const std::string number = t.substr(0, i);
  if (number.find_first_of("0123456789") == std::string::npos ||
      number.find('.') != number.rfind('.')) {
    return std::nullopt;
  }
  std::string unit;
  for (char c : trim(t.substr(i))) {
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  // "", "b": bytes; "g", "gi", "gib": 1024^3 (Docker's and Kubernetes' binary units); "gb":
  // 1000^3 (SI). Likewise for k, m and t.
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  const std::string prefixes = "kmgt";
  const auto p = unit.empty() ? std::string::npos : prefixes.find(unit[0]);
  if (p != std::string::npos) {
    const std::string rest = unit.substr(1);
    const double power = static_cast<double>(p + 1);
    if (rest.empty() || rest == "i" || rest == "ib") scale = std::pow(1024.0, power);
    if (rest == "b") scale = std::pow(1000.0, power);
  }
  // A fraction of a byte is no size: plain bytes are whole.
  if (scale == 0 || (scale == 1 && number.find('.') != std::string::npos)) return std::nullopt;
  const double bytes = std::strtod(number.c_str(), nullptr) * scale;
  if (!(bytes >= 1.0) || bytes >= 18446744073709551616.0) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

std::string env_to_option(const std::string& variable) {
  return settings::env_to_key(variable);
}

std::string usage_text() {
  std::ostringstream out;
  out << "Usage: dl-launch [options] [-- command [args...]]\n"
         "       dl-launch evaluate --checkpoint FILE [options]   (dl-train evaluate, planned)\n"
         "       dl-launch predict --checkpoint FILE [options] PATH...\n"
         "       dl-launch init DIR   (a new workspace from the template; init --help)\n"
         "       dl-launch doctor [--full] [--json] [options] [-- command]   (the ceilings; doctor "
         "--help)\n\n"
         "Probes the machine (usable CPU cores, RAM, /dev/shm, GPUs), plans the data workers,\n"
         "compute threads, device, precision and batch size, then starts dl-train (or the\n"
         "command after --) in the workspace with the plan as DL_* variables, and supervises it.\n"
         "Training settings given here reach dl-train as DL_* variables.\n\n"
      << command_line_options() << "\nPrecedence: defaults < " << kConfigFileName
      << " in the workspace (or --config) < DL_* environment < command line.\n\n"
      << exit_code_help(Program::kLaunch);
  return out.str();
}

bool option_takes_value(const std::string& name) {
  static const po::options_description d = command_line_options();
  // Boost keeps short names with their dash ("-c"); long ones without.
  const po::option_description* o = d.find_nothrow(name.size() == 1 ? "-" + name : name, false);
  return o != nullptr && o->semantic()->min_tokens() > 0;
}

bool option_accepts_value(const std::string& name) {
  static const po::options_description d = command_line_options();
  const po::option_description* o = d.find_nothrow(name.size() == 1 ? "-" + name : name, false);
  return o != nullptr && o->semantic()->max_tokens() > 0;
}

LaunchOptions parse_options(int argc, const char* const argv[]) {
  LaunchOptions opts;
  const std::vector<std::string> args = split_at_double_dash(argc, argv, &opts.command);

  settings::Layers s;
  s.add_command_line(args, command_line_options());
  opts.help = s.has("help");
  opts.version = s.has("version");
  if (opts.help || opts.version) return opts;
  s.add_environment();
  // Before anything changes directory: `--workspace ws`, `DL_DATA=data/x` are the caller's.
  s.resolve_paths(current_directory());
  opts.json = s.has("json");
  opts.dry_run = s.has("dry-run") || opts.json;

  read_workspace_and_config(s, &opts);
  read_sizes(s, &opts.request);
  read_run_settings(s, &opts);
  read_rank_settings(s, &opts.request);
  read_program_settings(s, &opts);
  // Every training setting too, wherever it came from (command line, DL_*, dl.conf): dl-train
  // would refuse a bad one only after the plan was shown and the run directory written.
  settings::check(s, settings::train());
  opts.trainer_env = trainer_env(s);
  for (const auto& option : settings::all().options()) {
    const std::string& key = option->long_name();
    if (s.has(key))
      opts.settings.emplace_back(key, Sourced<std::string>{s.get(key), s.source(key)});
  }
  return opts;
}

}  // namespace dl
