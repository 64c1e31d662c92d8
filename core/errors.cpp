// The exit-code table rendered for --help and for the reference.
#include "core/errors.h"

namespace dl {

std::string exit_code_help(Program program) {
  std::string out = "Exit codes:\n";
  for (const ExitCodeRow& row : kExitCodes) {
    const std::string_view meaning = program == Program::kLaunch ? row.launch : row.train;
    if (meaning.empty()) continue;
    std::string code(row.code);
    code.resize(7, ' ');
    out += "  " + code + std::string(meaning) + "\n";
  }
  if (program == Program::kLaunch) {
    out += "  Otherwise the program's own exit code.\n";
  }
  return out;
}

std::string exit_code_table() {
  std::string out = "| code | dl-launch | dl-train |\n| --- | --- | --- |\n";
  for (const ExitCodeRow& row : kExitCodes) {
    const auto cell = [](std::string_view s) {
      return s.empty() ? std::string("-") : std::string(s);
    };
    out +=
        "| " + std::string(row.code) + " | " + cell(row.launch) + " | " + cell(row.train) + " |\n";
  }
  return out;
}

}  // namespace dl
