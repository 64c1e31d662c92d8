// Command lines of evaluate and predict (eval_config.h).
#include "train/modes/eval_config.h"

#include <cstdlib>
#include <sstream>

#include "core/errors.h"
#include "core/files.h"
#include "core/settings.h"

namespace dl::train {
namespace {

namespace po = boost::program_options;

po::options_description own_options(const std::string& command) {
  po::options_description d(command == "evaluate" ? "Evaluate options" : "Predict options");
  d.add_options()("help,h", "print this help and exit")(
      "config,c", po::value<std::string>(), "config file (default: ./dl.conf, or $DL_CONFIG)")(
      "checkpoint", po::value<std::string>(), "checkpoint to load (last.pt, best.pt)");
  if (command == "evaluate") {
    d.add_options()("split", po::value<std::string>(),
                    "test | val | all (default: the data's test split where it has one, else "
                    "all)")("out", po::value<std::string>(),
                            "directory for confusion.csv, per_class.csv and summary.json "
                            "(default: eval-<split> next to the checkpoint)");
  } else {
    d.add_options()("top-k", po::value<std::string>(), "classes per image (default 5)")(
        "out", po::value<std::string>(), "CSV file to write (default: standard output)");
  }
  return d;
}

po::options_description command_line(const std::string& command) {
  po::options_description d = own_options(command);
  d.add(settings::train()).add(settings::launch());
  return d;
}

// Positional arguments (predict's paths) apart from options, using the description to know which
// options take the next argument as their value.
std::vector<std::string> take_positional(std::vector<std::string>* args,
                                         const po::options_description& desc) {
  std::vector<std::string> options, positional;
  for (std::size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    if (a == "--") {
      positional.insert(positional.end(), args->begin() + static_cast<std::ptrdiff_t>(i) + 1,
                        args->end());
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      positional.push_back(a);
      continue;
    }
    options.push_back(a);
    if (a.find('=') != std::string::npos) continue;
    const bool is_long = a.rfind("--", 0) == 0;
    if (!is_long && a.size() > 2) continue;  // -cFILE
    // Boost keeps short names with their dash ("-c"); long ones without.
    const po::option_description* o = desc.find_nothrow(is_long ? a.substr(2) : a, false);
    if (o != nullptr && o->semantic()->min_tokens() > 0 && i + 1 < args->size()) {
      options.push_back((*args)[++i]);
    }
  }
  *args = options;
  return positional;
}

}  // namespace

std::string eval_usage(const std::string& command) {
  std::ostringstream out;
  if (command == "evaluate") {
    out << "Usage: dl-train evaluate --checkpoint FILE [--data D] [--split test|val|all] "
           "[--out DIR] [options]\n\n"
           "Runs a checkpoint over a data set with validation's loader, transforms, precision\n"
           "and device; prints top-1, top-5 (with 5 classes or more) and per-class accuracy, and\n"
           "writes confusion.csv, per_class.csv and summary.json into --out.\n\n";
  } else {
    out << "Usage: dl-train predict --checkpoint FILE [--top-k K] [--out FILE.csv] PATH...\n\n"
           "Classifies image files, and the images found below folders, with a checkpoint:\n"
           "one CSV row per file (path, class_1, prob_1, ..., class_K, prob_K, error). A file\n"
           "that cannot be decoded gets its row with the reason, the others are predicted, and\n"
           "the exit code is then 79.\n\n";
  }
  out << command_line(command)
      << "\nPrecedence: defaults < dl.conf < DL_* environment < command line.\n";
  return out.str();
}

ParsedEval parse_eval_args(int argc, const char* const argv[]) {
  ParsedEval parsed;
  EvalConfig& c = parsed.config;
  c.command = argv[0];
  const po::options_description desc = command_line(c.command);
  std::vector<std::string> args(argv + 1, argv + argc);
  c.inputs = take_positional(&args, desc);
  settings::Layers s;
  s.add_command_line(args, desc);
  parsed.help = s.has("help");
  if (parsed.help) return parsed;
  s.add_environment();
  s.resolve_paths(current_directory());
  const char* env_config = std::getenv("DL_CONFIG");
  if (s.has("config")) {
    s.add_config_file(s.get("config"), true);
  } else if (env_config != nullptr && *env_config != '\0') {
    s.add_config_file(env_config, true);
  } else {
    s.add_config_file("dl.conf", false);
  }
  if (c.command == "evaluate" && !c.inputs.empty()) {
    throw UserError(exit_code::kUsage, "evaluate: unexpected argument '" + c.inputs.front() +
                                           "'; the data is given with --data");
  }
  if (c.command == "predict" && c.inputs.empty()) {
    throw UserError(exit_code::kUsage,
                    "predict: no image files or folders given; expected PATH... after the "
                    "options");
  }
  if (!s.has("checkpoint") || s.get("checkpoint").empty()) {
    throw UserError(exit_code::kUsage, c.command + ": --checkpoint FILE is required");
  }
  c.checkpoint = s.get("checkpoint");
  if (s.has("split")) c.split = s.one_of("split", {"test", "val", "all"}, "");
  if (s.has("out")) c.out = s.get("out");
  if (auto v = s.integer("top-k", 1, 1000, false)) c.top_k = static_cast<int>(*v);

  TrainConfig& t = c.train;
  t.data = s.get("data");
  c.model_given = s.has("model");
  if (c.model_given) t.model = s.one_of("model", t.model);
  if (auto v = s.integer("batch-size")) t.batch_size = static_cast<int>(*v);
  if (auto v = s.integer("workers")) t.workers = static_cast<int>(*v);
  if (auto v = s.integer("threads")) t.threads = static_cast<int>(*v);
  t.device = s.one_of("device", "auto");
  t.precision = s.one_of("precision", "auto");
  t.precision_source = s.source("precision");
  if (auto v = s.real("val-fraction")) t.val_fraction = *v;
  if (auto v = s.integer("seed")) t.seed = static_cast<std::uint64_t>(*v);
  if (auto v = s.integer("max-image-pixels")) t.max_image_pixels = *v;
  if (auto v = s.integer("image-size")) t.image_size = static_cast<int>(*v);
  return parsed;
}

}  // namespace dl::train
