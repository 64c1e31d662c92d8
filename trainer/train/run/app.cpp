// dl-train's top level: options, then the run (or the memory probe); bad input ends in one line
// and its exit code.
#include "train/run/app.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <torch/version.h>

#include <exception>
#include <iostream>
#include <string>

#include "core/errors.h"
#include "core/version.h"
#include "train/modes/data_facts_mode.h"
#include "train/modes/doctor_mode.h"
#include "train/modes/eval_config.h"
#include "train/modes/evaluate_mode.h"
#include "train/modes/pack_mode.h"
#include "train/modes/predict_mode.h"
#include "train/modes/probe_mode.h"
#include "train/run/config.h"
#include "train/run/trainer.h"

namespace dl::train {
namespace {

std::shared_ptr<spdlog::logger> make_logger(const std::string& name, bool to_stderr) {
  spdlog::drop(name);  // a mode's logger may be made twice: before its options and after
  auto logger = to_stderr ? spdlog::stderr_color_mt(name) : spdlog::stdout_color_mt(name);
  logger->set_pattern("[%H:%M:%S] %^%l%$ %v");
  return logger;
}

// `dl-train evaluate|predict ...`: the checkpoint commands.
int run_checkpoint_command(int argc, const char* const argv[]) {
  const std::string command = argv[0];
  // predict's CSV may go to stdout: its log goes to stderr, as the probe's does.
  if (command == "predict") spdlog::set_default_logger(make_logger("dl-train-predict", true));
  const ParsedEval args = parse_eval_args(argc, argv);
  if (args.help) {
    std::cout << eval_usage(command);
    return exit_code::kOk;
  }
  return command == "evaluate" ? run_evaluate(args.config) : run_predict(args.config);
}

// The modes whose stdout is one JSON line for dl-launch (--data-facts, --doctor,
// --doctor-exchange, --probe-batch): seen on the command line before the options are parsed, so
// that a refusal of those options goes to stderr with the rest of the log, where dl-launch reads
// it.
bool json_on_stdout(int argc, const char* const argv[]) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a == "--data-facts" || a.rfind("--doctor", 0) == 0 || a.rfind("--probe-batch", 0) == 0) {
      return true;
    }
  }
  return false;
}

// Options, then the run or the memory probe.
int run(int argc, const char* const argv[]) {
  if (json_on_stdout(argc, argv)) spdlog::set_default_logger(make_logger("dl-train-json", true));
  if (argc > 1 && (std::string(argv[1]) == "evaluate" || std::string(argv[1]) == "predict")) {
    return run_checkpoint_command(argc - 1, argv + 1);
  }
  if (argc > 1 && std::string(argv[1]) == "pack") return run_pack(argc - 1, argv + 1);
  const ParsedArgs args = parse_train_args(argc, argv);
  if (args.help) {
    std::cout << train_usage();
    return exit_code::kOk;
  }
  if (args.version) {
    // The LibTorch version is part of dl-launch's batch-size cache key: a different LibTorch
    // allocates differently.
    std::cout << "dl-train " << kVersion << " (LibTorch " << TORCH_VERSION << ")\n";
    return exit_code::kOk;
  }
  if (args.data_facts) {
    // stdout carries the JSON line and nothing else: the log (a shard's warning) goes to stderr.
    spdlog::set_default_logger(make_logger("dl-train-facts", true));
    return run_data_facts(args.config);
  }
  if (!args.doctor.empty() || args.doctor_exchange) {
    // stdout carries the JSON line and nothing else: the log goes to stderr.
    spdlog::set_default_logger(make_logger("dl-train-doctor", true));
    const bool full = args.doctor == "full";
    return args.doctor_exchange ? run_exchange_bench(args.config, full)
                                : run_doctor(args.config, full);
  }
  if (const auto batch = probe_batch_setting(argc, argv)) {
    // stdout carries the probe's JSON line and nothing else: the log goes to stderr.
    spdlog::set_default_logger(make_logger("dl-train-probe", true));
    return run_probe(args.config, *batch);
  }
  return run_training(args.config);
}

}  // namespace

int train_main(int argc, const char* const argv[]) {
  spdlog::set_default_logger(make_logger("dl-train", false));
  return run_reporting_errors([&] { return run(argc, argv); },
                              [](const std::string& line, bool internal) {
                                spdlog::log(internal ? spdlog::level::critical : spdlog::level::err,
                                            "{}", line);
                              });
}

}  // namespace dl::train
