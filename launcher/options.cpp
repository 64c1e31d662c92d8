// Option registry and the three-source parse, on Boost.Program_options. Values are read as
// strings and validated here, so an error names the source it came from ("--workers",
// "DL_WORKERS", "/ws/dl.conf") and says what was expected.
#include "options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "errors.h"
#include "text.h"

namespace po = boost::program_options;

namespace dl {
namespace {

// Options that may come from the config file and the environment as well as the command line.
po::options_description settings_options() {
  po::options_description d("Settings (also DL_<NAME> variables and dl.conf keys)");
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
    ("nvml-library", po::value<std::string>(), "NVML library to load (default libnvidia-ml.so.1)");
  // clang-format on
  return d;
}

po::options_description command_line_options() {
  po::options_description d("Options");
  // clang-format off
  d.add_options()
    ("help,h", "print this help and exit")
    ("version,V", "print the version and exit")
    ("dry-run,n", "probe and plan, print the plan with reasons, start nothing, write nothing")
    ("json", "print the plan as JSON on stdout and exit (a dry run)")
    ("config,c", po::value<std::string>(), "config file (default: <workspace>/dl.conf when present)");
  // clang-format on
  d.add(settings_options());
  return d;
}

using Parsed = po::basic_parsed_options<char>;

// Where each option's value was found, in precedence order.
struct Sources {
  std::map<std::string, std::string> where;
  void add(const Parsed& parsed, const std::string& label_prefix, bool env) {
    for (const auto& opt : parsed.options) {
      if (where.count(opt.string_key)) continue;
      if (env) {
        std::string var = "DL_";
        for (char ch : opt.string_key) var += ch == '-' ? '_' : static_cast<char>(std::toupper(ch));
        where[opt.string_key] = var;
      } else {
        where[opt.string_key] = label_prefix.empty() ? "--" + opt.string_key
                                                     : label_prefix + ": " + opt.string_key;
      }
    }
  }
  std::string of(const std::string& key) const {
    const auto it = where.find(key);
    return it == where.end() ? "default" : it->second;
  }
};

[[noreturn]] void bad_value(const std::string& source, const std::string& value,
                            const std::string& expected) {
  throw UserError(exit_code::kUsage,
                  source + ": expected " + expected + ", got '" + value + "'");
}

std::optional<Sourced<int>> auto_or_int(const po::variables_map& vm, const Sources& src,
                                        const std::string& key, int min) {
  if (!vm.count(key)) return std::nullopt;
  const std::string v = trim(vm[key].as<std::string>());
  if (v == "auto") return std::nullopt;
  const auto n = parse_i64(v);
  if (!n || *n < min || *n > 1'000'000) {
    bad_value(src.of(key), v, "a whole number >= " + std::to_string(min) + " or 'auto'");
  }
  return Sourced<int>{static_cast<int>(*n), src.of(key)};
}

std::string one_of(const po::variables_map& vm, const Sources& src, const std::string& key,
                   const std::vector<std::string>& allowed, const std::string& fallback) {
  if (!vm.count(key)) return fallback;
  const std::string v = trim(vm[key].as<std::string>());
  for (const auto& a : allowed) {
    if (v == a) return v;
  }
  std::string list;
  for (size_t i = 0; i < allowed.size(); ++i) list += (i ? ", " : "") + allowed[i];
  bad_value(src.of(key), v, "one of " + list);
}

std::string device_value(const po::variables_map& vm, const Sources& src) {
  if (!vm.count("device")) return "auto";
  const std::string v = trim(vm["device"].as<std::string>());
  if (v == "auto" || v == "cpu" || v == "cuda") return v;
  if (v.rfind("cuda:", 0) == 0) {
    const auto n = parse_u64(v.substr(5));
    if (n && *n < 1024) return "cuda:" + std::to_string(*n);
  }
  bad_value(src.of("device"), v, "auto, cpu, cuda or cuda:N");
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
  char buf[4096];
  return getcwd(buf, sizeof buf) != nullptr ? buf : ".";
}

// Reads the config file named by the user (must exist) or the workspace's (when present).
std::optional<Parsed> read_config(const std::string& path, bool required,
                                  const po::options_description& desc) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (!required) return std::nullopt;
    throw UserError(exit_code::kMissing, "config file " + path + ": " + std::strerror(errno) +
                                             "; expected a readable file of key = value lines");
  }
  if (S_ISDIR(st.st_mode)) {
    throw UserError(exit_code::kMissing,
                    "config file " + path + ": is a directory; expected a file of key = value lines");
  }
  std::ifstream in(path);
  if (!in) {
    throw UserError(exit_code::kNoPermission, "config file " + path + ": cannot be read (" +
                                                  std::strerror(errno) + ")");
  }
  try {
    return po::parse_config_file(in, desc, /*allow_unregistered=*/false);
  } catch (const po::unknown_option& e) {
    throw UserError(exit_code::kBadConfig, "config file " + path + ": unknown key '" +
                                               e.get_option_name() +
                                               "'; see dl-launch --help for the keys");
  } catch (const po::error& e) {
    throw UserError(exit_code::kBadConfig,
                    "config file " + path + ": " + e.what() + "; expected key = value lines");
  }
}

}  // namespace

std::string env_to_option(const std::string& variable) {
  if (variable.rfind("DL_", 0) != 0 || variable.size() <= 3) return {};
  std::string key;
  for (char c : variable.substr(3)) {
    if (c == '_') {
      key += '-';
    } else if (std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c))) {
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      return {};
    }
  }
  static const po::options_description settings = settings_options();
  return settings.find_nothrow(key, false) != nullptr ? key : std::string{};
}

