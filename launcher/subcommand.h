// dl-launch's first word: a subcommand (init, evaluate, predict, doctor), an option, or nothing
// else. A word that is none of them (a mistyped `evalute`, a command without `--`) would otherwise
// be dropped by the option parser and the default training started: it is refused instead.
#pragma once

#include <optional>
#include <string>

namespace dl {

// The subcommands, in the order --help lists them.
inline constexpr const char* kSubcommands[] = {"init", "evaluate", "predict", "doctor"};

// The error line for the first positional word among the launcher's own arguments (those before
// `--`) when argv[1] is not a subcommand; nullopt when there is none. `takes_value(name)` says
// whether the option --name (or -n) takes the next argument as its value when that is no option
// (option_accepts_value: a flag's too, `--resume false`), which is then no positional word. The
// line names the word and the nearest subcommand ("did you mean evaluate?").
std::optional<std::string> stray_word(int argc, const char* const argv[],
                                      bool (*takes_value)(const std::string& name));

}  // namespace dl
