// Reading a command's words as Python's own parser would, far enough to find the script it runs,
// and that script's first megabyte for an import of dl_plan.
#include "launcher/program_kind.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>

#include "core/text.h"

namespace dl {
namespace {

constexpr const char* kModule = "dl_plan";

bool is_python(const std::string& word) {
  return starts_with(base_name(word), "python");
}

// Python's own options from `i` on (python3 -u -X dev -m pkg ...): the script, module or code.
CommandScript python_script(const std::vector<std::string>& c, std::size_t i) {
  for (; i < c.size(); ++i) {
    const std::string& a = c[i];
    if (a == "-" || a.empty()) return {};  // the program comes from stdin
    if (a[0] != '-') return {CommandScript::Kind::kFile, a};
    if (a == "--")
      return i + 1 < c.size() ? CommandScript{CommandScript::Kind::kFile, c[i + 1]}
                              : CommandScript{};
    if (starts_with(a, "--")) {
      // --check-hash-based-pycs MODE is the one long option with a value.
      if (a == "--check-hash-based-pycs") ++i;
      continue;
    }
    // A cluster of one-letter options: -uB, -Wignore, -mpkg, -c'code'.
    for (std::size_t k = 1; k < a.size(); ++k) {
      const char o = a[k];
      if (o != 'c' && o != 'm' && o != 'W' && o != 'X') continue;
      std::string value = a.substr(k + 1);
      if (value.empty() && i + 1 < c.size()) value = c[++i];
      if (o == 'c') return {CommandScript::Kind::kCode, value};
      if (o == 'm') return {CommandScript::Kind::kModule, value};
      break;  // -W and -X: the rest of the word, or the next word, is their value
    }
  }
  return {};
}

// The file's first kMaxScannedFileBytes; nullopt when it is no regular file that can be read.
std::optional<std::string> read_head(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    text.emplace();
    char buf[65536];
    while (static_cast<long>(text->size()) < kMaxScannedFileBytes) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      text->append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return text;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Whether `text` holds dl_plan as a whole word (dl_plan.probe counts; my_dl_plan does not).
bool names_module(const std::string& text) {
  const std::string m = kModule;
  for (std::size_t at = text.find(m); at != std::string::npos; at = text.find(m, at + 1)) {
    const bool before = at == 0 || !word_char(text[at - 1]);
    const std::size_t end = at + m.size();
    if (before && (end == text.size() || !word_char(text[end]))) return true;
  }
  return false;
}

}  // namespace

bool is_python_program(const std::vector<std::string>& command) {
  if (command.empty()) return false;
  const std::string exe = base_name(command[0]);
  if (starts_with(exe, "python") || ends_with(exe, ".py")) return true;
  // `env python3 ...`, `uv run ...` and friends: a .py argument says Python.
  for (std::size_t i = 1; i < command.size(); ++i) {
    if (ends_with(command[i], ".py")) return true;
  }
  return false;
}

CommandScript command_script(const std::vector<std::string>& command) {
  if (command.empty()) return {};
  // python3 ..., and `env VAR=1 python3 ...`, `uv run python ...`: from the interpreter's word.
  for (std::size_t i = 0; i < command.size(); ++i) {
    if (is_python(command[i])) return python_script(command, i + 1);
  }
  if (ends_with(command[0], ".py")) return {CommandScript::Kind::kFile, command[0]};
  // torchrun and other launchers: the first .py word, or the module after their -m.
  for (std::size_t i = 1; i < command.size(); ++i) {
    if (ends_with(command[i], ".py")) return {CommandScript::Kind::kFile, command[i]};
    if ((command[i] == "-m" || command[i] == "--module") && i + 1 < command.size()) {
      for (std::size_t j = i + 1; j < command.size(); ++j) {
        if (command[j][0] != '-') return {CommandScript::Kind::kModule, command[j]};
      }
    }
  }
  return {};
}

std::string script_file(const CommandScript& script, const std::string& cwd) {
  const auto under = [&](const std::string& p) { return p[0] == '/' ? p : cwd + "/" + p; };
  if (script.kind == CommandScript::Kind::kFile && !script.text.empty()) {
    const std::string path = under(script.text);
    return is_regular_file(path) ? path : "";
  }
  if (script.kind == CommandScript::Kind::kModule && !script.text.empty()) {
    std::string relative = script.text;
    for (char& ch : relative) {
      if (ch == '.') ch = '/';
    }
    for (const std::string& candidate : {relative + ".py", relative + "/__main__.py"}) {
      if (is_regular_file(under(candidate))) return under(candidate);
    }
  }
  return "";
}

bool imports_dl_plan(const std::string& source) {
  for (const std::string& raw : split(source, '\n')) {
    std::string line = trim(raw);
    if (!starts_with(line, "import ") && !starts_with(line, "from ")) continue;
    line = line.substr(0, line.find('#'));
    if (names_module(line)) return true;
  }
  return false;
}

bool splits_micro_batches(const std::string& source) {
  for (const std::string& raw : split(source, '\n')) {
    const std::string line = trim(raw);
    if (starts_with(line, "#")) continue;
    const std::size_t call = line.find(".micro_batches(");
    if (call != std::string::npos && line.substr(0, call).find('#') == std::string::npos) {
      return true;
    }
  }
  return false;
}

std::optional<std::string> command_source(const std::vector<std::string>& command,
                                          const std::string& cwd) {
  if (!is_python_program(command)) return std::nullopt;
  const CommandScript script = command_script(command);
  if (script.kind == CommandScript::Kind::kCode) return script.text;
  if (script.kind == CommandScript::Kind::kNone) return std::nullopt;
  const std::string file = script_file(script, cwd);
  if (file.empty()) return std::nullopt;
  return read_head(file);
}

std::optional<std::string> why_not_probed(const std::vector<std::string>& command,
                                          const std::string& cwd, const std::string& mode) {
  if (mode == "never") return "--probe-command is never";
  if (mode == "always") return std::nullopt;
  if (!is_python_program(command)) {
    return "it is not a Python program; the protocol's module, dl_plan, is Python";
  }
  const CommandScript script = command_script(command);
  const std::string always = "; --probe-command always probes it all the same";
  switch (script.kind) {
    case CommandScript::Kind::kNone:
      return "dl-launch cannot tell which Python script it runs" + always;
    case CommandScript::Kind::kCode:
      if (imports_dl_plan(script.text)) return std::nullopt;
      return "its code (-c) does not import dl_plan";
    case CommandScript::Kind::kFile:
    case CommandScript::Kind::kModule: {
      const bool module = script.kind == CommandScript::Kind::kModule;
      const std::string named = (module ? "its module " : "its script ") + script.text;
      const std::string file = script_file(script, cwd);
      if (file.empty()) return named + " was not found in " + cwd + always;
      const std::optional<std::string> text = read_head(file);
      if (!text) return named + " cannot be read" + always;
      if (imports_dl_plan(*text)) return std::nullopt;
      return named + " does not import dl_plan";
    }
  }
  return std::nullopt;
}

}  // namespace dl
