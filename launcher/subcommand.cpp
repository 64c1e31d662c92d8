// Finding a stray word among dl-launch's arguments (subcommand.h).
#include "launcher/subcommand.h"

#include <cstring>
#include <vector>

#include "core/text.h"

namespace dl {

std::optional<std::string> stray_word(int argc, const char* const argv[],
                                      bool (*takes_value)(const std::string& name)) {
  const std::vector<std::string> subcommands(std::begin(kSubcommands), std::end(kSubcommands));
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") return std::nullopt;  // the command's words are its own
    if (i == 1) {
      for (const std::string& s : subcommands) {
        if (a == s) return std::nullopt;
      }
    }
    if (a.size() >= 2 && a[0] == '-') {
      const bool is_long = a.rfind("--", 0) == 0;
      if (is_long && a.find('=') != std::string::npos) continue;
      // "-n" alone names an option; "-cFILE" carries its value.
      const std::string name = is_long ? a.substr(2) : a.substr(1);
      if ((is_long || a.size() == 2) && takes_value(name) && i + 1 < argc &&
          argv[i + 1][0] != '-') {
        ++i;
      }
      continue;
    }
    std::string line = "'" + a + "' is not a subcommand or an option";
    const std::string near = nearest_word(a, subcommands);
    if (!near.empty()) {
      line += i == 1 ? ": did you mean " + near + "?"
                     : ": did you mean dl-launch " + near + " ...? (the subcommand comes first)";
    } else {
      line +=
          "; expected a subcommand (init, evaluate, predict, doctor) first, options, and a command "
          "to "
          "start after -- (dl-launch [options] -- python3 train.py)";
    }
    return line;
  }
  return std::nullopt;
}

}  // namespace dl
