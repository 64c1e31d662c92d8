// The one registry of settings shared by dl-launch and dl-train, and the layered read of them:
// defaults < config file (dl.conf) < DL_* environment < command line. dl-launch accepts the
// trainer's settings too and hands them on as DL_* variables, so `dl-launch --epochs 3` works.
#pragma once

#include <boost/program_options.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dl::settings {

namespace po = boost::program_options;

// Settings dl-launch plans with (workers, batch size, device, ...).
const po::options_description& launch();
// Settings dl-train trains with (model, data, epochs, ...).
const po::options_description& train();
// Both: what dl.conf and the DL_* environment may hold.
const po::options_description& all();

// "DL_BATCH_SIZE" -> "batch-size" when that is a setting, else "".
std::string env_to_key(const std::string& variable);
// "batch-size" -> "DL_BATCH_SIZE".
std::string key_to_env(const std::string& key);

// Values from the sources, stored in precedence order (the first source stored wins), each
// remembering where it came from for messages and reasons.
class Layers {
 public:
  enum class Origin { kCommandLine, kEnvironment, kFile };

  // Throws UserError (64) on an unknown option (with the nearest known one: "did you mean
  // --epochs?") or a missing value. A flag alone (`--resume`) takes its implicit value, "true".
  void add_command_line(const std::vector<std::string>& args, const po::options_description& desc);
  // The DL_* variables of the process environment that name settings.
  void add_environment();
  // A config file. Returns false when it is absent and not `required`; throws UserError (66
  // missing, 77 unreadable, 65 malformed or unknown key, naming the file and the line).
  bool add_config_file(const std::string& path, bool required);
  // Relative paths given on the command line or as DL_* variables (setting_rules.h, names_path)
  // made absolute against `cwd`, the caller's working directory: once, before anything changes
  // directory. Values from a config file stay relative to the workspace, where the program runs.
  void resolve_paths(const std::string& cwd);

  bool has(const std::string& key) const { return vm_.count(key) > 0; }
  std::string get(const std::string& key) const;  // "" when absent
  // "--workers", "DL_WORKERS", "/ws/dl.conf:3: workers" or "default".
  std::string source(const std::string& key) const;
  // Which source the value in force came from; nullopt for a default.
  std::optional<Origin> origin(const std::string& key) const;
  // Whether the config file named `key`, even where a higher layer overrides it.
  bool config_file_sets(const std::string& key) const { return file_keys_.count(key) > 0; }
  // Keys given on the command line with their values, implicit ones included (dl-launch forwards
  // trainer settings found there).
  std::map<std::string, std::string> command_line_values() const;

  // Validated reads; each throws UserError (64) naming the source and what was expected.
  std::optional<long long> integer(const std::string& key, long long min, long long max,
                                   bool allow_auto) const;
  std::optional<double> real(const std::string& key, double min, double max) const;
  std::optional<bool> flag(const std::string& key) const;
  std::string one_of(const std::string& key, const std::vector<std::string>& allowed,
                     const std::string& fallback) const;
  // The same reads with the limits of the setting's rule (setting_rules.h).
  std::optional<long long> integer(const std::string& key) const;
  std::optional<double> real(const std::string& key) const;
  std::string one_of(const std::string& key, const std::string& fallback) const;

 private:
  void remember(const po::parsed_options& parsed, Origin origin, const std::string& file,
                const std::map<std::string, int>& lines);
  po::variables_map vm_;
  std::map<std::string, std::string> where_;
  std::map<std::string, Origin> origin_;
  std::set<std::string> file_keys_;
};

// The registered name nearest to `given` (an unknown option or key, without dashes): one that
// starts with it, or one a few edits away; "" when none is close. For "did you mean ...?".
std::string nearest_name(const std::string& given, const po::options_description& desc);

// Throws UserError (64): "<source>: expected <expected>, got '<value>'".
[[noreturn]] void bad_value(const std::string& source, const std::string& value,
                            const std::string& expected);

}  // namespace dl::settings
