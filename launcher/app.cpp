// The launcher's flow: options -> probe -> plan -> (dry run: report) -> run directory and
// plan.json -> spawn and supervise. Everything that can fail on bad input is checked before the
// first byte is written to the workspace.
#include "app.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <ctime>
#include <exception>
#include <iostream>
#include <optional>

#include "command.h"
#include "data_location.h"
#include "errors.h"
#include "launch.h"
#include "options.h"
#include "plan.h"
#include "probe.h"
#include "report.h"
#include "supervisor.h"
#include "system_host.h"
#include "version.h"
#include "workspace.h"

namespace dl {
namespace {

// Fashion-MNIST, what dl-train trains on when the workspace has no data of its own.
constexpr std::int64_t kDefaultDataSamples = 60000;
constexpr std::uint64_t kDefaultDataSampleBytes = 1 * 28 * 28 * 4;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Python programs pass batches from DataLoader workers through /dev/shm.
bool passes_batches_through_shm(const std::vector<std::string>& argv) {
  const std::string exe = argv[0].substr(argv[0].rfind('/') + 1);
  if (exe.rfind("python", 0) == 0 || exe == "torchrun") return true;
  return ends_with(exe, ".py");
}

void setup_logging() {
  auto logger = spdlog::stderr_color_mt("dl-launch");
  logger->set_pattern("%^dl-launch %l:%$ %v");
  spdlog::set_default_logger(logger);
}

int run(int argc, const char* const argv[]) {
  LaunchOptions opts = parse_options(argc, argv);
  if (opts.help) {
    std::cout << usage_text();
    return exit_code::kOk;
  }
  if (opts.version) {
    std::cout << "dl-launch " << kVersion << "\n";
    return exit_code::kOk;
  }

  Launch launch;
  launch.workspace = check_workspace(opts.workspace.value, opts.workspace.source);
  launch.config_file = opts.config_file;
  const bool default_program = opts.command.empty();
  std::optional<std::string> missing_trainer;
  if (!default_program) {
    launch.command = resolve_command(opts.command);
  } else {
    try {
      launch.command = trainer_command(opts.trainer, self_directory());
    } catch (const UserError& e) {
      // A dry run still shows the plan on a machine without the trainer built.
      if (!opts.dry_run) throw;
      launch.command = {opts.trainer};
      missing_trainer = e.what();
    }
  }

  Request& req = opts.request;
  req.shm_batches = passes_batches_through_shm(launch.command);
  if (default_program && !opts.data_given && !holds_data_set(launch.workspace + "/data")) {
    if (!req.samples) req.samples = Sourced<std::int64_t>{kDefaultDataSamples, "Fashion-MNIST"};
    if (req.sample_bytes.source == Request{}.sample_bytes.source) {
      req.sample_bytes = {kDefaultDataSampleBytes, "Fashion-MNIST"};
    }
  }
  launch.request = req;

  const SystemHost host(opts.nvml_library);
  launch.facts = probe(host);
  launch.plan = make_plan(launch.facts, req);
  launch.run_name = choose_run_name(launch.workspace, opts.run_name, std::time(nullptr));
  launch.run_dir = launch.workspace + "/runs/" + launch.run_name;
  launch.forwarded = opts.trainer_env;
  if (launch.config_file) launch.forwarded.emplace_back("DL_CONFIG", *launch.config_file);
  launch.env = child_environment(launch);
  if (missing_trainer) launch.plan.warnings.push_back(*missing_trainer);

  if (opts.json) {
    std::cout << render_json(launch);
    return exit_code::kOk;
  }
  if (opts.dry_run) {
    std::cout << render_text(launch, true);
    return exit_code::kOk;
  }

  std::cout << render_text(launch, false) << std::flush;
  create_run_dir(launch.workspace, launch.run_name);
  write_file_atomic(launch.run_dir + "/plan.json", render_json(launch));

  SpawnSpec spec;
  spec.argv = launch.command;
  spec.cwd = launch.workspace;
  spec.env = launch.env;
  spec.grace_seconds = opts.grace_seconds;
  const int code = supervise(spec);
  if (code != 0) spdlog::warn("{} exited with code {}", launch.command[0], code);
  return code;
}

}  // namespace

int launcher_main(int argc, const char* const argv[]) {
  setup_logging();
  try {
    return run(argc, argv);
  } catch (const UserError& e) {
    spdlog::error("{}", e.what());
    return e.code();
  } catch (const std::exception& e) {
    spdlog::critical("internal error: {} (please report it)", e.what());
    return exit_code::kInternal;
  }
}

}  // namespace dl
