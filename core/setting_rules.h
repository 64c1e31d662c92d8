// What each setting accepts, in one table that both programs read: dl-train when it parses its
// settings, and dl-launch, which checks every training setting it was given before it prints a
// plan or writes anything (a typo in --epochs must not leave a run directory behind). Settings
// whose values have a form of their own (memory sizes, shapes, host names, run names) are checked
// where they are parsed and are "text" here.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <vector>

namespace dl::settings {

class Layers;

struct Rule {
  enum class Kind { kText, kInteger, kReal, kFlag, kChoice };
  Kind kind = Kind::kText;
  double min = 0, max = 0;                           // kInteger (whole numbers within) and kReal
  bool allow_auto = false;                           // kInteger: "auto" means the default
  std::vector<std::string> choices;                  // kChoice
  bool (*also)(const std::string& value) = nullptr;  // kChoice: another accepted form
  std::string also_text;                             // ... and its words ("cuda:N")
  // Whether a value names a file or directory (always, or for some values: a model is a name or a
  // TorchScript file). A relative one given on the command line or as a DL_* variable is the
  // caller's, resolved against the caller's working directory before anything changes directory;
  // one in a config file is relative to the workspace, where the program runs.
  bool (*names_path)(const std::string& value) = nullptr;
};

// The rule of a registered setting; throws std::logic_error for a key with none (a test checks
// that every setting has one).
const Rule& rule(const std::string& key);

// Whether `value` of setting `key` names a file or directory (Rule::names_path). "config" (a
// command-line option of both programs, not a setting) always does.
bool names_path(const std::string& key, const std::string& value);

// Every key of `which` that `s` holds, checked against its rule. Throws UserError (64) naming
// the source of the first bad value and what was expected.
void check(const Layers& s, const boost::program_options::options_description& which);

}  // namespace dl::settings
