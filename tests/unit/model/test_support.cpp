// TempDir, file helpers and the Python runner of the model tests.
#include "test_support.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace dl::model::test {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "dl_model_test.XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buffer.data();
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

namespace {

int exit_code_of(int status) {
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace

bool python_has(const std::string& modules) {
  const std::string command =
      std::string(DL_TEST_PYTHON) + " -c 'import " + modules + "' >/dev/null 2>&1";
  return exit_code_of(std::system(command.c_str())) == 0;
}

PythonRun run_python(const std::string& script, const std::string& args) {
  const std::string log = script + ".log";
  const std::string command =
      std::string(DL_TEST_PYTHON) + " " + script + " " + args + " >" + log + " 2>&1";
  PythonRun run;
  run.exit_code = exit_code_of(std::system(command.c_str()));
  run.output = read_text(log);
  return run;
}

}  // namespace dl::model::test
