// Running the tests' Python (see python.h).
#include "support/python.h"

namespace dl::test {

Result run_python(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kPython, script};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

}  // namespace dl::test
