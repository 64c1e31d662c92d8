// Splitting `dl-launch evaluate|predict` arguments (checkpoint_command.h).
#include "launcher/checkpoint_command.h"

#include <algorithm>
#include <array>

#include "core/files.h"

namespace dl {
namespace {

// dl-train's evaluate/predict options that the launcher does not know; each takes a value.
constexpr std::array<const char*, 4> kTrainerOptions = {"checkpoint", "split", "out", "top-k"};

bool trainer_option(const std::string& name) {
  return std::any_of(kTrainerOptions.begin(), kTrainerOptions.end(),
                     [&](const char* o) { return name == o; });
}

}  // namespace

std::optional<CheckpointCommand> split_checkpoint_command(
    int argc, const char* const argv[], bool (*takes_value)(const std::string& name)) {
  if (argc < 2) return std::nullopt;
  const std::string word = argv[1];
  if (!is_checkpoint_word(word)) return std::nullopt;
  CheckpointCommand c;
  c.word = word;
  c.launcher_args.emplace_back(argv[0]);
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {  // the rest are dl-train's (paths that start with '-')
      c.trainer_args.insert(c.trainer_args.end(), argv + i + 1, argv + argc);
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      c.trainer_args.push_back(a);  // a path to predict
      continue;
    }
    const bool is_long = a.rfind("--", 0) == 0;
    const std::size_t eq = a.find('=');
    const std::string name =
        is_long ? a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2) : a.substr(1);
    std::vector<std::string>& to =
        is_long && trainer_option(name) ? c.trainer_args : c.launcher_args;
    to.push_back(a);
    const bool value_follows = eq == std::string::npos && (is_long || a.size() == 2) &&
                               (trainer_option(name) || takes_value(name));
    if (value_follows && i + 1 < argc) to.emplace_back(argv[++i]);
  }
  return c;
}

void resolve_trainer_paths(CheckpointCommand& c, const std::string& cwd) {
  std::vector<std::string>& a = c.trainer_args;
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::string& arg = a[i];
    if (arg.size() < 2 || arg[0] != '-') {
      arg = absolute_path(arg, cwd);  // a path to predict
      continue;
    }
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const bool path_option = name == "--checkpoint" || name == "--out";
    if (eq != std::string::npos) {
      if (path_option) arg = name + "=" + absolute_path(arg.substr(eq + 1), cwd);
    } else if (arg.rfind("--", 0) == 0 && trainer_option(arg.substr(2)) && i + 1 < a.size()) {
      ++i;
      if (path_option) a[i] = absolute_path(a[i], cwd);
    }
  }
}

}  // namespace dl
