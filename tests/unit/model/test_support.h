// Helpers shared by the model tests: a temporary directory removed at the end of the test, small
// file helpers, and running the Python interpreter that has torch (the interop tests' reference).
#pragma once

#include <string>

namespace dl::model::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);

// Whether DL_TEST_PYTHON can import all the comma-separated `modules` (e.g. "torch,torchvision").
bool python_has(const std::string& modules);

struct PythonRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs DL_TEST_PYTHON on `script` (a file: TorchScript needs the source to script a module) with
// `args` appended to the command line as given.
PythonRun run_python(const std::string& script, const std::string& args);

}  // namespace dl::model::test