std::string usage_text() {
  std::ostringstream out;
  out << "Usage: dl-launch [options] [-- command [args...]]\n\n"
         "Probes the machine (usable CPU cores, RAM, /dev/shm, GPUs), plans the data workers,\n"
         "compute threads, device, precision and batch size, then starts dl-train (or the\n"
         "command after --) in the workspace with the plan as DL_* variables, and supervises it.\n\n"
      << command_line_options()
      << "\nPrecedence: defaults < " << kConfigFileName
      << " in the workspace (or --config) < DL_* environment < command line.\n"
         "Exit codes: the program's own (128+N if it died of signal N); 64 bad option or value,\n"
         "65 malformed config, 66 missing workspace or config, 69 device not available,\n"
         "73 workspace not writable, 77 config not readable, 126 command not executable,\n"
         "127 command not found, 70 internal error.\n";
  return out.str();
}

LaunchOptions parse_options(int argc, const char* const argv[]) {
  LaunchOptions opts;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      opts.command.assign(argv + i + 1, argv + argc);
      break;
    }
    args.emplace_back(argv[i]);
  }

  const po::options_description cli_desc = command_line_options();
  const po::options_description settings = settings_options();
  Parsed cli(&cli_desc);
  Parsed env(&settings);
  try {
    // No guessing of abbreviated options: `--work` must not silently mean --workers.
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    cli = po::command_line_parser(args).options(cli_desc).style(style).run();
  } catch (const po::error& e) {
    throw UserError(exit_code::kUsage, std::string(e.what()) + "; see dl-launch --help");
  }
  try {
    env = po::parse_environment(settings, [](const std::string& var) { return env_to_option(var); });
  } catch (const po::error& e) {
    throw UserError(exit_code::kUsage, std::string("DL_* environment: ") + e.what());
  }

  po::variables_map vm;
  Sources src;
  po::store(cli, vm);
  src.add(cli, "", false);
  po::store(env, vm);
  src.add(env, "", true);

  opts.help = vm.count("help") > 0;
  opts.version = vm.count("version") > 0;
  if (opts.help || opts.version) return opts;
  opts.json = vm.count("json") > 0;
  opts.dry_run = vm.count("dry-run") > 0 || opts.json;

  // The workspace must be known before its config file can be read.
  opts.workspace.value = vm.count("workspace") ? vm["workspace"].as<std::string>() : default_workspace();
  opts.workspace.source = src.of("workspace");
  if (opts.workspace.source == "default") {
    opts.workspace.source = "the workspace";
  }

  const bool explicit_config = vm.count("config") > 0;
  const std::string config_path = explicit_config
                                      ? vm["config"].as<std::string>()
                                      : opts.workspace.value + "/" + kConfigFileName;
  if (auto file = read_config(config_path, explicit_config, settings)) {
    if (!explicit_config) {
      // The workspace's own file cannot move the workspace.
      for (const auto& o : file->options) {
        if (o.string_key == "workspace") {
          throw UserError(exit_code::kBadConfig, "config file " + config_path +
                                                     ": 'workspace' cannot be set inside the "
                                                     "workspace's own dl.conf");
        }
      }
    }
    opts.config_file = config_path;
    po::store(*file, vm);
    src.add(*file, config_path, false);
  }
  po::notify(vm);

  Request& r = opts.request;
  r.workers = auto_or_int(vm, src, "workers", 0);
  r.threads = auto_or_int(vm, src, "threads", 1);
  if (auto b = auto_or_int(vm, src, "batch-size", 1)) {
    r.batch_size = *b;
  } else if (vm.count("batch-size")) {
    bad_value(src.of("batch-size"), "auto", "a whole number >= 1 (the batch-size search is not available)");
  }
  r.precision = {one_of(vm, src, "precision", {"auto", "fp32", "fp16", "bf16"}, "auto"),
                 src.of("precision")};
  r.device = {device_value(vm, src), src.of("device")};
  if (auto s = auto_or_int(vm, src, "samples", 0)) {
    r.samples = Sourced<std::int64_t>{s->value, s->source};
  }
  if (vm.count("input-shape")) {
    const std::string v = trim(vm["input-shape"].as<std::string>());
    if (v != "auto") {
      const auto bytes = shape_bytes(v);
      if (!bytes) bad_value(src.of("input-shape"), v, "CxHxW with positive sizes, e.g. 3x224x224");
      r.sample_bytes = {*bytes, src.of("input-shape")};
    }
  }
  if (vm.count("grace-period")) {
    const std::string v = trim(vm["grace-period"].as<std::string>());
    char* end = nullptr;
    const double g = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(g >= 0.0) || g > 86400.0) {
      bad_value(src.of("grace-period"), v, "seconds between 0 and 86400");
    }
    opts.grace_seconds = g;
  }
  if (vm.count("name")) {
    opts.run_name = trim(vm["name"].as<std::string>());
    if (!is_safe_name(opts.run_name)) {
      bad_value(src.of("name"), opts.run_name, "letters, digits, '.', '-' or '_' (a directory name)");
    }
  }
  if (vm.count("trainer")) opts.trainer = vm["trainer"].as<std::string>();
  if (vm.count("nvml-library")) opts.nvml_library = vm["nvml-library"].as<std::string>();
  return opts;
}

}  // namespace dl
