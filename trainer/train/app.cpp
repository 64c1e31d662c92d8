// dl-train's top level: options, then the run; bad input ends in one line and its exit code.
#include "train/app.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <iostream>

#include "errors.h"
#include "train/config.h"
#include "train/trainer.h"
#include "version.h"

namespace dl::train {

int train_main(int argc, const char* const argv[]) {
  auto logger = spdlog::stdout_color_mt("dl-train");
  logger->set_pattern("[%H:%M:%S] %^%l%$ %v");
  spdlog::set_default_logger(logger);
  try {
    const ParsedArgs args = parse_train_args(argc, argv);
    if (args.help) {
      std::cout << train_usage();
      return exit_code::kOk;
    }
    if (args.version) {
      std::cout << "dl-train " << kVersion << "\n";
      return exit_code::kOk;
    }
    return run_training(args.config);
  } catch (const UserError& e) {
    spdlog::error("{}", e.what());
    return e.code();
  } catch (const std::exception& e) {
    spdlog::critical("internal error: {} (please report it)", e.what());
    return exit_code::kInternal;
  }
}

}  // namespace dl::train
