// dl-train's command line and settings.
#include "train/run/config.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <sstream>

#include "core/errors.h"
#include "core/files.h"
#include "core/settings.h"
#include "core/workspace.h"

namespace dl::train {
namespace {

namespace po = boost::program_options;

po::options_description command_line() {
  po::options_description d("Options");
  d.add_options()("help,h", "print this help and exit")("version,V", "print the version and exit")(
      "config,c", po::value<std::string>(), "config file (default: ./dl.conf, or $DL_CONFIG)")(
      "data-facts",
      "open the data as training would and print its facts as one JSON line (kind, training and "
      "validation samples, classes, shards, input shape and bytes), then exit")(
      "doctor", po::value<std::string>()->implicit_value("short"),
      "measure JPEG decoding, the data's read rate and host-to-device copies for dl-launch doctor "
      "(short|full) and print them as one JSON line, then exit")(
      "doctor-exchange",
      "one rank of dl-launch doctor's allreduce measurement (the ranks from torchrun's "
      "variables), then exit");
  d.add(settings::train()).add(settings::launch());
  return d;
}

// --workspace (DL_WORKSPACE, which dl-launch sets to the directory it starts dl-train in):
// dl-train works there as under dl-launch, whatever directory it was started from: its dl.conf
// is read, runs/<name>/ is written and relative paths of dl.conf resolve there. Paths given on
// the command line or in DL_* variables are made absolute before, against the caller's directory.
void enter_workspace(const settings::Layers& s) {
  if (!s.has("workspace")) return;
  const std::string workspace = check_workspace(s.get("workspace"), s.source("workspace"));
  if (chdir(workspace.c_str()) != 0) {
    throw UserError(exit_code::kCantWrite, s.source("workspace") + ": cannot enter " + workspace +
                                               " (" + std::strerror(errno) + ")");
  }
}

// The config file's layer: --config, else DL_CONFIG (both must be readable), else ./dl.conf
// where there is one. Returns the file read, or an empty string.
std::string add_config_layer(settings::Layers& s) {
  const char* env_config = std::getenv("DL_CONFIG");
  if (s.has("config")) {
    s.add_config_file(s.get("config"), true);
    return s.get("config");
  }
  if (env_config != nullptr && *env_config != '\0') {
    s.add_config_file(env_config, true);
    return env_config;
  }
  return s.add_config_file("dl.conf", false) ? "dl.conf" : std::string();
}

}  // namespace

std::string train_usage() {
  std::ostringstream out;
  out << "Usage: dl-train [options]\n"
         "       dl-train evaluate --checkpoint FILE [options]   (see dl-train evaluate --help)\n"
         "       dl-train predict --checkpoint FILE PATH...      (see dl-train predict --help)\n\n"
         "Trains an image classifier with LibTorch: a prefetching multi-worker data loader,\n"
         "AdamW with a cosine schedule, gradient clipping, validation every epoch, best/last\n"
         "checkpoints and live monitoring. Normally started by dl-launch, whose plan arrives as\n"
         "DL_* variables; runs on its own too.\n\n"
      << command_line() << "\nPrecedence: defaults < dl.conf < DL_* environment < command line.\n\n"
      << exit_code_help(Program::kTrain);
  return out.str();
}

namespace {

// --doctor's value: "short" or "full" (exit 64 otherwise).
std::string doctor_mode(const std::string& value) {
  if (value != "short" && value != "full") {
    throw UserError(exit_code::kUsage, "--doctor: expected short or full, not '" + value + "'");
  }
  return value;
}

}  // namespace

ParsedArgs parse_train_args(int argc, const char* const argv[]) {
  ParsedArgs parsed;
  settings::Layers s;
  s.add_command_line(std::vector<std::string>(argv + 1, argv + argc), command_line());
  parsed.help = s.has("help");
  parsed.version = s.has("version");
  parsed.data_facts = s.has("data-facts");
  parsed.doctor_exchange = s.has("doctor-exchange");
  if (s.has("doctor")) parsed.doctor = doctor_mode(s.get("doctor"));
  if (parsed.help || parsed.version) return parsed;
  s.add_environment();
  s.resolve_paths(current_directory());
  enter_workspace(s);
  TrainConfig& c = parsed.config;
  c.config_file = add_config_layer(s);

  c.data = s.get("data");
  c.model = s.one_of("model", c.model);
  // Checked here, before a run directory exists, so a typo leaves nothing behind.
  const bool scripted = c.model.size() > 3 && c.model.compare(c.model.size() - 3, 3, ".pt") == 0;
  if (scripted && access(c.model.c_str(), R_OK) != 0) {
    throw UserError(exit_code::kMissing, s.source("model") + ": TorchScript file " + c.model +
                                             " cannot be read (" + std::strerror(errno) + ")");
  }
  if (auto v = s.integer("epochs")) c.epochs = static_cast<int>(*v);
  if (auto v = s.integer("batch-size")) c.batch_size = static_cast<int>(*v);
  if (auto v = s.integer("micro-batch")) c.micro_batch = *v;
  if (auto v = s.integer("global-batch")) c.global_batch = *v;
  if (auto v = s.real("lr")) c.lr = *v;
  if (auto v = s.real("weight-decay")) c.weight_decay = *v;
  if (auto v = s.real("clip-norm")) c.clip_norm = *v;
  if (auto v = s.integer("workers")) c.workers = static_cast<int>(*v);
  if (auto v = s.integer("threads")) c.threads = static_cast<int>(*v);
  c.device = s.one_of("device", "auto");
  c.precision = s.one_of("precision", "auto");
  c.precision_source = s.source("precision");
  if (auto v = s.real("loss-scale")) c.loss_scale = *v;
  if (auto v = s.real("loss-scale-growth")) c.loss_scale_growth = *v;
  if (auto v = s.real("loss-scale-backoff")) c.loss_scale_backoff = *v;
  if (auto v = s.integer("loss-scale-interval")) {
    c.loss_scale_interval = *v;
  }
  if (auto v = s.integer("image-size")) c.image_size = static_cast<int>(*v);
  if (auto v = s.real("val-fraction")) c.val_fraction = *v;
  if (auto v = s.integer("seed")) {
    c.seed = static_cast<std::uint64_t>(*v);
  }
  if (auto v = s.integer("log-every")) c.log_every = static_cast<int>(*v);
  if (auto v = s.real("monitor-every")) c.monitor_every = *v;
  if (auto v = s.flag("time-breakdown")) c.time_breakdown = *v;
  if (auto v = s.real("max-bad-fraction")) c.max_bad_fraction = *v;
  if (auto v = s.integer("max-image-pixels")) c.max_image_pixels = *v;
  if (auto v = s.integer("shuffle-buffer")) c.shuffle_buffer = *v;
  if (auto v = s.integer("read-ahead-mb")) c.read_ahead_mb = *v;
  if (auto v = s.integer("jpeg-index-mb")) c.jpeg_index_mb = *v;
  if (auto v = s.integer("limit-batches")) {
    c.limit_batches = *v;
  }
  if (s.has("checkpoint-every")) {
    const auto every = parse_checkpoint_every(s.get("checkpoint-every"));
    if (!every) {
      throw UserError(exit_code::kUsage,
                      s.source("checkpoint-every") + ": '" + s.get("checkpoint-every") +
                          "' is not an interval; expected a number of steps (500), a time (30s, "
                          "10m, 2h) or 0 for epoch ends only");
    }
    c.checkpoint_every = *every;
  }
  if (auto v = s.flag("resume")) c.resume = *v;
  if (auto v = s.flag("overwrite")) c.overwrite = *v;
  c.init_from = s.get("init-from");
  if (!c.init_from.empty() && access(c.init_from.c_str(), R_OK) != 0) {
    throw UserError(exit_code::kMissing, s.source("init-from") + ": weights file " + c.init_from +
                                             " cannot be read (" + std::strerror(errno) + ")");
  }
  c.freeze = s.one_of("freeze", "none");
  if (c.freeze != "none" && c.freeze != "backbone" && c.model.rfind("resnet", 0) != 0) {
    throw UserError(exit_code::kUsage, s.source("freeze") +
                                           ": stages apply to resnet models, not " + c.model +
                                           "; expected none or backbone");
  }
  c.dist_backend = s.one_of("dist-backend", "auto");
  if (auto v = s.real("dist-timeout")) c.dist_timeout = *v;
  if (auto v = s.real("rdzv-timeout")) c.rdzv_timeout = *v;
  c.lr_scaling = s.one_of("lr-scaling", "none");
  if (auto v = s.integer("reference-batch")) c.reference_batch = *v;
  if (auto v = s.real("bucket-mb")) c.bucket_mb = *v;
  if (auto v = s.flag("overlap")) c.overlap = *v;

  const char* run_dir = std::getenv("DL_RUN_DIR");
  if (run_dir != nullptr && *run_dir != '\0') {
    c.run_dir = run_dir;
  } else {
    const std::string name =
        s.has("name") ? s.get("name") : choose_run_name(".", "", std::time(nullptr));
    c.run_dir = "runs/" + name;
  }
  return parsed;
}

}  // namespace dl::train
